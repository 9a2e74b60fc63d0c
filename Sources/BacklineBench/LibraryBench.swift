import Daemon
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The music library, beside mpd 0.23 on the same generated tree in the same run:
/// - a full scan of a 10,000-file tree (`scripts/music-tree`: short tagged files in five
///   formats; generated once and cached), each side starting from no database: `update`, then
///   `status` polled every 2 ms until `updating_db` is gone; then the same with nothing changed;
/// - `search any "love"` and `list album group albumartist`: p50 and p99 of 50 round trips;
/// - resident memory with the library loaded and a song playing (after the queries), and the
///   database files' sizes;
/// - a 100,000-file tree (MP3 and Opus, 0.2–0.5 s): our scan's time and peak memory, and
///   `status` round trips during the scan against the same when idle.
public enum LibraryBench {
    static let queries = 50

    /// The cached tree of `songs` songs (generated on first use).
    static func tree(_ songs: Int, formats: String) throws -> String {
        let cache = (ProcessInfo.processInfo.environment["XDG_CACHE_HOME"] ?? NSHomeDirectory() + "/.cache") + "/backline-bench"
        let dir = cache + "/tree-\(songs)-\(formats.replacingOccurrences(of: ",", with: "-"))"
        if FileManager.default.fileExists(atPath: dir + "/.done") { return dir }
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        let script = FileManager.default.currentDirectoryPath + "/scripts/music-tree"  // (scripts/bench runs in the project)
        try DaemonBench.shell("/usr/bin/python3 '\(script)' '\(dir)' --songs \(songs) --formats \(formats) --cache '\(cache)/base' > /dev/null")
        _ = FileManager.default.createFile(atPath: dir + "/.done", contents: nil)
        return dir
    }

    /// A server on `music` with no database yet (`backline daemon`, or mpd 0.23), its MPD socket.
    final class Server {
        let child: Child
        let socket: String
        let database: String
        let name: String

        init(ours executable: String?, music: String, device: String, in dir: String) throws {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            socket = dir + "/mpd.sock"
            if let executable {
                name = "backline daemon"
                database = dir + "/library.sqlite"
                // No scan at start (the bench asks for it, timed) and no inotify (nothing changes).
                try "update-on-start = no\nauto-update = no\n".write(toFile: dir + "/daemon.conf", atomically: true, encoding: .utf8)
                child = try Child(executable, ["daemon", "--socket", dir + "/run/control.sock", "--music-dir", music, "--state-file", dir + "/state.json",
                                               "--library", database, "--device", device, "--config", dir + "/daemon.conf", "--mpd-listen", socket,
                                               "--no-mpris"],
                                  environment: ["XDG_RUNTIME_DIR": dir + "/rt", "XDG_CACHE_HOME": dir + "/cache"])
            } else {
                name = "mpd 0.23"
                database = dir + "/mpd.db"
                try """
                    music_directory "\(music)"
                    db_file "\(database)"
                    state_file "\(dir)/mpd.state"
                    playlist_directory "\(dir)"
                    bind_to_address "\(socket)"
                    audio_output {
                        type "pulse"
                        name "bench"
                    }
                    """.write(toFile: dir + "/mpd.conf", atomically: true, encoding: .utf8)
                child = try Child("/usr/bin/mpd", ["--no-daemon", dir + "/mpd.conf"], environment: [:])
            }
            guard DaemonBench.waitUntil(30, { (try? LineConnection(unix: self.socket, greeting: true)) != nil }) else {
                child.stop()
                throw BenchError("\(name) did not start")
            }
        }

        func connect() throws -> LineConnection { try LineConnection(unix: socket, greeting: true) }

        /// Seconds from `update` to no `updating_db` in `status` (polled every 2 ms); the
        /// status round trips seen meanwhile, in µs.
        func timedUpdate(_ command: String = "update") throws -> (seconds: Double, statusMicros: [Double]) {
            let c = try connect()
            let t0 = DaemonBench.clockNow()
            _ = try c.exchange(command)
            var samples: [Double] = []
            while true {
                let s0 = DaemonBench.clockNow()
                let status = try c.exchange("status")
                let s1 = DaemonBench.clockNow()
                guard status.contains("updating_db") else { return (s1 - t0, samples) }
                samples.append((s1 - s0) * 1e6)
                usleep(2000)
            }
        }

        /// p50 and p99 of `command`'s round trip, ms (after two warm-ups).
        func latency(_ command: String, runs: Int) throws -> (p50: Double, p99: Double, lines: Int) {
            let c = try connect()
            var lines = 0
            for _ in 0..<2 { lines = try c.exchange(command).split(separator: "\n").count }
            var samples: [Double] = []
            for _ in 0..<runs {
                let t0 = DaemonBench.clockNow()
                _ = try c.exchange(command)
                samples.append((DaemonBench.clockNow() - t0) * 1e3)
            }
            samples.sort()
            return (samples[samples.count / 2], samples[min(samples.count - 1, samples.count * 99 / 100)], lines)
        }

        /// `VmRSS` and `VmHWM` now, MiB.
        func memory() -> (rss: Double, peak: Double) {
            let status = (try? String(contentsOfFile: "/proc/\(child.process.processIdentifier)/status", encoding: .utf8)) ?? ""
            func field(_ k: String) -> Double {
                (status.split(separator: "\n").first { $0.hasPrefix(k + ":") }?.split(separator: " ").dropFirst().first).flatMap { Double($0) }.map { $0 / 1024 } ?? 0
            }
            return (field("VmRSS"), field("VmHWM"))
        }

