#ifndef BACKLINE_COPUSFILE_H
#define BACKLINE_COPUSFILE_H
// libopusfile's header (apt libopusfile-dev), and the library opened with dlopen the first time
// an Opus item is opened (`bl_opusfile_load`): nothing links it, so a `play` of another format
// does not load it (48 KiB of resident memory when it was linked). libopus and libogg are loaded
// anyway: libpulse depends on them through libsndfile, and libFLAC on libogg.
//
// A C target rather than a system library: the header's own `#include <opus_multistream.h>`
// needs /usr/include/opus, which only pkg-config's flags for `opusfile` add, and those link
// the library; this target's public directory has a `opus_multistream.h` that includes it by
// its full name (no unsafe flags, so the package still builds as another package's dependency).
#include <opus/opusfile.h>

/// The libopusfile functions Backline calls: this one list makes both the table's fields and
/// `bl_opusfile_load`'s look-ups (a function added here is declared and resolved).
#define BL_OPUSFILE_FUNCTIONS(X) \
    X(op_bitrate) \
    X(op_channel_count) \
    X(op_free) \
    X(op_link_count) \
    X(op_open_callbacks) \
    X(op_pcm_seek) \
    X(op_pcm_total) \
    X(op_read_float) \
    X(op_tags)

/// The libopusfile functions Backline calls, resolved by `bl_opusfile_load`.
typedef struct {
#define BL_OPUSFILE_FIELD(name) __typeof__(&name) name;
    BL_OPUSFILE_FUNCTIONS(BL_OPUSFILE_FIELD)
#undef BL_OPUSFILE_FIELD
} bl_opusfile_api;

/// Opens libopusfile (ABI 0; it loads libopus and libogg) and fills `api`; returns NULL, or
/// what failed.
const char *bl_opusfile_load(bl_opusfile_api *api);
#endif
