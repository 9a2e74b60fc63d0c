import BacklineTestSupport
import Foundation
import Testing

@Suite("the version the programs report")
struct VersionTests {
    @Test("backline --version prints the newest release in CHANGELOG.md")
    func versionIsTheNewestRelease() throws {
        let release = try #require(try Harness.newestRelease(), "CHANGELOG.md names no release")
        let r = try runProcess(backline, ["--version"], environment: try isolated())
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == release)
    }
}
