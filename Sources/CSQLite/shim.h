#ifndef BACKLINE_CSQLITE_SHIM_H
#define BACKLINE_CSQLITE_SHIM_H
#include <sqlite3.h>

/// Binds text copied by SQLite (SQLITE_TRANSIENT is a cast macro Swift cannot import).
static inline int bl_sqlite3_bind_text(sqlite3_stmt *s, int i, const char *text, int bytes) {
    return sqlite3_bind_text(s, i, text, bytes, SQLITE_TRANSIENT);
}

/// Sets a function's text result, copied by SQLite.
static inline void bl_sqlite3_result_text(sqlite3_context *c, const char *text, int bytes) {
    sqlite3_result_text(c, text, bytes, SQLITE_TRANSIENT);
}
#endif
