import CSQLite
import Locking
import Synchronization

// Stickers: values a listener (or the daemon) keeps on a song, as MPD's `sticker` commands
// read and write them — a rating, a play count, where a book was left. They live in the
// library's database, by song id: a song keeps them when it moves within the music directory
// or is read again, and they go when the song leaves the library.

/// How ``MusicLibrary/findStickers(_:under:matching:sort:window:)`` compares a sticker's value
/// (MPD's operators: `=`, `<`, `>` compare text; mpd 0.24's `eq`, `lt`, `gt` compare integers,
/// `contains` and `starts_with` text, ignoring the case of A–Z as mpd's SQL `LIKE` does).
public enum StickerOperator: String, Sendable, CaseIterable {
    case equals = "="
    case less = "<"
    case greater = ">"
    case equalsInteger = "eq"
    case lessInteger = "lt"
    case greaterInteger = "gt"
    case contains
    case startsWith = "starts_with"

    /// The SQL condition on `column`, `parameter` its operand.
    func condition(_ column: String, _ parameter: String) -> String {
        switch self {
        case .equals: "\(column) = \(parameter)"
        case .less: "\(column) < \(parameter)"
        case .greater: "\(column) > \(parameter)"
        case .equalsInteger: "CAST(\(column) AS INTEGER) = CAST(\(parameter) AS INTEGER)"
        case .lessInteger: "CAST(\(column) AS INTEGER) < CAST(\(parameter) AS INTEGER)"
        case .greaterInteger: "CAST(\(column) AS INTEGER) > CAST(\(parameter) AS INTEGER)"
        // (Letters A–Z matched either case, as mpd's LIKE does; `%` and `_` are themselves.)
        case .contains: "instr(lower(\(column)), lower(\(parameter))) > 0"
        case .startsWith: "substr(lower(\(column)), 1, length(\(parameter))) = lower(\(parameter))"
        }
    }
}

/// The order of ``MusicLibrary/findStickers(_:under:matching:sort:window:)``'s answer (mpd
/// 0.24's `sort uri|value|value_int`, `-` before it for descending). Without one: by path.
public struct StickerSort: Sendable, Equatable {
    public enum Key: String, Sendable, CaseIterable {
        case path = "uri"
        case value
        case integerValue = "value_int"
    }
    public var key: Key
    public var descending: Bool
    public init(_ key: Key, descending: Bool = false) { (self.key, self.descending) = (key, descending) }

    /// From MPD's word (`value_int`, `-uri`); nil for another.
    public init?(mpd word: String) {
        let descending = word.hasPrefix("-")
        guard let key = Key(rawValue: descending ? String(word.dropFirst()) : word) else { return nil }
        self.init(key, descending: descending)
    }

    var orderBy: String {
        let direction = descending ? "DESC" : "ASC"
        switch key {
        case .path: return "s.path \(direction)"
        case .value: return "k.value \(direction), s.path"
        case .integerValue: return "CAST(k.value AS INTEGER) \(direction), s.path"
        }
    }
}

/// A song's sticker found by ``MusicLibrary/findStickers(_:under:matching:sort:window:)``.
public struct FoundSticker: Sendable, Equatable {
    /// The song, relative to the music directory.
    public var path: String
    public var value: String
    public init(path: String, value: String) { (self.path, self.value) = (path, value) }
}

/// The bounds of what a sticker holds: a client (MPD's, or the JSON protocol's) cannot make
/// the database grow without bound, nor forge a line of a reply with a control character.
public enum StickerLimits {
    /// A name's most bytes (UTF-8).
    public static let nameBytes = 256
    /// A value's most bytes (UTF-8).
    public static let valueBytes = 4096
    /// The most stickers one song holds.
    public static let perSong = 256

    /// Why `name` cannot be a sticker's name, or nil.
    public static func problem(name: String) -> String? {
        if name.isEmpty { return "empty sticker name" }
        if name.utf8.count > nameBytes { return "sticker name longer than \(nameBytes) bytes" }
        if name.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) { return "sticker name holds a control character" }
        return nil
    }

    /// Why `value` cannot be a sticker's value, or nil.
    public static func problem(value: String) -> String? {
        if value.utf8.count > valueBytes { return "sticker value longer than \(valueBytes) bytes" }
        if value.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) { return "sticker value holds a control character" }
        return nil
    }
}

