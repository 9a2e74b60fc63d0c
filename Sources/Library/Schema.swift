import CSQLite

#if canImport(Glibc)
import Glibc
#endif

/// The database's layout, by version. Each migration takes version N−1 to N in one transaction;
/// `PRAGMA user_version` says which one a file has. A file from a newer Backline is refused
/// (never written to); a file that is not a database, a damaged one, or one missing a table or
/// a column is moved aside and rebuilt by the next scan (only the library is lost: it is rebuilt
/// from the music directory); a missing index is made again in place.
enum Schema {
    /// The version this build writes.
    static let version = 2

    /// Migrations, the first taking an empty file to version 1.
    static let migrations: [String] = [
        """
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE tag_names(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        CREATE TABLE directories(
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,          -- relative to the music directory; '' is its root
            parent INTEGER,
            mtime INTEGER NOT NULL,
            sort_key BLOB NOT NULL              -- natural order, walk order: see LibraryStore.sortKey
        );
        CREATE INDEX directories_parent ON directories(parent);
        CREATE TABLE songs(
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,          -- relative to the music directory
            directory INTEGER NOT NULL,
            name TEXT NOT NULL,
            sort_key BLOB NOT NULL,             -- the directory's key, then the name's
            size INTEGER NOT NULL,
            mtime INTEGER NOT NULL,             -- nanoseconds
            inode INTEGER NOT NULL,
            device INTEGER NOT NULL,
            added INTEGER NOT NULL,             -- seconds, when first seen (kept across moves)
            duration REAL,
            format TEXT,                        -- the decoder: flac, mpg123, vorbis, opus, ffmpeg…
            rate INTEGER, bits TEXT, channels INTEGER, bitrate INTEGER,
            artwork INTEGER NOT NULL DEFAULT 0,
            error TEXT                          -- why it cannot be read (then it has no tags)
        );
        CREATE INDEX songs_directory ON songs(directory);
        CREATE INDEX songs_sort ON songs(sort_key);
        CREATE INDEX songs_inode ON songs(device, inode);
        CREATE TABLE tags(
            song INTEGER NOT NULL REFERENCES songs(id) ON DELETE CASCADE,
            key INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            value TEXT NOT NULL,
            folded TEXT,                        -- Fold.key(value), where it differs from value
            PRIMARY KEY(song, seq)              -- a song's tags in the file's order
        ) WITHOUT ROWID;
        CREATE INDEX tags_value ON tags(key, value);
        CREATE TABLE playlists(
            path TEXT PRIMARY KEY,
            directory INTEGER NOT NULL,
            mtime INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE skipped(
            path TEXT PRIMARY KEY,              -- as shown (a name that is not UTF-8 with \\xNN)
            reason TEXT NOT NULL
        ) WITHOUT ROWID;
        """,
        // 2: stickers, the listener's own values on songs (MPD's `sticker`): by song id, so
        // they follow a song its id follows (a move, a rescan) and go with it.
        """
        CREATE TABLE stickers(
            song INTEGER NOT NULL REFERENCES songs(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY(song, name)
        ) WITHOUT ROWID;
        CREATE INDEX stickers_name ON stickers(name);
        """,
    ]

    /// Why a database cannot be used.
    enum Problem: Error {
        case newer(Int)
        case sqlite(SQLiteError)
        /// Its tables or columns are not those of its version (a table dropped, a column
        /// missing): every scan and query would fail on it.
        case damaged(String)
        /// This build's own layout could not be made in memory: no file can be checked.
        case layoutUnknown(SQLiteError)
    }

