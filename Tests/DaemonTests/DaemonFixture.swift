import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import MediaCore
import Testing
import Locking

/// The `backline` executable built next to this test bundle; or, in a sanitizer's build
/// (`scripts/sanitize`, where the fully static front end is not built), `backline-player`
/// there, which takes the same command lines: the daemons the tests start are then that build's.
let backline: String = {
    let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for name in ["backline", "backline-player"] {
        let candidate = dir.appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return Harness.packageRoot.appendingPathComponent(".build/debug/backline").path
}()

/// Where ``backlineForAnotherUser`` copies the executables when it must.
let anotherUsersCopy = "/tmp/backline-bin-\(getpid())"

/// `backline` as another user (`nobody`) can run it. A clone in a directory only its owner can
/// enter (a 0700 `mktemp -d`, `/root`) keeps the build out of that user's reach ("Permission
/// denied"), so `backline` and the `backline-player` it runs are copied once into a fresh
/// directory under `/tmp` that anyone may enter; where every directory above the build is
/// enterable already, the build itself is used.
let backlineForAnotherUser: String = {
    func enterable(_ path: String) -> Bool {
        var dir = (path as NSString).deletingLastPathComponent
        while !dir.isEmpty && dir != "/" {
            var st = stat()
            guard stat(dir, &st) == 0, st.st_mode & 0o001 != 0 else { return false }
            dir = (dir as NSString).deletingLastPathComponent
        }
        return true
    }
    guard !enterable(backline) else { return backline }
    let source = (backline as NSString).deletingLastPathComponent
    let dir = anotherUsersCopy
    try? FileManager.default.removeItem(atPath: dir)
    // Removed when the test process exits (the copies are 60-odd MB).
    atexit { try? FileManager.default.removeItem(atPath: anotherUsersCopy) }
    mkdir(dir, 0o755)
    chmod(dir, 0o755)
    for name in ["backline", "backline-player"] {
        try? FileManager.default.copyItem(atPath: source + "/" + name, toPath: dir + "/" + name)
        chmod(dir + "/" + name, 0o755)
    }
    return dir + "/" + (backline as NSString).lastPathComponent
}()

/// A real `backline daemon` process in its own directories (runtime, state, config, music),
/// playing into `device`.
final class DaemonFixture: @unchecked Sendable {
    let dir: URL
    let music: String
    let stateFile: String
    let configFile: String
    let socket: String
    let environment: [String: String]
    let device: String
    private(set) var process: SpawnedProcess?
    private(set) var logs: [String] = []

    /// Files in the music directory: `a.mp3` (3 s, 440 Hz), `b.mp3` (4 s, 660 Hz), `c.mp3` (5 s,
    /// 880 Hz) in `album/`, `long.mp3` (60 s), `short/1.mp3`…`3.mp3` (1 s each) and
    /// `broken/bad.mp3` (random bytes).
    static func musicFiles() throws -> [(String, URL)] {
        // Made once: tests running side by side would otherwise write and read them at once.
        try musicLock.withLock {
            if let m = made { return m }
            let m = [
                ("album/a.mp3", try Fixtures.tone("daemon-a", seconds: 3, frequency: 440)),
                ("album/b.mp3", try Fixtures.tone("daemon-b", seconds: 4, frequency: 660)),
                ("album/c.mp3", try Fixtures.tone("daemon-c", seconds: 5, frequency: 880)),
                ("long.mp3", try Fixtures.tone("daemon-long", seconds: 60, frequency: 330)),
                ("short/1.mp3", try Fixtures.tone("daemon-s1", seconds: 1, frequency: 500)),
                ("short/2.mp3", try Fixtures.tone("daemon-s2", seconds: 1, frequency: 600)),
                ("short/3.mp3", try Fixtures.tone("daemon-s3", seconds: 1, frequency: 700)),
                ("broken/bad.mp3", try #require(try Fixtures.badInputs()["random"])),
            ]
            made = m
            return m
        }
    }
    private static let musicLock = NSLock()
    nonisolated(unsafe) private static var made: [(String, URL)]?  // guarded by musicLock

    /// Config for a daemon that stays awake through a test: in the foreground, 60 s of grace.
    static let foreground = "background-grace = 60\nstart-state = foreground\n"

    /// `bus`: the D-Bus session bus address the daemon sees (default: none, so no test daemon
    /// touches the bus of whoever runs the tests).
    /// `musicDirectory`: a music directory to use as it is (a generated tree) instead of a copy
    /// of ``musicFiles()``.
    init(device: String, sinkEnvironment: [String: String] = [:], config: String = "", bus: String? = nil,
         musicDirectory: String? = nil) throws {
        dir = try Harness.makeTemporaryDirectory("backline-daemon")
        let d = dir.path
        music = musicDirectory ?? d + "/music"
        stateFile = d + "/state/backline/state.json"
        configFile = d + "/daemon.conf"
        socket = d + "/run/backline/control.sock"
        self.device = device
        for (name, src) in musicDirectory == nil ? try Self.musicFiles() : [] {
            let dst = music + "/" + name
            try FileManager.default.createDirectory(atPath: (dst as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: src.path, toPath: dst)
        }
        try config.write(toFile: configFile, atomically: true, encoding: .utf8)
        environment = sinkEnvironment.merging([
            "XDG_RUNTIME_DIR": d + "/run", "XDG_STATE_HOME": d + "/state", "XDG_CONFIG_HOME": d + "/config",
            "XDG_CACHE_HOME": d + "/cache", "DBUS_SESSION_BUS_ADDRESS": bus ?? "unix:path=\(d)/no-bus",
        ]) { $1 }
    }

    /// A daemon playing in real time into the test process's shared PulseAudio server, on its
    /// second sink, which no test records.
    static func onSharedSink(config: String, bus: String? = nil, musicDirectory: String? = nil) throws -> DaemonFixture {
        let sink = try PulseNullSink.shared()
        // Played into the server's second, never-recorded sink: real-time pacing, and a test
        // recording the first one (holding it exclusively) in parallel never hears this daemon.
        return try DaemonFixture(device: sink.alsaDevice, sinkEnvironment: sink.unheardEnvironment, config: config, bus: bus,
                                 musicDirectory: musicDirectory)
    }

    /// Starts the daemon and waits until it answers `ping`.
    func start(_ extra: [String] = []) throws {
        let log = dir.appendingPathComponent("daemon-\(logs.count).log")
        logs.append(log.path)
        let p = try SpawnedProcess(backline, ["daemon", "--music-dir", music, "--device", device, "--config", configFile,
                                              "--log-level", "debug"] + extra,
                                   environment: environment, stderrFile: log)
        process = p
        // A daemon that exits (a port in use, a bad config) fails the test at once, with its log.
        let answers = { (try? ControlClient(socketPath: self.socket).request("ping")) != nil }
        let up = eventually(timeout: 20) { !p.isRunning || answers() } && p.isRunning && answers()
        guard up else { throw HarnessError("the daemon did not come up: \(p.stderr)") }
    }

    /// The log (stderr) of the latest daemon started, running or not.
    func log() -> String { logs.last.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? "" }

    func client() throws -> ControlClient { try ControlClient(socketPath: socket) }

    /// One request on a new connection; the reply.
    @discardableResult
    func request(_ command: String, _ args: [(String, JSON)] = []) throws -> JSON {
        try client().request(command, args)
    }

    /// `backline ctl ARGS` against this daemon.
    func ctl(_ args: [String]) throws -> ProcessResult {
        try runProcess(backline, ["ctl", "--socket", socket] + args, environment: environment, timeout: 30)
    }

    /// SIGTERM, and its exit status.
    func stop() throws -> Int32 {
        guard let p = process else { return 0 }
        p.signal(SIGTERM)
        let s = try p.wait(timeout: 15)
        process = nil
        return s
    }

    /// SIGTERM, expecting a clean exit (status 0); a failure shows the end of the daemon's log.
    func expectCleanStop(sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let status = try stop()
            #expect(status == 0, "the daemon exited \(status); its log ends:\n\(log().suffix(6000))", sourceLocation: sourceLocation)
        } catch {
            Issue.record(error, "stopping the daemon; its log ends:\n\(log().suffix(6000))", sourceLocation: sourceLocation)
        }
    }

    /// SIGKILL, then waits for the process to be gone; when the signal was sent (nil: no
    /// process). From then on nothing more is heard, however long the kernel takes to reap it.
    @discardableResult
    func kill9() throws -> Date? {
        guard let p = process else { return nil }
        p.signal(SIGKILL)
        let sent = Date()
        _ = try p.wait(timeout: 10)
        process = nil
        return sent
    }

    deinit {
        if let p = process, p.isRunning {
            p.signal(SIGKILL)
            _ = try? p.wait(timeout: 5)
        }
    }
}

/// A real `backline daemon` run by another user (`nobody`, uid 65534, through `setpriv`) in a
/// fresh world-writable directory, serving `socket` (a path inside it, relative); returns once
/// the socket exists. Kill it with SIGKILL when done.
func daemonOfAnotherUser(socket relative: String) throws -> (process: SpawnedProcess, dir: String, socket: String) {
    let dir = try Harness.makeTemporaryDirectory("backline-nobody").path
    chmod(dir, 0o777)
    let socket = dir + "/" + relative
    let p = try SpawnedProcess("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", backlineForAnotherUser, "daemon",
                                           "--socket", socket, "--music-dir", dir, "--state-file", dir + "/state.json",
                                           "--device", "null", "--config", "/dev/null"],
                               environment: ["HOME": dir, "XDG_RUNTIME_DIR": dir + "/rt", "XDG_CONFIG_HOME": dir + "/cfg"])
    guard eventually(timeout: 20, { FileManager.default.fileExists(atPath: socket) }) else {
        p.signal(SIGKILL)
        throw HarnessError("the other user's daemon did not come up: \(p.stderr)")
    }
    return (p, dir, socket)
}

/// Field access for tests.
extension JSON {
    var ok: Bool { self["ok"]?.bool == true }
    var errorCode: String? { self["error"]?["code"]?.string }
}

/// A stream socket connected to a daemon's listener.
enum LoopbackSocket {
    /// A blocking socket connected to the Unix socket `unix`, or else to 127.0.0.1:`port`
    /// (port 0 when neither is given); closed again when it could not connect.
    static func connect(port: Int? = nil, unix: String? = nil) throws -> Int32 {
        if let unix {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_un()
            addr.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(unix.utf8)
            withUnsafeMutableBytes(of: &addr.sun_path) { raw in
                raw.copyBytes(from: bytes)
                raw[bytes.count] = 0
            }
            let r = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard r == 0 else { close(fd); throw HarnessError("connect to \(unix) failed: errno \(errno)") }
            return fd
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port ?? 0).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else { close(fd); throw HarnessError("connect to 127.0.0.1:\(port ?? 0) failed: errno \(errno)") }
        return fd
    }
}

/// A minimal blocking TCP client for the loopback listeners: JSON lines (``send(_:)``) or MPD
/// requests (``mpd(port:)``, ``ask(_:)``).
final class TCPLineClient {
    let fd: Int32
    var buffer: [UInt8] = []
    private var isOpen = true

    init(port: Int) throws {
        fd = try LoopbackSocket.connect(port: port)
    }

    deinit { close() }

    /// Closes the connection now (the client closes first).
    func close() {
        guard isOpen else { return }
        Glibc.close(fd)
        isOpen = false
    }

    /// Reads what arrives within `seconds` into the buffer: false once the server has closed.
    private func read(within seconds: Double) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(seconds * 1000)) > 0 else { return true }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return false }
        buffer += chunk[..<n]
        return true
    }

    /// Whether the server closes the connection within `seconds` (what it sends first is kept).
    func closed(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if !read(within: 0.1) { return true }
        }
        return false
    }

    /// The next line without its newline, if one arrives within `seconds` (nil: none, or the
    /// connection closed).
    func textLine(within seconds: Double) -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let l = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeFirst(nl + 1)
                return l
            }
            guard Date() < deadline, read(within: 0.1) else { return nil }
        }
    }

    /// The next line as JSON, if one arrives within `seconds`.
    func nextLine(within seconds: Double) -> JSON? {
        textLine(within: seconds).flatMap { try? JSON.parse(Array($0.utf8)) }
    }

    func write(_ line: String) throws {
        let bytes = Array((line + "\n").utf8)
        guard bytes.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw HarnessError("send failed: errno \(errno)")
        }
    }

    /// Sends `line` and returns the next line.
    func send(_ line: String) throws -> JSON {
        try write(line)
        guard let reply = nextLine(within: 30) else { throw HarnessError("no reply (closed, or 30 s passed)") }
        return reply
    }

    /// A connection to an MPD server (mpd, or the daemon's MPD listener), its greeting read.
    static func mpd(port: Int) throws -> TCPLineClient {
        let c = try TCPLineClient(port: port)
        let greeting = c.textLine(within: 10) ?? "(none)"
        guard greeting.hasPrefix("OK MPD ") else { throw HarnessError("MPD greeting: \(greeting)") }
        return c
    }

    /// Sends an MPD `command`; its reply, every line with its newline, through `OK` or `ACK …`.
    func ask(_ command: String) throws -> String {
        try write(command)
        var reply = ""
        while true {
            guard let l = textLine(within: 10) else { throw HarnessError("MPD \(command): no reply within 10 s (or closed): \(reply)") }
            reply += l + "\n"
            if l == "OK" || l.hasPrefix("ACK ") { return reply }
        }
    }
}
