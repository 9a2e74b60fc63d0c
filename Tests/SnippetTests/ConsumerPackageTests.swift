import BacklineTestSupport
import Foundation
import Testing

/// Backline as another package sees it: a package of its own, made here from README's manifest
/// and program as written, depending by version on a bare clone of this repository tagged with
/// the newest release in CHANGELOG.md. SwiftPM refuses such a dependency when a target of a
/// product it uses carries unsafe build flags; built, the program plays two MP3 files through
/// `QueuePlayer` into ALSA's `file` device, which must hold both, gapless, sample for sample.
@Suite("a package that depends on Backline by version", Harness.audioTools,
       .enabled(if: Harness.which("git") != nil && Harness.which("swift") != nil, "needs git and swift"))
struct ConsumerPackageTests {
    /// `git -C directory arguments`, failing the test with git's words when it fails.
    @discardableResult
    static func git(_ directory: URL, _ arguments: [String], environment: [String: String] = [:]) throws -> String {
        let r = try runProcess("git", ["-C", directory.path] + arguments, environment: environment)
        guard r.status == 0 else { throw HarnessError("git \(arguments.joined(separator: " ")): \(r.stderr)") }
        return r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("no target any library product holds carries unsafe flags, as a dependent package sees the manifest")
    func noUnsafeFlagsInLibraries() throws {
        // A dependent package's build never sets BACKLINE_PROGRAM_BUILD (scripts/build does). A
        // scratch directory of its own: `swift test` holds the package's `.build` meanwhile.
        let scratch = try Harness.makeTemporaryDirectory().appendingPathComponent("scratch").path
        let r = try runProcess("swift", ["package", "--package-path", Harness.packageRoot.path, "--scratch-path", scratch,
                                         "dump-package"],
                               environment: ["BACKLINE_PROGRAM_BUILD": ""], timeout: 300)
        #expect(r.status == 0, "\(r.stderr)")
        let package = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let targets = (package["targets"] as? [[String: Any]] ?? []).reduce(into: [String: [String: Any]]()) {
            $0[$1["name"] as? String ?? ""] = $1
        }
        /// The package's targets `name` depends on, itself included.
        func closure(_ name: String, _ seen: inout Set<String>) {
            guard seen.insert(name).inserted, let target = targets[name] else { return }
            for dependency in target["dependencies"] as? [[String: Any]] ?? [] {
                for kind in ["byName", "target"] {
                    if let first = (dependency[kind] as? [Any])?.first as? String, targets[first] != nil { closure(first, &seen) }
                }
            }
        }
        let libraries = (package["products"] as? [[String: Any]] ?? []).filter { ($0["type"] as? [String: Any])?["library"] != nil }
        #expect(libraries.count >= 9, "\(libraries.count) library products")
        for product in libraries {
            var seen = Set<String>()
            for target in product["targets"] as? [String] ?? [] { closure(target, &seen) }
            for name in seen.sorted() {
                let settings = targets[name]?["settings"] as? [[String: Any]] ?? []
                let unsafe = settings.filter { ($0["kind"] as? [String: Any])?["unsafeFlags"] != nil }
                #expect(unsafe.isEmpty, "\(product["name"] ?? ""): target \(name) carries unsafe flags: \(unsafe)")
            }
        }
    }

    @Test("README's package builds against a tagged clone and plays two files bit-exact")
    func buildsAndPlays() throws {
        let release = try #require(try Harness.newestRelease(), "CHANGELOG.md names no release")
        let work = try Harness.makeTemporaryDirectory()
        let root = Harness.packageRoot

        // The working tree as it is (tracked and new files, .gitignore honoured), as one commit
        // made through a scratch index: neither the real index nor any ref of this repository moves.
        let index = ["GIT_INDEX_FILE": work.appendingPathComponent("index").path]
        try Self.git(root, ["read-tree", "HEAD"], environment: index)
        try Self.git(root, ["add", "-A", "."], environment: index)
        let tree = try Self.git(root, ["write-tree"], environment: index)
        let commit = try Self.git(root, ["commit-tree", tree, "-p", "HEAD", "-m", "snapshot for ConsumerPackageTests"],
                                  environment: ["GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@localhost",
                                                "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@localhost"])
        let bare = work.appendingPathComponent("backline.git")  // its name is the package's identity: "backline"
        try Self.git(work, ["init", "--quiet", "--bare", bare.path])
        try Self.git(root, ["push", "--quiet", bare.path, "\(commit):refs/heads/main", "\(commit):refs/tags/\(release)"])

        // README's manifest, its URL the bare clone; README's program.
        let blocks = try ReadmeTests.swiftBlocks(in: "README.md")
        let manifest = try #require(blocks.first(where: ReadmeTests.isManifest)).joined(separator: "\n")
        let program = try #require(blocks.first(where: ReadmeTests.isProgram)).joined(separator: "\n")
        let url = try #require(manifest.firstMatch(of: /\.package\(url: "([^"]+)"/)?.1)
        let consumer = work.appendingPathComponent("MyPlayer")
        let sources = consumer.appendingPathComponent("Sources/MyPlayer")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try manifest.replacingOccurrences(of: "\"\(url)\"", with: "\"\(bare.path)\"")
            .write(to: consumer.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try program.write(to: sources.appendingPathComponent("main.swift"), atomically: true, encoding: .utf8)

        // Resolved by version and built as a dependency (debug, as `swift build` builds).
        let build = try runProcess("swift", ["build", "--package-path", consumer.path], timeout: 1200)
        #expect(build.status == 0, "swift build:\n\(build.stdoutText)\n\(build.stderr)")
        #expect(!build.stderr.contains("unsafe build flags") && !build.stdoutText.contains("unsafe build flags"))
        let resolved = try String(contentsOf: consumer.appendingPathComponent("Package.resolved"), encoding: .utf8)
        #expect(resolved.contains("\"version\" : \"\(release)\""), "Package.resolved:\n\(resolved)")
        let ownWarnings = (build.stdoutText + build.stderr).split(separator: "\n")
            .filter { $0.contains("Sources/MyPlayer/") && $0.contains("warning:") }
        #expect(ownWarnings.isEmpty, "README's program compiles with warnings:\n\(ownWarnings.joined(separator: "\n"))")
        guard build.status == 0 else { return }

        // Played into ALSA's file device: both files, gapless, sample for sample.
        let (a, b) = try Fixtures.gaplessPair()
        let capture = ALSAFileCapture(in: work)
        let binary = consumer.appendingPathComponent(".build/debug/MyPlayer").path
        let run = try runProcess(binary, ["--device", capture.device, a.path, b.path],
                                 environment: ["XDG_RUNTIME_DIR": try Harness.makeTemporaryDirectory().path], timeout: 60)
        #expect(run.status == 0, "\(run.stdoutText)\n\(run.stderr)")
        #expect(run.stdoutText.components(separatedBy: "\n").filter { $0.hasPrefix("played:") }.count == 2, "\(run.stdoutText)")
        let reference = try ReferenceDecoder.decodeF32(a) + ReferenceDecoder.decodeF32(b)
        let heard = try capture.f32()
        #expect(heard.count == reference.count)
        #expect(heard == reference, "the capture differs from the reference decode")
    }
}