extension MusicLibrary {
    /// Runs `body` in a transaction on the writer connection (stickers are written outside the
    /// scan thread; SQLite's busy timeout waits out a scan's batch).
    func write<T: Sendable>(_ body: (SQLiteDatabase) throws(SQLiteError) -> T) throws(LibraryError) -> T {
        try stickerWriter.withLock { box throws(LibraryError) -> T in
            if box == nil {
                do throws(SQLiteError) {
                    let db = try SQLiteDatabase(path: path)
                    try Schema.configure(db, cacheKiB: 256)
                    box = WriterBox(db)
                } catch { throw LibraryError(error) }
            }
            let db = box!.db
            defer { db.resetStatements() }
            do throws(SQLiteError) {
                return try db.transaction { () throws(SQLiteError) -> T in try body(db) }
            } catch { throw LibraryError(error) }
        }
    }

    /// The id of the readable song at `path` (relative to the music directory).
    static func songID(_ db: SQLiteDatabase, _ path: String) throws(SQLiteError) -> Int? {
        try db.integer("SELECT id FROM songs WHERE path = ? AND error IS NULL", [.text(normalize(path))])
    }

    static let noSuchSong = LibraryError(.notFound, "No such song")

    /// Every sticker of the song at `path`, by name.
    /// - Throws: `.notFound` (`No such song`) when the library has no such song.
    public func stickers(_ path: String) throws(LibraryError) -> [(name: String, value: String)] {
        let found = try read { db throws(SQLiteError) -> [(name: String, value: String)]? in
            guard let id = try Self.songID(db, path) else { return nil }
            let st = try db.cached("SELECT name, value FROM stickers WHERE song = ? ORDER BY name")
            try st.bind([.int(id)])
            var out: [(name: String, value: String)] = []
            while try st.step() { out.append((st.text(0), st.text(1))) }
            return out
        }
        guard let found else { throw Self.noSuchSong }
        return found
    }

    /// The sticker `name` of the song at `path`, or nil when it has none of that name.
    /// - Throws: `.notFound` (`No such song`) when the library has no such song.
    public func sticker(_ path: String, _ name: String) throws(LibraryError) -> String? {
        let found = try read { db throws(SQLiteError) -> String?? in
            guard let id = try Self.songID(db, path) else { return nil }
            let st = try db.cached("SELECT value FROM stickers WHERE song = ? AND name = ?")
            try st.bind([.int(id), .text(name)])
            return .some(try st.step() ? st.text(0) : nil)
        }
        guard let found else { throw Self.noSuchSong }
        return found
    }

    /// The stickers `names` of the songs at `paths` (those the library has): a list's songs
    /// with their rating and play count, in one query per 500 songs.
    public func stickers(atPaths paths: [String], names: [String]) throws(LibraryError) -> [String: [String: String]] {
        guard !paths.isEmpty, !names.isEmpty else { return [:] }
        return try read { db throws(SQLiteError) -> [String: [String: String]] in
            var out: [String: [String: String]] = [:]
            var start = 0
            while start < paths.count {
                let chunk = Array(paths[start..<min(paths.count, start + 500)])
                let st = try db.prepare("""
                    SELECT s.path, k.name, k.value FROM songs s JOIN stickers k ON k.song = s.id
                    WHERE s.path IN (\(chunk.map { _ in "?" }.joined(separator: ","))) AND k.name IN (\(names.map { _ in "?" }.joined(separator: ",")))
                    """)
                try st.bind(chunk.map { .text(Self.normalize($0)) } + names.map { .text($0) })
                while try st.step() { out[st.text(0), default: [:]][st.text(1)] = st.text(2) }
                start += 500
            }
            return out
        }
    }

    /// Sets the sticker `name` of the song at `path` to `value`.
    /// - Throws: `.notFound` for no such song; `.badFilter` for a name or value past
    ///   ``StickerLimits``, or a song already holding ``StickerLimits/perSong`` others.
    public func setSticker(_ path: String, _ name: String, _ value: String) throws(LibraryError) {
        if let p = StickerLimits.problem(name: name) ?? StickerLimits.problem(value: value) { throw LibraryError(.badFilter, p) }
        try change(path, name) { db, id throws(SQLiteError) in
            try db.cached("INSERT INTO stickers(song, name, value) VALUES (?1, ?2, ?3) ON CONFLICT(song, name) DO UPDATE SET value = ?3")
                .run([.int(id), .text(name), .text(value)])
        }
    }

