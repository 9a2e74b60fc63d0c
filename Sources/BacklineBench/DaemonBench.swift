import BacklineWire
import Daemon
import Foundation
import MediaCore
import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// The daemon's control latency beside mpd's, measured the same way in the same run:
/// request round trips (`ping`) over each one's Unix socket with 1 and with 100 connected
/// clients, the time from a pause request to silence on a PulseAudio null sink's monitor, and
/// the silence the listener hears at each kind of jump (next, previous, play ID, seek).
public enum DaemonBench {
    /// `value`, or an error naming what was missing.
    static func requireID(_ value: Int?, _ what: String = "an item id in the reply") throws -> Int {
        guard let value else { throw BenchError("expected \(what)") }
        return value
    }

    /// Runs the rows. `executable` is this `backline`; `device` a paced ALSA device (pulse);
    /// `sinkMonitor` the source `parec` records (the null sink's monitor).
    public static func run(executable: String, device: String, sinkMonitor: String) throws -> [BenchResult] {
        let dir = NSTemporaryDirectory() + "backline-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let tone = dir + "/music/tone.mp3"
        try shell("sox -n -r 44100 -c 2 -b 16 \(dir)/tone.wav synth 120 sine 440 gain -6 && lame --quiet -b 192 \(dir)/tone.wav \(tone)")
        // Three continuous 20 s tones for the jumps: any silence on the monitor is the jump's.
        for (k, f) in [330, 550, 770].enumerated() {
            try shell("sox -n -r 44100 -c 2 -b 16 \(dir)/j\(k).wav synth 20 sine \(f) gain -6 && lame --quiet -b 192 \(dir)/j\(k).wav \(dir)/music/jump-\(k).mp3")
        }

        // Backline, on a private session bus (MPRIS) when dbus-daemon is there.
        let bus = try? SessionBus(directory: dir)
        defer { bus?.stop() }
        if let bus { setenv("DBUS_SESSION_BUS_ADDRESS", bus.address, 1) }  // (for playerctl below)
        let socket = dir + "/run/control.sock"
        let blMPD = dir + "/bl-mpd.sock"
        let daemonArguments = ["daemon", "--socket", socket, "--music-dir", dir + "/music",
                               "--state-file", dir + "/state.json", "--device", device, "--config", "/dev/null", "--mpd-listen", blMPD]
        let daemonEnvironment = ["XDG_RUNTIME_DIR": dir + "/rt", "XDG_CACHE_HOME": dir + "/cache"]
        let daemon = try Child(executable, daemonArguments, environment: daemonEnvironment)
        defer { daemon.stop() }
        guard waitUntil(20, { (try? ControlClient(socketPath: socket).request("ping")) != nil }) else {
            throw BenchError("backline daemon did not start")
        }
        let blPing: () throws -> LineConnection = { try LineConnection(unix: socket, greeting: false) }
        let bl1 = try roundTrips(connect: blPing, request: "{\"command\":\"ping\"}", others: 0)
        let bl100 = try roundTrips(connect: blPing, request: "{\"command\":\"ping\"}", others: 99,
                                   subscribe: "{\"command\":\"subscribe\"}")
        // The MPD protocol: `status` (stopped, empty queue) with 1 and 100 clients (99 in `idle`),
        // and stock `mpc status` as a whole process.
        let blMPDConnect: () throws -> LineConnection = { try LineConnection(unix: blMPD, greeting: true) }
        let blStatus1 = try roundTrips(connect: blMPDConnect, request: "status", others: 0)
        let blStatus100 = try roundTrips(connect: blMPDConnect, request: "status", others: 99, subscribe: "idle")
        let blMpc = try mpcStatus(blMPD)
        // Our own client as a whole process, the daemon stopped with an empty queue (as mpd below).
        let ctlStatus = try StartupBench.cost(StartupBench.frontEnd(beside: executable), ["ctl", "--socket", socket, "status"])
        let c = try ControlClient(socketPath: socket)
        _ = try c.request("add", [("path", "tone.mp3")])
        let blPause = try pauseLatency(monitor: sinkMonitor,
                                       play: { _ = try c.request("play") }, pause: { _ = try c.request("pause") })
        // The same pause from whole processes: our own `ctl pause`, and playerctl's PlayPause over MPRIS.
        var ctlPause: Double?, mprisPause: Double?
        let playerctl = "/usr/bin/playerctl"
        if bus != nil, FileManager.default.isExecutableFile(atPath: playerctl),
           waitUntil(10, { ((try? measureChild(playerctl, ["-p", "backline", "status"]))?.status ?? 1) == 0 }) {
            ctlPause = try pauseLatency(monitor: sinkMonitor, play: { _ = try c.request("play") },
                                        pause: { _ = try measureChild(StartupBench.frontEnd(beside: executable), ["ctl", "--socket", socket, "pause"]) })
            mprisPause = try pauseLatency(monitor: sinkMonitor, play: { _ = try c.request("play") },
                                          pause: { _ = try measureChild(playerctl, ["-p", "backline", "play-pause"]) })
        }
        _ = try c.request("stop")
        _ = try c.request("clear")
        let ids = try (0..<3).map { k in
            try requireID(c.request("add", [("path", .string("jump-\(k).mp3"))])["items"]?.array?.first?.int)
        }
        _ = try c.request("repeat", [("mode", "all")])
        let blJumps = try jumpSilences(monitor: sinkMonitor, commands: JumpCommands(
            play: { _ = try c.request("play", [("item", .number(Double(ids[$0])))]) },
            next: { _ = try c.request("next") },
            previous: { _ = try c.request("previous") },
            seek: { _ = try c.request("seek", [("position", .number(Double($0)))]) }))
        _ = try c.request("stop")
        daemon.stop()

        // mpd, same machine, same sink.
        var results: [BenchResult] = []
        let mpdPath = ["/usr/bin/mpd", "/usr/sbin/mpd"].first { FileManager.default.isExecutableFile(atPath: $0) }
        var mpd1: Latencies?, mpd100: Latencies?, mpdPause: Double?, mpdJumps: [Jump: Double] = [:]
        var mpdStatus1: Latencies?, mpdStatus100: Latencies?, mpdMpc: StartupBench.Cost?
        if let mpdPath {
            let msock = dir + "/mpd.sock"
            let conf = """
                music_directory "\(dir)/music"
                db_file "\(dir)/mpd.db"
                state_file "\(dir)/mpd.state"
                bind_to_address "\(msock)"
                max_connections "128"
                audio_output {
                    type "pulse"
                    name "bench"
                }
                """
            try conf.write(toFile: dir + "/mpd.conf", atomically: true, encoding: .utf8)
            let mpd = try Child(mpdPath, ["--no-daemon", dir + "/mpd.conf"], environment: [:])
            defer { mpd.stop() }
            if waitUntil(20, { (try? LineConnection(unix: msock, greeting: true)) != nil }) {
                let mpdConnect: () throws -> LineConnection = { try LineConnection(unix: msock, greeting: true) }
                mpd1 = try roundTrips(connect: mpdConnect, request: "ping", others: 0)
                mpd100 = try roundTrips(connect: mpdConnect, request: "ping", others: 99, subscribe: "idle")
                mpdStatus1 = try roundTrips(connect: mpdConnect, request: "status", others: 0)
                mpdStatus100 = try roundTrips(connect: mpdConnect, request: "status", others: 99, subscribe: "idle")
                mpdMpc = try mpcStatus(msock)
                let m = try LineConnection(unix: msock, greeting: true)
                _ = try m.exchange("update")
                _ = waitUntil(10) { ((try? m.exchange("status")) ?? "").contains("updating_db") == false }
                _ = try m.exchange("add \"tone.mp3\"")
                mpdPause = try pauseLatency(monitor: sinkMonitor,
                                            play: { _ = try m.exchange("play") }, pause: { _ = try m.exchange("pause 1") })
                _ = try m.exchange("stop")
                _ = try m.exchange("clear")
                let mids = try (0..<3).map { k in
                    let r = try m.exchange("addid \"jump-\(k).mp3\"")
                    return try requireID(r.split(separator: "\n").first { $0.hasPrefix("Id: ") }.flatMap { Int($0.dropFirst(4)) })
                }
                _ = try m.exchange("repeat 1")
                mpdJumps = try jumpSilences(monitor: sinkMonitor, commands: JumpCommands(
                    play: { _ = try m.exchange("playid \(mids[$0])") },
                    next: { _ = try m.exchange("next") },
                    previous: { _ = try m.exchange("previous") },
                    seek: { _ = try m.exchange("seekcur \($0)") }))
                _ = try m.exchange("stop")
            }
        }
        func add(_ name: String, _ ours: Double, _ ref: Double?, _ unit: String, _ refName: String) {
            results.append(BenchResult(name: name, value: ours, unit: unit, reference: ref, referenceName: refName))
        }
        add("daemon ping round trip p50, 1 client", bl1.p50, mpd1?.p50, "µs", "mpd ping")
        add("daemon ping round trip p99, 1 client", bl1.p99, mpd1?.p99, "µs", "mpd ping")
        add("daemon ping round trip p50, 100 clients", bl100.p50, mpd100?.p50, "µs", "mpd ping")
        add("daemon ping round trip p99, 100 clients", bl100.p99, mpd100?.p99, "µs", "mpd ping")
        add("MPD-protocol status round trip p50, 1 client", blStatus1.p50, mpdStatus1?.p50, "µs", "mpd status")
        add("MPD-protocol status round trip p99, 1 client", blStatus1.p99, mpdStatus1?.p99, "µs", "mpd status")
        add("MPD-protocol status round trip p50, 100 clients (99 in idle)", blStatus100.p50, mpdStatus100?.p50, "µs", "mpd status")
        add("MPD-protocol status round trip p99, 100 clients (99 in idle)", blStatus100.p99, mpdStatus100?.p99, "µs", "mpd status")
        if let blMpc {
            add("stock `mpc status` as a whole process, wall (median of 20)", blMpc.wallMilliseconds, mpdMpc?.wallMilliseconds,
                "ms", "mpc status against mpd")
        }
        results += StartupBench.rows("`backline ctl status` as a whole process", ctlStatus, mpdMpc, "mpc status against mpd")
        add("pause request → silence on the sink monitor (median of 8)", blPause, mpdPause, "ms", "mpd pause 1")
        if let mprisPause, let ctlPause {
            add("playerctl play-pause (MPRIS, a whole process) → silence on the sink monitor (median of 8)", mprisPause, ctlPause,
                "ms", "backline ctl pause, a whole process")
        }
        for j in Jump.allCases {
            add("jump: \(j.rawValue) → longest silence on the sink monitor (median of 5)", blJumps[j] ?? .nan, mpdJumps[j], "ms", "mpd \(j.mpd)")
        }
        return results
    }

