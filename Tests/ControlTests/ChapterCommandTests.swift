import AudioEngine
import BacklineTestSupport
import Control
import Foundation
import MediaCore
import NowPlaying
import PlayQueue
import Locking
import Synchronization
import Testing

/// Chapters through the command layer, on a device the test paces and records: the list, the
/// moves (each heard from the chapter's first sample), the status, the event, and the sleep
/// timer's end of chapter.
@Suite("chapter: list, next, previous and N, heard from the chapter's first sample; the status and event; sleep at the end of the chapter (paced device)", Harness.audioTools)
struct ChapterCommandTests {
    /// A playback of ``FormatFixtures/chaptered()`` (chapters at 0, 1 and 2.5 s), playing from
    /// its first sample heard, its events collected from before the play.
    struct Playing {
        let d: CommandDispatcher
        let clock: PacedClock
        let recording: PacedRecording
        let id: Int
        /// The item's reference decode (interleaved stereo).
        let reference: [Float]
        let events: DispatcherTests.Events
    }

    static func playing() throws -> Playing {
        let music = try Harness.makeTemporaryDirectory("backline-chapters").path
        let book = try FormatFixtures.chaptered()
        try FileManager.default.copyItem(atPath: book.path, toPath: music + "/book.flac")
        let name = "chapters-\(UUID().uuidString)"
        let clock = PacedDevice.clock(name)
        let recording = PacedDevice.recording(name)
        let playback = try Playback(configuration: PlaybackConfiguration(
            device: clock.device, musicDirectory: music, registryDirectory: try Harness.makeTemporaryDirectory().path))
        let d = CommandDispatcher(playback: playback, version: "test", checkToken: { _ in true })
        guard case .success(.added(let ids, _)) = d.execute(AddCommand(paths: ["book.flac"])), let id = ids.first else {
            throw HarnessError("add failed")
        }
        let events = DispatcherTests.Events(playback)
        #expect(d.execute(PlayCommand(item: id)) == .success(.state(.playing)))
        DispatcherTests.hearStart(clock)
        return Playing(d: d, clock: clock, recording: recording, id: id, reference: try FormatReference.flac(book, bits: 16), events: events)
    }

    static let titles: [String?] = ["Opening", "Tone", "Later"]

