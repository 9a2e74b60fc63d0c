import CSQLite
import Media
import MediaCore
import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// The music library: the music directory's songs, tags and directories in an SQLite database
/// (WAL), kept up to date by scans (``update(_:rescan:)``: incremental by size and
/// modification time) and answering MPD's queries (find, search, list, count, browse).
///
/// Thread-safe: queries run on any thread, each on a connection of a small pool (WAL: they
/// read while a scan writes); scans run one at a time on the library's own thread.
public final class MusicLibrary: Sendable {
    /// The database file.
    public let path: String
    /// The music directory, as configured, and resolved (nil while it does not exist).
    public let musicDirectory: String
    public let root: String?
    let registry: DecoderRegistry
    /// The suffixes the registry's formats claim (a scan asks for every file).
    let suffixes: Set<String>

    /// Connections not in use (queries take one, and give it back).
    private let readers = Lock<[ConnectionBox]>([])
    /// The scan thread's state: the queue of jobs, the running one, the last one.
    let jobs = Lock<JobState>(JobState())
    /// The connection stickers are written through, opened by the first write.
    let stickerWriter = Lock<WriterBox?>(nil)
    /// Told of every scan's progress (a quarter second apart at most), start and end.
    let observers = Lock<[@Sendable (LibraryUpdate) -> Void]>([])
    /// The scanner process's command line (nil: scans run in this process).
    let scanner = Lock<[String]?>(nil)

    /// What happened while opening: a damaged database moved aside (its new name), for the log.
    public let recovered: String?
    /// Why it was moved aside: SQLite found it damaged, or its tables were not those of its
    /// version (a table dropped: every scan failed on it).
    public let recoveredBecause: String?
    /// The indexes of its version it lacked, made again while opening (`index NAME ON TABLE`),
    /// for the log: its songs are kept.
    public let rebuiltIndexes: [String]

    /// Opens (creating) the library at `path` for `musicDirectory`. A database from a newer
    /// Backline is refused; one that is damaged, not a database, or missing tables or columns
    /// of its version is moved aside (`PATH.corrupt-N`) and a new one made; a missing index is
    /// made again in place (``rebuiltIndexes``).
    public init(path: String, musicDirectory: String, registry: DecoderRegistry = .standard) throws(LibraryError) {
        self.path = path
        self.musicDirectory = musicDirectory
        self.registry = registry
        suffixes = registry.suffixes
        root = Path.realPath(musicDirectory)
        var moved: String? = nil
        var damage: String? = nil
        var rebuilt: [String] = []
        do throws(Schema.Problem) {
            rebuilt = try Self.prepare(path)
        } catch {
            switch error {
            case .newer(let v):
                throw LibraryError(.newerSchema, "the library \(path) was written by a newer Backline (schema \(v); this one reads \(Schema.version) and older): use that Backline, or another --library")
            case .sqlite(let s):
                guard s.isCorruption else { throw LibraryError(s) }
                moved = try Self.moveAside(path)
                do throws(Schema.Problem) { _ = try Self.prepare(path) } catch { throw LibraryError(.database, "library database \(path): \(error)") }
            case .damaged(let what):
                // (Rebuilt by a scan, as a corrupt one: only the library is lost, and the music
                // directory has it.)
                moved = try Self.moveAside(path)
                damage = what
                do throws(Schema.Problem) { _ = try Self.prepare(path) } catch { throw LibraryError(.database, "library database \(path): \(error)") }
            case .layoutUnknown(let s):
                // (Nothing to check the file against: it is neither used unchecked nor discarded.)
                throw LibraryError(.database, "library database \(path) cannot be checked: this build's own layout could not be made (\(s))")
            }
        }
        rebuiltIndexes = rebuilt
        recovered = moved
        recoveredBecause = moved == nil ? nil : damage ?? "damaged (SQLite's check failed)"
    }