    /// Adds `amount` to the sticker `name` (an integer; a value that is not one counts as 0)
    /// of the song at `path`, making it `amount` when it has none (mpd 0.24's `inc`, and `dec`
    /// with a negative amount). Returns the new value.
    /// - Throws: as ``setSticker(_:_:_:)``.
    @discardableResult
    public func addToSticker(_ path: String, _ name: String, _ amount: Int) throws(LibraryError) -> Int {
        if let p = StickerLimits.problem(name: name) { throw LibraryError(.badFilter, p) }
        var result = 0
        try change(path, name) { db, id throws(SQLiteError) in
            let old = try db.cached("SELECT value FROM stickers WHERE song = ? AND name = ?")
            try old.bind([.int(id), .text(name)])
            let current = try old.step() ? Int(old.text(0)) ?? 0 : 0
            old.reset()
            // (Wrapping past Int's ends would trap: the sum stops at them.)
            let (sum, overflow) = current.addingReportingOverflow(amount)
            result = overflow ? (amount > 0 ? .max : .min) : sum
            try db.cached("INSERT INTO stickers(song, name, value) VALUES (?1, ?2, ?3) ON CONFLICT(song, name) DO UPDATE SET value = ?3")
                .run([.int(id), .text(name), .text(String(result))])
        }
        return result
    }

    /// Runs `body` with the song's id in a write, after checking the song and its count.
    private func change(_ path: String, _ name: String, _ body: (SQLiteDatabase, Int) throws(SQLiteError) -> Void) throws(LibraryError) {
        let outcome = try write { db throws(SQLiteError) -> LibraryError? in
            guard let id = try Self.songID(db, path) else { return Self.noSuchSong }
            let has = try db.integer("SELECT count(*) FROM stickers WHERE song = ? AND name = ?", [.int(id), .text(name)]) ?? 0
            if has == 0, (try db.integer("SELECT count(*) FROM stickers WHERE song = ?", [.int(id)]) ?? 0) >= StickerLimits.perSong {
                return LibraryError(.badFilter, "a song holds at most \(StickerLimits.perSong) stickers")
            }
            try body(db, id)
            return nil
        }
        if let outcome { throw outcome }
    }

    /// Deletes the sticker `name` of the song at `path`, or every one of its stickers when
    /// `name` is nil. Returns whether there was one to delete.
    /// - Throws: `.notFound` (`No such song`) when the library has no such song.
    @discardableResult
    public func deleteSticker(_ path: String, _ name: String?) throws(LibraryError) -> Bool {
        let deleted = try write { db throws(SQLiteError) -> Int? in
            guard let id = try Self.songID(db, path) else { return nil }
            if let name {
                try db.cached("DELETE FROM stickers WHERE song = ? AND name = ?").run([.int(id), .text(name)])
            } else {
                try db.cached("DELETE FROM stickers WHERE song = ?").run([.int(id)])
            }
            return Int(sqlite3_changes(db.handle))
        }
        guard let deleted else { throw Self.noSuchSong }
        return deleted > 0
    }

    /// The songs under the directory `base` ("" for all of them) holding the sticker `name`,
    /// with its value; those whose value `matching` takes (an operator and its operand), in
    /// `sort`'s order (by path without one), cut to `window`.
    public func findStickers(_ name: String, under base: String, matching: (StickerOperator, String)? = nil,
                             sort: StickerSort? = nil, window: Range<Int>? = nil) throws(LibraryError) -> [FoundSticker] {
        let b = Self.normalize(base)
        let condition = matching.map { " AND " + $0.0.condition("k.value", "?3") } ?? ""
        let limit = window.map { " LIMIT \($0.count) OFFSET \($0.lowerBound)" } ?? ""
        return try read { db throws(SQLiteError) -> [FoundSticker] in
            let st = try db.prepare("""
                SELECT s.path, k.value FROM stickers k JOIN songs s ON s.id = k.song
                WHERE k.name = ?1 AND s.error IS NULL AND (?2 = '' OR (s.path >= ?2 || '/' AND s.path < ?2 || '0'))
                \(condition)
                ORDER BY \((sort ?? StickerSort(.path)).orderBy)\(limit)
                """)
            try st.bind([.text(name), .text(b)] + (matching.map { [.text($0.1)] } ?? []))
            var out: [FoundSticker] = []
            while try st.step() { out.append(FoundSticker(path: st.text(0), value: st.text(1))) }
            return out
        }
    }

    /// Every sticker name any song holds, sorted (mpd 0.24's `stickernames`).
    public func stickerNames() throws(LibraryError) -> [String] {
        try read { db throws(SQLiteError) -> [String] in
            let st = try db.cached("SELECT DISTINCT name FROM stickers ORDER BY name")
            var out: [String] = []
            while try st.step() { out.append(st.text(0)) }
            return out
        }
    }
}

/// The connection stickers are written through (one, serialised by its lock).
final class WriterBox: @unchecked Sendable {
    let db: SQLiteDatabase
    init(_ db: SQLiteDatabase) { self.db = db }
}
