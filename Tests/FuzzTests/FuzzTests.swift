import FuzzTargets
import Foundation
import MediaCore
import Testing

/// Every committed fuzz input through its target: the seeds `scripts/fuzz` starts from and every
/// input a campaign found (a crash or a broken invariant, fixed since), so that none comes back.
@Suite("fuzz corpora replayed: seeds and past findings keep every target's invariants")
struct FuzzTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("FuzzCorpus")

    static func inputs(_ target: String) throws -> [URL] {
        let dir = corpus.appendingPathComponent(target)
        return try FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }.sorted { $0.path < $1.path }
    }

    @Test("each target has a committed corpus, and each input keeps the target's invariants",
          arguments: FuzzTargets.all.map(\.name))
    func replay(_ name: String) throws {
        let target = try #require(FuzzTargets.named(name))
        let files = try Self.inputs(name)
        #expect(files.count >= 3, "\(name): \(files.count) committed inputs")
        for file in files {
            let input = Array(try Data(contentsOf: file))
            do throws(InvariantFailure) {
                try target.run(input)
            } catch {
                Issue.record("\(name)/\(file.lastPathComponent): \(error.message)")
            }
        }
    }

    @Test("the checks fire: a tag value with a control character, an empty tag or a track that is not a number is reported")
    func checksFire() throws {
        var m = TrackMetadata()
        m.tags = [Tag(.title, "a\nOK")]
        #expect(throws: InvariantFailure.self) { try tagsAreLines(m, "test") }
        m.tags = [Tag(.track, "5/10")]
        #expect(throws: InvariantFailure.self) { try tagsAreLines(m, "test") }
        m.tags = [Tag(.title, "fine"), Tag(.track, "5")]
        try tagsAreLines(m, "test")
    }
}