    /// Opens `path`, checks it whole (`quick_check`: a damaged page is found now, not by a
    /// query later), migrates it and makes again the indexes it lacks (returned).
    private static func prepare(_ path: String) throws(Schema.Problem) -> [String] {
        let db: SQLiteDatabase
        let version: Int
        do throws(SQLiteError) {
            db = try SQLiteDatabase(path: path)
            version = try db.integer("PRAGMA user_version") ?? 0
        } catch {
            throw .sqlite(error)
        }
        // A newer Backline's file is refused before anything is written to it (even WAL mode).
        guard version <= Schema.version else { throw .newer(version) }
        do throws(SQLiteError) {
            try Schema.configure(db)
            let check = try db.prepare("PRAGMA quick_check")
            if try check.step(), check.text(0) != "ok" {
                throw SQLiteError("quick_check", code: SQLITE_CORRUPT, message: check.text(0))
            }
        } catch {
            throw .sqlite(error)
        }
        try Schema.migrate(db)
        return try Schema.repairLayout(db)
    }

    /// Renames `path` (and its WAL and shared-memory files) to `path.corrupt-N`.
    private static func moveAside(_ path: String) throws(LibraryError) -> String {
        var n = 1
        while access("\(path).corrupt-\(n)", F_OK) == 0 { n += 1 }
        let to = "\(path).corrupt-\(n)"
        guard rename(path, to) == 0 else {
            throw LibraryError(.database, "library database \(path) is damaged and cannot be moved aside: \(String(cString: strerror(errno)))")
        }
        for suffix in ["-wal", "-shm"] { _ = rename(path + suffix, to + suffix) }
        return to
    }

    // MARK: - Connections

    /// Runs `body` with a reader connection: its regular expressions may take
    /// ``regexSteps`` steps, and it stops once `cancellation` is cancelled.
    func read<T>(cancellation: QueryCancellation? = nil, _ body: (SQLiteDatabase) throws(SQLiteError) -> T) throws(LibraryError) -> T {
        let box: ConnectionBox
        if let b = readers.withLock({ $0.popLast() }) {
            box = b
        } else {
            do {
                let db = try SQLiteDatabase(path: path)
                try Schema.configure(db, cacheKiB: 512)
                // Pages read straight from the kernel's cache (a search reads most of the tags:
                // through read() that was 40 % of its time). What is mapped counts as resident
                // while the connection lives; idle connections are closed (`releaseMemory`).
                try db.execute("PRAGMA mmap_size = 268435456")
                let budget = MatchBudget()
                try SQLFunctions.register(db, budget: budget)
                box = ConnectionBox(db, budget: budget)
            } catch { throw LibraryError(error) }
        }
        box.budget.reset(steps: Self.regexSteps, cancellation: cancellation)
        defer {
            box.db.resetStatements()
            box.budget.reset(steps: Self.regexSteps, cancellation: nil)
            readers.withLock { if $0.count < 4 { $0.append(box) } }
        }
        do { return try body(box.db) } catch {
            // (A regular expression out of steps, or a cancelled query, fails its statement.)
            throw box.budget.stopped ?? LibraryError(error)
        }
    }

    /// Lets idle connections go (their page caches: the daemon's memory after big queries);
    /// with `answers`, the kept answers too.
    public func releaseMemory(answers dropAnswers: Bool = false) {
        readers.withLock { $0.removeAll() }
        stickerWriter.withLock { $0 = nil }
        if dropAnswers { answers.withLock { $0.removeAll() } }
    }

    // MARK: - Rows

    static let songColumns = "s.id, s.path, s.size, s.mtime, s.added, s.duration, s.format, s.rate, s.channels, s.bits, s.bitrate, s.artwork"

    /// Songs from a statement selecting ``songColumns`` first, with their tags (read in one
    /// second query per 500 songs).
    static func songs(_ st: SQLiteStatement, _ db: SQLiteDatabase) throws(SQLiteError) -> [LibrarySong] {
        var out: [LibrarySong] = []
        while try st.step() {
            out.append(LibrarySong(
                id: st.int(0), path: st.text(1), size: st.int(2), modified: st.int(3) / 1_000_000_000, added: st.int(4),
                duration: st.optionalDouble(5), format: st.optionalText(6), rate: st.optionalInt(7), channels: st.optionalInt(8),
                bits: st.optionalText(9), bitrate: st.optionalInt(10), hasArtwork: st.int(11) != 0, tags: []))
        }
        try attachTags(&out, db)
        return out
    }

