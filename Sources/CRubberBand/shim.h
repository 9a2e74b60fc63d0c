#ifndef BACKLINE_CRUBBERBAND_SHIM_H
#define BACKLINE_CRUBBERBAND_SHIM_H
// Rubber Band's C header (apt librubberband-dev), and the library opened with dlopen the first
// time an item plays at a rate other than 1 with the spectral algorithm: nothing links it (nor
// the FFTW and samplerate libraries it depends on), so playback at rate 1 never loads it.
#include <rubberband/rubberband-c.h>
#include <dlfcn.h>
#include <stddef.h>

/// The Rubber Band functions Backline calls: this one list makes both the table's fields and
/// `bl_rubberband_load`'s look-ups.
#define BL_RUBBERBAND_FUNCTIONS(X) \
    X(rubberband_new) \
    X(rubberband_delete) \
    X(rubberband_set_max_process_size) \
    X(rubberband_get_start_delay) \
    X(rubberband_get_preferred_start_pad) \
    X(rubberband_get_samples_required) \
    X(rubberband_process) \
    X(rubberband_available) \
    X(rubberband_retrieve)

/// The Rubber Band functions Backline calls, resolved by `bl_rubberband_load`.
typedef struct {
#define BL_RUBBERBAND_FIELD(name) __typeof__(&name) name;
    BL_RUBBERBAND_FUNCTIONS(BL_RUBBERBAND_FIELD)
#undef BL_RUBBERBAND_FIELD
} bl_rubberband_api;

/// Opens Rubber Band (ABI 2) and fills `api`; returns NULL, or what failed.
static inline const char *bl_rubberband_load(bl_rubberband_api *api) {
    void *lib = dlopen("librubberband.so.2", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return dlerror();
#define BL_RUBBERBAND_SYM(name) if (!(api->name = (__typeof__(api->name))dlsym(lib, #name))) return "missing " #name;
    BL_RUBBERBAND_FUNCTIONS(BL_RUBBERBAND_SYM)
#undef BL_RUBBERBAND_SYM
    return NULL;
}
#endif
