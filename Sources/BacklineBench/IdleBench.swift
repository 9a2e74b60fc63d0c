import Daemon
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A daemon with nothing to do (issue 18, goal 4): `backline daemon` and mpd side by side, each
/// paused in the middle of an item (device held) and then stopped (device released), no client
/// connected: context switches of all threads (every wake-up is at least one) and CPU time over
/// ``seconds``. Ours runs with MPRIS on when `dbus-daemon` is there, as on a desktop.
public enum IdleBench {
    static let seconds = 60.0

    typealias Usage = (paused: DaemonBench.IdleUsage, stopped: DaemonBench.IdleUsage)

    /// A paused daemon's usage over ``seconds``, then, after `stop`, its usage stopped.
    static func measure(pid: Int32, stop: () throws -> Void) throws -> Usage {
        let paused = try DaemonBench.idleUsage(pid: pid, seconds: seconds)
        try stop()
        return (paused, try DaemonBench.idleUsage(pid: pid, seconds: seconds))
    }

    public static func run(executable: String, device: String) throws -> [BenchResult] {
        let dir = NSTemporaryDirectory() + "backline-idle-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try DaemonBench.shell("sox -n -r 44100 -c 2 -b 16 \(dir)/tone.wav synth 30 sine 440 gain -6 && lame --quiet -b 192 \(dir)/tone.wav \(dir)/music/tone.mp3")

        let bus = try? SessionBus(directory: dir)
        defer { bus?.stop() }
        let socket = dir + "/run/control.sock"
        var environment = ["XDG_RUNTIME_DIR": dir + "/rt", "XDG_CACHE_HOME": dir + "/cache"]
        if let bus { environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address }
        let daemon = try Child(executable, ["daemon", "--socket", socket, "--music-dir", dir + "/music", "--state-file", dir + "/state.json",
                                            "--device", device, "--config", "/dev/null"] + (bus == nil ? ["--no-mpris"] : []),
                               environment: environment)
        defer { daemon.stop() }
        guard DaemonBench.waitUntil(20, { (try? ControlClient(socketPath: socket).request("ping")) != nil }) else {
            throw BenchError("backline daemon did not start")
        }
        do {
            let c = try ControlClient(socketPath: socket)
            _ = try c.request("lifecycle", [("state", "foreground")])  // (never suspended meanwhile)
            _ = try c.request("add", [("path", "tone.mp3")])
            _ = try c.request("play")
            Thread.sleep(forTimeInterval: 2)
            _ = try c.request("pause")
        }  // (the client leaves: no connection during the measurement)
        let ours = try measure(pid: daemon.process.processIdentifier) {
            _ = try ControlClient(socketPath: socket).request("stop")
        }
        daemon.stop()

        var theirs: Usage?
        if let mpdPath = ["/usr/bin/mpd", "/usr/sbin/mpd"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
            let msock = dir + "/mpd.sock"
            try """
                music_directory "\(dir)/music"
                db_file "\(dir)/mpd.db"
                state_file "\(dir)/mpd.state"
                bind_to_address "\(msock)"
                audio_output {
                    type "pulse"
                    name "bench"
                }
                """.write(toFile: dir + "/mpd.conf", atomically: true, encoding: .utf8)
            let mpd = try Child(mpdPath, ["--no-daemon", dir + "/mpd.conf"], environment: [:])
            defer { mpd.stop() }
            if DaemonBench.waitUntil(20, { (try? LineConnection(unix: msock, greeting: true)) != nil }) {
                do {
                    let m = try LineConnection(unix: msock, greeting: true)
                    _ = try m.exchange("update")
                    _ = DaemonBench.waitUntil(10) { ((try? m.exchange("status")) ?? "").contains("updating_db") == false }
                    _ = try m.exchange("add \"tone.mp3\"")
                    _ = try m.exchange("play")
                    Thread.sleep(forTimeInterval: 2)
                    _ = try m.exchange("pause 1")
                }
                theirs = try measure(pid: mpd.process.processIdentifier) {
                    _ = try LineConnection(unix: msock, greeting: true).exchange("stop")
                }
            }
        }
        let s = Int(seconds)
        return [
            BenchResult(name: "daemon paused, no client, \(s) s: wake-ups (context switches) per second, all threads",
                        value: ours.paused.wakeupsPerSecond, unit: "/s", reference: theirs?.paused.wakeupsPerSecond, referenceName: "mpd paused"),
            BenchResult(name: "daemon paused, no client, \(s) s: CPU", value: ours.paused.cpuMilliseconds, unit: "ms",
                        reference: theirs?.paused.cpuMilliseconds, referenceName: "mpd paused"),
            BenchResult(name: "daemon stopped (device released), no client, \(s) s: wake-ups per second, all threads",
                        value: ours.stopped.wakeupsPerSecond, unit: "/s", reference: theirs?.stopped.wakeupsPerSecond, referenceName: "mpd stopped"),
            BenchResult(name: "daemon stopped (device released), no client, \(s) s: CPU", value: ours.stopped.cpuMilliseconds, unit: "ms",
                        reference: theirs?.stopped.cpuMilliseconds, referenceName: "mpd stopped"),
        ]
    }
}