    /// The tables, indexes and columns a database of this version has: each as
    /// `type name ON table` or `column table.name TYPE NOT NULL PK`.
    static func layout(_ db: SQLiteDatabase) throws(SQLiteError) -> Set<String> {
        var out = Set<String>()
        var tables: [String] = []
        let st = try db.prepare("SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
        while try st.step() {
            out.insert("\(st.text(0)) \(st.text(1)) ON \(st.text(2))")
            if st.text(0) == "table" { tables.append(st.text(1)) }
        }
        for t in tables {
            let c = try db.prepare("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?)")
            try c.bind([.text(t)])
            while try c.step() { out.insert("column \(t).\(c.text(0)) \(c.text(1)) \(c.int(2)) \(c.int(3))") }
        }
        return out
    }

    /// What a database made by this version's migrations has, and the statement making each
    /// of its indexes (by its ``layout(_:)`` entry).
    struct Expected: Sendable {
        var layout: Set<String>
        var indexes: [String: String]
    }

    /// ``Expected``, made once in memory by this version's migrations; SQLite's error when it
    /// could not be made.
    static let expected: Result<Expected, SQLiteError> = {
        do throws(SQLiteError) {
            let db = try SQLiteDatabase(path: ":memory:")
            do throws(Problem) { try migrate(db) } catch {
                if case .sqlite(let e) = error { throw e }
                throw SQLiteError("migrate", code: SQLITE_ERROR, message: "\(error)")
            }
            var indexes: [String: String] = [:]
            let st = try db.prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
            while try st.step() { indexes["index \(st.text(0)) ON \(st.text(1))"] = st.text(2) }
            return .success(Expected(layout: try layout(db), indexes: indexes))
        } catch {
            return .failure(error)
        }
    }()

    /// Checks that `db` (at ``version``) has every table, index and column of its version, and
    /// makes again each index it lacks (an index holds nothing its table does not: the library
    /// is kept). Returns the indexes made, as `index NAME ON TABLE`.
    /// - Throws: `.damaged` for a missing table or column; `.layoutUnknown` when this build's
    ///   layout cannot be made to check against; `.sqlite` when an index cannot be made.
    static func repairLayout(_ db: SQLiteDatabase) throws(Problem) -> [String] {
        let expected: Expected
        switch Self.expected {
        case .success(let e): expected = e
        case .failure(let e): throw .layoutUnknown(e)
        }
        func missing() throws(Problem) -> [String] {
            let found: Set<String>
            do { found = try layout(db) } catch { throw .sqlite(error) }
            // (Tables and indexes named first: a dropped table's columns are missing too.)
            return expected.layout.subtracting(found).sorted { ($0.hasPrefix("column") ? "1" : "0") + $0 < ($1.hasPrefix("column") ? "1" : "0") + $1 }
        }
        let lacking = try missing()
        let lost = lacking.filter { !$0.hasPrefix("index ") }
        guard lost.isEmpty else { throw .damaged("missing " + lost.prefix(5).joined(separator: ", ")) }
        guard !lacking.isEmpty else { return [] }
        do {
            try db.transaction { () throws(SQLiteError) in
                for entry in lacking { if let sql = expected.indexes[entry] { try db.execute(sql) } }
            }
        } catch { throw .sqlite(error) }
        let still = try missing()
        guard still.isEmpty else { throw .damaged("missing " + still.prefix(5).joined(separator: ", ")) }
        return lacking
    }

    /// Brings `db` to ``version`` (or refuses a newer one).
    static func migrate(_ db: SQLiteDatabase) throws(Problem) {
        let current: Int
        do { current = try db.integer("PRAGMA user_version") ?? 0 } catch { throw .sqlite(error) }
        guard current <= version else { throw .newer(current) }
        for v in current..<version {
            do {
                try db.transaction { () throws(SQLiteError) in
                    try db.execute(migrations[v])
                    try db.execute("PRAGMA user_version = \(v + 1)")
                }
            } catch { throw .sqlite(error) }
        }
    }

    /// The connection settings (as Navidrome runs SQLite): WAL, `synchronous=NORMAL` (a commit
    /// is durable at the next checkpoint, never torn), a busy timeout, foreign keys, a small
    /// page cache (the daemon's memory).
    static func configure(_ db: SQLiteDatabase, cacheKiB: Int = 1024) throws(SQLiteError) {
        try db.execute("""
            PRAGMA busy_timeout = 5000;
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            PRAGMA foreign_keys = ON;
            PRAGMA cache_size = -\(cacheKiB);
            PRAGMA temp_store = MEMORY;
            """)
    }
}
