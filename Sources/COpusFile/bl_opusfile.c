#include "bl_opusfile.h"
#include <dlfcn.h>
#include <stddef.h>

const char *bl_opusfile_load(bl_opusfile_api *api) {
    void *lib = dlopen("libopusfile.so.0", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return dlerror();
#define BL_OPUSFILE_SYM(name) if (!(api->name = (__typeof__(api->name))dlsym(lib, #name))) return "missing " #name;
    BL_OPUSFILE_FUNCTIONS(BL_OPUSFILE_SYM)
#undef BL_OPUSFILE_SYM
    return NULL;
}
