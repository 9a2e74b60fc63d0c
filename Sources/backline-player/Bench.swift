import ArgumentParser
import BacklineBench
import Foundation

/// `backline bench`: benchmarks side by side with their references, in one run.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",  // (given: deriving it reflects on the type, a conformance scan at start-up)
        abstract: "Run the benchmarks and print each next to its reference (same run).")

    @Flag(help: "One JSON object per line instead of a table.")
    var json = false

    @Option(help: "Run only benchmarks whose group name contains this (ring, pipeline, instructions, cpu, daemon, idle, first-sound, startup).")
    var only: String?

    @Option(help: "Bytes moved per ring measurement, in MiB (median of 5).")
    var ringMiB = 1024

    @Option(help: "Device for the real-time rows (a paced device, e.g. pulse via scripts/bench).")
    var device: String?

    func run() throws {
        var results: [BenchResult] = []
        func want(_ group: String) -> Bool { only.map { group.contains($0) } ?? true }
        let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
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
            // This very binary (argv[0] names the front end when it exec'd this one).
            let player = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
            results += try InstructionsBench.run(player: player)
        }
        try onDevice("cpu") { try PipelineBench.realtime(device: $0, executable: me) }
        // The null sink's monitor, for the rows that record what is heard.
        let monitor = ProcessInfo.processInfo.environment["BACKLINE_BENCH_MONITOR"] ?? "backline_bench.monitor"
        try onDevice("daemon") { try DaemonBench.run(executable: me, device: $0, sinkMonitor: monitor) }
        try onDevice("idle") { try IdleBench.run(executable: me, device: $0) }
        try onDevice("first-sound") { try FirstSoundBench.run(executable: me, device: $0, sinkMonitor: monitor) }
        if json {
            for r in results { print(r.json) }
        } else {
            print(formatTable(results))
        }
    }
}