    static func attachTags(_ songs: inout [LibrarySong], _ db: SQLiteDatabase) throws(SQLiteError) {
        guard !songs.isEmpty else { return }
        // (Ids and tags in arrays of their own: a slice of `songs` kept while its elements
        // change would copy the whole array, every chunk.)
        let ids = songs.map(\.id)
        var index = [Int: Int](minimumCapacity: ids.count)
        for (i, id) in ids.enumerated() { index[id] = i }
        var tags = [[Tag]](repeating: [], count: ids.count)
        var start = 0
        while start < ids.count {
            let list = ids[start..<min(ids.count, start + 500)].map(String.init).joined(separator: ",")
            let st = try db.prepare("SELECT song, key, value FROM tags WHERE song IN (\(list)) ORDER BY song, seq")
            while try st.step() {
                guard let i = index[st.int(0)], let key = TagKey(rawValue: st.int(1)) else { continue }
                tags[i].append(Tag(key, st.text(2)))
            }
            start += 500
        }
        for i in songs.indices { swap(&songs[i].tags, &tags[i]) }
    }

    // MARK: - Queries

    /// The songs `filter` takes, in walk order (each directory's songs by album, disc, track
    /// and name, then its subdirectories) or by `sort`, then cut to `window`.
    /// `cancellation` stops it early (its client has gone).
    public func songs(_ filter: SongFilter = .all, sort: SongSort? = nil, window: Range<Int>? = nil,
                      cancellation: QueryCancellation? = nil) throws(LibraryError) -> [LibrarySong] {
        let c = try filter.compile()
        try checkBases(c.bases)
        var order = "s.sort_key, s.path"
        var values = c.values
        if let sort {
            let dir = sort.descending ? " DESC" : ""
            switch sort.field {
            case .modified: order = "s.mtime\(dir), " + order
            case .added: order = "s.added\(dir), " + order
            case .tag(let k):
                // mpd's sort value: the first value, with the tag's fallbacks; missing is "".
                let chain = [k] + fallbacks(k)
                let value = "COALESCE(" + chain.map { _ in "(SELECT value FROM tags WHERE song = s.id AND key = ? ORDER BY seq LIMIT 1)" }
                    .joined(separator: ", ") + ", '')"
                values += chain.map { .int($0.rawValue) }
                order = (k == .track || k == .disc ? "CAST(\(value) AS INTEGER)" : value) + dir + ", " + order
            }
        }
        var limit = ""
        if let window { limit = " LIMIT \(window.count) OFFSET \(window.lowerBound)" }
        let sql = "SELECT \(Self.songColumns) FROM songs s WHERE s.error IS NULL AND \(c.sql) ORDER BY \(order)\(limit)"
        return try read(cancellation: cancellation) { db throws(SQLiteError) in
            let st = try db.prepare(sql)
            try st.bind(values)
            return try Self.songs(st, db)
        }
    }

    /// How many songs `filter` takes (`cancellation` stops it early).
    public func count(_ filter: SongFilter = .all, cancellation: QueryCancellation? = nil) throws(LibraryError) -> (songs: Int, playtime: Double) {
        let c = try filter.compile()
        try checkBases(c.bases)
        return try read(cancellation: cancellation) { db throws(SQLiteError) in
            let st = try db.prepare("SELECT count(*), total(s.duration) FROM songs s WHERE s.error IS NULL AND \(c.sql)")
            try st.bind(c.values)
            try st.step()
            return (st.int(0), st.double(1))
        }
    }

    /// `base` directories must exist (mpd's selection URI: `No such directory`).
    private func checkBases(_ bases: [String]) throws(LibraryError) {
        for b in bases where try directory(b) == nil { throw LibraryError(.notFound, "No such directory") }
    }

