import Foundation
import Platform

#if canImport(Glibc)
import Glibc
#endif

/// What a short command costs as a whole process, start-up included (`backline ctl status`
/// beside `mpc status`, `backline --version` beside `mpg123 --version`).
public enum StartupBench {
    /// One command's median cost.
    public struct Cost: Sendable {
        /// From `posix_spawn` to `wait4`, ms.
        public var wallMilliseconds: Double
        /// User + system time (`wait4`'s rusage), ms.
        public var cpuMilliseconds: Double
        /// Peak resident set (GNU time's `%M`), MiB; nil without `/usr/bin/time`.
        public var peakRSSMiB: Double?
    }

    /// The `backline` front end beside `executable` (the binary this bench runs in may be
    /// `backline-player`, started by it or directly); `executable` itself when there is none.
    public static func frontEnd(beside executable: String) -> String {
        let candidate = Path.deletingLastComponent(executable) + "/backline"
        return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : executable
    }

    /// `backline --version` beside `mpg123 --version`: wall, CPU, peak RSS.
    public static func version(executable: String) throws -> [BenchResult] {
        let ours = try cost(frontEnd(beside: executable), ["--version"])
        let mpg123 = ["/usr/bin/mpg123", "/usr/local/bin/mpg123"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let theirs = try mpg123.map { try cost($0, ["--version"]) }
        return rows("`backline --version` as a whole process", ours, theirs, "mpg123 --version")
    }

    /// The three rows (wall, CPU, peak RSS) of `ours` beside `theirs`.
    static func rows(_ name: String, _ ours: Cost, _ theirs: Cost?, _ referenceName: String) -> [BenchResult] {
        var out = [
            BenchResult(name: "\(name), wall (median of \(runs))", value: ours.wallMilliseconds, unit: "ms",
                        reference: theirs?.wallMilliseconds, referenceName: referenceName),
            BenchResult(name: "\(name), CPU (median of \(runs))", value: ours.cpuMilliseconds, unit: "ms",
                        reference: theirs?.cpuMilliseconds, referenceName: referenceName),
        ]
        if let rss = ours.peakRSSMiB {
            out.append(BenchResult(name: "\(name), peak RSS (median of \(rssRuns))", value: rss, unit: "MiB",
                                   reference: theirs?.peakRSSMiB, referenceName: referenceName))
        }
        return out
    }

    static let runs = 20
    static let rssRuns = 5

    /// Runs `path arguments` 3 times to warm up, then `runs` times: the medians of wall and CPU
    /// time; then `rssRuns` times under GNU time for the peak RSS (a child spawned from this
    /// large process would report this process's peak as its own: `wait4`'s `ru_maxrss` keeps
    /// the peak of the image `exec` replaced, and a `posix_spawn` child runs in the parent's
    /// memory until then; GNU time is a small process that forks). Output is discarded; a
    /// status other than 0 is an error.
    public static func cost(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Cost {
        var walls: [Double] = [], cpus: [Double] = []
        for k in 0..<(3 + runs) {
            let (wall, cpu) = try spawnAndWait(path, arguments, environment: environment)
            if k >= 3 {
                walls.append(wall)
                cpus.append(cpu)
            }
        }
        var rss: Double?
        let time = "/usr/bin/time"
        if FileManager.default.isExecutableFile(atPath: time) {
            let out = NSTemporaryDirectory() + "backline-bench-rss-\(getpid())"
            defer { unlink(out) }
            var peaks: [Double] = []
            for _ in 0..<rssRuns {
                _ = try spawnAndWait(time, ["-f", "%M", "-o", out, path] + arguments, environment: environment)
                let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
                guard let kib = text.split(separator: "\n").last.flatMap({ Double($0) }) else {
                    throw BenchError("\(time) gave no peak RSS for \(path): \(text)")
                }
                peaks.append(kib / 1024)
            }
            rss = median(peaks)
        }
        return Cost(wallMilliseconds: median(walls), cpuMilliseconds: median(cpus), peakRSSMiB: rss)
    }

    /// One run: wall ms (spawn to reaped) and CPU ms (user + system of the child).
    static func spawnAndWait(_ path: String, _ arguments: [String], environment: [String: String]) throws -> (Double, Double) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let t0 = now()
        let rc = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard rc == 0 else { throw BenchError("cannot run \(path): \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw BenchError("wait4: \(String(cString: strerror(errno)))") }
        }
        let wall = (now() - t0) * 1000
        guard status == 0 else { throw BenchError("\(([path] + arguments).joined(separator: " ")) exited with status \(status)") }
        let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000
        return (wall, cpu)
    }
}
