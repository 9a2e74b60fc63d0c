import ArgumentParser
import BacklineBench

/// `backline bench`: benchmarks side by side with their references, in one run.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the benchmarks and print each next to its reference (same run).")

    @Flag(help: "One JSON object per line instead of a table.")
    var json = false

    @Option(help: "Run only benchmarks whose group name contains this (ring, pipeline, cpu).")
    var only: String?

    @Option(help: "Bytes moved per ring measurement, in MiB (median of 5).")
    var ringMiB = 1024

    func run() throws {
        var results: [BenchResult] = []
        func want(_ group: String) -> Bool { only.map { group.contains($0) } ?? true }
        if want("ring") { results += RingBench.run(totalBytes: ringMiB << 20) }
        if json {
            for r in results { print(r.json) }
        } else {
            print(formatTable(results))
        }
    }
}
