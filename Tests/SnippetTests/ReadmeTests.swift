import BacklineTestSupport
import Foundation
import Testing

@Suite("README's, the guide's and the DocC articles' Swift snippets compile as written")
struct ReadmeTests {
    @Test("every ```swift block of README.md and docs/GUIDE.md but README's package is in ReadmeSnippets.swift, line for line (imports at the top)")
    func snippetsAreCompiled() throws {
        let readme = try Self.swiftBlocks(in: "README.md").filter { !Self.isManifest($0) && !Self.isProgram($0) }
        let guide = try Self.swiftBlocks(in: "docs/GUIDE.md")
        #expect(guide.count >= 3, "docs/GUIDE.md has \(guide.count) swift blocks")
        try Self.expectCompiled(readme, of: "README", in: "Tests/SnippetTests/ReadmeSnippets.swift")
        try Self.expectCompiled(guide, of: "docs/GUIDE.md", in: "Tests/SnippetTests/ReadmeSnippets.swift")
    }

    @Test("README's package manifest example depends on library products Package.swift declares")
    func manifestNamesLibraryProducts() throws {
        let manifests = try Self.swiftBlocks(in: "README.md").filter(Self.isManifest)
        #expect(manifests.count == 1, "README has \(manifests.count) package manifest examples")
        let packageSwift = try String(contentsOf: Harness.packageRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        for block in manifests {
            let text = block.joined(separator: "\n")
            let products = Self.backlineProducts(in: text)
            #expect(!products.isEmpty, "README's manifest example names no product of the package \"backline\":\n\(text)")
            for name in products {
                #expect(packageSwift.contains(".library(name: \"\(name)\""),
                        "README's manifest example depends on \(name), which is not a library product of Package.swift")
            }
        }
    }

    /// Whether a ```swift block is a package manifest's (it declares a package dependency), which
    /// a test target cannot compile (`ConsumerPackageTests` builds it).
    static func isManifest(_ block: [String]) -> Bool {
        block.contains { $0.contains(".package(url:") }
    }

    /// Whether a ```swift block is README's program for that package (its usage comment names
    /// it), which `ConsumerPackageTests` builds and runs.
    static func isProgram(_ block: [String]) -> Bool {
        block.contains { $0.hasPrefix("// MyPlayer ") }
    }

    @Test("README's package depends on the newest release in CHANGELOG.md")
    func manifestNamesTheNewestRelease() throws {
        let manifest = try #require(try Self.swiftBlocks(in: "README.md").first(where: Self.isManifest))
        let release = try #require(try Harness.newestRelease())
        #expect(manifest.contains { $0.contains("from: \"\(release)\"") }, "README's manifest:\n\(manifest.joined(separator: "\n"))")
    }

    /// The names in `.product(name: "NAME", package: "backline")` in `text`.
    static func backlineProducts(in text: String) -> [String] {
        text.components(separatedBy: ".product(name: \"").dropFirst().compactMap { part -> String? in
            guard let end = part.firstIndex(of: "\"") else { return nil }
            guard part[end...].hasPrefix("\", package: \"backline\")") else { return nil }
            return String(part[..<end])
        }
    }

    /// The four areas' landing articles, each with one complete example program.
    static let articles = [
        "Sources/Player/Player.docc/Player.md",
        "Sources/Session/Session.docc/Session.md",
        "Sources/Lifecycle/Lifecycle.docc/Lifecycle.md",
        "Sources/NowPlaying/NowPlaying.docc/NowPlaying.md",
    ]

    @Test("every ```swift block of the DocC articles is in ArticleSnippets.swift, line for line (imports at the top)",
          arguments: articles)
    func articleSnippetsAreCompiled(article: String) throws {
        let blocks = try Self.swiftBlocks(in: article)
        #expect(blocks.count == 1, "\(article) has \(blocks.count) swift blocks, not one example")
        try Self.expectCompiled(blocks, of: article, in: "Tests/SnippetTests/ArticleSnippets.swift")
    }

    /// The lines of each ```swift block of the package file at `path`.
    static func swiftBlocks(in path: String) throws -> [[String]] {
        let text = try String(contentsOf: Harness.packageRoot.appendingPathComponent(path), encoding: .utf8)
        var blocks: [[String]] = []
        var current: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.hasPrefix("```swift") { current = [] } else if current != nil, line.hasPrefix("```") {
                blocks.append(current!)
                current = nil
            } else {
                current?.append(String(line))
            }
        }
        return blocks
    }

    /// Expects each block's imports among `snippets`' lines and its other lines (trimmed) in
    /// `snippets` consecutively, as written.
    static func expectCompiled(_ blocks: [[String]], of document: String, in snippets: String) throws {
        let source = try String(contentsOf: Harness.packageRoot.appendingPathComponent(snippets), encoding: .utf8)
        let sourceLines = source.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        let file = (snippets as NSString).lastPathComponent
        for (n, block) in blocks.enumerated() {
            let imports = block.filter { $0.hasPrefix("import ") }
            for i in imports { #expect(sourceLines.contains(i), "\(document) block \(n + 1): \(i) is not imported in \(file)") }
            let body = block.filter { !$0.hasPrefix("import ") }.map { $0.trimmingCharacters(in: .whitespaces) }
                .drop { $0.isEmpty }
            let found = sourceLines.indices.contains { start in
                start + body.count <= sourceLines.count && Array(sourceLines[start..<start + body.count]) == Array(body)
            }
            #expect(found, "\(document) block \(n + 1) is not in \(file) as written:\n\(body.joined(separator: "\n"))")
        }
    }
}
