// The walk: one scan of a directory of the music directory (`Scan`): each entry `lstat`ed,
// what changed compared with the database, tags read through the decoder registry on two
// threads, moves found by device and inode, rows written in transactions. The queue of scans is
// in ScanJobs.swift, the walk-order keys in SortKey.swift.

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
