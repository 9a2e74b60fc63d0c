import ArgumentParser
import BacklineBench
import Foundation
import Platform

/// `backline bench`: benchmarks side by side with their references, in one run. Its own
/// executable, `backline-bench` (the front end and `backline-player` hand `bench` to it), so
/// that Foundation, which the benchmarks use to run and time other programs, stays out of the
/// player and the daemon.
@main
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backline bench",
        abstract: "Run the benchmarks and print each next to its reference (same run).")

    @Flag(help: "One JSON object per line instead of a table.")
    var json = false

    @Option(help: "Run only benchmarks whose group name contains this (ring, pipeline, instructions, formats, cpu, daemon, idle, memory, first-sound, streams, titles, library, web, snapcast, startup, rate).")
    var only: String?

    @Option(help: "Bytes moved per ring measurement, in MiB (median of 5).")
    var ringMiB = 1024

    @Option(help: "Device for the real-time rows (a paced device, e.g. pulse via scripts/bench).")
    var device: String?

    /// Runs as `backline bench …` (the front end hands over its argv unchanged) or as
    /// `backline-bench …`.
    static func main() {
        let words = CommandLine.arguments
        main(Array(words.dropFirst(words.count > 1 && words[1] == "bench" ? 2 : 1)))
    }

    func run() throws {
        var results: [BenchResult] = []
        func want(_ group: String) -> Bool { only.map { group.contains($0) } ?? true }
        // The `backline` front end and `backline-player` beside this binary (argv[0] names
        // the front end when it exec'd this one; /proc/self/exe is this binary wherever it is).
        let dir = Path.deletingLastComponent(URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path)
        let me = dir + "/backline"
        /// The real-time groups need a paced device: `device`, or a note that they were skipped.
        func onDevice(_ group: String, _ rows: (String) throws -> [BenchResult]) rethrows {
            guard want(group) else { return }
            guard let device else {
                FileHandle.standardError.write(Data("bench: \(group) rows skipped: give --device (scripts/bench does)\n".utf8))
                return
            }
            results += try rows(device)
        }
        if want("startup") { results += try StartupBench.version(executable: me) }
        if want("ring") { results += RingBench.run(totalBytes: ringMiB << 20) }
        if want("pipeline") { results += try PipelineBench.throughput() }
        if want("instructions") {
            results += try InstructionsBench.run(player: dir + "/backline-player")
        }
        if want("formats") { results += try FormatsBench.run(player: dir + "/backline-player") }
        try onDevice("cpu") { try PipelineBench.realtime(device: $0, executable: me) + FormatsBench.pulseCPU(executable: me) }
        // The null sink's monitor, for the rows that record what is heard.
        let monitor = ProcessInfo.processInfo.environment["BACKLINE_BENCH_MONITOR"] ?? "backline_bench.monitor"
        try onDevice("daemon") { try DaemonBench.run(executable: me, device: $0, sinkMonitor: monitor) }
        try onDevice("idle") { try IdleBench.run(executable: me, device: $0) }
        try onDevice("memory") { try MemoryBench.run(executable: me, device: $0) }
        try onDevice("rate") { _ in try RateBench.run(executable: me) }
        try onDevice("first-sound") { try FirstSoundBench.run(executable: me, device: $0, sinkMonitor: monitor) }
        try onDevice("streams") { try StreamBench.run(executable: me, device: $0, sinkMonitor: monitor) }
        try onDevice("titles") { try TitleLatencyBench.run(executable: me, device: $0, sinkMonitor: monitor) }
        try onDevice("library") { try LibraryBench.run(executable: me, device: $0) }
        try onDevice("web") { try WebBench.run(executable: me, device: $0) }
        if want("snapcast") { results += try SnapcastBench.run(executable: me) }
        if json {
            for r in results { print(r.json) }
        } else {
            print(formatTable(results))
        }
    }
}