    /// One daemon's way to say each jump: play the n-th of the three tones, next, previous, seek
    /// to a second.
    struct JumpCommands {
        var play: (Int) throws -> Void
        var next: () throws -> Void
        var previous: () throws -> Void
        var seek: (Int) throws -> Void
    }

    /// The jumps measured, each as both daemons say it.
    enum Jump: String, CaseIterable {
        case next = "next 1 s into an item"
        case previous = "previous 1 s into an item (back to the last one)"
        case playID = "play ID"
        case seek = "seek within the item"

        var mpd: String {
            switch self {
            case .next: "next"
            case .previous: "previous"
            case .playID: "playid"
            case .seek: "seekcur"
            }
        }
    }

    /// Plays the three 20 s tones (repeat on) from the first, then five rounds of next, previous,
    /// play ID (of the item two on), seek (to 12 s or 5 s): each after a second of sound,
    /// timing the longest silent run (both channels |sample| ≤ 50) on the monitor in the second
    /// after the command. Medians, in ms.
    static func jumpSilences(monitor: String, commands: JumpCommands) throws -> [Jump: Double] {
        let rec = try MonitorReader(source: monitor)
        defer { rec.stop() }
        var silences: [Jump: [Double]] = [:]
        try commands.play(0)
        var index = 0  // the item playing
        for round in 0..<5 {
            for j in Jump.allCases {
                guard waitUntil(5, { rec.loudSince(1.0) }) else { throw BenchError("no sound on the sink monitor before \(j.mpd)") }
                rec.armSilence(after: clockNow())
                switch j {
                case .next:
                    try commands.next()
                    index = (index + 1) % 3
                case .previous:
                    try commands.previous()
                    index = (index + 2) % 3
                case .playID:
                    index = (index + 2) % 3
                    try commands.play(index)
                case .seek:
                    try commands.seek(round % 2 == 0 ? 12 : 5)
                }
                usleep(1_000_000)
                silences[j, default: []].append(rec.longestSilence * 1000)
            }
        }
        return silences.mapValues { v in v.sorted()[v.count / 2] }
    }

