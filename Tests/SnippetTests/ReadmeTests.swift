import BacklineTestSupport
import Foundation
import Testing

@Suite("README's Swift snippets compile as written")
struct ReadmeTests {
    @Test("every ```swift block of README.md is in ReadmeSnippets.swift, line for line (imports at the top)")
    func snippetsAreCompiled() throws {
        let readme = try String(contentsOf: Harness.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: Harness.packageRoot.appendingPathComponent("Tests/SnippetTests/ReadmeSnippets.swift"),
                                encoding: .utf8)
        let sourceLines = source.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        var blocks: [[String]] = []
        var current: [String]?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.hasPrefix("```swift") { current = [] } else if current != nil, line.hasPrefix("```") {
                blocks.append(current!)
                current = nil
            } else {
                current?.append(String(line))
            }
        }
        #expect(blocks.count >= 4, "README has \(blocks.count) swift blocks")
        for (n, block) in blocks.enumerated() {
            let imports = block.filter { $0.hasPrefix("import ") }
            for i in imports { #expect(sourceLines.contains(i), "block \(n + 1): \(i) is not imported") }
            let body = block.filter { !$0.hasPrefix("import ") }.map { $0.trimmingCharacters(in: .whitespaces) }
                .drop { $0.isEmpty }
            let found = sourceLines.indices.contains { start in
                start + body.count <= sourceLines.count && Array(sourceLines[start..<start + body.count]) == Array(body)
            }
            #expect(found, "README block \(n + 1) is not in ReadmeSnippets.swift as written:\n\(body.joined(separator: "\n"))")
        }
    }
}
