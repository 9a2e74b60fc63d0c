#ifndef BACKLINE_CCURL_SHIM_H
#define BACKLINE_CCURL_SHIM_H
// libcurl's headers (apt libcurl4-openssl-dev), and the library opened with dlopen the first time
// an HTTP item plays: nothing links it, so `play` of a local file pays none of libcurl's TLS,
// HTTP/2 and IDN dependencies in start-up time or memory (as FFmpeg's, see CFFmpeg).
#include <curl/curl.h>
#include <dlfcn.h>

/// The libcurl functions Backline calls, resolved by `bl_curl_load`.
typedef struct {
    __typeof__(&curl_global_init) curl_global_init;
    __typeof__(&curl_easy_init) curl_easy_init;
    __typeof__(&curl_easy_cleanup) curl_easy_cleanup;
    __typeof__(&curl_easy_perform) curl_easy_perform;
    __typeof__(&curl_easy_setopt) curl_easy_setopt;
    __typeof__(&curl_easy_getinfo) curl_easy_getinfo;
    __typeof__(&curl_easy_strerror) curl_easy_strerror;
    __typeof__(&curl_slist_append) curl_slist_append;
    __typeof__(&curl_slist_free_all) curl_slist_free_all;
} bl_curl_api;

/// Opens libcurl (ABI 4) and fills `api`; returns NULL, or what failed.
static inline const char *bl_curl_load(bl_curl_api *api) {
    void *lib = dlopen("libcurl.so.4", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return dlerror();
#define BL_CURL_SYM(name) if (!(api->name = (__typeof__(api->name))dlsym(lib, #name))) return "missing " #name;
    BL_CURL_SYM(curl_global_init)
    BL_CURL_SYM(curl_easy_init)
    BL_CURL_SYM(curl_easy_cleanup)
    BL_CURL_SYM(curl_easy_perform)
    BL_CURL_SYM(curl_easy_setopt)
    BL_CURL_SYM(curl_easy_getinfo)
    BL_CURL_SYM(curl_easy_strerror)
    BL_CURL_SYM(curl_slist_append)
    BL_CURL_SYM(curl_slist_free_all)
#undef BL_CURL_SYM
    if (api->curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return "curl_global_init failed";
    return NULL;
}

// curl_easy_setopt and curl_easy_getinfo are variadic: Swift calls them through these.
static inline CURLcode bl_curl_set_long(const bl_curl_api *api, CURL *h, CURLoption o, long v) { return api->curl_easy_setopt(h, o, v); }
static inline CURLcode bl_curl_set_ptr(const bl_curl_api *api, CURL *h, CURLoption o, const void *v) { return api->curl_easy_setopt(h, o, v); }
static inline CURLcode bl_curl_set_offset(const bl_curl_api *api, CURL *h, CURLoption o, curl_off_t v) { return api->curl_easy_setopt(h, o, v); }
typedef size_t (*bl_curl_data_callback)(char *, size_t, size_t, void *);
typedef int (*bl_curl_progress_callback)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t);
static inline CURLcode bl_curl_set_data_callback(const bl_curl_api *api, CURL *h, CURLoption o, bl_curl_data_callback f) { return api->curl_easy_setopt(h, o, f); }
static inline CURLcode bl_curl_set_progress_callback(const bl_curl_api *api, CURL *h, bl_curl_progress_callback f) {
    return api->curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f);
}
static inline CURLcode bl_curl_get_long(const bl_curl_api *api, CURL *h, CURLINFO i, long *v) { return api->curl_easy_getinfo(h, i, v); }
static inline CURLcode bl_curl_get_string(const bl_curl_api *api, CURL *h, CURLINFO i, char **v) { return api->curl_easy_getinfo(h, i, v); }
#endif