    struct Latencies {
        var p50: Double
        var p99: Double
    }

    /// `others` more connections (each sends `subscribe` first, if given, then stays connected
    /// and also pings now and then); one connection measures 2000 sequential round trips.
    static func roundTrips(connect: () throws -> LineConnection, request: String, others: Int,
                           subscribe: String? = nil) throws -> Latencies {
        var idle: [LineConnection] = []
        for _ in 0..<others {
            let o = try connect()
            if let subscribe { try o.send(subscribe) }
            idle.append(o)
        }
        let m = try connect()
        for _ in 0..<200 { _ = try m.exchange(request) }  // warm-up
        var samples: [Double] = []
        samples.reserveCapacity(2000)
        for _ in 0..<2000 {
            let t0 = clockNow()
            _ = try m.exchange(request)
            samples.append((clockNow() - t0) * 1e6)
        }
        samples.sort()
        _ = idle
        return Latencies(p50: samples[samples.count / 2], p99: samples[samples.count * 99 / 100])
    }

    /// Plays, then eight times: after 0.8 s of sound, pause, and time until the monitor is
    /// silent (5 ms of zeros), then play again. The median, in ms. Includes the monitor's own
    /// latency, which both players share.
    static func pauseLatency(monitor: String, play: () throws -> Void, pause: () throws -> Void) throws -> Double {
        let rec = try MonitorReader(source: monitor)
        defer { rec.stop() }
        var results: [Double] = []
        try play()
        for _ in 0..<8 {
            guard waitUntil(5, { rec.loudSince(0.8) }) else { throw BenchError("no sound on the sink monitor") }
            let t0 = clockNow()
            rec.armSilence(after: t0)
            try pause()
            guard waitUntil(5, { rec.silenceAt != nil }) else { throw BenchError("the sound did not stop") }
            results.append((rec.silenceAt! - t0) * 1000)
            try play()
        }
        results.sort()
        return results[results.count / 2]
    }

