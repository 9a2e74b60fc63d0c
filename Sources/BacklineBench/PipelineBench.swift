import AudioEngine
import Foundation

/// A finished child's resource use.
public struct ChildUsage: Sendable {
    public var wallSeconds: Double
    public var cpuSeconds: Double
    public var maxRSSKiB: Int
    public var status: Int32
}

/// Runs a program to completion (output discarded) and measures it with `wait4`'s rusage.
public func measureChild(_ path: String, _ arguments: [String]) throws -> ChildUsage {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let t0 = now()
    let rc = posix_spawnp(&pid, path, &actions, nil, argv, environ)
    guard rc == 0 else { throw BenchError("cannot run \(path): \(String(cString: strerror(rc)))") }
    // The exit is waited for on another thread (its time exact, not rounded up to the sampling
    // below); peak RSS from /proc (VmHWM of the child's own image), sampled every 20 ms until it
    // exits: wait4's ru_maxrss would include this process's, which a spawned child inherits
    // until exec.
    final class Exit: @unchecked Sendable {
        var status: Int32 = 0
        var usage = rusage()
        var time = 0.0
    }
    let exit = Exit()
    let exited = DispatchSemaphore(value: 0)
    let child = pid
    let waiter = Thread {
        while wait4(child, &exit.status, 0, &exit.usage) == -1 && errno == EINTR {}
        exit.time = now()
        exited.signal()
    }
    waiter.start()
    var peakKiB = 0
    repeat {
        if let s = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
           let line = s.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
           let kib = Int(line.split(separator: " ").dropFirst().first ?? "") {
            peakKiB = max(peakKiB, kib)
        }
    } while exited.wait(timeout: .now() + 0.02) == .timedOut
    let (status, usage) = (exit.status, exit.usage)
    let wall = exit.time - t0
    let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    return ChildUsage(wallSeconds: wall, cpuSeconds: cpu, maxRSSKiB: peakKiB, status: status)
}

/// A benchmark that could not run.
public struct BenchError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

/// Whole-pipeline benchmarks against the `mpg123` tool (libmpg123 behind both).
public enum PipelineBench {
    /// Creates (once) a stereo 44.1 kHz 320 kbps MP3 of `seconds` from a synthesised signal.
    public static func testFile(seconds: Int) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("backline-bench")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let mp3 = dir.appendingPathComponent("bench-\(seconds)s-320k.mp3").path
        if FileManager.default.fileExists(atPath: mp3) { return mp3 }
        let wav = dir.appendingPathComponent("bench-\(seconds)s.wav").path
        let sox = try measureChild("sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", wav, "synth", "\(seconds)",
                                           "pinknoise", "sine", "220-880", "gain", "-12"])
        let lame = try measureChild("lame", ["--quiet", "-b", "320", wav, mp3])
        try? FileManager.default.removeItem(atPath: wav)
        guard sox.status == 0, lame.status == 0 else { throw BenchError("sox/lame failed making \(mp3)") }
        return mp3
    }

    /// Seconds for the engine to decode `file` through the ring into ALSA's `null` device.
    static func engineSeconds(_ file: String) -> Double {
        let engine = PlaybackEngine(configuration: EngineConfiguration(
            output: OutputSettings(device: "null", realtime: false)))
        defer { engine.shutdown() }
        let done = DispatchSemaphore(value: 0)
        engine.onEvent { if case .endOfInput = $0 { done.signal() } }
        let t0 = now()
        engine.enqueue([file])
        done.wait()
        return now() - t0
    }

    /// Decode → ring → ALSA `null` as fast as possible, beside `mpg123 -q -s FILE > /dev/null`;
    /// median of `runs` alternating runs. Ratio = ours / mpg123's seconds (below 1 is faster).
    public static func throughput(runs: Int = 5) throws -> [BenchResult] {
        let file = try testFile(seconds: 600)
        var ours: [Double] = [], theirs: [Double] = []
        for _ in 0..<runs {
            theirs.append(try measureChild("mpg123", ["-q", "-s", file]).wallSeconds)
            ours.append(engineSeconds(file))
        }
        return [BenchResult(name: "pipeline: 10 min 320 kbps → ALSA null", value: median(ours), unit: "s",
                            reference: median(theirs), referenceName: "mpg123 -s > /dev/null")]
    }

    /// Real-time playback of 60 s through `device` (the null sink): CPU seconds and peak RSS of
    /// `backline play` beside `mpg123 -o alsa`, same device, same run.
    public static func realtime(device: String, executable: String) throws -> [BenchResult] {
        let file = try testFile(seconds: 60)
        let theirs = try measureChild("mpg123", ["-q", "-o", "alsa", "-a", device, file])
        let ours = try measureChild(executable, ["play", "--device", device, file])
        guard theirs.status == 0, ours.status == 0 else {
            throw BenchError("real-time run failed (mpg123 status \(theirs.status), backline \(ours.status))")
        }
        return [
            BenchResult(name: "CPU, 60 s real time via \(device)", value: ours.cpuSeconds, unit: "s CPU",
                        reference: theirs.cpuSeconds, referenceName: "mpg123 -o alsa"),
            BenchResult(name: "peak RSS, same run", value: Double(ours.maxRSSKiB) / 1024, unit: "MiB",
                        reference: Double(theirs.maxRSSKiB) / 1024, referenceName: "mpg123 -o alsa"),
            BenchResult(name: "wall time, same run", value: ours.wallSeconds, unit: "s",
                        reference: theirs.wallSeconds, referenceName: "mpg123 -o alsa"),
        ]
    }
}
