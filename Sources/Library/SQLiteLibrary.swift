import CSQLite

/// SQLite, opened with `dlopen` the first time a database is opened (see `CSQLite`): a `play`
/// never loads it (linked, its 1,596 symbol bindings cost ~2.3 M instructions of the dynamic
/// loader at every start).
enum SQLiteLibrary {
    /// The functions (loaded once, for the life of the process), or why they could not be loaded.
    nonisolated(unsafe) static let api: Result<UnsafePointer<bl_sqlite3_api>, SQLiteError> = {
        let api = UnsafeMutablePointer<bl_sqlite3_api>.allocate(capacity: 1)
        api.initialize(to: bl_sqlite3_api())
        if let failure = bl_sqlite3_load(api) {
            api.deallocate()
            return .failure(SQLiteError("load", code: SQLITE_CANTOPEN, message: "libsqlite3 is not installed (\(String(cString: failure)))"))
        }
        return .success(UnsafePointer(api))
    }()

    /// The loaded functions. Every call below comes after `SQLiteDatabase.init` checked `api`
    /// (it throws the failure before any other call), so the failure is unreachable here.
    static var table: UnsafePointer<bl_sqlite3_api> {
        switch api {
        case .success(let table): return table
        case .failure(let error): preconditionFailure("\(error)")
        }
    }
}

// The SQLite functions the module calls, with the C declarations' names and types: declared in
// this module, they shadow `CSQLite`'s (which nothing links) inside it, so the call sites read as
// SQLite's own API. Each calls through the table `SQLiteLibrary.api` loaded.