    struct IdleUsage {
        var cpuMilliseconds: Double
        var wakeupsPerSecond: Double
    }

    /// CPU time (utime + stime) and context switches of every thread of `pid` over `seconds`.
    static func idleUsage(pid: Int32, seconds: Double) throws -> IdleUsage {
        Thread.sleep(forTimeInterval: 2)  // (settle after the last request)
        /// Per thread: CPU ticks (utime + stime) and context switches.
        func sample() -> [String: (ticks: Double, switches: Double)] {
            var out: [String: (ticks: Double, switches: Double)] = [:]
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            for t in tasks {
                var ticks = 0.0, switches = 0.0
                if let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/stat", encoding: .utf8),
                   let close = stat.lastIndex(of: ")") {
                    let fields = stat[stat.index(after: close)...].split(separator: " ")
                    ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
                }
                if let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/status", encoding: .utf8) {
                    for line in status.split(separator: "\n") where line.contains("ctxt_switches") {
                        switches += Double(line.split(separator: "\t").last?.trimmingBlanks() ?? "") ?? 0
                    }
                }
                out[t] = (ticks, switches)
            }
            return out
        }
        let a = sample()
        Thread.sleep(forTimeInterval: seconds)
        let b = sample()
        // Threads that lived through the window count their change; new ones all they did.
        var ticks = 0.0, switches = 0.0
        for (t, now) in b {
            let before = a[t] ?? (0, 0)
            ticks += now.ticks - before.ticks
            switches += now.switches - before.switches
        }
        let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
        return IdleUsage(cpuMilliseconds: ticks / hz * 1000, wakeupsPerSecond: switches / seconds)
    }

    static func clockNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    static func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = clockNow() + seconds
        while clockNow() < deadline {
            if condition() { return true }
            usleep(2000)
        }
        return condition()
    }

    /// Stock `mpc status` against the MPD socket `socket`, as a whole process (wall, CPU, peak
    /// RSS: ``StartupBench/cost(_:_:environment:)``); nil without mpc.
    static func mpcStatus(_ socket: String) throws -> StartupBench.Cost? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/mpc") else { return nil }
        return try StartupBench.cost("/usr/bin/mpc", ["status"], environment: ["MPD_HOST": socket])
    }

    /// `backline daemon` as on a desktop: MPRIS on a private session bus when `dbus-daemon` is
    /// there (`--no-mpris` otherwise), `dir/music` its music directory, its socket, runtime
    /// directory and state in `dir`, in the foreground, playing `path` (added: a file or a
    /// directory of the music directory) to `device`.
    static func startDesktopDaemon(_ executable: String, device: String, in dir: String, playing path: String) throws
        -> (daemon: Child, socket: String, bus: SessionBus?) {
        let bus = try? SessionBus(directory: dir)
        let socket = dir + "/run/control.sock"
        var environment = ["XDG_RUNTIME_DIR": dir + "/rt", "XDG_CACHE_HOME": dir + "/cache"]
        if let bus { environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address }
        let daemon: Child
        do {
            daemon = try Child(executable, ["daemon", "--socket", socket, "--music-dir", dir + "/music", "--state-file", dir + "/state.json",
                                            "--device", device, "--config", "/dev/null"] + (bus == nil ? ["--no-mpris"] : []),
                               environment: environment)
        } catch {
            bus?.stop()
            throw error
        }
        guard waitUntil(20, { (try? ControlClient(socketPath: socket).request("ping")) != nil }) else {
            daemon.stop()
            bus?.stop()
            throw BenchError("backline daemon did not start")
        }
        do {
            let c = try ControlClient(socketPath: socket)
            _ = try c.request("lifecycle", [("state", "foreground")])  // (never suspended while measured)
            _ = try c.request("add", [("path", .string(path))])
            _ = try c.request("play")
        } catch {
            daemon.stop()
            bus?.stop()
            throw error
        }
        return (daemon, socket, bus)
    }

    /// mpd, the reference daemon: `dir/music` as its music directory (database updated), pulse
    /// output, a Unix socket in `dir`; nil when mpd is not installed or does not answer.
    static func startMPD(in dir: String) throws -> (process: Child, connect: () throws -> LineConnection)? {
        guard let mpdPath = ["/usr/bin/mpd", "/usr/sbin/mpd"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return nil
        }
        let socket = dir + "/mpd.sock"
        try """
            music_directory "\(dir)/music"
            db_file "\(dir)/mpd.db"
            state_file "\(dir)/mpd.state"
            bind_to_address "\(socket)"
            audio_output {
                type "pulse"
                name "bench"
            }
            """.write(toFile: dir + "/mpd.conf", atomically: true, encoding: .utf8)
        let mpd = try Child(mpdPath, ["--no-daemon", dir + "/mpd.conf"], environment: [:])
        let connect = { try LineConnection(unix: socket, greeting: true) }
        guard waitUntil(20, { (try? connect()) != nil }) else {
            mpd.stop()
            return nil
        }
        let m = try connect()
        _ = try m.exchange("update")
        _ = waitUntil(30) { ((try? m.exchange("status")) ?? "").contains("updating_db") == false }
        return (mpd, connect)
    }

    static func shell(_ command: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", command]
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw BenchError("failed: \(command)") }
    }
}