    /// The values of `tag` (after its fallbacks; "" for a song without it) over the songs
    /// `filter` takes, grouped by `groups` (the outermost first): each row is the group values
    /// then the value, sorted in byte order, unique. Answers are kept until the library changes
    /// (clients ask the same `list Artist` again and again). `cancellation` stops it early.
    public func values(_ tag: TagKey, filter: SongFilter = .all, groups: [TagKey] = [],
                       cancellation: QueryCancellation? = nil) throws(LibraryError) -> [[String]] {
        let key = "values \(tag.rawValue) \(groups.map(\.rawValue)) \(filter)"
        if let hit = cached(key, as: [[String]].self) { return hit }
        let generation = self.generation.load(ordering: .acquiring)
        let keys = groups + [tag]
        var out = Set<[String]>()
        try eachSong(filter, keys: keys, cancellation: cancellation) { _, _, tags in
            // The cross product of each key's effective values (a song with two artists counts under both).
            var combos: [[String]] = [[]]
            for k in keys {
                let vs = ([k] + fallbacks(k)).lazy.compactMap { tags[$0] }.first ?? [""]
                combos = vs.count == 1 ? combos.map { $0 + [vs[0]] } : combos.flatMap { c in vs.map { c + [$0] } }
            }
            out.formUnion(combos)
        }
        let rows = out.sorted { a, b in
            for (x, y) in zip(a, b) where x != y { return x.utf8.lexicographicallyPrecedes(y.utf8) }
            return false
        }
        remember(key, rows, generation: generation)
        return rows
    }

    /// Song counts and total durations per value of `group` (after fallbacks; "" for songs
    /// without it), in byte order of the value. `cancellation` stops it early.
    public func counts(_ filter: SongFilter = .all, group: TagKey,
                       cancellation: QueryCancellation? = nil) throws(LibraryError) -> [(value: String, songs: Int, playtime: Double)] {
        let key = "counts \(group.rawValue) \(filter)"
        if let hit = cached(key, as: [(value: String, songs: Int, playtime: Double)].self) { return hit }
        let generation = self.generation.load(ordering: .acquiring)
        let chain = [group] + fallbacks(group)
        var sums: [String: (Int, Double)] = [:]
        try eachSong(filter, keys: [group], cancellation: cancellation) { _, duration, tags in
            let vs = chain.lazy.compactMap { tags[$0] }.first ?? [""]
            for v in Set(vs) {
                let old = sums[v] ?? (0, 0)
                sums[v] = (old.0 + 1, old.1 + duration)
            }
        }
        let rows = sums.map { ($0.key, $0.value.0, $0.value.1) }.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
        remember(key, rows, generation: generation)
        return rows
    }

    /// Calls `body` for each song `filter` takes, with its duration and its values of `keys`
    /// (and their fallbacks): the songs in id order merged with one pass over the tags in their
    /// primary key's order (song, position).
    private func eachSong(_ filter: SongFilter, keys: [TagKey], cancellation: QueryCancellation?,
                          _ body: (Int, Double, [TagKey: [String]]) -> Void) throws(LibraryError) {
        let c = try filter.compile()
        try checkBases(c.bases)
        let wanted = Set(keys.flatMap { [$0] + fallbacks($0) }).map { String($0.rawValue) }.joined(separator: ",")
        try read(cancellation: cancellation) { db throws(SQLiteError) in
            let songs = try db.prepare("SELECT s.id, s.duration FROM songs s WHERE s.error IS NULL AND \(c.sql) ORDER BY s.id")
            try songs.bind(c.values)
            let tags = try db.prepare("SELECT song, key, value FROM tags NOT INDEXED WHERE key IN (\(wanted)) ORDER BY song, seq")
            var more = try tags.step()
            while try songs.step() {
                let id = songs.int(0)
                var values: [TagKey: [String]] = [:]
                while more, tags.int(0) <= id {
                    if tags.int(0) == id, let k = TagKey(rawValue: tags.int(1)) { values[k, default: []].append(tags.text(2)) }
                    more = try tags.step()
                }
                body(id, songs.optionalDouble(1) ?? 0, values)
            }
        }
    }

