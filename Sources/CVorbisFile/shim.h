#ifndef BACKLINE_CVORBISFILE_SHIM_H
#define BACKLINE_CVORBISFILE_SHIM_H
// libvorbisfile's header (apt libvorbis-dev), and the library opened with dlopen the first time an
// Ogg Vorbis item is opened: nothing links it, so a `play` of another format does not load it
// (36 KiB of resident memory when it was linked). libvorbis and libogg are loaded anyway:
// libpulse depends on them through libsndfile, and libFLAC on libogg.
// The header's static stdio callbacks (OV_CALLBACKS_DEFAULT…) are left out: unused.
#define OV_EXCLUDE_STATIC_CALLBACKS
#include <vorbis/vorbisfile.h>
#include <dlfcn.h>
#include <stddef.h>

/// The libvorbisfile functions Backline calls: this one list makes both the table's fields and
/// `bl_vorbisfile_load`'s look-ups (a function added here is declared and resolved).
#define BL_VORBISFILE_FUNCTIONS(X) \
    X(ov_bitrate) \
    X(ov_clear) \
    X(ov_comment) \
    X(ov_info) \
    X(ov_open_callbacks) \
    X(ov_pcm_seek) \
    X(ov_pcm_total) \
    X(ov_read_float) \
    X(ov_streams)

/// The libvorbisfile functions Backline calls, resolved by `bl_vorbisfile_load`.
typedef struct {
#define BL_VORBISFILE_FIELD(name) __typeof__(&name) name;
    BL_VORBISFILE_FUNCTIONS(BL_VORBISFILE_FIELD)
#undef BL_VORBISFILE_FIELD
} bl_vorbisfile_api;

/// Opens libvorbisfile (ABI 3; it loads libvorbis and libogg) and fills `api`; returns NULL, or
/// what failed.
static inline const char *bl_vorbisfile_load(bl_vorbisfile_api *api) {
    void *lib = dlopen("libvorbisfile.so.3", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return dlerror();
#define BL_VORBISFILE_SYM(name) if (!(api->name = (__typeof__(api->name))dlsym(lib, #name))) return "missing " #name;
    BL_VORBISFILE_FUNCTIONS(BL_VORBISFILE_SYM)
#undef BL_VORBISFILE_SYM
    return NULL;
}
#endif