/// A child process, killed (SIGTERM, then SIGKILL) by ``stop()``.
/// A private D-Bus session bus for the MPRIS rows (`dbus-daemon --session --fork`).
final class SessionBus {
    let address: String
    let pid: Int32

    init(directory: String) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon") else { throw BenchError("no dbus-daemon") }
        // posix_spawn with stdout to a file, then waitpid: the forked bus keeps its stdout open
        // (a pipe would never end) and Foundation's Process waits on it.
        let outPath = directory + "/bus-address"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let args = ["/usr/bin/dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1", "--address=unix:dir=" + directory]
        let argv = args.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        guard posix_spawn(&child, args[0], &actions, nil, argv, environ) == 0 else { throw BenchError("cannot run dbus-daemon") }
        var status: Int32 = 0
        _ = waitpid(child, &status, 0)
        let lines = ((try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "").split(separator: "\n")
        guard lines.count >= 2, let pid = Int32(lines[1]) else { throw BenchError("dbus-daemon did not start") }
        address = String(lines[0])
        self.pid = pid
    }

    func stop() { kill(pid, SIGTERM) }
}

final class Child {
    let process = Process()

    init(_ path: String, _ arguments: [String], environment: [String: String]) throws {
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        if !DaemonBench.waitUntil(10, { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// A blocking line connection to a Unix socket (either protocol: one line out, one reply in;
/// for mpd, the reply ends with `OK` or `ACK`).
final class LineConnection {
    let fd: Int32
    let mpd: Bool
    var buffer: [UInt8] = []

    init(unix path: String, greeting: Bool) throws {
        mpd = greeting
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            let b = Array(path.utf8)
            raw.copyBytes(from: b)
            raw[b.count] = 0
        }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 else {
            close(fd)
            throw BenchError("connect \(path): errno \(errno)")
        }
        if greeting { _ = try line() }  // "OK MPD x.y.z"
    }

    deinit { close(fd) }

    func send(_ line: String) throws {
        let b = Array((line + "\n").utf8)
        let n = b.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n == b.count else { throw BenchError("send failed") }
    }

    func line() throws -> String {
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let l = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeFirst(nl + 1)
                return l
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw BenchError("connection closed") }
            buffer += chunk[..<n]
        }
    }

    /// Sends `request`, returns the reply (mpd: every line up to `OK`/`ACK`; ours: the reply line,
    /// skipping events).
    func exchange(_ request: String) throws -> String {
        try send(request)
        var out = ""
        while true {
            let l = try line()
            if mpd {
                out += l + "\n"
                if l == "OK" || l.hasPrefix("ACK") { return out }
            } else if !l.hasPrefix("{\"event\"") {
                return l
            }
        }
    }
}

/// `parec` on a monitor source, read as it arrives; notes when sound has been going for a while
/// and when it stops after a moment the caller arms.
final class MonitorReader: @unchecked Sendable {
    private let process = Process()
    final class Levels: Sendable {
        struct State {
            var loudFrom: Double?
            var armedAt: Double?
            var silentAt: Double?
            var zeros = 0
            /// Since armed: the current and the longest run of silent frames (|sample| ≤ 50).
            var run = 0
            var longest = 0
            /// The first sound (|sample| > 64) after `soundArmedAt`: when its chunk arrived.
            var soundArmedAt: Double?
            var soundAt: Double?
        }
        let m = Lock(State())
        func withLock<R>(_ body: (inout State) -> R) -> R { m.withLock { body(&$0) } }
    }
    private let state = Levels()
    private let thread: Thread

