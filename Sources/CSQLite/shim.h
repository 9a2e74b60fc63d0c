#ifndef BACKLINE_CSQLITE_SHIM_H
#define BACKLINE_CSQLITE_SHIM_H
// SQLite's header (apt libsqlite3-dev), and the library opened with dlopen the first time a
// database is opened (the daemon's music library): nothing links it, so a `play` does not load
// it, whose 1,596 symbol bindings cost ~2.3 M instructions in the dynamic loader at every start.
#include <sqlite3.h>
#include <dlfcn.h>
#include <stddef.h>

/// The SQLite functions Backline calls, resolved by `bl_sqlite3_load`.
typedef struct {
    __typeof__(&sqlite3_bind_double) sqlite3_bind_double;
    __typeof__(&sqlite3_bind_int64) sqlite3_bind_int64;
    __typeof__(&sqlite3_bind_null) sqlite3_bind_null;
    __typeof__(&sqlite3_bind_text) sqlite3_bind_text;
    __typeof__(&sqlite3_changes) sqlite3_changes;
    __typeof__(&sqlite3_clear_bindings) sqlite3_clear_bindings;
    __typeof__(&sqlite3_close_v2) sqlite3_close_v2;
    __typeof__(&sqlite3_column_bytes) sqlite3_column_bytes;
    __typeof__(&sqlite3_column_double) sqlite3_column_double;
    __typeof__(&sqlite3_column_int64) sqlite3_column_int64;
    __typeof__(&sqlite3_column_text) sqlite3_column_text;
    __typeof__(&sqlite3_column_type) sqlite3_column_type;
    __typeof__(&sqlite3_create_function_v2) sqlite3_create_function_v2;
    __typeof__(&sqlite3_errmsg) sqlite3_errmsg;
    __typeof__(&sqlite3_errstr) sqlite3_errstr;
    __typeof__(&sqlite3_exec) sqlite3_exec;
    __typeof__(&sqlite3_extended_errcode) sqlite3_extended_errcode;
    __typeof__(&sqlite3_extended_result_codes) sqlite3_extended_result_codes;
    __typeof__(&sqlite3_finalize) sqlite3_finalize;
    __typeof__(&sqlite3_free) sqlite3_free;
    __typeof__(&sqlite3_get_auxdata) sqlite3_get_auxdata;
    __typeof__(&sqlite3_last_insert_rowid) sqlite3_last_insert_rowid;
    __typeof__(&sqlite3_next_stmt) sqlite3_next_stmt;
    __typeof__(&sqlite3_open_v2) sqlite3_open_v2;
    __typeof__(&sqlite3_prepare_v2) sqlite3_prepare_v2;
    __typeof__(&sqlite3_progress_handler) sqlite3_progress_handler;
    __typeof__(&sqlite3_reset) sqlite3_reset;
    __typeof__(&sqlite3_result_error) sqlite3_result_error;
    __typeof__(&sqlite3_result_int) sqlite3_result_int;
    __typeof__(&sqlite3_result_null) sqlite3_result_null;
    __typeof__(&sqlite3_result_text) sqlite3_result_text;
    __typeof__(&sqlite3_set_auxdata) sqlite3_set_auxdata;
    __typeof__(&sqlite3_step) sqlite3_step;
    __typeof__(&sqlite3_user_data) sqlite3_user_data;
    __typeof__(&sqlite3_value_int) sqlite3_value_int;
    __typeof__(&sqlite3_value_text) sqlite3_value_text;
} bl_sqlite3_api;

/// Opens SQLite (ABI 0) and fills `api`; returns NULL, or what failed.
static inline const char *bl_sqlite3_load(bl_sqlite3_api *api) {
    void *lib = dlopen("libsqlite3.so.0", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return dlerror();
#define BL_SQLITE3_SYM(name) if (!(api->name = (__typeof__(api->name))dlsym(lib, #name))) return "missing " #name;
    BL_SQLITE3_SYM(sqlite3_bind_double)
    BL_SQLITE3_SYM(sqlite3_bind_int64)
    BL_SQLITE3_SYM(sqlite3_bind_null)
    BL_SQLITE3_SYM(sqlite3_bind_text)
    BL_SQLITE3_SYM(sqlite3_changes)
    BL_SQLITE3_SYM(sqlite3_clear_bindings)
    BL_SQLITE3_SYM(sqlite3_close_v2)
    BL_SQLITE3_SYM(sqlite3_column_bytes)
    BL_SQLITE3_SYM(sqlite3_column_double)
    BL_SQLITE3_SYM(sqlite3_column_int64)
    BL_SQLITE3_SYM(sqlite3_column_text)
    BL_SQLITE3_SYM(sqlite3_column_type)
    BL_SQLITE3_SYM(sqlite3_create_function_v2)
    BL_SQLITE3_SYM(sqlite3_errmsg)
    BL_SQLITE3_SYM(sqlite3_errstr)
    BL_SQLITE3_SYM(sqlite3_exec)
    BL_SQLITE3_SYM(sqlite3_extended_errcode)
    BL_SQLITE3_SYM(sqlite3_extended_result_codes)
    BL_SQLITE3_SYM(sqlite3_finalize)
    BL_SQLITE3_SYM(sqlite3_free)
    BL_SQLITE3_SYM(sqlite3_get_auxdata)
    BL_SQLITE3_SYM(sqlite3_last_insert_rowid)
    BL_SQLITE3_SYM(sqlite3_next_stmt)
    BL_SQLITE3_SYM(sqlite3_open_v2)
    BL_SQLITE3_SYM(sqlite3_prepare_v2)
    BL_SQLITE3_SYM(sqlite3_progress_handler)
    BL_SQLITE3_SYM(sqlite3_reset)
    BL_SQLITE3_SYM(sqlite3_result_error)
    BL_SQLITE3_SYM(sqlite3_result_int)
    BL_SQLITE3_SYM(sqlite3_result_null)
    BL_SQLITE3_SYM(sqlite3_result_text)
    BL_SQLITE3_SYM(sqlite3_set_auxdata)
    BL_SQLITE3_SYM(sqlite3_step)
    BL_SQLITE3_SYM(sqlite3_user_data)
    BL_SQLITE3_SYM(sqlite3_value_int)
    BL_SQLITE3_SYM(sqlite3_value_text)
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
