import BacklineWire
import Daemon
import Foundation
import MediaCore

#if canImport(Glibc)
import Glibc
#endif

/// A daemon playing from a 1,000-item queue: `backline daemon` and mpd side
/// by side, each with the same 1,000 files queued (hard links of one 30 s MP3, so every item is
/// a file of its own to resolve and tag), playing through the paced device for ``seconds``,
/// then their peak resident memory (`VmHWM`). Ours runs with MPRIS on when `dbus-daemon` is
/// there, as on a desktop.
public enum MemoryBench {
    static let items = 1000
    static let seconds = 10.0

    /// `VmHWM` of `pid`, in MiB.
    static func peakMiB(_ pid: Int32) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kib = Double(line.split(separator: " ").dropFirst().first ?? "") else { return nil }
        return kib / 1024
    }

    public static func run(executable: String, device: String) throws -> [BenchResult] {
        let dir = NSTemporaryDirectory() + "backline-memory-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try DaemonBench.shell("""
            sox -n -r 44100 -c 2 -b 16 \(dir)/tone.wav synth 30 sine 440 gain -6 && lame --quiet -b 192 \(dir)/tone.wav \(dir)/tone.mp3 && \
            for i in $(seq -w 1 \(items)); do ln \(dir)/tone.mp3 \(dir)/music/item$i.mp3; done
            """)

        let (daemon, socket, bus) = try DaemonBench.startDesktopDaemon(executable, device: device, in: dir, playing: ".")
        defer { daemon.stop(); bus?.stop() }
        Thread.sleep(forTimeInterval: seconds)
        let ours = peakMiB(daemon.process.processIdentifier)
        let status = try? ControlClient(socketPath: socket).request("status")
        daemon.stop()
        guard let ours, status?["count"]?.int == items, status?["state"]?.string == "playing" else {
            throw BenchError("backline daemon: no peak memory, or not playing \(items) items (status: \(status.map { "\($0)" } ?? "none"))")
        }

        var theirs: Double?
        if let mpd = try DaemonBench.startMPD(in: dir) {
            defer { mpd.process.stop() }
            let m = try mpd.connect()
            _ = try m.exchange("add \"\"")
            _ = try m.exchange("play")
            Thread.sleep(forTimeInterval: seconds)
            let status = (try? m.exchange("status")) ?? ""
            if status.contains("playlistlength: \(items)\n"), status.contains("state: play\n") {
                theirs = peakMiB(mpd.process.process.processIdentifier)
            }
        }
        return [BenchResult(name: "daemon, \(items)-item queue, playing \(Int(seconds)) s: peak RSS", value: ours, unit: "MiB",
                            reference: theirs, referenceName: "mpd, same queue")]
    }
}
