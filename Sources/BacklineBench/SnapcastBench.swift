import BacklineWire
import Daemon
import Foundation
import MediaCore

#if canImport(Glibc)
import Glibc
#endif

/// Feeding Snapcast, each beside mpd's `fifo` output into the same private
/// `snapserver`, one after the other: the CPU of `backline daemon --device pipe:FIFO` playing 60 s
/// of a 44.1 kHz MP3 (resampled to snapserver's 48 kHz); and how long a room (a `snapclient` into
/// a private PulseAudio null sink, its monitor recorded) goes on sounding after `pause`.
public enum SnapcastBench {
    static let seconds = 60

    /// Asks once a second (a status poll every 2 ms would be most of what is measured).
    static func waitSlowly(_ seconds: Int, _ done: () -> Bool) {
        for _ in 0..<seconds where !done() { sleep(1) }
    }

    public static func run(executable: String) throws -> [BenchResult] {
        guard let snapserver = ["/usr/bin/snapserver", "/usr/sbin/snapserver"].first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else {
            FileHandle.standardError.write(Data("bench: snapcast rows skipped: no snapserver (scripts/bootstrap --bench)\n".utf8))
            return []
        }
        let dir = NSTemporaryDirectory() + "backline-snapcast-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/data", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try DaemonBench.shell("""
            sox -n -r 44100 -c 2 -b 16 \(dir)/tone.wav synth \(seconds) sine 440 gain -6 && lame --quiet -b 192 \(dir)/tone.wav \(dir)/music/tone.mp3
            """)
        let fifo = dir + "/snapfifo"
        let port = Int.random(in: 20_000...30_000)
        try """
            [server]
            datadir = \(dir)/data
            [http]
            enabled = false
            [tcp]
            enabled = false
            [stream]
            bind_to_address = 127.0.0.1
            port = \(port)
            source = pipe://\(fifo)?name=default&mode=create
            [logging]
            """.write(toFile: dir + "/snapserver.conf", atomically: true, encoding: .utf8)
        let server = try Child(snapserver, ["-c", dir + "/snapserver.conf"], environment: [:])
        defer { server.stop() }
        guard DaemonBench.waitUntil(10, { FileManager.default.fileExists(atPath: fifo) }) else { throw BenchError("snapserver made no FIFO") }

        // Ours.
        let socket = dir + "/run/control.sock"
        let daemon = try Child(executable, ["daemon", "--socket", socket, "--music-dir", dir + "/music", "--state-file", dir + "/state.json",
                                            "--device", "pipe:\(fifo)?format=48000:16:2", "--config", "/dev/null", "--no-mpris",
                                            "--library", "off"],
                               environment: ["XDG_RUNTIME_DIR": dir + "/rt", "XDG_CACHE_HOME": dir + "/cache"])
        defer { daemon.stop() }
        guard DaemonBench.waitUntil(20, { (try? ControlClient(socketPath: socket).request("ping")) != nil }) else {
            throw BenchError("backline daemon did not start")
        }
        let c = try ControlClient(socketPath: socket)
        _ = try c.request("add", [("path", "tone.mp3")])
        let pid = daemon.process.processIdentifier
        let before = FormatsBench.cpuSeconds(pid)
        _ = try c.request("play")
        waitSlowly(seconds + 30) { (try? c.request("status"))?["state"]?.string == "stopped" }
        let ours = before.flatMap { b in FormatsBench.cpuSeconds(pid).map { $0 - b } }
        daemon.stop()

        // mpd's fifo output into the same FIFO.
        var theirs: Double?
        if let (mpd, m) = try mpd(dir: dir, name: "mpd", fifo: fifo, queue: "tone.mp3") {
            defer { mpd.stop() }
            let mpid = mpd.process.processIdentifier
            let before = FormatsBench.cpuSeconds(mpid)
            _ = try m.exchange("play")
            waitSlowly(seconds + 30) { ((try? m.exchange("status")) ?? "").contains("state: stop") }
            theirs = before.flatMap { b in FormatsBench.cpuSeconds(mpid).map { $0 - b } }
        }
        guard let ours else { throw BenchError("no CPU reading of the daemon") }
        var rows = [BenchResult(name: "Snapcast: CPU of the daemon feeding snapserver's FIFO, 60 s MP3 44.1 → 48 kHz", value: ours,
                                unit: "s CPU", reference: theirs, referenceName: "mpd's fifo output, the same snapserver")]
        if let row = try pauseToSilence(executable: executable, dir: dir, fifo: fifo, streamPort: port) { rows.append(row) }
        return rows
    }

