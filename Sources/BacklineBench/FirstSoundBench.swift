import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Time to first sound: from starting `backline play FILE` (the front end, as a user types it)
/// to its first non-silent sample arriving on the null sink's monitor, beside `mpg123 -o pulse
/// FILE` on the same sink in the same run (alternating, median of ``runs``). The sink has a
/// keep-alive stream open (scripts/lib/null-sink.sh), so neither waits for an idle sink to
/// wake; the monitor's own delay is the same for both.
public enum FirstSoundBench {
    static let runs = 10

    /// Seconds from spawning `command` to its first sound; the process is then stopped.
    static func firstSound(_ command: [String], monitor: MonitorReader) throws -> Double {
        Thread.sleep(forTimeInterval: 0.3)  // (silence between runs)
        let t0 = DaemonBench.clockNow()
        monitor.armSound(after: t0)
        let child = try Child(command[0], Array(command.dropFirst()), environment: [:])
        defer { child.stop() }
        guard DaemonBench.waitUntil(10, { monitor.soundAt != nil }), let t = monitor.soundAt else {
            throw BenchError("no sound from \(command.joined(separator: " ")) within 10 s")
        }
        return t - t0
    }

    /// The row: `backline play --device DEVICE FILE` beside `mpg123 -q -o pulse FILE`, ms.
    public static func run(executable: String, device: String, sinkMonitor: String) throws -> [BenchResult] {
        let file = try PipelineBench.testFile(seconds: 60)  // (sound from its first sample)
        let mpg123 = ["/usr/bin/mpg123", "/usr/local/bin/mpg123"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let monitor = try MonitorReader(source: sinkMonitor)
        defer { monitor.stop() }
        Thread.sleep(forTimeInterval: 0.5)  // (parec connected)
        let front = StartupBench.frontEnd(beside: executable)
        var ours: [Double] = [], theirs: [Double] = []
        for _ in 0..<runs {
            ours.append(try firstSound([front, "play", "--device", device, "--no-keys", file], monitor: monitor))
            if let mpg123 { theirs.append(try firstSound([mpg123, "-q", "-o", "pulse", file], monitor: monitor)) }
        }
        return [BenchResult(name: "first sound: `backline play FILE` to the sink's monitor (median of \(runs))",
                            value: median(ours) * 1000, unit: "ms",
                            reference: theirs.isEmpty ? nil : median(theirs) * 1000, referenceName: "mpg123 -o pulse")]
    }
}
