import BacklineWire
import CSQLite
import Media
import MediaCore
import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// Tag reads filled in by two threads, each its own indices (joined before `all` is read).
final class ReadResults: @unchecked Sendable {
    private let slots: UnsafeMutableBufferPointer<Scan.Read?>
    init(count: Int) {
        slots = .allocate(capacity: count)
        slots.initialize(repeating: nil)
    }
    deinit {
        slots.deinitialize()
        slots.deallocate()
    }
    func set(_ i: Int, _ r: Scan.Read) { slots[i] = r }
    var all: [Scan.Read] { slots.map { $0 ?? Scan.Read(info: nil, plugin: nil, failure: "not read") } }
}

/// The scan thread's queue: jobs waiting, the one running, the last to end.
struct JobState {
    var nextJob = 1
    var queue: [LibraryUpdate] = []
    var running: LibraryUpdate?
    var last: LibraryUpdate?
    var thread: PlatformThread?
    var stopping = false
    /// The scanner process of the scan running, when scans run in one.
    var child: ChildProcess?
}

extension MusicLibrary {
    /// The most jobs waiting (mpd's update queue holds 32).
    public static let maximumQueuedUpdates = 32

    /// Queues a scan of `path` (relative to the music directory; "" for all of it) and returns
    /// its job number. `rescan` reads unchanged files again. A scan of a path already waiting
    /// is not queued twice (its number is returned).
    /// - Throws: `.tooLarge` when 32 scans are waiting; `.badFilter` for a path leaving the
    ///   music directory (`..`).
    @discardableResult
    public func update(_ path: String = "", rescan: Bool = false) throws(LibraryError) -> Int {
        let p = Self.normalize(path)
        guard !p.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }) else { throw LibraryError(.badFilter, "Malformed path") }
        let job: Int = try jobs.withLock { (s: inout JobState) throws(LibraryError) -> Int in
            if let waiting = s.queue.first(where: { $0.path == p && $0.rescan == rescan }) { return waiting.job }
            guard s.queue.count < Self.maximumQueuedUpdates else { throw LibraryError(.tooLarge, "Update queue is full") }
            let job = s.nextJob
            s.nextJob = s.nextJob >= 1 << 31 - 1 ? 1 : s.nextJob + 1
            s.queue.append(LibraryUpdate(job: job, path: p, rescan: rescan))
            if s.thread == nil {
                s.thread = PlatformThread.start(name: "bl-library") { [self] in runJobs() }
            }
            return job
        }
        return job
    }

    /// The paths of scans that began and did not complete (killed, or stopped with the
    /// daemon), each recorded when its scan began and removed in the transaction that ends it:
    /// ``resumeInterruptedScans()`` runs them again.
    public func interruptedScans() throws(LibraryError) -> [String] {
        try read { db throws(SQLiteError) in
            let st = try db.prepare("SELECT key FROM meta WHERE key >= 'incomplete ' AND key < 'incomplete!' ORDER BY key")
            var out: [String] = []
            while try st.step() { out.append(String(st.text(0).dropFirst(Scan.incompleteKey("").count))) }
            return out
        }
    }

    /// Queues again the scans that did not complete (a scan of the whole music directory
    /// covers the others); their job numbers.
    @discardableResult
    public func resumeInterruptedScans() throws(LibraryError) -> [Int] {
        let paths = try interruptedScans()
        if paths.contains("") { return [try update("")] }
        var jobs: [Int] = []
        for p in paths { jobs.append(try update(p)) }
        return jobs
    }

    /// The scan running or waiting first (MPD's `updating_db`), if any.
    public var updating: LibraryUpdate? {
        jobs.withLock { $0.running ?? $0.queue.first }
    }

    /// The last scan that ended.
    public var lastUpdate: LibraryUpdate? { jobs.withLock { $0.last } }

    /// Calls `observer` (on the scan thread) as scans start, progress and end.
    public func observe(_ observer: @escaping @Sendable (LibraryUpdate) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Waits until no scan is running or waiting (tests, `--wait`; polls every 10 ms).
    public func waitForUpdates(timeout: Double = 600) -> Bool {
        let end = monotonicNanos() + Int(timeout * 1e9)
        while updating != nil {
            if monotonicNanos() > end { return false }
            sleepThread(seconds: 0.01)
        }
        return true
    }

    /// Ends the scan thread: the running scan stops at its next file (what it wrote is kept).
    public func stop() {
        let t = jobs.withLock { s -> PlatformThread? in
            s.stopping = true
            s.queue.removeAll()
            s.child?.kill(SIGTERM)  // (what it committed stays; the rest is the next scan's)
            return s.thread
        }
        t?.join()
    }

    func notify(_ u: LibraryUpdate) {
        for o in observers.withLock({ $0 }) { o(u) }
    }

    private func runJobs() {
        let db: SQLiteDatabase
        do {
            db = try SQLiteDatabase(path: path)
            try Schema.configure(db, cacheKiB: 2048)
            try SQLFunctions.register(db)
        } catch {
            jobs.withLock { s in
                for var j in s.queue { j.done = true; j.error = "\(error)"; s.last = j }
                s.queue.removeAll()
                s.thread?.detach()
                s.thread = nil
            }
            return
        }
        while true {
            guard var job = jobs.withLock({ s -> LibraryUpdate? in
                guard !s.stopping, !s.queue.isEmpty else {
                    s.running = nil
                    if !s.stopping { s.thread?.detach() }
                    s.thread = nil
                    return nil
                }
                s.running = s.queue.removeFirst()
                return s.running
            }) else { return }
            notify(job)
            if let command = scanner.withLock({ $0 }) {
                job = runExternal(job, command)
            } else {
                var scan = Scan(library: self, db: db, job: job)
                do {
                    try scan.run()
                } catch {
                    scan.job.error = "\(error)"
                }
                job = scan.job
            }
            job.done = true
            jobs.withLock { s in
                s.last = job
                s.running = nil
            }
            notify(job)
        }
    }

    var isStopping: Bool { jobs.withLock { $0.stopping } }

    /// Runs scans in a child process (`command` and its arguments, then `--library PATH
    /// --music-dir DIR --path P [--rescan]`), at a lower priority: the decoders' tag readers
    /// (FFmpeg's hundred libraries among them) and the scan's memory stay out of this process,
    /// a file that crashes a reader fails that scan only, and the process answering clients
    /// keeps the CPU it needs. Nil: scans run on the library's own thread (tests, `play`).
    public func runScans(in command: [String]?) {
        scanner.withLock { $0 = command }
    }

    /// Runs `job` in the scanner process, following its progress lines (`Scan.progressLine`).
    private func runExternal(_ job: LibraryUpdate, _ command: [String]) -> LibraryUpdate {
        var job = job
        var arguments = Array(command.dropFirst()) + ["--library", path, "--music-dir", musicDirectory, "--path", job.path]
        if job.rescan { arguments.append("--rescan") }
        let child: ChildProcess
        do {
            child = try ChildProcess(path: command[0], arguments: arguments, environment: currentEnvironment())
        } catch {
            job.error = "cannot start the scanner: \(error)"
            return job
        }
        jobs.withLock { $0.child = child }
        defer { jobs.withLock { $0.child = nil } }
        var last: String?
        while let line = child.readLine(until: monotonicNanos() + 3600 * 1_000_000_000) {
            if let u = Scan.parse(line, into: job) {
                job = u
                generation.add(1, ordering: .releasing)
                if !u.done { notify(job) }
            } else {
                last = String(line)
            }
            if child.outputEnded { break }
        }
        let status = child.wait(until: monotonicNanos() + 10_000_000_000) ?? -1
        generation.add(1, ordering: .releasing)
        if status != 0, job.error == nil {
            job.error = isStopping ? "stopped" : "the scanner exited with status \(status)" + (last.map { ": \($0)" } ?? "")
        }
        return job
    }
}