    // MARK: - Answers kept until the library changes

    /// How many levels of directories below the one it starts from a scan walks, and an `add`
    /// of a directory expands: 64 (the starting directory is level 0; each level holds a
    /// directory open while the walk is below it). A directory deeper than that is not read,
    /// and said so.
    public static let maximumDirectoryDepth = 64

    /// How many files with several links a scan in this process remembers (their tags, and
    /// that no song of theirs moved), so that their other links are not opened again: 4,096.
    /// Tests lower it to cross the bound with a small tree.
    let linkMemory = Atomic<Int>(4096)

    /// Bumped by every scan's commit: cached answers from an older generation are stale.
    let generation = Atomic<Int>(0)
    private let answers = Lock<[String: (generation: Int, value: any Sendable)]>([:])

    private func cached<T>(_ key: String, as: T.Type) -> T? {
        answers.withLock { a in
            guard let e = a[key], e.generation == generation.load(ordering: .acquiring) else { return nil }
            return e.value as? T
        }
    }

    private func remember(_ key: String, _ value: some Sendable, generation g: Int) {
        answers.withLock { a in
            if a.count >= 32 { a.removeAll() }  // (a handful of distinct questions in practice)
            a[key] = (g, value)
        }
    }

    /// The directory `path` (relative; "" the root), if the library has it.
    public func directory(_ path: String) throws(LibraryError) -> LibraryDirectory? {
        let p = Self.normalize(path)
        return try read { db throws(SQLiteError) in
            let st = try db.cached("SELECT path, mtime FROM directories WHERE path = ?")
            try st.bind([.text(p)])
            return try st.step() ? LibraryDirectory(path: st.text(0), modified: st.int(1)) : nil
        }
    }

    /// The song at `path`, if the library has it (and could read it).
    public func song(_ path: String) throws(LibraryError) -> LibrarySong? {
        let p = Self.normalize(path)
        return try read { db throws(SQLiteError) in
            let st = try db.cached("SELECT \(Self.songColumns) FROM songs s WHERE s.path = ? AND s.error IS NULL")
            try st.bind([.text(p)])
            return try Self.songs(st, db).first
        }
    }

    /// The songs at `paths` (those the library has), by path: a queue's or a playlist's
    /// songs without opening their files.
    public func songs(atPaths paths: [String]) throws(LibraryError) -> [String: LibrarySong] {
        guard !paths.isEmpty else { return [:] }
        var out: [String: LibrarySong] = [:]
        try read { db throws(SQLiteError) in
            var start = 0
            while start < paths.count {
                let chunk = Array(paths[start..<min(paths.count, start + 500)])
                let st = try db.prepare("SELECT \(Self.songColumns) FROM songs s WHERE s.error IS NULL AND s.path IN (\(chunk.map { _ in "?" }.joined(separator: ",")))")
                try st.bind(chunk.map { .text(Self.normalize($0)) })
                for s in try Self.songs(st, db) { out[s.path] = s }
                start += 500
            }
        }
        return out
    }