@discardableResult func sqlite3_bind_double(_ s: OpaquePointer?, _ i: Int32, _ v: Double) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_bind_double(s, i, v) }
@discardableResult func sqlite3_bind_int64(_ s: OpaquePointer?, _ i: Int32, _ v: sqlite3_int64) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_bind_int64(s, i, v) }
@discardableResult func sqlite3_bind_null(_ s: OpaquePointer?, _ i: Int32) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_bind_null(s, i) }
@discardableResult func sqlite3_changes(_ db: OpaquePointer?) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_changes(db) }
@discardableResult func sqlite3_clear_bindings(_ s: OpaquePointer?) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_clear_bindings(s) }
@discardableResult func sqlite3_close_v2(_ db: OpaquePointer?) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_close_v2(db) }
@discardableResult func sqlite3_column_bytes(_ s: OpaquePointer?, _ column: Int32) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_column_bytes(s, column) }
func sqlite3_column_double(_ s: OpaquePointer?, _ column: Int32) -> Double { SQLiteLibrary.table.pointee.sqlite3_column_double(s, column) }
func sqlite3_column_int64(_ s: OpaquePointer?, _ column: Int32) -> sqlite3_int64 { SQLiteLibrary.table.pointee.sqlite3_column_int64(s, column) }
func sqlite3_column_text(_ s: OpaquePointer?, _ column: Int32) -> UnsafePointer<UInt8>! { SQLiteLibrary.table.pointee.sqlite3_column_text(s, column) }
func sqlite3_column_type(_ s: OpaquePointer?, _ column: Int32) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_column_type(s, column) }
@discardableResult func sqlite3_create_function_v2(
    _ db: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ arguments: Int32, _ encoding: Int32, _ app: UnsafeMutableRawPointer?,
    _ function: (@convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void)?,
    _ step: (@convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void)?,
    _ final: (@convention(c) (OpaquePointer?) -> Void)?,
    _ destroy: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?
) -> Int32 {
    SQLiteLibrary.table.pointee.sqlite3_create_function_v2(db, name, arguments, encoding, app, function, step, final, destroy)
}
func sqlite3_errmsg(_ db: OpaquePointer?) -> UnsafePointer<CChar>! { SQLiteLibrary.table.pointee.sqlite3_errmsg(db) }
func sqlite3_errstr(_ code: Int32) -> UnsafePointer<CChar>! { SQLiteLibrary.table.pointee.sqlite3_errstr(code) }
@discardableResult func sqlite3_exec(
    _ db: OpaquePointer?, _ sql: UnsafePointer<CChar>?,
    _ callback: (@convention(c) (UnsafeMutableRawPointer?, Int32, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32)?,
    _ argument: UnsafeMutableRawPointer?, _ message: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> Int32 {
    SQLiteLibrary.table.pointee.sqlite3_exec(db, sql, callback, argument, message)
}
func sqlite3_extended_errcode(_ db: OpaquePointer?) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_extended_errcode(db) }
@discardableResult func sqlite3_extended_result_codes(_ db: OpaquePointer?, _ on: Int32) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_extended_result_codes(db, on) }
@discardableResult func sqlite3_finalize(_ s: OpaquePointer?) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_finalize(s) }
func sqlite3_free(_ p: UnsafeMutableRawPointer?) { SQLiteLibrary.table.pointee.sqlite3_free(p) }
func sqlite3_get_auxdata(_ context: OpaquePointer?, _ n: Int32) -> UnsafeMutableRawPointer! { SQLiteLibrary.table.pointee.sqlite3_get_auxdata(context, n) }
func sqlite3_last_insert_rowid(_ db: OpaquePointer?) -> sqlite3_int64 { SQLiteLibrary.table.pointee.sqlite3_last_insert_rowid(db) }
func sqlite3_next_stmt(_ db: OpaquePointer?, _ s: OpaquePointer?) -> OpaquePointer! { SQLiteLibrary.table.pointee.sqlite3_next_stmt(db, s) }
func sqlite3_open_v2(_ path: UnsafePointer<CChar>?, _ db: UnsafeMutablePointer<OpaquePointer?>?, _ flags: Int32, _ vfs: UnsafePointer<CChar>?) -> Int32 {
    SQLiteLibrary.table.pointee.sqlite3_open_v2(path, db, flags, vfs)
}
func sqlite3_prepare_v2(_ db: OpaquePointer?, _ sql: UnsafePointer<CChar>?, _ bytes: Int32, _ s: UnsafeMutablePointer<OpaquePointer?>?, _ tail: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32 {
    SQLiteLibrary.table.pointee.sqlite3_prepare_v2(db, sql, bytes, s, tail)
}
func sqlite3_progress_handler(_ db: OpaquePointer?, _ n: Int32, _ callback: (@convention(c) (UnsafeMutableRawPointer?) -> Int32)?, _ p: UnsafeMutableRawPointer?) {
    SQLiteLibrary.table.pointee.sqlite3_progress_handler(db, n, callback, p)
}
@discardableResult func sqlite3_reset(_ s: OpaquePointer?) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_reset(s) }
func sqlite3_result_error(_ context: OpaquePointer?, _ message: UnsafePointer<CChar>?, _ bytes: Int32) {
    SQLiteLibrary.table.pointee.sqlite3_result_error(context, message, bytes)
}
func sqlite3_result_int(_ context: OpaquePointer?, _ v: Int32) { SQLiteLibrary.table.pointee.sqlite3_result_int(context, v) }
func sqlite3_result_null(_ context: OpaquePointer?) { SQLiteLibrary.table.pointee.sqlite3_result_null(context) }
func sqlite3_set_auxdata(_ context: OpaquePointer?, _ n: Int32, _ p: UnsafeMutableRawPointer?, _ destroy: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) {
    SQLiteLibrary.table.pointee.sqlite3_set_auxdata(context, n, p, destroy)
}
func sqlite3_user_data(_ context: OpaquePointer?) -> UnsafeMutableRawPointer? { SQLiteLibrary.table.pointee.sqlite3_user_data(context) }
func sqlite3_step(_ s: OpaquePointer?) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_step(s) }
func sqlite3_value_int(_ value: OpaquePointer?) -> Int32 { SQLiteLibrary.table.pointee.sqlite3_value_int(value) }
func sqlite3_value_text(_ value: OpaquePointer?) -> UnsafePointer<UInt8>! { SQLiteLibrary.table.pointee.sqlite3_value_text(value) }

/// Binds text copied by SQLite (`SQLITE_TRANSIENT`, through the C shim).
func bl_sqlite3_bind_text(_ s: OpaquePointer?, _ i: Int32, _ text: UnsafePointer<CChar>?, _ bytes: Int32) -> Int32 {
    CSQLite.bl_sqlite3_bind_text(SQLiteLibrary.table, s, i, text, bytes)
}

/// Sets a function's text result, copied by SQLite.
func bl_sqlite3_result_text(_ context: OpaquePointer?, _ text: UnsafePointer<CChar>?, _ bytes: Int32) {
    CSQLite.bl_sqlite3_result_text(SQLiteLibrary.table, context, text, bytes)
}