    /// mpd with its `fifo` output into `fifo` (files `dir/NAME.*`), its database made and
    /// `queue` queued; nil without mpd.
    static func mpd(dir: String, name: String, fifo: String, queue: String) throws -> (Child, LineConnection)? {
        guard let path = ["/usr/bin/mpd", "/usr/sbin/mpd"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
        let msock = dir + "/\(name).sock"
        try """
            music_directory "\(dir)/music"
            db_file "\(dir)/\(name).db"
            state_file "\(dir)/\(name).state"
            bind_to_address "\(msock)"
            audio_output {
                type "fifo"
                name "snapcast"
                path "\(fifo)"
                format "48000:16:2"
            }
            """.write(toFile: dir + "/\(name).conf", atomically: true, encoding: .utf8)
        let mpd = try Child(path, ["--no-daemon", dir + "/\(name).conf"], environment: [:])
        guard DaemonBench.waitUntil(20, { (try? LineConnection(unix: msock, greeting: true)) != nil }) else {
            mpd.stop()
            return nil
        }
        let m = try LineConnection(unix: msock, greeting: true)
        _ = try m.exchange("update")
        _ = DaemonBench.waitUntil(30) { ((try? m.exchange("status")) ?? "").contains("updating_db") == false }
        _ = try m.exchange("add \"\(queue)\"")
        return (mpd, m)
    }

    // MARK: - Pause to silence in a room

    /// A room: a private PulseAudio server with a 48 kHz null sink, a snapclient playing into
    /// it, and the sink's monitor recorded from when it is made.
    final class Room {
        let dir: String
        let env: [String: String]
        let pulse: Child, client: Child, recorder: Child
        let started: Double
        let file: String

        init(dir: String, streamPort: Int) throws {
            self.dir = dir
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            env = ["PULSE_SERVER": "unix:\(dir)/native", "PULSE_RUNTIME_PATH": dir + "/run", "PULSE_STATE_PATH": dir + "/state",
                   "PULSE_COOKIE": dir + "/cookie"]
            try """
                load-module module-native-protocol-unix auth-anonymous=1 socket=\(dir)/native
                load-module module-null-sink sink_name=room rate=48000 channels=2 norewinds=1
                set-default-sink room

                """.write(toFile: dir + "/default.pa", atomically: true, encoding: .utf8)
            // Through a shell that waits for it: PulseAudio closes the descriptors it inherits,
            // and Foundation's Process takes its end of one closing for the child's exit (it
            // then blocks in wait4 on it, and no other child's exit is seen).
            pulse = try Child("/bin/sh", ["-c", "pulseaudio -n -F '\(dir)/default.pa' --daemonize=no --exit-idle-time=-1 --use-pid-file=no "
                                                  + "--disallow-exit & p=$!; trap 'kill $p; wait $p; exit 0' TERM; wait $p"], environment: env)
            // Up when its socket takes a connection. (Not `pactl info`: a short-lived child spawned
            // here left Foundation's process monitor blocked in wait4 on another, and every later
            // waitUntilExit hung.)
            guard DaemonBench.waitUntil(10, { SnapcastBench.connects(unix: dir + "/native") }) else {
                throw BenchError("PulseAudio did not start")
            }
            client = try Child("/usr/bin/snapclient", ["-h", "127.0.0.1", "-p", String(streamPort), "--hostID", "bench-room",
                                                       "--player", "pulse", "-s", "room"], environment: env)
            let file = dir + "/room.raw"
            self.file = file
            recorder = try Child("/usr/bin/parec", ["-d", "room.monitor", "--raw", "--format=s16le", "--rate=48000", "--channels=2",
                                                    "--latency-msec=10", file], environment: env)
            _ = DaemonBench.waitUntil(5) { FileManager.default.fileExists(atPath: file) }
            started = DaemonBench.clockNow()
        }

        /// Seconds since the recording began, of the room's samples (left channel).
        func samples() -> [Int16] {
            guard let d = FileManager.default.contents(atPath: file) else { return [] }
            return d.withUnsafeBytes { raw in
                let s = raw.bindMemory(to: Int16.self)
                return stride(from: 0, to: s.count - 1, by: 2).map { s[$0] }
            }
        }

        /// Whether the last 50 ms recorded carry sound.
        func sounding() -> Bool { samples().suffix(2400).contains { abs(Int($0)) > 64 } }

        /// Seconds from `pausedAt` (the clock) to the last sound before `pausedAt + window`.
        func silence(after pausedAt: Double, window: Double) -> Double? {
            let s = samples()
            let from = Int((pausedAt - started) * 48000), to = min(s.count, Int((pausedAt - started + window) * 48000))
            guard from < to, let last = s[from..<to].lastIndex(where: { abs(Int($0)) > 64 }) else { return nil }
            return Double(last) / 48000 - (pausedAt - started)
        }

        func stop() {
            recorder.stop()
            client.stop()
            pulse.stop()
        }
    }

    /// Whether a Unix socket at `path` takes a connection.
    static func connects(unix path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8.prefix(107)) + [0]
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
        }
    }

    /// Three pauses while a room hears noise: how long it goes on sounding after each (the
    /// median), for `play` and `pause` of one player.
    static func pauses(_ room: Room, play: () throws -> Void, pause: () throws -> Void) throws -> Double? {
        var delays: [Double] = []
        for _ in 0..<3 {
            try play()
            guard DaemonBench.waitUntil(15, { room.sounding() }) else { return nil }
            sleep(2)
            let t = DaemonBench.clockNow()
            try pause()
            sleep(3)
            if let d = room.silence(after: t, window: 3) { delays.append(d) }
        }
        return delays.sorted().dropFirst(delays.count / 2).first
    }

    static func pauseToSilence(executable: String, dir: String, fifo: String, streamPort: Int) throws -> BenchResult? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/snapclient"), FileManager.default.isExecutableFile(atPath: "/usr/bin/parec")
        else {
            FileHandle.standardError.write(Data("bench: the pause-to-silence row skipped: no snapclient or parec\n".utf8))
            return nil
        }
        try DaemonBench.shell("sox -n -r 48000 -c 2 -b 16 \(dir)/music/noise.wav synth 120 whitenoise gain -10")
        let room = try Room(dir: dir + "/room", streamPort: streamPort)
        defer { room.stop() }

        let socket = dir + "/run2/control.sock"
        let daemon = try Child(executable, ["daemon", "--socket", socket, "--music-dir", dir + "/music", "--state-file", dir + "/state2.json",
                                            "--device", "pipe:\(fifo)?format=48000:16:2", "--config", "/dev/null", "--no-mpris",
                                            "--library", "off"],
                               environment: ["XDG_RUNTIME_DIR": dir + "/rt2", "XDG_CACHE_HOME": dir + "/cache"])
        guard DaemonBench.waitUntil(20, { (try? ControlClient(socketPath: socket).request("ping")) != nil }) else {
            daemon.stop()
            throw BenchError("backline daemon did not start")
        }
        let c = try ControlClient(socketPath: socket)
        _ = try c.request("add", [("path", "noise.wav")])
        let ours = try pauses(room, play: { _ = try c.request("play") }, pause: { _ = try c.request("pause") })
        daemon.stop()

        var theirs: Double?
        if let (mpd, m) = try mpd(dir: dir, name: "mpd2", fifo: fifo, queue: "noise.wav") {
            defer { mpd.stop() }
            theirs = try pauses(room, play: { _ = try m.exchange("play") }, pause: { _ = try m.exchange("pause 1") })
        }
        guard let ours else { throw BenchError("the room never went silent after the daemon's pause") }
        return BenchResult(name: "Snapcast: pause to silence in a room (snapserver buffer 1 s; median of 3)", value: ours, unit: "s",
                           reference: theirs, referenceName: "mpd's fifo output, the same snapserver and room")
    }
}