    init(source: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/parec")
        process.arguments = ["-d", source, "--raw", "--format=s16le", "--rate=44100", "--channels=2", "--latency-msec=2"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let fd = pipe.fileHandleForReading.fileDescriptor
        let st = state
        thread = Thread {
            var buf = [Int16](repeating: 0, count: 4096)
            while true {
                let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { return }
                let t = DaemonBench.clockNow()
                let samples = n / 2
                st.withLock { s in
                    if let a = s.armedAt, t >= a {
                        var k = 0
                        while k + 1 < samples {
                            if abs(Int(buf[k])) <= 50 && abs(Int(buf[k + 1])) <= 50 {
                                s.run += 1
                                s.longest = max(s.longest, s.run)
                            } else {
                                s.run = 0
                            }
                            k += 2
                        }
                    }
                    if let a = s.soundArmedAt, t >= a, s.soundAt == nil,
                       buf[..<samples].contains(where: { abs(Int($0)) > 64 }) {
                        s.soundAt = t
                    }
                    for k in 0..<samples {
                        if abs(Int(buf[k])) > 64 {
                            if s.loudFrom == nil { s.loudFrom = t }
                            s.zeros = 0
                        } else {
                            s.zeros += 1
                            if s.zeros >= 441 { s.loudFrom = nil }  // 5 ms of stereo zeros
                            if s.zeros >= 441, let a = s.armedAt, t >= a, s.silentAt == nil { s.silentAt = t }
                        }
                    }
                }
            }
        }
        thread.start()
    }

    func loudSince(_ seconds: Double) -> Bool {
        state.withLock { s in s.loudFrom.map { DaemonBench.clockNow() - $0 >= seconds } ?? false }
    }

    func armSilence(after t: Double) {
        state.withLock { s in
            s.armedAt = t
            s.silentAt = nil
            s.run = 0
            s.longest = 0
        }
    }

    /// Watches for the first sound from `t` on (see ``soundAt``).
    func armSound(after t: Double) {
        state.withLock { s in
            s.soundArmedAt = t
            s.soundAt = nil
        }
    }

    /// When the first sound since ``armSound(after:)`` arrived from the monitor.
    var soundAt: Double? { state.withLock { $0.soundAt } }

    /// The longest silent run since ``armSilence(after:)``, in seconds.
    var longestSilence: Double { state.withLock { Double($0.longest) / 44100 } }

    var silenceAt: Double? { state.withLock { $0.silentAt } }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
