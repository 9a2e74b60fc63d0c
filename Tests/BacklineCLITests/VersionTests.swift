import BacklineTestSupport
import Foundation
import Testing

@Suite("the version the programs report")
struct VersionTests {
    @Test("backline --version prints the newest release in CHANGELOG.md")
    func versionIsTheNewestRelease() throws {
        let changelog = try String(contentsOf: Harness.packageRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let release = try #require(changelog.firstMatch(of: /\n## \[(\d+\.\d+\.\d+)\]/)?.1, "CHANGELOG.md names no release")
        let r = try runProcess(backline, ["--version"], environment: try isolated())
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == String(release))
    }
}