    @Test("listed with the one heard; next lands on chapter 1's first sample (the recording is the reference decode from the start to the jump, then from 1 s, sample for sample) and its event follows; previous within 3 s goes to the chapter before, past 3 s to the chapter's start; N; past the ends refused")
    func moves() throws {
        let p = try Self.playing()
        let (d, clock, recording, id, reference, events) = (p.d, p.clock, p.recording, p.id, p.reference, p.events)
        defer { d.playback.shutdown() }
        guard case .success(.chapters(let list, let current, nil)) = d.execute(ChapterCommand(nil)) else {
            Issue.record("chapter: no list")
            return
        }
        #expect(list.map(\.title) == Self.titles && list.map(\.start) == [0, 1, 2.5] && current == 0)
        #expect(events.wait { $0 == .chapter(item: id, ChapterPosition(list, index: 0)) })
        guard case .success(.status(let s)) = d.execute(StatusCommand()) else { Issue.record("status failed"); return }
        #expect(s.chapter == ChapterPosition(list, index: 0) && s.chapter?.chapter?.title == "Opening")

        // Next: what is heard is the item from its start to some frame J, then chapter 1 from
        // its first sample (the 523 Hz opening has no repeated stretch, so J is one frame).
        #expect(d.execute(ChapterCommand(.next)) == .success(.chapters(list, current: 1, position: 1)))
        #expect(clock.run(timeout: 10) { events.seen.withLock { $0.contains(.chapter(item: id, ChapterPosition(list, index: 1))) } },
                "the chapter 1 event when heard")
        #expect(clock.hear(seconds: 0.1))
        let heard = recording.heard(clock).samples
        // The frames the two agree on from the start; the cut is there (a stretch of the
        // opening never equals chapter 1's start).
        let agree = (0..<min(heard.count, reference.count)).first { heard[$0] != reference[$0] }.map { $0 / 2 } ?? heard.count / 2
        let cut = (max(0, agree - 2)...min(agree, 44100)).first { j in
            heard[..<(2 * j)] == reference[..<(2 * j)] && heard[(2 * j)...] == reference[(88200)..<(88200 + heard.count - 2 * j)]
        }
        #expect(cut != nil, "the recording is not the item's start and then chapter 1 from its first sample")
        guard case .success(.status(let s1)) = d.execute(StatusCommand()) else { Issue.record("status failed"); return }
        #expect(s1.chapter?.index == 1 && s1.chapter?.chapter?.title == "Tone", "\(String(describing: s1.chapter))")
        // The now-playing info (MPNowPlayingInfoPropertyChapterNumber, zero-based, and the count).
        #expect(eventually(timeout: 5) {
            d.playback.nowPlaying.nowPlayingInfo.map { $0.chapterNumber == 1 && $0.chapterCount == 3 } ?? false
        }, "\(String(describing: d.playback.nowPlaying.nowPlayingInfo))")

        // Previous 0.1 s into chapter 1: chapter 0. N: chapter 2; previous 0.1 s in: chapter 1.
        #expect(d.execute(ChapterCommand(.previous)) == .success(.chapters(list, current: 0, position: 0)))
        #expect(d.execute(ChapterCommand(.index(2))) == .success(.chapters(list, current: 2, position: 2.5)))
        #expect(clock.hear(seconds: 0.1))
        #expect(d.execute(ChapterCommand(.previous)) == .success(.chapters(list, current: 1, position: 1)))
        // Past the ends.
        #expect(d.execute(ChapterCommand(.index(3))) == .failure(.badArgument("chapter: no chapter 3 (the item has 3, 0 to 2)")))
        #expect(d.execute(ChapterCommand(.index(2))) == .success(.chapters(list, current: 2, position: 2.5)))
        #expect(d.execute(ChapterCommand(.next)) == .failure(.badArgument("chapter: the last chapter is playing (3 of 3)")))
        #expect(throws: CommandError.badArgument("chapter: give \"to\" (next or previous) or \"index\", not both")) {
            _ = try ChapterCommand(Arguments(["to": .string("next"), "index": .integer(1)]))
        }
    }

    @Test("previous: 2.9 s and exactly 3 s into a chapter, the chapter before; 3.1 s in, the chapter's own start (the threshold is 3 s, as previous's)")
    func previousThreshold() throws {
        #expect(ChapterCommand.restartThreshold == 3)
        let p = try Self.playing()
        let d = p.d
        defer { d.playback.shutdown() }
        #expect(d.execute(PauseCommand()) == .success(.state(.paused)))
        let list = d.playback.currentChapters
        #expect(list.count == 3)
        // Chapter 2 runs from 2.5 s to the end, at 7 s.
        #expect(d.execute(SeekCommand(target: .position(5.4))) == .success(.position(5.4)))
        #expect(d.execute(ChapterCommand(.previous)) == .success(.chapters(list, current: 1, position: 1)))
        // Exactly 3 s in is not past the threshold: the chapter before.
        #expect(d.execute(SeekCommand(target: .position(5.5))) == .success(.position(5.5)))
        #expect(d.execute(ChapterCommand(.previous)) == .success(.chapters(list, current: 1, position: 1)))
        #expect(d.execute(SeekCommand(target: .position(5.6))) == .success(.position(5.6)))
        #expect(d.execute(ChapterCommand(.previous)) == .success(.chapters(list, current: 2, position: 2.5)))
        #expect(d.playback.queue.playbackState == .paused, "a chapter move keeps the pause")
    }

    @Test("sleep at the end of the chapter: set in chapter 1, it pauses when chapter 2 is heard, back at chapter 2's start; the status and event say so")
    func sleepAtEndOfChapter() throws {
        let p = try Self.playing()
        let (d, clock, id, events) = (p.d, p.clock, p.id, p.events)
        defer { d.playback.shutdown() }
        guard case .success(.chapters(let list, _, _)) = d.execute(ChapterCommand(.index(1))) else { Issue.record("chapter 1"); return }
        #expect(clock.run(timeout: 10) { events.seen.withLock { $0.contains(.chapter(item: id, ChapterPosition(list, index: 1))) } })
        guard case .success(.sleep(let snapshot?)) = d.execute(SleepCommand(action: .endOfChapter)) else { Issue.record("sleep failed"); return }
        #expect(snapshot.endOfChapter && !snapshot.endOfItem && snapshot.remaining == nil)
        #expect(events.wait { $0 == .sleep(.setAtEndOfChapter) })
        // Heard on until chapter 2's first sample: the timer pauses there and goes back to it.
        #expect(clock.run(timeout: 10) { events.seen.withLock { $0.contains(.sleep(.fired)) } })
        #expect(eventually(timeout: 5) { d.playback.queue.playbackState == .paused })
        #expect(abs(d.playback.queue.elapsed - 2.5) < 0.001, "paused at \(d.playback.queue.elapsed), not chapter 2's start")
        #expect(d.playback.sleepSnapshot == nil && !d.playback.queue.stopAfterCurrent)
    }
}