extension Scan {
    /// A scan's progress as the scanner process prints it: `progress|done SCANNED EXPECTED
    /// ADDED UPDATED REMOVED MOVED FAILED READ` (EXPECTED -1 when unknown), or `error MESSAGE`.
    static func progressLine(_ u: LibraryUpdate) -> String {
        if let e = u.error { return "error \(e)" }
        return "\(u.done ? "done" : "progress") \(u.scanned) \(u.expected ?? -1) \(u.added) \(u.updated) \(u.removed) \(u.moved) \(u.failed) \(u.read)"
    }

    /// `job` with what a progress line says; nil for another line.
    static func parse(_ line: Substring, into job: LibraryUpdate) -> LibraryUpdate? {
        var u = job
        if line.hasPrefix("error ") {
            u.error = String(line.dropFirst(6))
            return u
        }
        let f = line.split(separator: " ")
        guard f.count == 9, f[0] == "progress" || f[0] == "done" else { return nil }
        let n = f.dropFirst().compactMap { Int($0) }
        guard n.count == 8 else { return nil }
        (u.scanned, u.expected, u.added, u.updated, u.removed, u.moved, u.failed) = (n[0], n[1] < 0 ? nil : n[1], n[2], n[3], n[4], n[5], n[6])
        u.read = n[7]
        return u
    }
}

extension MusicLibrary {
    /// A scan's progress as the scanner process prints it (see ``scanHere(_:rescan:progress:)``).
    public static func progressLine(_ u: LibraryUpdate) -> String { Scan.progressLine(u) }

