import BacklineWire
import Daemon
import Foundation
import MediaCore

#if canImport(Glibc)
import Glibc
#endif

/// Streams: a private Icecast server on loopback (Debian's `icecast2`, fed by
/// `ffmpeg -re` looping a 90 s, 320 kbit/s bench file) and
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
        let file = try PipelineBench.testFile(seconds: 90)  // (played for 60 s: it must not end first)
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
        // Our daemon too, beside mpd's (a running daemon pays no start-up per play).
        try FileManager.default.createDirectory(atPath: dir + "/bl/music", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: PipelineBench.testFile(seconds: 60), toPath: dir + "/bl/music/local.mp3")
        let (daemon, socket, bus) = try DaemonBench.startDesktopDaemon(front, device: device, in: dir + "/bl", playing: ".")
        defer { daemon.stop(); bus?.stop() }
        let ctl = try ControlClient(socketPath: socket)
        _ = try ctl.request("stop")
        var daemonTimes: [Double] = []
        var ours: [Double] = [], theirs: [String: [Double]] = [:]
        var mpdSilent = 0
        for _ in 0..<runs {
            ours.append(try FirstSoundBench.firstSound([front, "play", "--device", device, "--no-keys", url], monitor: monitor))
            if let mpg123 { theirs["mpg123", default: []].append(try FirstSoundBench.firstSound([mpg123, "-q", "-o", "pulse", url], monitor: monitor)) }
            if let mpv {
                theirs["mpv", default: []].append(try FirstSoundBench.firstSound(
                    [mpv, "--no-config", "--no-video", "--no-terminal", "--ao=pulse", url], monitor: monitor))
            }
            _ = try ctl.request("clear")
            _ = try ctl.request("add", [("paths", .array([.string(url)]))])
            Thread.sleep(forTimeInterval: 0.3)
            let d0 = DaemonBench.clockNow()
            monitor.armSound(after: d0)
            _ = try ctl.request("play")
            guard DaemonBench.waitUntil(20, { monitor.soundAt != nil }), let heard = monitor.soundAt else {
                throw BenchError("no sound from backline daemon playing \(url) within 20 s")
            }
            daemonTimes.append(heard - d0)
            _ = try ctl.request("stop")
            if let m {
                _ = try m.exchange("clear")
                _ = try m.exchange("add \"\(url)\"")
                Thread.sleep(forTimeInterval: 0.3)
                let t0 = DaemonBench.clockNow()
                monitor.armSound(after: t0)
                _ = try m.exchange("play")
                if DaemonBench.waitUntil(20, { monitor.soundAt != nil }), let t = monitor.soundAt {
                    theirs["mpd", default: []].append(t - t0)
                } else {
                    mpdSilent += 1  // (counted in the row's name)
                }
                _ = try m.exchange("stop")
            }
        }
        let name = "first sound of an Icecast mount: `backline play URL` to the sink's monitor (median of \(runs))"
        var rows = [BenchResult(name: name, value: median(ours) * 1000, unit: "ms",
                                reference: theirs["mpg123"].map { median($0) * 1000 }, referenceName: "mpg123 URL")]
        let mpdLabel = mpdSilent == 0 ? "mpd (add URL, play)" : "mpd (add URL, play; \(mpdSilent) of \(runs) runs no sound in 20 s)"
        if let t = theirs["mpv"] {
            rows.append(BenchResult(name: "first sound of the mount, beside mpv", value: median(ours) * 1000, unit: "ms",
                                    reference: median(t) * 1000, referenceName: "mpv URL"))
        }
        if let t = theirs["mpd"] {
            rows.append(BenchResult(name: "first sound of the mount, beside mpd", value: median(ours) * 1000, unit: "ms",
                                    reference: median(t) * 1000, referenceName: mpdLabel))
            rows.append(BenchResult(name: "first sound of the mount: `backline daemon` (add URL, play)", value: median(daemonTimes) * 1000, unit: "ms",
                                    reference: median(t) * 1000, referenceName: mpdLabel))
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
        let log = NSTemporaryDirectory() + "backline-stream-play-\(getpid()).log"
        posix_spawn_file_actions_addopen(&actions, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { try? FileManager.default.removeItem(atPath: log) }
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
        guard let peak else {
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw BenchError("\(command.joined(separator: " ")) ended before \(Int(seconds)) s (status \(status)): \(said.suffix(500))")
        }
        return (cpu, peak)
    }
}

/// The title-change row: a small ICY server (Python, on loopback: Icecast's 64 KiB burst, then
/// real-time pace) plays 3 s of silence and then a tone, with `StreamTitle='Sound'` placed in
/// the stream exactly where the tone begins (the first MP3 frame holding it, as
/// `StreamRealtimeTests` does). Each player is started on it; the tone's onset on the sink's
/// monitor is when the title is *heard*, and the row is when each reports it, relative to
/// that: Backline's daemon (its `current` event), mpd (`idle player`, then `currentsong`) and
/// mpv (`observe_property metadata` over its IPC socket). Negative: reported before it is heard.
public enum TitleLatencyBench {
    static let runs = 3

