import BacklineTestSupport
import Foundation
import Library
import MediaCore
import Testing

/// Scans of generated trees, in process: what the database holds, incremental rescans,
/// moves, special files, a kill mid-scan, damaged and newer databases.
@Suite struct ScanTests {
    func open(_ tree: URL) throws -> MusicLibrary {
        let db = try Harness.makeTemporaryDirectory("backline-library").appendingPathComponent("library.sqlite")
        return try MusicLibrary(path: db.path, musicDirectory: tree.path)
    }

    func scan(_ lib: MusicLibrary, _ path: String = "", rescan: Bool = false) throws -> LibraryUpdate {
        let job = try lib.update(path, rescan: rescan)
        #expect(lib.waitForUpdates(timeout: 300))
        let last = try #require(lib.lastUpdate)
        #expect(last.job == job)
        #expect(last.error == nil)
        return last
    }

    @Test func fullScan() throws {
        let tree = try MusicTree.shared(songs: 2000)
        let lib = try open(tree)
        let u = try scan(lib)
        let stats = try lib.stats()
        #expect(stats.songs == 2001)
        #expect(u.added == 2002)  // (with the broken file, recorded as unreadable)
        let bad = try lib.unreadable()
        print(bad)
        #expect(bad.contains { $0.path == "Singles/broken.flac" })
        #expect(bad.contains { $0.path == "x.flac" && $0.reason.contains("FIFO") })
        #expect(bad.contains { $0.path == "Singles/caf\\xE9.mp3" && $0.reason.contains("UTF-8") })
        #expect(bad.contains { $0.path == "Singles/outside.flac" && $0.reason.contains("out of the music directory") })
        #expect(bad.contains { $0.path == "Sigur Rós/loop" && $0.reason.contains("loop") })
    }
}