    /// Runs one scan here and now, on this thread (the scanner process's work), telling
    /// `progress` as it goes (four times a second at most) and at its end.
    public func scanHere(_ path: String, rescan: Bool, progress: @escaping (LibraryUpdate) -> Void) -> LibraryUpdate {
        var job = LibraryUpdate(job: 0, path: Self.normalize(path), rescan: rescan)
        do {
            let db = try SQLiteDatabase(path: self.path)
            try Schema.configure(db, cacheKiB: 2048)
            try SQLFunctions.register(db)
            var scan = Scan(library: self, db: db, job: job)
            scan.report = progress
            do { try scan.run() } catch { scan.job.error = "\(error)" }
            job = scan.job
        } catch {
            job.error = "\(error)"
        }
        job.done = true
        return job
    }
}

/// One scan: walks a directory of the music directory, compares each file's size and
/// modification time with the database, reads the new and changed ones through the decoder
/// registry's tag readers, finds moved ones again (same device, inode, size and time), and
/// removes what is gone. Written in transactions of a few hundred files (a kill leaves the
/// database as the last one committed: usable, and the next scan goes on from there).
struct Scan {
    let library: MusicLibrary
    let db: SQLiteDatabase
    var job: LibraryUpdate
    private var pending = 0
    private var lastCommit = 0
    private var lastNotify = 0
    /// Directories the walk reached (by id), and the real ones walked (device, inode): a
    /// directory reached twice through links is walked once (no loops).
    private var visited = Set<Int>()
    private var walked = Set<[UInt64]>()
    /// Songs that were not where the database had them (maybe moved; removed at the end).
    private var missing = Set<Int>()
    /// The names in the directory being walked (as a set once a move is looked for).
    private var currentNameList: [String] = []
    private var currentNames: Set<String>?
    /// Tags read in this scan of files with several links, by device, inode, size and time: a
    /// hard link of one takes them instead of opening the file again (100,000 links of two
    /// files were each opened and parsed). Holds at most the library's `linkMemory` files
    /// (see ``storeAll(_:directory:dirRel:)``).
    private var linkedReads: [LinkKey: Read] = [:]
    /// Files with several links (same key) for which no song was found moved: their other
    /// links are not looked for again (each look went through every song of the inode, a cost
    /// that grew with each link added). Bounded as ``linkedReads`` is.
    private var linkedNotMoved = Set<LinkKey>()

    /// One file with several links: its device, inode, size and modification time (ns).
    struct LinkKey: Hashable {
        var device: UInt64
        var inode: UInt64
        var size: Int
        var mtime: Int
    }

    /// The key of a file for ``linkedReads``, when it has several links.
    static func linkKey(_ st: stat) -> LinkKey? {
        guard st.st_nlink > 1 else { return nil }
        return LinkKey(device: UInt64(st.st_dev), inode: UInt64(st.st_ino), size: Int(st.st_size),
                       mtime: Int(st.st_mtim.tv_sec) * 1_000_000_000 + Int(st.st_mtim.tv_nsec))
    }

    /// What the database had under the scanned path when the scan began, by directory: one
    /// query each instead of three a directory (a rescan with nothing changed is mostly this).
    private var known: Known?

    struct Known {
        var directories: [String: (id: Int, mtime: Int)] = [:]
        var songs: [Int: [String: (id: Int, size: Int, mtime: Int)]] = [:]
        var playlists: [Int: Set<String>] = [:]
        var children: [Int: [String: Int]] = [:]
    }

    /// Reads ``known`` for the subtree `top` ("" all of it).
    private mutating func loadKnown(_ top: String) throws(SQLiteError) {
        var k = Known()
        let range: [SQLiteValue] = [.text(top), .text(top + "/"), .text(top + "0")]
        let under = "(?1 = '' OR path = ?1 OR (path >= ?2 AND path < ?3))"
        let d = try db.prepare("SELECT id, path, mtime, parent FROM directories WHERE \(under)")
        try d.bind(range)
        while try d.step() {
            k.directories[d.text(1)] = (d.int(0), d.int(2))
            if !d.isNull(3) { k.children[d.int(3), default: [:]][d.text(1)] = d.int(0) }
        }
        let s = try db.prepare("SELECT id, directory, name, size, mtime FROM songs WHERE \(under)")
        try s.bind(range)
        while try s.step() { k.songs[s.int(1), default: [:]][s.text(2)] = (s.int(0), s.int(3), s.int(4)) }
        let p = try db.prepare("SELECT directory, path FROM playlists WHERE \(under)")
        try p.bind(range)
        while try p.step() { k.playlists[p.int(0), default: []].insert(p.text(1)) }
        known = k
    }
    private let now = Int(time(nil))
    /// Where progress goes (the scanner process's output); nil: the library's observers.
    var report: ((LibraryUpdate) -> Void)?

    init(library: MusicLibrary, db: SQLiteDatabase, job: LibraryUpdate) {
        self.library = library
        self.db = db
        self.job = job
    }

