import AudioEngine
import BacklineTestSupport
import Control
import Foundation
import Locking
import MediaCore
import PlayQueue
import Synchronization
import Testing

/// Resume where the listener left off, through the command layer on a device the test paces and
/// records: an item long enough is remembered where it was left and played on from there (less
/// the rewind), heard there; a short one is not; one heard to its end is forgotten.
@Suite("bookmarks: a long item left is played on from where it was heard, less the rewind; a short one starts over; heard to the end, forgotten (paced device)", Harness.audioTools)
struct BookmarkTests {
    @Test("left 3 s into a 7 s book (remembered from 5 s, rewind 0.5 s), it plays on at 2.5 s, heard there; a 2 s tone left at 1 s is not kept; played to its end the book is forgotten; clear forgets")
    func resume() throws {
        let music = try Harness.makeTemporaryDirectory("backline-bookmarks").path
        let bookFile = try FormatFixtures.chaptered()
        try FileManager.default.copyItem(atPath: bookFile.path, toPath: music + "/book.flac")
        try FileManager.default.copyItem(atPath: try Fixtures.tone("bookmark-short", seconds: 2, frequency: 660).path, toPath: music + "/short.mp3")
        let reference = try FormatReference.flac(bookFile, bits: 16)
        let name = "bookmarks-\(UUID().uuidString)"
        let clock = PacedDevice.clock(name)
        let recording = PacedDevice.recording(name)
        let playback = try Playback(configuration: PlaybackConfiguration(
            device: clock.device, musicDirectory: music, registryDirectory: try Harness.makeTemporaryDirectory().path))
        defer { playback.shutdown() }
        playback.bookmarks.settings = ResumeSettings(minimumLength: 5, rewind: 0.5)
        let d = CommandDispatcher(playback: playback, version: "test", checkToken: { _ in true })
        guard case .success(.added(let ids, _)) = d.execute(AddCommand(paths: ["book.flac", "short.mp3"])), ids.count == 2 else {
            Issue.record("add failed")
            return
        }
        let (book, short) = (ids[0], ids[1])
        let bookPath = try #require(playback.queue.entries.first?.path)

        #expect(d.execute(PlayCommand(item: book)) == .success(.state(.playing)))
        DispatcherTests.hearStart(clock)
        /// The position once the output has taken in the last step (refilled the device and
        /// published what it holds): three reads agree.
        func settled() -> Double {
            #expect(clock.waitUntilHolding(clock.bufferFrames / 2))
            var last = -1.0, same = 0
            _ = eventually(timeout: 10, every: 0.01) {
                let e = playback.queue.elapsed
                same = e == last ? same + 1 : 0
                last = e
                return same >= 3
            }
            return last
        }
        #expect(clock.hear(seconds: 3))
        let left = settled()
        if case .failure(let e) = d.execute(NextCommand()) { Issue.record("next: \(e)") }
        let kept = try #require(playback.bookmarks.bookmark(for: bookPath), "the book left at \(left) s is not kept")
        #expect(abs(kept.position - left) < 0.001 && abs((kept.duration ?? 0) - 7) < 0.01, "\(kept) against \(left)")

        // The short item, left 1 s in, is not kept.
        #expect(clock.run(timeout: 10) { playback.queue.current?.id == short && playback.queue.elapsed >= 1 })
        #expect(d.execute(PlayCommand(item: book)) == .success(.state(.playing)))
        #expect(playback.bookmarks.all.count == 1, "\(playback.bookmarks.all)")

        // The book plays on from 0.5 s before where it was left: heard there.
        // (Past the start itself: a position the engine heard, not the target it reports until then.)
        #expect(clock.run(timeout: 10) { playback.queue.current?.id == book && playback.queue.elapsed >= left - 0.45 })
        let resumed = playback.queue.elapsed
        #expect(resumed >= left - 0.45 && resumed < left - 0.5 + 0.3, "resumed at \(resumed), left at \(left)")
        #expect(clock.hear(seconds: 0.1))
        let now = settled()
        let heard = recording.heard(clock).samples
        let tail = heard.suffix(4410 * 2)
        let at = Int((now * 44100).rounded()) * 2
        let match = stride(from: 0, to: reference.count - tail.count, by: 2).first { (k: Int) -> Bool in reference[k..<(k + tail.count)] == tail[...] }
        let found: Double? = match.map { Double($0 / 2 + 4410) / 44100 }
        #expect(tail.count == 4410 * 2 && tail[...] == reference[(at - tail.count)..<at],
                "the last 0.1 s heard is not the book's at \(now) s (resumed at \(resumed)): it is at \(String(describing: found))")
        guard case .success(.bookmarks(let listed)) = d.execute(BookmarksCommand(.list)) else { Issue.record("bookmarks"); return }
        #expect(listed.keys.sorted() == [bookPath])

