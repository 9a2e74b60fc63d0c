import Foundation

/// Instruction counts (valgrind's callgrind: repeatable on a noisy machine, unlike seconds) of
/// `backline play --device null FILE` (backline-player, as the front end execs it) beside
/// `mpg123 -q -s FILE` on the same file, with where each side's instructions go (decode, copies,
/// dynamic linking, the Swift runtime (when not linked in), the rest).
public enum InstructionsBench {
    /// One process's count and its breakdown by where the instructions ran.
    struct Profile {
        var total: Int
        /// Part → instructions (see ``part(of:)``).
        var parts: [String: Int]
    }

    /// The parts a breakdown shows, in this order.
    static let partNames = ["decode (libmpg123)", "copies (memcpy/memmove)", "dynamic linking (ld.so)",
                            "Swift runtime and Foundation", "backline itself", "other libraries"]

    /// Which part a callgrind function line (`file:function [object]`) belongs to.
    static func part(of line: Substring) -> String {
        if line.contains("libmpg123") { return partNames[0] }
        if line.contains("memmove") || line.contains("memcpy") || line.contains("mempcpy") { return partNames[1] }
        if line.contains("ld-linux") || line.contains("/elf/") { return partNames[2] }
        if line.contains("/swift/linux/") || line.contains("libswift") || line.contains("Foundation") || line.contains("libicu")
            || line.contains("libdispatch") || line.contains("libBlocksRuntime") { return partNames[3] }
        if line.contains("backline") { return partNames[4] }
        return partNames[5]
    }

    /// Runs `path arguments` to completion: its status and what it printed (each stream through
    /// a file, so neither can fill a pipe and stall it); stdout goes to `stdout` when given.
    static func capture(_ path: String, _ arguments: [String], stdout: String? = nil)
        throws -> (status: Int32, stdout: String, stderr: String) {
        let base = NSTemporaryDirectory() + "backline-capture-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let outPath = stdout ?? base + ".out", errPath = base + ".err"
        if stdout == nil { _ = FileManager.default.createFile(atPath: outPath, contents: nil) }
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        defer {
            if stdout == nil { try? FileManager.default.removeItem(atPath: outPath) }
            try? FileManager.default.removeItem(atPath: errPath)
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = arguments
        p.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        try p.run()
        p.waitUntilExit()
        let out = stdout == nil ? (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "" : ""
        return (p.terminationStatus, out, (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    /// Runs `command` under callgrind and reads its profile with `callgrind_annotate`.
    static func profile(_ command: [String], in dir: String, tag: String) throws -> Profile {
        let out = "\(dir)/callgrind.\(tag).%p"
        let r = try capture("/usr/bin/valgrind",
                            ["--tool=callgrind", "--callgrind-out-file=\(out)"] + command,
                            stdout: "/dev/null")
        guard r.status == 0 else { throw BenchError("callgrind \(command.joined(separator: " ")) failed: \(r.stderr.suffix(500))") }
        var total = 0
        var parts: [String: Int] = [:]
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("callgrind.\(tag).") }
        for file in files {
            let a = try capture("/usr/bin/callgrind_annotate", ["--inclusive=no", "--threshold=100", "--auto=no", "\(dir)/\(file)"])
            for line in a.stdout.split(separator: "\n") {
                let fields = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
                guard fields.count == 2, let n = Int(fields[0].replacingOccurrences(of: ",", with: "")) else { continue }
                if fields[1].contains("PROGRAM TOTALS") {
                    total += n
                } else {
                    parts[part(of: fields[1]), default: 0] += n
                }
            }
            try? FileManager.default.removeItem(atPath: "\(dir)/\(file)")
        }
        return Profile(total: total, parts: parts)
    }

    /// Rows for the 60 s and the 10-minute 320 kbps files: totals (ratio to mpg123) and each
    /// part of ours beside mpg123's. `player` (the `backline-player` binary) is copied and
    /// stripped first, as an installed binary would be. The front end is left out: callgrind
    /// loses the count of an image that `exec`s (its share is about 0.1 M instructions, see the
    /// `--version` row).
    public static func run(player source: String) throws -> [BenchResult] {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/valgrind") else {
            throw BenchError("valgrind is not installed (scripts/bootstrap --bench installs it)")
        }
        let dir = NSTemporaryDirectory() + "backline-instructions-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let player = "\(dir)/backline-player"
        try FileManager.default.copyItem(atPath: source, toPath: player)
        let s = try capture("/usr/bin/strip", [player])
        guard s.status == 0 else { throw BenchError("strip failed: \(s.stderr)") }
        var rows: [BenchResult] = []
        for seconds in [60, 600] {
            let file = try PipelineBench.testFile(seconds: seconds)
            let label = seconds == 60 ? "60 s" : "10 min"
            let ours = try profile([player, "play", "--device", "null", "--no-keys", file], in: dir, tag: "ours\(seconds)")
            let theirs = try profile(["/usr/bin/mpg123", "-q", "-s", file], in: dir, tag: "mpg123\(seconds)")
            rows.append(BenchResult(name: "instructions, play --device null, \(label) 320 kbps (callgrind, stripped)",
                                    value: Double(ours.total) / 1e6, unit: "M instr",
                                    reference: Double(theirs.total) / 1e6, referenceName: "mpg123 -q -s"))
            for part in partNames where (ours.parts[part] ?? 0) + (theirs.parts[part] ?? 0) >= 100_000 {
                rows.append(BenchResult(name: "  of which \(part)", value: Double(ours.parts[part] ?? 0) / 1e6, unit: "M instr",
                                        reference: Double(theirs.parts[part] ?? 0) / 1e6, referenceName: "mpg123 -q -s"))
            }
        }
        return rows
    }
}
