import Media
import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// Watches the music directory with inotify (a watch per directory of the library) and scans
/// what changed: a directory with files created, written, moved or deleted is scanned once
/// the changes have been quiet for `delay` seconds (a copy of an album is one scan, not one a
/// file). New directories are watched as the scans find them.
///
/// When the kernel runs out of watches (`fs.inotify.max_user_watches`), the watcher says so
/// through `warn` once and falls back to scanning the whole music directory every
/// `fallbackInterval` seconds.
public final class LibraryWatcher: Sendable {
    private let library: MusicLibrary
    private let delay: Double
    private let fallbackInterval: Double
    private let warn: @Sendable (String) -> Void
    private let fd: Int32
    private let wake: Int32
    private let wakeWriter: Int32
    private let state = Lock(State())
    private let thread = Lock<PlatformThread?>(nil)

    private struct State {
        var watches: [Int32: String] = [:]
        var paths: Set<String> = []
        var dirty: Set<String> = []
        var firstChange = 0
        var lastChange = 0
        var exhausted = false
        var stopping = false
    }

    /// Starts watching `library`'s music directory; nil when inotify is not available.
    public init?(library: MusicLibrary, delay: Double = 1, fallbackInterval: Double = 600,
                 warn: @escaping @Sendable (String) -> Void) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else {
            warn("inotify is not available (\(String(cString: strerror(errno)))): the library is updated by `update` only")
            return nil
        }
        var pair: [Int32] = [0, 0]
        guard pipe(&pair) == 0 else { close(fd); return nil }
        for p in pair {
            _ = fcntl(p, F_SETFD, FD_CLOEXEC)
            _ = fcntl(p, F_SETFL, O_NONBLOCK)
        }
        self.library = library
        self.delay = delay
        self.fallbackInterval = fallbackInterval
        self.warn = warn
        self.fd = fd
        (wake, wakeWriter) = (pair[0], pair[1])
        // After each scan, the directories it found are watched.
        library.observe { [weak self] u in if u.done { self?.syncWatches() } }
        syncWatches()
        thread.withLock { $0 = PlatformThread.start(name: "bl-inotify") { [self] in run() } }
    }

    /// Stops watching (joins the thread).
    public func stop() {
        state.withLock { $0.stopping = true }
        var one: UInt8 = 1
        _ = write(wakeWriter, &one, 1)
        thread.withLock { t in
            t?.join()
            t = nil
        }
    }

    deinit {
        close(fd)
        close(wake)
        close(wakeWriter)
    }

    /// Directories the watcher watches now.
    public var watchedCount: Int { state.withLock { $0.watches.count } }

    /// Adds a watch for every directory of the library not watched yet.
    func syncWatches() {
        guard let root = library.root, let dirs = try? library.directoryPaths() else { return }
        var added: [String] = []
        for rel in dirs {
            if state.withLock({ $0.paths.contains(rel) || $0.exhausted || $0.stopping }) { continue }
            let path = rel.isEmpty ? root : root + "/" + rel
            let mask = UInt32(IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_ONLYDIR)
            let wd = inotify_add_watch(fd, path, mask)
            if wd < 0 {
                if errno == ENOSPC {
                    state.withLock { $0.exhausted = true }
                    warn("out of inotify watches after \(watchedCount) directories (raise fs.inotify.max_user_watches): the whole music directory is scanned every \(Int(fallbackInterval)) s instead")
                }
                continue
            }
            state.withLock { s in
                s.watches[wd] = rel
                s.paths.insert(rel)
            }
            added.append(rel)
        }
        // A directory is watched only after the scan that found it: what arrived in it since
        // then is found by one more scan of it.
        if !added.isEmpty, watchedCount > added.count {
            for rel in added where !added.contains(where: { rel.hasPrefix($0 + "/") }) { _ = try? library.update(rel) }
        }
    }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var lastFallback = monotonicNanos()
        while !state.withLock({ $0.stopping }) {
            let (pending, exhausted) = state.withLock { s -> (Int?, Bool) in (s.dirty.isEmpty ? nil : s.lastChange, s.exhausted) }
            // Asleep until something changes (an idle daemon must not wake for nothing), but for
            // a pending debounce, or the fallback's periodic scan.
            var timeout: Int32 = exhausted ? 60_000 : -1
            if let last = pending { timeout = Int32(max(0, min(1000, (last + Int(delay * 1e9) - monotonicNanos()) / 1_000_000))) }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, timeout)
            if fds[0].revents & Int16(POLLIN) != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 { take(buffer, count: n) }
            }
            flushIfQuiet()
            if state.withLock({ $0.exhausted }), monotonicNanos() - lastFallback > Int(fallbackInterval * 1e9) {
                lastFallback = monotonicNanos()
                _ = try? library.update("")
            }
        }
    }

    /// Marks the directories the events name as changed.
    private func take(_ b: [UInt8], count n: Int) {
        var i = 0
        let now = monotonicNanos()
        b.withUnsafeBytes { raw in
            while i + 16 <= n {
                let wd = raw.load(fromByteOffset: i, as: Int32.self)
                let mask = raw.load(fromByteOffset: i + 4, as: UInt32.self)
                let len = Int(raw.load(fromByteOffset: i + 12, as: UInt32.self))
                let nameBytes = raw[(i + 16)..<min(n, i + 16 + len)].prefix { $0 != 0 }
                let name = String(decoding: nameBytes, as: UTF8.self)
                i += 16 + len
                state.withLock { s in
                    if mask & UInt32(IN_IGNORED) != 0 {
                        if let p = s.watches.removeValue(forKey: wd) { s.paths.remove(p) }
                        return
                    }
                    guard let dir = s.watches[wd], !name.hasPrefix(".") else { return }
                    // Only what a scan would look at: directories, music, playlists.
                    let isDir = mask & UInt32(IN_ISDIR) != 0
                    let ext = Path.extension(name).lowercased()
                    guard isDir || library.suffixes.contains(ext) || ["m3u", "m3u8", "pls"].contains(ext) else { return }
                    if s.dirty.isEmpty { s.firstChange = now }
                    s.dirty.insert(dir)
                    s.lastChange = now
                }
            }
        }
    }

    /// Scans the changed directories once changes have been quiet for `delay` (or have gone on
    /// for ten times that).
    private func flushIfQuiet() {
        let now = monotonicNanos()
        let dirs = state.withLock { s -> [String] in
            guard !s.dirty.isEmpty, now - s.lastChange >= Int(delay * 1e9) || now - s.firstChange >= Int(delay * 10e9) else { return [] }
            defer { s.dirty.removeAll() }
            return Array(s.dirty)
        }
        // A directory under another one that is scanned is scanned with it.
        for d in dirs.sorted() where !dirs.contains(where: { $0 != d && ($0.isEmpty || d.hasPrefix($0 + "/")) }) {
            _ = try? library.update(d)
        }
    }
}

extension MusicLibrary {
    /// Every directory of the library (relative paths; "" the root).
    func directoryPaths() throws(LibraryError) -> [String] {
        try read { db throws(SQLiteError) in
            let st = try db.prepare("SELECT path FROM directories ORDER BY path")
            var out: [String] = []
            while try st.step() { out.append(st.text(0)) }
            return out
        }
    }
}
