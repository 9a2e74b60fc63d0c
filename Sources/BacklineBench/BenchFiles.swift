import Foundation

/// The benchmarks' input files, made once in the bench directory (`$TMPDIR/backline-bench`) and
/// kept for later runs.
enum BenchFiles {
    /// The bench directory (made when missing).
    static func directory() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("backline-bench").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// `name` in the bench directory, made by running `steps` (each a command line) when it is
    /// not there yet; `hint` is added to a failing step's error.
    static func make(_ name: String, _ steps: [[String]], hint: String = "") throws -> String {
        let out = "\(try directory())/\(name)"
        if FileManager.default.fileExists(atPath: out) { return out }
        for step in steps {
            let r = try measureChild(step[0], Array(step.dropFirst()))
            guard r.status == 0 else { throw BenchError("\(step.joined(separator: " ")) failed\(hint)") }
        }
        return out
    }
}
