import BacklineWire
import Daemon
import Foundation
import MediaCore

#if canImport(Glibc)
import Glibc
#endif

/// A daemon with nothing to do: `backline daemon` and mpd side by side, each
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

        let (daemon, socket, bus) = try DaemonBench.startDesktopDaemon(executable, device: device, in: dir, playing: "tone.mp3")
        defer { daemon.stop(); bus?.stop() }
        Thread.sleep(forTimeInterval: 2)
        _ = try ControlClient(socketPath: socket).request("pause")  // (and leaves: no client while measured)
        let ours = try measure(pid: daemon.process.processIdentifier) {
            _ = try ControlClient(socketPath: socket).request("stop")
        }
        daemon.stop()

        var theirs: Usage?
        if let mpd = try DaemonBench.startMPD(in: dir) {
            defer { mpd.process.stop() }
            do {
                let m = try mpd.connect()
                _ = try m.exchange("add \"tone.mp3\"")
                _ = try m.exchange("play")
                Thread.sleep(forTimeInterval: 2)
                _ = try m.exchange("pause 1")
            }
            theirs = try measure(pid: mpd.process.process.processIdentifier) {
                _ = try mpd.connect().exchange("stop")
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
