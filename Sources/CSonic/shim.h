#ifndef BACKLINE_CSONIC_SHIM_H
#define BACKLINE_CSONIC_SHIM_H
// libsonic's header (apt libsonic-dev), and the library opened with dlopen the first time an
// item plays at a rate other than 1 with the time-domain algorithm: nothing links it, so
// playback at rate 1 never loads it.
#include <sonic.h>
#include <dlfcn.h>
#include <stddef.h>

/// The libsonic functions Backline calls: this one list makes both the table's fields and
/// `bl_sonic_load`'s look-ups.
#define BL_SONIC_FUNCTIONS(X) \
    X(sonicCreateStream) \
    X(sonicDestroyStream) \
    X(sonicWriteFloatToStream) \
    X(sonicReadFloatFromStream) \
    X(sonicFlushStream) \
    X(sonicSamplesAvailable) \
    X(sonicSetSpeed)

/// The libsonic functions Backline calls, resolved by `bl_sonic_load`.
typedef struct {
#define BL_SONIC_FIELD(name) __typeof__(&name) name;
    BL_SONIC_FUNCTIONS(BL_SONIC_FIELD)
#undef BL_SONIC_FIELD
} bl_sonic_api;

/// Opens libsonic (ABI 0) and fills `api`; returns NULL, or what failed.
static inline const char *bl_sonic_load(bl_sonic_api *api) {
    void *lib = dlopen("libsonic.so.0", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return dlerror();
#define BL_SONIC_SYM(name) if (!(api->name = (__typeof__(api->name))dlsym(lib, #name))) return "missing " #name;
    BL_SONIC_FUNCTIONS(BL_SONIC_SYM)
#undef BL_SONIC_SYM
    return NULL;
}
#endif
