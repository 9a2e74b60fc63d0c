// The scan jobs: `update` queues scans (32 at most, a path waiting not queued twice), run one
// at a time on the thread "bl-library", or in a scanner process whose progress lines are
// read back; their observers, the interrupted scans resumed, and a scan run here and now.

import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

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