    /// A directory's entries: its songs, its playlist files, its subdirectories (each followed
    /// by its own entries when `recursive`), as MPD walks the database.
    /// - Throws: `.notFound` when the library has no such directory.
    public func entries(_ path: String, recursive: Bool, limit: Int = .max) throws(LibraryError) -> [LibraryNode] {
        let p = Self.normalize(path)
        guard try directory(p) != nil else {
            if p.isEmpty { return [] }  // (a library not scanned yet: its root is empty)
            throw LibraryError(.notFound, "No such directory")
        }
        return try read { db throws(SQLiteError) in
            // Every directory of the walk, in walk order (the sort keys are walk order).
            let dirs: [(id: Int, dir: LibraryDirectory)]
            let st: SQLiteStatement
            if recursive {
                st = try db.prepare("""
                    SELECT id, path, mtime FROM directories WHERE path = ?1 OR (?1 = '' AND path != '') OR (path >= ?1 || '/' AND path < ?1 || '0')
                    ORDER BY sort_key
                    """)
            } else {
                st = try db.prepare("""
                    SELECT id, path, mtime FROM directories WHERE path = ?1 OR parent = (SELECT id FROM directories WHERE path = ?1) ORDER BY sort_key
                    """)
            }
            try st.bind([.text(p)])
            var found: [(Int, LibraryDirectory)] = []
            while try st.step() { found.append((st.int(0), LibraryDirectory(path: st.text(1), modified: st.int(2)))) }
            dirs = found
            var out: [LibraryNode] = []
            let songsOf = try db.prepare("SELECT \(Self.songColumns) FROM songs s WHERE s.directory = ? AND s.error IS NULL ORDER BY s.sort_key, s.path")
            let listsOf = try db.prepare("SELECT path, mtime FROM playlists WHERE directory = ? ORDER BY path")
            for (i, (id, dir)) in dirs.enumerated() {
                let isTop = dir.path == p
                if !isTop { out.append(.directory(dir)) }
                guard isTop || recursive else { continue }
                songsOf.reset()
                try songsOf.bind([.int(id)])
                for s in try Self.songs(songsOf, db) { out.append(.song(s)) }
                listsOf.reset()
                try listsOf.bind([.int(id)])
                while try listsOf.step() { out.append(.playlist(LibraryPlaylist(path: listsOf.text(0), modified: listsOf.int(1)))) }
                guard out.count <= limit else { throw SQLiteError("walk", code: SQLITE_FULL, message: "more than \(limit) entries") }
                _ = i
            }
            // Non-recursive: the top's own songs and playlists first, then its subdirectories.
            if !recursive {
                let subdirs = out.filter { if case .directory = $0 { return true } else { return false } }
                let rest = out.filter { if case .directory = $0 { return false } else { return true } }
                return rest + subdirs
            }
            return out
        }
    }

    /// Counts over the whole library (MPD's `stats`).
    public func stats() throws(LibraryError) -> LibraryStats {
        try read { db throws(SQLiteError) in
            let st = try db.prepare("""
                SELECT (SELECT count(DISTINCT value) FROM tags WHERE key = \(TagKey.artist.rawValue)),
                       (SELECT count(DISTINCT value) FROM tags WHERE key = \(TagKey.album.rawValue)),
                       (SELECT count(*) FROM songs WHERE error IS NULL),
                       (SELECT total(duration) FROM songs WHERE error IS NULL),
                       (SELECT value FROM meta WHERE key = 'updated'),
                       (SELECT count(*) FROM songs WHERE error IS NOT NULL) + (SELECT count(*) FROM skipped)
                """)
            try st.step()
            return LibraryStats(artists: st.int(0), albums: st.int(1), songs: st.int(2), playtime: st.double(3),
                                updated: Int(st.optionalText(4) ?? "0") ?? 0, unreadable: st.int(5))
        }
    }

    /// Files the scans could not use, with their reasons (unreadable songs, special files,
    /// names that are not UTF-8, links out of the music directory).
    public func unreadable() throws(LibraryError) -> [(path: String, reason: String)] {
        try read { db throws(SQLiteError) in
            let st = try db.prepare("SELECT path, error FROM songs WHERE error IS NOT NULL UNION ALL SELECT path, reason FROM skipped ORDER BY 1")
            var out: [(String, String)] = []
            while try st.step() { out.append((st.text(0), st.text(1))) }
            return out
        }
    }

    /// `path` as stored: no leading, trailing or doubled slashes; "/" and "" are the root.
    static func normalize(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }
}

/// A connection handed between threads (used by one at a time: the pool's rule).
final class ConnectionBox: @unchecked Sendable {
    let db: SQLiteDatabase
    /// What its queries' regular expressions may spend.
    let budget: MatchBudget
    init(_ db: SQLiteDatabase, budget: MatchBudget) { (self.db, self.budget) = (db, budget) }
}