        // Heard to its end: forgotten.
        #expect(clock.run(timeout: 20) { playback.queue.current?.id != book })
        #expect(eventually(timeout: 5) { playback.bookmarks.all.isEmpty }, "\(playback.bookmarks.all)")

        // clear and all.
        playback.bookmarks.set("/x/a.m4b", position: 10, duration: 100)
        playback.bookmarks.set("/x/b.m4b", position: 20, duration: 100)
        #expect(d.execute(BookmarksCommand(.forget(["/x/a.m4b", "/x/none"]))) == .success(.forgotten(1)))
        #expect(d.execute(BookmarksCommand(.forgetAll)) == .success(.forgotten(1)))
        #expect(throws: CommandError.badArgument("bookmarks: give \"clear\" (paths) or \"all\", not both")) {
            _ = try BookmarksCommand(Arguments(["clear": .strings(["a"]), "all": .boolean(true)]))
        }
    }

    @Test("which items are remembered: from the minimum length (at it, not just below), a spoken-word genre whatever the length, an .m4b; none when off")
    func rules() {
        let r = ResumeSettings(minimumLength: 600, rewind: 5)
        #expect(r.remembers(path: "/a.mp3", duration: 600, genre: nil))
        #expect(!r.remembers(path: "/a.mp3", duration: 599.9, genre: nil))
        #expect(r.remembers(path: "/a.mp3", duration: 60, genre: "Podcast"))
        #expect(r.remembers(path: "/a.mp3", duration: 60, genre: "Audiobook"))
        #expect(!r.remembers(path: "/a.mp3", duration: 60, genre: "Rock"))
        #expect(r.remembers(path: "/b.M4B", duration: 60, genre: nil))
        #expect(!ResumeSettings(enabled: false).remembers(path: "/b.m4b", duration: 6000, genre: "Podcast"))
    }

    @Test("at most 1,000 kept: the 999th and 1,000th are kept, the 1,001st sends the oldest away, not another")
    func limit() {
        let b = Bookmarks()
        // (Saved times given, so the oldest is known: 1…998.)
        b.restore(Dictionary(uniqueKeysWithValues: (1...998).map { ("/m/\($0).mp3", Bookmark(position: 60, duration: 700, saved: Double($0))) }))
        b.set("/m/999.mp3", position: 60, duration: 700)
        #expect(b.all.count == 999)
        b.set("/m/1000.mp3", position: 60, duration: 700)
        #expect(b.all.count == Bookmarks.limit && b.bookmark(for: "/m/1.mp3") != nil)
        b.set("/m/1001.mp3", position: 60, duration: 700)
        #expect(b.all.count == Bookmarks.limit)
        #expect(b.bookmark(for: "/m/1.mp3") == nil && b.bookmark(for: "/m/2.mp3") != nil && b.bookmark(for: "/m/1001.mp3") != nil)
        b.set("/m/1000.mp3", position: 90, duration: 700)  // one kept, moved on: nothing goes
        #expect(b.all.count == Bookmarks.limit && b.bookmark(for: "/m/2.mp3") != nil && b.bookmark(for: "/m/1000.mp3")?.position == 90)
    }
}
