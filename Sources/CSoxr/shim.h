#ifndef BACKLINE_CSOXR_SHIM_H
#define BACKLINE_CSOXR_SHIM_H
// libsoxr's header (apt libsoxr-dev), and the library opened with dlopen the first time the pipe
// output resamples (an item at another rate than the pipe's): nothing links it, so a `play` does
// not load it nor the OpenMP runtime it depends on (libgomp): 92 KiB and 288 KiB resident in a
// `play` when it was linked.
#include <soxr.h>
#include <dlfcn.h>
#include <stddef.h>

/// The libsoxr functions Backline calls: this one list makes both the table's fields and
/// `bl_soxr_load`'s look-ups (a function added here is declared and resolved).
#define BL_SOXR_FUNCTIONS(X) \
    X(soxr_clear) \
    X(soxr_create) \
    X(soxr_delay) \
    X(soxr_delete) \
    X(soxr_io_spec) \
    X(soxr_process) \
    X(soxr_quality_spec)

/// The libsoxr functions Backline calls, resolved by `bl_soxr_load`.
typedef struct {
#define BL_SOXR_FIELD(name) __typeof__(&name) name;
    BL_SOXR_FUNCTIONS(BL_SOXR_FIELD)
#undef BL_SOXR_FIELD
} bl_soxr_api;

/// Opens libsoxr (ABI 0) and fills `api`; returns NULL, or what failed.
static inline const char *bl_soxr_load(bl_soxr_api *api) {
    void *lib = dlopen("libsoxr.so.0", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return dlerror();
#define BL_SOXR_SYM(name) if (!(api->name = (__typeof__(api->name))dlsym(lib, #name))) return "missing " #name;
    BL_SOXR_FUNCTIONS(BL_SOXR_SYM)
#undef BL_SOXR_SYM
    return NULL;
}
#endif
