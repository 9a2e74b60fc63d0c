#ifndef BACKLINE_CSQLITE_SHIM_H
#define BACKLINE_CSQLITE_SHIM_H
// SQLite's header (apt libsqlite3-dev), and the library opened with dlopen the first time a
// database is opened (the daemon's music library): nothing links it, so a `play` does not load
// it, whose 1,596 symbol bindings cost ~2.3 M instructions in the dynamic loader at every start.
#include <sqlite3.h>
#include <dlfcn.h>
#include <stddef.h>

/// The SQLite functions Backline calls: this one list makes both the table's fields and
/// `bl_sqlite3_load`'s look-ups (a function added here is declared and resolved).
#define BL_SQLITE3_FUNCTIONS(X) \
    X(sqlite3_bind_double) \
    X(sqlite3_bind_int64) \
    X(sqlite3_bind_null) \
    X(sqlite3_bind_text) \
    X(sqlite3_changes) \
    X(sqlite3_clear_bindings) \
    X(sqlite3_close_v2) \
    X(sqlite3_column_bytes) \
    X(sqlite3_column_double) \
    X(sqlite3_column_int64) \
    X(sqlite3_column_text) \
    X(sqlite3_column_type) \
    X(sqlite3_create_function_v2) \
    X(sqlite3_errmsg) \
    X(sqlite3_errstr) \
    X(sqlite3_exec) \
    X(sqlite3_extended_errcode) \
    X(sqlite3_extended_result_codes) \
    X(sqlite3_finalize) \
    X(sqlite3_free) \
    X(sqlite3_get_auxdata) \
    X(sqlite3_last_insert_rowid) \
    X(sqlite3_next_stmt) \
    X(sqlite3_open_v2) \
    X(sqlite3_prepare_v2) \
    X(sqlite3_progress_handler) \
    X(sqlite3_reset) \
    X(sqlite3_result_error) \
    X(sqlite3_result_int) \
    X(sqlite3_result_null) \
    X(sqlite3_result_text) \
    X(sqlite3_set_auxdata) \
    X(sqlite3_step) \
    X(sqlite3_user_data) \
    X(sqlite3_value_int) \
    X(sqlite3_value_text)

/// The SQLite functions Backline calls, resolved by `bl_sqlite3_load`.
typedef struct {
#define BL_SQLITE3_FIELD(name) __typeof__(&name) name;
    BL_SQLITE3_FUNCTIONS(BL_SQLITE3_FIELD)
#undef BL_SQLITE3_FIELD
} bl_sqlite3_api;

/// Opens SQLite (ABI 0) and fills `api`; returns NULL, or what failed.
static inline const char *bl_sqlite3_load(bl_sqlite3_api *api) {
    void *lib = dlopen("libsqlite3.so.0", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return dlerror();
#define BL_SQLITE3_SYM(name) if (!(api->name = (__typeof__(api->name))dlsym(lib, #name))) return "missing " #name;
    BL_SQLITE3_FUNCTIONS(BL_SQLITE3_SYM)
#undef BL_SQLITE3_SYM
    return NULL;
}

/// Binds text copied by SQLite (SQLITE_TRANSIENT is a cast macro Swift cannot import).
static inline int bl_sqlite3_bind_text(const bl_sqlite3_api *api, sqlite3_stmt *s, int i, const char *text, int bytes) {
    return api->sqlite3_bind_text(s, i, text, bytes, SQLITE_TRANSIENT);
}

/// Sets a function's text result, copied by SQLite.
static inline void bl_sqlite3_result_text(const bl_sqlite3_api *api, sqlite3_context *c, const char *text, int bytes) {
    api->sqlite3_result_text(c, text, bytes, SQLITE_TRANSIENT);
}
#endif