        /// The database's size on disk (with SQLite's WAL), MiB.
        var databaseMiB: Double {
            [database, database + "-wal"].compactMap { try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int }
                .reduce(0) { $0 + Double($1) } / 1_048_576
        }

        func stop() { child.stop() }
    }

    /// One server's figures.
    struct Figures {
        var full: (seconds: Double, statusMicros: [Double])
        var again: (seconds: Double, statusMicros: [Double])
        var search: (p50: Double, p99: Double, lines: Int)
        var list: (p50: Double, p99: Double, lines: Int)
        var title: (p50: Double, p99: Double, lines: Int)
        var answering: (rss: Double, peak: Double)
        var steady: (rss: Double, peak: Double)
        var database: Double
        var song: String
    }

    /// A full scan, a rescan, the queries, then a song playing (`song`, else the first of
    /// `find track 1`) for 7 s (the daemon gives memory back 5 s after the last big answer; mpd
    /// keeps its database in memory whatever it does); the server is stopped after.
    static func measure(_ s: Server, song: String?) throws -> Figures {
        defer { s.stop() }
        let full = try s.timedUpdate(), again = try s.timedUpdate()
        let search = try s.latency("search any \"love\"", runs: queries)
        let list = try s.latency("list album group albumartist", runs: queries)
        let title = try s.latency("find title \"Kind night 922\"", runs: queries)
        let answering = s.memory()
        let first = try song ?? s.connect().exchange("find track 1 window 0:1").split(separator: "\n")
            .first { $0.hasPrefix("file: ") }.map { String($0.dropFirst(6)) } ?? ""
        for command in ["add \"\(first)\"", "repeat 1", "play"] { _ = try s.connect().exchange(command) }
        Thread.sleep(forTimeInterval: 7)
        return Figures(full: full, again: again, search: search, list: list, title: title, answering: answering,
                       steady: s.memory(), database: s.databaseMiB, song: first)
    }

    public static func run(executable: String, device: String) throws -> [BenchResult] {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/mpd") else { throw BenchError("library rows need mpd 0.23 (scripts/bootstrap --bench)") }
        let dir = NSTemporaryDirectory() + "backline-library-bench-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)

        let ten = try tree(10_000, formats: "flac,ogg,opus,mp3,m4a")
        var results: [BenchResult] = []
        func row(_ name: String, _ ours: Double, _ theirs: Double?, _ unit: String, _ ref: String = "mpd 0.23") {
            results.append(BenchResult(name: name, value: ours, unit: unit, reference: theirs, referenceName: ref))
        }

        // Each side alone on the machine: mpd first, then ours, the same steps.
        let m = try measure(Server(ours: nil, music: ten, device: device, in: dir + "/mpd"), song: nil)
        let o = try measure(Server(ours: executable, music: ten, device: device, in: dir + "/ours"), song: m.song)
        let (mFull, mAgain, mSearch, mList, mTitle, mMemory, mDB) = (m.full, m.again, m.search, m.list, m.title, m.steady, m.database)
        let (oFull, oAgain, oSearch, oList, oTitle, oAnswering, oMemory, oDB) = (o.full, o.again, o.search, o.list, o.title, o.answering, o.steady, o.database)
        guard oSearch.lines > 0 else { throw BenchError("search answered nothing") }

        row("library: full scan, 10,000 files (s)", oFull.seconds, mFull.seconds, "s")
        row("library: rescan, nothing changed (s)", oAgain.seconds, mAgain.seconds, "s")
        row("library: search any \"love\" p50 (ms; \(oSearch.lines) lines, mpd \(mSearch.lines))", oSearch.p50, mSearch.p50, "ms")
        row("library: search any \"love\" p99 (ms)", oSearch.p99, mSearch.p99, "ms")
        row("library: list album group albumartist p50 (ms)", oList.p50, mList.p50, "ms")
        row("library: list album group albumartist p99 (ms)", oList.p99, mList.p99, "ms")
        row("library: find title (one song) p50 (ms)", oTitle.p50, mTitle.p50, "ms")
        row("library: RSS, 10k library loaded, playing (MiB)", oMemory.rss, mMemory.rss, "MiB")
        row("library: RSS right after the queries (MiB)", oAnswering.rss, mMemory.rss, "MiB")
        row("library: peak RSS, same run (MiB)", oMemory.peak, mMemory.peak, "MiB")
        row("library: database on disk, 10k songs (MiB)", oDB, mDB, "MiB")

        // 100,000 tiny files: ours, with status round trips during the scan against idle.
        if ProcessInfo.processInfo.environment["BACKLINE_BENCH_SKIP_100K"] == nil {
            let big = try tree(100_000, formats: "mp3,opus")
            let o = try Server(ours: executable, music: big, device: device, in: dir + "/ours-100k")
            let scan = try o.timedUpdate()
            let idle = try o.latency("status", runs: 400)
            let peak = o.memory().peak
            o.stop()
            let during = scan.statusMicros.sorted()
            let duringP50 = during.isEmpty ? 0 : during[during.count / 2] / 1000
            row("library: full scan, 100,000 files (s)", scan.seconds, nil, "s", "")
            row("library: peak RSS, 100,000-file scan (MiB)", peak, nil, "MiB", "")
            row("library: status p50 during the 100k scan (ms; \(during.count) samples)", duringP50, idle.p50, "ms", "the same, idle")
        }
        return results
    }
}
