import CSQLite

#if canImport(Glibc)
import Glibc
#endif

/// A failed SQLite call: the function, SQLite's result code (extended) and its message.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// What was being done (`open`, `prepare`, `step`…).
    public var operation: String
    /// SQLite's extended result code (`SQLITE_CORRUPT` is 11, `SQLITE_BUSY` 5…).
    public var code: Int32
    /// SQLite's message.
    public var message: String

    public init(_ operation: String, code: Int32, message: String) {
        (self.operation, self.code, self.message) = (operation, code, message)
    }

    /// The primary result code (the extended code's low byte).
    public var primary: Int32 { code & 0xFF }
    /// Whether the file is not a database, or a damaged one.
    public var isCorruption: Bool { primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB }

    public var description: String { "\(operation): \(message) (SQLite \(code))" }
}

/// One SQLite connection (not shared between threads at once: each owner serialises its use).
/// A thin typed wrapper: statements, bindings, rows, transactions; every failure an
/// ``SQLiteError`` carrying SQLite's code and message.
final class SQLiteDatabase {
    let handle: OpaquePointer
    let path: String
    private var cache: [String: SQLiteStatement] = [:]

    /// Opens (creating when `create`) the database at `path`.
    init(path: String, readOnly: Bool = false, create: Bool = true) throws(SQLiteError) {
        // SQLite is opened with dlopen at the first database (SQLiteLibrary): not installed, no call can be made.
        if case .failure(let failure) = SQLiteLibrary.api {
            throw SQLiteError("open \(path)", code: failure.code, message: failure.message)
        }
        var db: OpaquePointer?
        var flags = SQLITE_OPEN_NOMUTEX | (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE)
        if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError("open \(path)", code: rc, message: message)
        }
        sqlite3_extended_result_codes(db, 1)
        handle = db
        self.path = path
    }

    deinit {
        cache.removeAll()
        sqlite3_close_v2(handle)
    }

    func error(_ operation: String, _ rc: Int32) -> SQLiteError {
        SQLiteError(operation, code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
    }

    /// Runs `sql` (one or more statements, no parameters).
    func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        guard rc == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(message)
            throw SQLiteError("exec", code: sqlite3_extended_errcode(handle), message: text)
        }
    }

    /// A statement for `sql`, prepared once per connection and kept (reset for reuse).
    func cached(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let s = cache[sql] {
            s.reset()
            return s
        }
        let s = try prepare(sql)
        cache[sql] = s
        return s
    }

    /// A new statement for `sql`.
    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error("prepare", rc) }
        return SQLiteStatement(stmt, database: self)
    }

    /// Runs `body` in a transaction (`BEGIN IMMEDIATE`: a writer), committed when it returns,
    /// rolled back when it throws.
    func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// The first column of the first row of `sql` as an integer (nil: no row or NULL).
    func integer(_ sql: String, _ bindings: [SQLiteValue] = []) throws(SQLiteError) -> Int? {
        let s = try cached(sql)
        defer { s.reset() }
        try s.bind(bindings)
        guard try s.step(), !s.isNull(0) else { return nil }
        return s.int(0)
    }

    /// Resets every statement of the connection: one left inside its rows holds a read
    /// transaction (an old snapshot, and a WAL that cannot be checkpointed past it).
    func resetStatements() {
        var stmt = sqlite3_next_stmt(handle, nil)
        while let s = stmt {
            sqlite3_reset(s)
            stmt = sqlite3_next_stmt(handle, s)
        }
    }

    var changes: Int { Int(sqlite3_changes(handle)) }
    var lastInsertRowID: Int { Int(sqlite3_last_insert_rowid(handle)) }
}

/// A value bound to a statement's parameter.
enum SQLiteValue {
    case int(Int)
    case double(Double)
    case text(String)
    case null
}

/// A prepared statement: bind, step through rows, read columns.
final class SQLiteStatement {
    let handle: OpaquePointer
    unowned let database: SQLiteDatabase

    init(_ handle: OpaquePointer, database: SQLiteDatabase) {
        self.handle = handle
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Binds `values` to parameters 1…n.
    func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        for (i, v) in values.enumerated() { try bind(v, at: Int32(i + 1)) }
    }

    func bind(_ v: SQLiteValue, at i: Int32) throws(SQLiteError) {
        let rc: Int32
        switch v {
        case .int(let n): rc = sqlite3_bind_int64(handle, i, Int64(n))
        case .double(let d): rc = sqlite3_bind_double(handle, i, d)
        case .null: rc = sqlite3_bind_null(handle, i)
        case .text(let s):
            let n = Int32(s.utf8.count)
            rc = s.withCString { bl_sqlite3_bind_text(handle, i, $0, n) }
        }
        guard rc == SQLITE_OK else { throw database.error("bind", rc) }
    }

    /// Steps once: true when a row is ready, false when done.
    @discardableResult
    func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw database.error("step", rc)
    }

    /// Binds `values` and runs to completion.
    func run(_ values: [SQLiteValue] = []) throws(SQLiteError) {
        sqlite3_reset(handle)
        try bind(values)
        while try step() {}
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }
    func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(handle, column) else { return "" }
        let n = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }
    func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }
    func optionalInt(_ column: Int32) -> Int? { isNull(column) ? nil : int(column) }
    func optionalDouble(_ column: Int32) -> Double? { isNull(column) ? nil : double(column) }
}
