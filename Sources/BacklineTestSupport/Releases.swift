import Foundation

extension Harness {
    /// The newest release CHANGELOG.md names: its first `## [X.Y.Z]` heading (`Unreleased` skipped).
    public static func newestRelease() throws -> String? {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        return text.firstMatch(of: /\n## \[(\d+\.\d+\.\d+)\]/).map { String($0.1) }
    }
}