    static let server = #"""
    import os, sys, time, socketserver, http.server
    data = open(sys.argv[1], "rb").read()
    at = int(sys.argv[2])
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"
        def log_message(self, *a): pass
        def do_GET(self):
            icy = self.headers.get("Icy-MetaData") == "1"
            self.send_response(200)
            self.send_header("Content-Type", "audio/mpeg")
            self.send_header("icy-name", "Bench Radio")
            if icy: self.send_header("icy-metaint", str(at))
            self.end_headers()
            start = time.monotonic(); sent = 0; pos = 0; until = at
            try:
                while pos < len(data):
                    n = min(4096, len(data) - pos)
                    if icy: n = min(n, until)
                    self.wfile.write(data[pos:pos + n]); pos += n; sent += n
                    if icy:
                        until -= n
                        if until == 0:
                            block = b"StreamTitle='Sound';"
                            k = (len(block) + 15) // 16
                            self.wfile.write(bytes([k]) + block.ljust(k * 16, b"\0"))
                            until = at
                    # Icecast's burst, then 16,000 bytes a second (128 kbit/s)
                    ahead = (sent - 65536) / 16000 - (time.monotonic() - start)
                    if ahead > 0: time.sleep(ahead)
            except (BrokenPipeError, ConnectionResetError):
                pass
    class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True
    s = S(("127.0.0.1", 0), H)
    open(sys.argv[3] + ".tmp", "w").write(str(s.server_address[1])); os.rename(sys.argv[3] + ".tmp", sys.argv[3])
    s.serve_forever()
    """#

    /// The byte offset of each frame of a CBR MPEG-1 Layer III file with no tag or Info frame.
    static func frameOffsets(_ data: [UInt8]) -> [Int] {
        let rates = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
        var out: [Int] = []
        var i = 0
        while i + 4 <= data.count, data[i] == 0xFF, data[i + 1] & 0xE0 == 0xE0 {
            out.append(i)
            i += 144 * rates[Int(data[i + 2] >> 4)] * 1000 / 44100 + Int(data[i + 2] >> 1) & 1
        }
        return out
    }

    public static func run(executable: String, device: String, sinkMonitor: String) throws -> [BenchResult] {
        let dir = NSTemporaryDirectory() + "backline-title-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try DaemonBench.shell("""
            sox -n -r 44100 -c 2 -b 16 \(dir)/a.wav trim 0 3 && sox -n -r 44100 -c 2 -b 16 \(dir)/b.wav synth 20 sine 440 gain -6 && \
            sox \(dir)/a.wav \(dir)/b.wav \(dir)/ab.wav && lame --quiet -t --cbr -b 128 \(dir)/ab.wav \(dir)/ab.mp3
            """)
        let offsets = frameOffsets(Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/ab.mp3"))))
        // Output sample s is decoded from frame (s + 1105) / 1152 (the encoder's and decoder's
        // delay): the tone's first sample (3 s in) lies in frame 115; the title goes before 116.
        let frame = (3 * 44100 + 1105) / 1152 + 1
        guard offsets.count > frame else { throw BenchError("the title bench's MP3 has \(offsets.count) frames") }
        try server.write(toFile: dir + "/server.py", atomically: true, encoding: .utf8)
        let http = try Child("/usr/bin/python3", [dir + "/server.py", dir + "/ab.mp3", String(offsets[frame]), dir + "/port"], environment: [:])
        defer { http.stop() }
        guard DaemonBench.waitUntil(10, { FileManager.default.fileExists(atPath: dir + "/port") }),
              let port = try? String(contentsOfFile: dir + "/port", encoding: .utf8) else { throw BenchError("the ICY server did not start") }
        let url = "http://127.0.0.1:\(port)/radio"
        let monitor = try MonitorReader(source: sinkMonitor)
        defer { monitor.stop() }
        Thread.sleep(forTimeInterval: 0.5)

        var ours: [Double] = [], mpdTimes: [Double] = [], mpvTimes: [Double] = []
        for run in 0..<runs {
            ours.append(try backline(executable, device: device, url: url, dir: dir + "/bl\(run)", monitor: monitor))
            if let t = try mpd(url: url, dir: dir + "/mpd\(run)", monitor: monitor) { mpdTimes.append(t) }
            if let t = try mpv(url: url, dir: dir, monitor: monitor) { mpvTimes.append(t) }
        }
        let name = "title change: reported minus heard on the monitor, `backline daemon` (`current` event; median of \(runs))"
        var rows = [BenchResult(name: name, value: median(ours) * 1000, unit: "ms",
                                reference: mpdTimes.isEmpty ? nil : median(mpdTimes) * 1000, referenceName: "mpd: idle player")]
        if !mpvTimes.isEmpty {
            rows.append(BenchResult(name: "title change, beside mpv", value: median(ours) * 1000, unit: "ms",
                                    reference: median(mpvTimes) * 1000, referenceName: "mpv: metadata property"))
        }
        return rows
    }

    /// Reads on `c` give up after 15 s (an error) instead of waiting for ever.
    static func limitReads(_ c: LineConnection) {
        var tv = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Waits (at most 15 s) for the tone on the monitor after `t0` and for `reported` to give a
    /// time; reported minus heard, seconds.
    static func measure(after t0: Double, monitor: MonitorReader, _ reported: () throws -> Double?) throws -> Double {
        let t = try reported()
        guard let t else { throw BenchError("no title reported within 15 s") }
        guard DaemonBench.waitUntil(15, { monitor.soundAt != nil }), let heard = monitor.soundAt else {
            throw BenchError("no tone heard within 15 s")
        }
        return t - heard
    }

    static func backline(_ executable: String, device: String, url: String, dir: String, monitor: MonitorReader) throws -> Double {
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        chmod(dir, 0o700)  // (the daemon's socket directory must be private)
        let socket = dir + "/control.sock"
        let daemon = try Child(executable, ["daemon", "--socket", socket, "--music-dir", dir + "/music", "--state-file", dir + "/state.json",
                                            "--device", device, "--config", "/dev/null", "--no-mpris"],
                               environment: ["XDG_RUNTIME_DIR": dir, "XDG_CACHE_HOME": dir])
        defer { daemon.stop() }
        guard DaemonBench.waitUntil(20, { (try? LineConnection(unix: socket, greeting: false)) != nil }) else {
            throw BenchError("backline daemon did not start")
        }
        let c = try LineConnection(unix: socket, greeting: false)
        limitReads(c)
        _ = try c.exchange(#"{"command":"lifecycle","state":"foreground"}"#)
        _ = try c.exchange(#"{"command":"subscribe","events":["current"]}"#)
        _ = try c.exchange(#"{"command":"add","paths":["\#(url)"]}"#)
        Thread.sleep(forTimeInterval: 0.3)
        let t0 = DaemonBench.clockNow()
        monitor.armSound(after: t0)
        try c.send(#"{"command":"play"}"#)
        return try measure(after: t0, monitor: monitor) {
            let deadline = t0 + 15
            while DaemonBench.clockNow() < deadline {
                let line = try c.line()
                if line.hasPrefix(#"{"event":"current""#), line.contains(#""title":"Sound""#) { return DaemonBench.clockNow() }
            }
            return nil
        }
    }

    static func mpd(url: String, dir: String, monitor: MonitorReader) throws -> Double? {
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        guard let mpd = try DaemonBench.startMPD(in: dir) else { return nil }
        defer { mpd.process.stop() }
        let m = try mpd.connect()
        limitReads(m)
        _ = try m.exchange("add \"\(url)\"")
        Thread.sleep(forTimeInterval: 0.3)
        let t0 = DaemonBench.clockNow()
        monitor.armSound(after: t0)
        _ = try m.exchange("play")
        return try measure(after: t0, monitor: monitor) {
            while DaemonBench.clockNow() < t0 + 15 {
                if try m.exchange("currentsong").contains("\nTitle: Sound\n") { return DaemonBench.clockNow() }
                _ = try m.exchange("idle player")
            }
            return nil
        }
    }

    static func mpv(url: String, dir: String, monitor: MonitorReader) throws -> Double? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/mpv") else { return nil }
        let socket = dir + "/mpv.sock"
        try? FileManager.default.removeItem(atPath: socket)
        let t0 = DaemonBench.clockNow()
        monitor.armSound(after: t0)
        let mpv = try Child("/usr/bin/mpv", ["--no-config", "--no-video", "--no-terminal", "--ao=pulse", "--input-ipc-server=" + socket, url],
                            environment: [:])
        defer { mpv.stop() }
        guard DaemonBench.waitUntil(10, { (try? LineConnection(unix: socket, greeting: false)) != nil }) else {
            throw BenchError("mpv's IPC socket did not appear")
        }
        let c = try LineConnection(unix: socket, greeting: false)
        limitReads(c)
        try c.send(#"{"command":["observe_property",1,"metadata"]}"#)
        return try measure(after: t0, monitor: monitor) {
            while DaemonBench.clockNow() < t0 + 15 {
                let line = try c.line()
                if line.contains(#""name":"metadata""#), line.contains("Sound") { return DaemonBench.clockNow() }
            }
            return nil
        }
    }
}
