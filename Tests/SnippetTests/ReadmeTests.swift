import BacklineTestSupport
import Foundation
import Testing

@Suite("README's and the DocC articles' Swift snippets compile as written")
struct ReadmeTests {
    @Test("every ```swift block of README.md is in ReadmeSnippets.swift, line for line (imports at the top)")
    func snippetsAreCompiled() throws {
        let blocks = try Self.swiftBlocks(in: "README.md")
        #expect(blocks.count >= 4, "README has \(blocks.count) swift blocks")
        try Self.expectCompiled(blocks, of: "README", in: "Tests/SnippetTests/ReadmeSnippets.swift")
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
