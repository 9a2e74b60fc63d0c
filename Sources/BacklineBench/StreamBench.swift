import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Streams (issue 35): a private Icecast server on loopback (Debian's `icecast2`, fed by
/// `ffmpeg -re` looping the 60 s, 320 kbit/s bench file) and
/// - first sound: `backline play URL` to the sink's monitor beside `mpg123 URL`, `mpv URL` and
///   mpd (`add URL`, then `play` timed), alternating, median of ``runs``;
/// - CPU and peak RSS of 60 s of `backline play URL` against `backline play FILE` (the same
///   file, local), each stopped by SIGINT at 60 s.
public enum StreamBench {
    static let runs = 10
    static let seconds = 60.0

    /// Icecast and its source; stopped by ``stop()``.
    final class Icecast {
        let dir: String
        let port: Int
        private var server: Child?
        private var source: Child?

        init(file: String) throws {
            dir = NSTemporaryDirectory() + "backline-icecast-\(getpid())"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            chmod(dir, 0o777)  // icecast2 as root changes to `nobody`, who writes the logs
            port = 20_000 + Int(getpid() % 20_000)
            let owner = getuid() == 0 ? "<changeowner><user>nobody</user><group>nogroup</group></changeowner>" : ""
            try """
                <icecast>
                  <limits><sources>2</sources><burst-size>65536</burst-size><source-timeout>30</source-timeout></limits>
                  <authentication><source-password>hackme</source-password><admin-user>admin</admin-user><admin-password>adminpw</admin-password></authentication>
                  <hostname>127.0.0.1</hostname><location>bench</location><admin>bench@localhost</admin>
                  <listen-socket><port>\(port)</port><bind-address>127.0.0.1</bind-address></listen-socket>
                  <paths><basedir>/usr/share/icecast2</basedir><logdir>\(dir)</logdir>
                    <webroot>/usr/share/icecast2/web</webroot><adminroot>/usr/share/icecast2/admin</adminroot></paths>
                  <logging><errorlog>error.log</errorlog><accesslog>access.log</accesslog><loglevel>1</loglevel></logging>
                  <security><chroot>0</chroot>\(owner)</security>
                </icecast>
                """.write(toFile: dir + "/icecast.xml", atomically: true, encoding: .utf8)
            server = try Child("/usr/bin/icecast2", ["-c", dir + "/icecast.xml"], environment: [:])
            guard DaemonBench.waitUntil(10, { Self.answers("http://127.0.0.1:\(port)/status-json.xsl") }) else {
                stop()
                throw BenchError("icecast2 did not start")
            }
            source = try Child("/usr/bin/ffmpeg", ["-nostdin", "-loglevel", "error", "-re", "-stream_loop", "-1", "-i", file,
                                                   "-c", "copy", "-content_type", "audio/mpeg", "-f", "mp3",
                                                   "icecast://source:hackme@127.0.0.1:\(port)/live.mp3"], environment: [:])
            guard DaemonBench.waitUntil(10, { Self.answers(self.url) }) else {
                stop()
                throw BenchError("the icecast mount did not come up")
            }
            Thread.sleep(forTimeInterval: 2)  // a burst's worth queued, as on a station that has been on the air
        }

        var url: String { "http://127.0.0.1:\(port)/live.mp3" }

        func stop() {
            source?.stop()
            server?.stop()
            try? FileManager.default.removeItem(atPath: dir)
        }

        /// Whether `url` answers 200 (its first byte).
        static func answers(_ url: String) -> Bool {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            p.arguments = ["-s", "-o", "/dev/null", "-m", "1", "-r", "0-0", "-w", "%{http_code}", url]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = FileHandle.nullDevice
            guard (try? p.run()) != nil else { return false }
            p.waitUntilExit()
            return String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).hasPrefix("200")
        }
    }

    public static func run(executable: String, device: String, sinkMonitor: String) throws -> [BenchResult] {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/icecast2"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg") else {
            throw BenchError("the stream rows need icecast2 and ffmpeg (scripts/bootstrap --bench installs them)")
        }
        let file = try PipelineBench.testFile(seconds: 60)
        let ice = try Icecast(file: file)
        defer { ice.stop() }
        let front = StartupBench.frontEnd(beside: executable)
        return try firstSound(front: front, device: device, url: ice.url, sinkMonitor: sinkMonitor)
            + usage(front: front, device: device, url: ice.url, file: file)
    }

    /// First sound of the mount: ours beside mpg123, mpv and mpd.
    static func firstSound(front: String, device: String, url: String, sinkMonitor: String) throws -> [BenchResult] {
        let monitor = try MonitorReader(source: sinkMonitor)
        defer { monitor.stop() }
        Thread.sleep(forTimeInterval: 0.5)  // (parec connected)
        let mpg123 = ["/usr/bin/mpg123", "/usr/local/bin/mpg123"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let mpv = FileManager.default.isExecutableFile(atPath: "/usr/bin/mpv") ? "/usr/bin/mpv" : nil
        let dir = NSTemporaryDirectory() + "backline-stream-mpd-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let mpd = try DaemonBench.startMPD(in: dir)
        defer { mpd?.process.stop() }
        let m = try mpd?.connect()
        var ours: [Double] = [], theirs: [String: [Double]] = [:]
        for _ in 0..<runs {
            ours.append(try FirstSoundBench.firstSound([front, "play", "--device", device, "--no-keys", url], monitor: monitor))
            if let mpg123 { theirs["mpg123", default: []].append(try FirstSoundBench.firstSound([mpg123, "-q", "-o", "pulse", url], monitor: monitor)) }
            if let mpv {
                theirs["mpv", default: []].append(try FirstSoundBench.firstSound(
                    [mpv, "--no-config", "--no-video", "--no-terminal", "--ao=pulse", url], monitor: monitor))
            }
            if let m {
                _ = try m.exchange("clear")
                _ = try m.exchange("add \"\(url)\"")
                Thread.sleep(forTimeInterval: 0.3)
                let t0 = DaemonBench.clockNow()
                monitor.armSound(after: t0)
                _ = try m.exchange("play")
                guard DaemonBench.waitUntil(10, { monitor.soundAt != nil }), let t = monitor.soundAt else {
                    throw BenchError("no sound from mpd playing \(url) within 10 s")
                }
                theirs["mpd", default: []].append(t - t0)
                _ = try m.exchange("stop")
            }
        }
        let name = "first sound of an Icecast mount: `backline play URL` to the sink's monitor (median of \(runs))"
        var rows = [BenchResult(name: name, value: median(ours) * 1000, unit: "ms",
                                reference: theirs["mpg123"].map { median($0) * 1000 }, referenceName: "mpg123 URL")]
        for (who, label) in [("mpv", "mpv URL"), ("mpd", "mpd (add URL, play)")] {
            if let t = theirs[who] {
                rows.append(BenchResult(name: "first sound of the mount, beside \(who)", value: median(ours) * 1000, unit: "ms",
                                        reference: median(t) * 1000, referenceName: label))
            }
        }
        return rows
    }

    /// CPU and peak RSS of 60 s of the mount against 60 s of the same file played locally.
    static func usage(front: String, device: String, url: String, file: String) throws -> [BenchResult] {
        let local = try playFor(seconds, [front, "play", "--device", device, "--no-keys", file])
        let stream = try playFor(seconds, [front, "play", "--device", device, "--no-keys", url])
        return [
            BenchResult(name: "CPU, 60 s of a 320 kbit/s Icecast stream via \(device)", value: stream.cpu, unit: "s CPU",
                        reference: local.cpu, referenceName: "the same file, local"),
            BenchResult(name: "peak RSS, same runs (the network buffer is 0.5 MiB)", value: stream.peakMiB, unit: "MiB",
                        reference: local.peakMiB, referenceName: "the same file, local"),
        ]
    }

    /// Runs `command` for `seconds`, then SIGINT; its CPU seconds and peak RSS (`VmHWM` just
    /// before the signal).
    static func playFor(_ seconds: Double, _ command: [String]) throws -> (cpu: Double, peakMiB: Double) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, command[0], &actions, nil, argv, environ)
        guard rc == 0 else { throw BenchError("cannot run \(command[0]): \(String(cString: strerror(rc)))") }
        Thread.sleep(forTimeInterval: seconds)
        let peak = MemoryBench.peakMiB(pid)
        kill(pid, SIGINT)
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) == -1 && errno == EINTR {}
        let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        guard let peak else { throw BenchError("\(command.joined(separator: " ")) ended before \(Int(seconds)) s") }
        return (cpu, peak)
    }
}