    mutating func run() throws(SQLiteError) {
        guard let root = library.root else {
            job.error = "the music directory \(library.musicDirectory) does not exist"
            return
        }
        let top = job.path
        // The previous count under the path, for a progress bar.
        job.expected = try db.integer(top.isEmpty ? "SELECT count(*) FROM songs" : "SELECT count(*) FROM songs WHERE path >= ? AND path < ?",
                                      top.isEmpty ? [] : [.text(top + "/"), .text(top + "0")])
        try db.execute("BEGIN IMMEDIATE")
        lastCommit = monotonicNanos()
        do {
            // Left by a scan that was stopped or killed: directories that had gone, whose songs
            // had not been removed yet (nor found moved).
            let orphans = try db.cached("SELECT id FROM songs WHERE directory IN (SELECT id FROM directories WHERE parent = -1)")
            while try orphans.step() { missing.insert(orphans.int(0)) }
            // Begun: what a kill leaves is resumed at the next start (``interruptedScans``),
            // until the transaction that ends the walk removes this row.
            try db.cached("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)").run([.text(Self.incompleteKey(top)), .text(String(now))])
            // Reasons are found again as the walk meets the files.
            try db.cached("DELETE FROM skipped WHERE ?1 = '' OR path = ?1 OR (path >= ?1 || '/' AND path < ?1 || '0')").run([.text(top)])
            try loadKnown(top)
            // Directories above the path must exist in the database (and on disk).
            var parent: Int? = try directoryID("", parent: nil, mtime: mtime(root))
            var rel = ""
            var ok = true
            for c in top.split(separator: "/") {
                rel = rel.isEmpty ? String(c) : rel + "/" + c
                var st = stat()
                guard let real = Path.realPath(root + "/" + rel), real == root || real.hasPrefix(root + "/"),
                      stat(real, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { ok = false; break }
                parent = try directoryID(rel, parent: parent, mtime: Int(st.st_mtim.tv_sec))
            }
            if ok, let id = parent {
                try walk(root + (top.isEmpty ? "" : "/" + top), rel: top, id: id, depth: 0)
            } else {
                // Gone: everything under it leaves.
                try removeSubtree(top)
            }
            try finish(top)
            db.resetStatements()
            try db.execute("COMMIT")
            library.generation.add(1, ordering: .releasing)
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    /// The `meta` row saying a scan of `path` began and has not completed.
    static func incompleteKey(_ path: String) -> String { "incomplete " + path }

    private func mtime(_ p: String) -> Int {
        var st = stat()
        return stat(p, &st) == 0 ? Int(st.st_mtim.tv_sec) : 0
    }

    /// The id of the directory `rel`, inserted or updated.
    private mutating func directoryID(_ rel: String, parent: Int?, mtime: Int) throws(SQLiteError) -> Int {
        if let (id, old) = known?.directories[rel] {
            if old != mtime { try db.cached("UPDATE directories SET mtime = ? WHERE id = ?").run([.int(mtime), .int(id)]) }
            visited.insert(id)
            return id
        }
        let find = try db.cached("SELECT id, mtime FROM directories WHERE path = ?")
        try find.bind([.text(rel)])
        if try find.step() {
            let id = find.int(0)
            if find.int(1) != mtime {
                try db.cached("UPDATE directories SET mtime = ? WHERE id = ?").run([.int(mtime), .int(id)])
            }
            visited.insert(id)
            return id
        }
        try db.cached("INSERT INTO directories(path, parent, mtime, sort_key) VALUES (?, ?, ?, ?)")
            .run([.text(rel), parent.map { .int($0) } ?? .null, .int(mtime), .text(SortKey.directory(rel))])
        let id = db.lastInsertRowID
        visited.insert(id)
        return id
    }

    private mutating func walk(_ dir: String, rel: String, id: Int, depth: Int) throws(SQLiteError) {
        guard !library.isStopping else { return }
        guard depth <= MusicLibrary.maximumDirectoryDepth else {
            // Not walked (each level holds its state in the walk), and said so: kept with the
            // reason (`unreadable`, the scan's failed count), its songs not lost unseen.
            try skip(rel, "more than \(MusicLibrary.maximumDirectoryDepth) directories below the scanned one: not scanned (scan a directory further down)")
            return
        }
        var dst = stat()
        guard stat(dir, &dst) == 0 else { return }
        walked.insert([UInt64(dst.st_dev), UInt64(dst.st_ino)])
        guard let d = opendir(dir) else {
            try skip(rel, "cannot read the directory: \(String(cString: strerror(errno)))")
            return
        }
        var names: [String] = []
        while let e = readdir(d) {
            let raw = withUnsafeBytes(of: e.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            guard raw.first != 46 else { continue }  // hidden, ".", ".."
            // A name that is not UTF-8 cannot be named in the protocols (their text is UTF-8); one
            // holding a control character (a newline) would split the protocols' lines: both are
            // skipped, as mpd skips them, and recorded with the name escaped.
            guard let name = String(validating: raw, as: UTF8.self), !name.containsControlCharacter else {
                let shown = escapedName(raw)
                let ext = Self.suffix(String(decoding: raw, as: UTF8.self))
                if library.suffixes.contains(ext) || e.pointee.d_type == UInt8(DT_DIR) {
                    let reason = String(validating: raw, as: UTF8.self) == nil
                        ? "the file name is not valid UTF-8" : "the file name holds a control character"
                    try skip(rel.isEmpty ? shown : rel + "/" + shown, reason)
                }
                continue
            }
            names.append(name)
        }
        defer { closedir(d) }
        let dfd = dirfd(d)
        currentNameList = names
        currentNames = nil

        // What the database has here (read once for the whole walk).
        var known = self.known?.songs.removeValue(forKey: id) ?? [:]
        let knownLists = self.known?.playlists.removeValue(forKey: id) ?? []
        let knownDirs = self.known?.children.removeValue(forKey: id) ?? [:]

        var subdirs: [(String, String, Int)] = []
        var seenLists = Set<String>()
        var toRead: [Pending] = []
        for name in names {
            guard !library.isStopping else { return }
            let path = dir + "/" + name
            let relPath = rel.isEmpty ? name : rel + "/" + name
            var lst = stat()
            // (Relative to the open directory: no path walk a file.)
            guard fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            var st = lst
            if lst.st_mode & S_IFMT == S_IFLNK {
                // A link: followed when it stays in the music directory.
                guard let real = Path.realPath(path) else {
                    if isCandidate(name) { try skip(relPath, "a symbolic link to nothing") }
                    continue
                }
                guard let root = library.root, real == root || real.hasPrefix(root + "/") else {
                    if isCandidate(name) || stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR {
                        try skip(relPath, "a symbolic link out of the music directory")
                    }
                    continue
                }
                guard stat(path, &st) == 0 else { continue }
            }
            let kind = st.st_mode & S_IFMT
            if kind == S_IFDIR {
                // A directory reached a second time (a link to an ancestor, or to one walked
                // already) is not walked again: no loops, no song twice.
                if walked.contains([UInt64(st.st_dev), UInt64(st.st_ino)]) {
                    try skip(relPath, "a link to a directory already in the library (a loop)")
                } else {
                    walked.insert([UInt64(st.st_dev), UInt64(st.st_ino)])
                    subdirs.append((path, relPath, Int(st.st_mtim.tv_sec)))
                }
                continue
            }
            let ext = Self.suffix(name)
            if ["m3u", "m3u8", "pls"].contains(ext), kind == S_IFREG {
                seenLists.insert(relPath)
                try db.cached("INSERT OR REPLACE INTO playlists(path, directory, mtime) VALUES (?, ?, ?)")
                    .run([.text(relPath), .int(id), .int(Int(st.st_mtim.tv_sec))])
                continue
            }
            guard library.suffixes.contains(ext) else { continue }
            guard kind == S_IFREG else {
                // A FIFO, socket or device named like music would hang whoever reads it.
                known[name] = nil
                try skip(relPath, "not a regular file (\(Self.kindName(st.st_mode)))")
                continue
            }
            job.scanned += 1
            let size = Int(st.st_size)
            let mtime = Int(st.st_mtim.tv_sec) * 1_000_000_000 + Int(st.st_mtim.tv_nsec)
            if let k = known.removeValue(forKey: name) {
                if k.size == size, k.mtime == mtime, !job.rescan { try progress(); continue }
                toRead.append(Pending(path: path, rel: relPath, name: name, st: st, existing: k.id))
            } else if let (moved, from, oldPath) = try movedSong(st, to: relPath, directory: id) {
                // Not in its old directory's rows any more (read at the start of the walk).
                if from == id { known[Path.lastComponent(oldPath)] = nil } else { self.known?.songs[from]?[Path.lastComponent(oldPath)] = nil }
                try db.cached("UPDATE songs SET path = ?, directory = ?, name = ? WHERE id = ?")
                    .run([.text(relPath), .int(id), .text(name), .int(moved)])
                try db.cached("UPDATE songs SET sort_key = ? WHERE id = ?").run([.text(try songSortKey(moved, dirRel: rel, name: name)), .int(moved)])
                try db.cached("DELETE FROM skipped WHERE path = ?").run([.text(relPath)])
                missing.remove(moved)
                job.moved += 1
                try progress()
            } else {
                toRead.append(Pending(path: path, rel: relPath, name: name, st: st, existing: nil))
            }
            if toRead.count >= Self.batch { try storeAll(&toRead, directory: id, dirRel: rel) }
        }
        try storeAll(&toRead, directory: id, dirRel: rel)
        // What is no longer here.
        for (_, k) in known { missing.insert(k.id) }
        for p in knownLists.subtracting(seenLists) { try db.cached("DELETE FROM playlists WHERE path = ?").run([.text(p)]) }
        let subdirNames = Set(subdirs.map(\.1))
        for (p, _) in knownDirs where !subdirNames.contains(p) { try removeSubtree(p) }

        for (path, relPath, mtime) in subdirs {
            let child = try directoryID(relPath, parent: id, mtime: mtime)
            try walk(path, rel: relPath, id: child, depth: depth + 1)
        }
    }

    /// The suffix of a file name, lower case (`FLAC` is `flac`), without `Path`'s index work.
    static func suffix(_ name: String) -> String {
        let u = name.utf8
        guard let dot = u.lastIndex(of: UInt8(ascii: ".")) else { return "" }
        return String(decoding: u[u.index(after: dot)...].map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self)
    }

    private func isCandidate(_ name: String) -> Bool {
        library.suffixes.contains(Self.suffix(name))
    }

    static func kindName(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFDIR: "a directory"
        default: "not a regular file"
        }
    }

    /// A file the scan could not use, and why (kept until it is usable or gone).
    private mutating func skip(_ rel: String, _ reason: String) throws(SQLiteError) {
        try db.cached("INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)").run([.text(rel), .text(reason)])
        job.failed += 1
    }

    /// A song elsewhere in the database that is this file (same device, inode, size and time)
    /// and is no longer at its own path: it moved here.
    private mutating func movedSong(_ st: stat, to rel: String, directory: Int) throws(SQLiteError) -> (Int, Int, String)? {
        let link = Self.linkKey(st)
        if let link, linkedNotMoved.contains(link) { return nil }
        guard let found = try movedSongLookup(st, to: rel, directory: directory) else {
            // (Its other links find the same songs, each still where it was, or new in this scan.
            // Emptied when full: a file forgotten is only looked for again.)
            if let link {
                if linkedNotMoved.count >= library.linkMemory.load(ordering: .relaxed) { linkedNotMoved.removeAll(keepingCapacity: true) }
                linkedNotMoved.insert(link)
            }
            return nil
        }
        return found
    }

    private mutating func movedSongLookup(_ st: stat, to rel: String, directory: Int) throws(SQLiteError) -> (Int, Int, String)? {
        let q = try db.cached("SELECT id, path, size, mtime, directory FROM songs WHERE device = ? AND inode = ?")
        try q.bind([.int(Int(bitPattern: UInt(st.st_dev))), .int(Int(bitPattern: UInt(st.st_ino)))])
        let mtime = Int(st.st_mtim.tv_sec) * 1_000_000_000 + Int(st.st_mtim.tv_nsec)
        var candidates: [(Int, Int, String)] = []
        while try q.step() {
            guard q.int(2) == Int(st.st_size) && q.int(3) == mtime else { continue }
            let (id, dir, old) = (q.int(0), q.int(4), q.text(1))
            if missing.contains(id) { return (id, dir, old) }  // not where it was: moved here
            // In a directory this walk has reached and not missing there: seen, or about to be
            // (hard links of one file are each a song of their own).
            if dir == directory {
                // Renamed within this directory: moved when its old name is gone from it.
                if currentNames == nil { currentNames = Set(currentNameList) }
                if currentNames?.contains(Path.lastComponent(old)) == false { return (id, dir, old) }
                continue
            }
            if visited.contains(dir) { continue }
            candidates.append((id, dir, old))
        }
        for (id, dir, old) in candidates where old != rel {
            var ost = stat()
            let gone = library.root.map { lstat($0 + "/" + old, &ost) != 0 || ost.st_ino != st.st_ino } ?? true
            if gone { return (id, dir, old) }
        }
        return nil
    }

    /// A file to read: new (`existing` nil) or changed.
    struct Pending {
        var path: String
        var rel: String
        var name: String
        var st: stat
        var existing: Int?
    }

    /// What a file's tag reader said.
    struct Read: Sendable {
        var info: TrackInfo?
        var plugin: String?
        var failure: String?
    }

    /// Files read at once (their tags held until written).
    static let batch = 32

    /// Reads `files`' tags, on two threads when there are several (the decoders' tag readers
    /// open and parse each file: the scan's cost), then writes them in order.
    ///
    /// A file with several links is opened once: its other links in this batch take the read
    /// from the batch's own table, those in later batches from ``linkedReads``. That memory
    /// holds at most the library's `linkMemory` files: when this batch's new ones would take it
    /// past that, it is emptied before the batch's reads, never during them (a link waiting for
    /// a read that was dropped would be stored as "not read", and as its size and time do not
    /// change, never read again). A tree of more linked files than that opens some again.
    private mutating func storeAll(_ files: inout [Pending], directory: Int, dirRel: String) throws(SQLiteError) {
        guard !files.isEmpty else { return }
        var reads = [Read?](repeating: nil, count: files.count)
        var toOpen: [Int] = []
        var opening = Set<LinkKey>()
        for (i, f) in files.enumerated() {
            if let key = Self.linkKey(f.st) {
                if let r = linkedReads[key] { reads[i] = r; continue }
                if !opening.insert(key).inserted { continue }  // (a link of one opened below)
            }
            toOpen.append(i)
        }
        let bound = library.linkMemory.load(ordering: .relaxed)
        if linkedReads.count + opening.count > bound { linkedReads.removeAll(keepingCapacity: true) }
        var batchReads: [LinkKey: Read] = [:]
        for (i, r) in zip(toOpen, Self.read(toOpen.map { files[$0].path }, library)) {
            reads[i] = r
            if let key = Self.linkKey(files[i].st) {
                batchReads[key] = r
                if linkedReads.count < bound { linkedReads[key] = r }
            }
        }
        job.read += toOpen.count
        for (i, f) in files.enumerated() where reads[i] == nil {
            // Every file not opened is a link of one opened in this batch.
            reads[i] = Self.linkKey(f.st).flatMap { batchReads[$0] }
        }
        for (f, r) in zip(files, reads.map { $0 ?? Read(info: nil, plugin: nil, failure: "not read") }) {
            try store(f, r, directory: directory, dirRel: dirRel)
            if f.existing == nil { job.added += 1 } else { job.updated += 1 }
            try db.cached("DELETE FROM skipped WHERE path = ?").run([.text(f.rel)])
            try progress()
        }
        files.removeAll(keepingCapacity: true)
    }

    static func read(_ paths: [String], _ library: MusicLibrary) -> [Read] {
        @Sendable func one(_ path: String) -> Read {
            do throws(MediaError) {
                let source = try InputSources.open(path, beneath: library.root)
                let p = try library.registry.plugin(for: source)
                return Read(info: try p.info(source), plugin: p.name, failure: nil)
            } catch {
                return Read(info: nil, plugin: nil, failure: error.reason)
            }
        }
        guard paths.count >= 2 else { return paths.map(one) }
        let results = ReadResults(count: paths.count)
        let half = paths.count / 2
        let other = PlatformThread.start(name: "bl-library-read") {
            for i in half..<paths.count { results.set(i, one(paths[i])) }
        }
        for i in 0..<half { results.set(i, one(paths[i])) }
        other.join()
        return results.all
    }

    /// Writes a file's row (new, or replacing `existing`'s tags; its id and `added` kept).
    private mutating func store(_ f: Pending, _ r: Read, directory: Int, dirRel: String) throws(SQLiteError) {
        let (rel, name, st, existing) = (f.rel, f.name, f.st, f.existing)
        let (info, plugin, failure) = (r.info, r.plugin, r.failure)
        if failure != nil { job.failed += 1 }
        let m = info?.metadata ?? TrackMetadata()
        let values: [SQLiteValue] = [
            .text(rel), .int(directory), .text(name), .text(SortKey.song(dirRel: dirRel, name: name, metadata: m)),
            .int(Int(st.st_size)), .int(Int(st.st_mtim.tv_sec) * 1_000_000_000 + Int(st.st_mtim.tv_nsec)),
            .int(Int(bitPattern: UInt(st.st_ino))), .int(Int(bitPattern: UInt(st.st_dev))),
            info?.duration.map { .double($0) } ?? .null, plugin.map { .text($0) } ?? .null,
            info?.format.map { .int($0.rate) } ?? .null, info?.encoding.map { .text($0.mpdName) } ?? .null,
            info?.format.map { .int($0.channels) } ?? .null, info?.bitrate.map { .int($0) } ?? .null,
            .int(m.artwork == nil ? 0 : 1), failure.map { .text($0) } ?? .null,
        ]
        let id: Int
        if let existing {
            try db.cached("""
                UPDATE songs SET path = ?, directory = ?, name = ?, sort_key = ?, size = ?, mtime = ?, inode = ?, device = ?,
                duration = ?, format = ?, rate = ?, bits = ?, channels = ?, bitrate = ?, artwork = ?, error = ? WHERE id = ?
                """).run(values + [.int(existing)])
            try db.cached("DELETE FROM tags WHERE song = ?").run([.int(existing)])
            id = existing
        } else {
            try db.cached("""
                INSERT INTO songs(path, directory, name, sort_key, size, mtime, inode, device, duration, format, rate, bits,
                channels, bitrate, artwork, error, added) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).run(values + [.int(now)])
            id = db.lastInsertRowID
        }
        let insert = try db.cached("INSERT INTO tags(song, key, seq, value, folded) VALUES (?, ?, ?, ?, ?)")
        for (seq, t) in m.tags.enumerated() {
            try insert.run([.int(id), .int(t.key.rawValue), .int(seq), .text(t.value), SongFilter.storedFold(t.value).map { .text($0) } ?? .null])
        }
        pending += 1
    }

    /// The walk-order key of a moved song (its album, disc and track from its tags).
    private func songSortKey(_ id: Int, dirRel: String, name: String) throws(SQLiteError) -> String {
        var m = TrackMetadata()
        let q = try db.cached("SELECT key, value FROM tags WHERE song = ? ORDER BY seq")
        try q.bind([.int(id)])
        while try q.step() { if let k = TagKey(rawValue: q.int(0)) { m.tags.append(Tag(k, q.text(1))) } }
        return SortKey.song(dirRel: dirRel, name: name, metadata: m)
    }

    /// Commits every 500 files or second (what a kill keeps), and tells observers four times a second.
    private mutating func progress() throws(SQLiteError) {
        let t = monotonicNanos()
        if pending >= 500 || t - lastCommit > 1_000_000_000 {
            db.resetStatements()
            try db.execute("COMMIT")
            library.generation.add(1, ordering: .releasing)
            try db.execute("BEGIN IMMEDIATE")
            pending = 0
            lastCommit = t
        }
        if t - lastNotify > 250_000_000 {
            lastNotify = t
            if let report { report(job) } else { library.notify(job) }
        }
    }

    /// Removes the directory `rel` and everything under it.
    private mutating func removeSubtree(_ rel: String) throws(SQLiteError) {
        let range: [SQLiteValue] = [.text(rel), .text(rel + "/"), .text(rel + "0")]
        let ids = try db.cached("SELECT id FROM songs WHERE path >= ?2 AND path < ?3 AND ?1 != ''")
        try ids.bind(range)
        while try ids.step() { missing.insert(ids.int(0)) }
        guard !rel.isEmpty else { return }
        try db.cached("DELETE FROM playlists WHERE path >= ?2 AND path < ?3 AND ?1 != ''").run(range)
        try db.cached("DELETE FROM skipped WHERE path = ?1 OR (path >= ?2 AND path < ?3)").run(range)
        // Directories go at the end (a song moved out of them must be found first).
        try db.cached("UPDATE directories SET parent = -1 WHERE path = ?1 OR (path >= ?2 AND path < ?3)").run(range)
    }

    /// Removes the songs that were not found again, and the directories that left.
    /// A stopped scan ends here too (what it wrote stays; it is resumed at the next start). A
    /// completed one says so durably in the transaction of its last batch: its `incomplete`
    /// row (and those of the paths under it) leaves, and the time of the update is written.
    private mutating func finish(_ top: String) throws(SQLiteError) {
        guard !library.isStopping else { return }
        for id in missing {
            try db.cached("DELETE FROM songs WHERE id = ?").run([.int(id)])
            job.removed += 1
        }
        try db.execute("DELETE FROM directories WHERE parent = -1")
        let key = Self.incompleteKey(top)
        try db.cached("DELETE FROM meta WHERE key = ?1 OR (key >= ?2 AND key < ?3) OR (?4 = '' AND key >= ?1 AND key < 'incomplete!')")
            .run([.text(key), .text(key + "/"), .text(key + "0"), .text(top)])
        // (The first scan writes it even when the music directory is empty: the library is made.)
        let recorded = try db.integer("SELECT count(*) FROM meta WHERE key = 'updated'") ?? 0
        if job.changed || recorded == 0 {
            try db.cached("INSERT OR REPLACE INTO meta(key, value) VALUES ('updated', ?)").run([.text(String(now))])
        }
    }
}

/// Walk-order keys, compared byte for byte: a directory is its path's components in natural
/// order (case and diacritics folded, numbers by value), each after a 0x01; a song is its
/// directory's key, 0x00 (before any subdirectory), its album, disc and track (as mpd orders
/// a directory's songs), then its name in natural order.
enum SortKey {
    static func directory(_ rel: String) -> String {
        rel.split(separator: "/").map { "\u{1}" + natural(String($0)) }.joined()
    }

    static func song(dirRel: String, name: String, metadata m: TrackMetadata) -> String {
        let album = m.values(.album).first.map(Fold.key) ?? ""
        let disc = number(m.values(.disc).first), track = number(m.values(.track).first)
        return directory(dirRel) + "\u{0}" + album + "\u{0}" + disc + track + "\u{0}" + natural(name)
    }

    private static func number(_ v: String?) -> String {
        let n = v.flatMap { Int($0.prefix { $0.isASCII && $0.isNumber }) } ?? 0
        let s = String(min(max(n, 0), 999_999))
        return String(repeating: "0", count: 6 - s.count) + s
    }

    /// `s` folded, each run of digits as its length then its digits (leading zeros dropped):
    /// `track 2` before `track 10`.
    static func natural(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        var digits = String.UnicodeScalarView()
        func flush() {
            guard !digits.isEmpty else { return }
            var d = Substring(String(digits)).drop { $0 == "0" }
            if d.isEmpty { d = "0" }
            out.append(Unicode.Scalar(UInt8(min(0x30 + d.count, 0x7E))))
            out.append(contentsOf: d.unicodeScalars)
            digits.removeAll()
        }
        for u in Fold.key(s).unicodeScalars {
            if u.value >= 48 && u.value <= 57 { digits.append(u) } else { flush(); out.append(u) }
        }
        flush()
        return String(out)
    }
}
