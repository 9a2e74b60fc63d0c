import AudioEngine
import BacklineTestSupport
import Foundation
import MediaCore
import Testing

/// The chapter heard, announced when its first sample is heard: on a device the test paces, the
/// event must not come one frame before a chapter's start, and must come once the position (the
/// frames heard) reaches it.
@Suite("Chapters: each one's event comes when its first sample is heard (paced device)", Harness.audioTools)
struct ChapterEventTests {
    static func chapterEvents(_ log: EventLog, _ id: ItemID) -> [Int?] {
        log.all.compactMap { if case .chapterChanged(let i, let c) = $0, i == id { c } else { nil } }
    }

    @Test("chapters at 0, 1 and 2.5 s: 0 when the item starts; 1 not with 44,099 frames heard, then with 44,100 (its first sample sounding: the position at its start), what was heard the item's decode sample for sample; 2 likewise at 2.5 s; a seek back into 0 announces 0 again when heard")
    func heardOnTime() throws {
        let file = try FormatFixtures.chaptered()
        let reference = try FormatReference.flac(file, bits: 16)
        let name = "chapter-events-\(getpid())"
        let clock = PacedDevice.clock(name)
        let recording = PacedDevice.recording(name)
        let engine = makeEngine(device: clock.device)
        defer { engine.shutdown() }
        let log = EventLog(engine)
        let id = try #require(engine.enqueue(items: [EngineItem(path: file.path)]).first)
        let rate = 44100

        /// Hears until exactly `frame` frames have been heard; what was heard is the item's
        /// decode to there, sample for sample.
        func hear(to frame: Int) {
            #expect(clock.hear(seconds: Double(frame - clock.heardFrames) / Double(rate)), "the output stopped writing before frame \(frame)")
            let heard = recording.heard(clock).samples
            #expect(clock.heardFrames == frame && heard[...] == reference[0..<(frame * 2)], "heard \(heard.count / 2) frames, not the item's first \(frame)")
        }

        hear(to: 4410)
        #expect(log.wait(timeout: 10) { if case .chapterChanged(id, chapter: 0) = $0 { true } else { false } } != nil,
                "chapter 0 when the item starts: \(log.all)")
        // One frame before the 1 kHz tone: the monitor has had time to look, and says nothing new.
        hear(to: rate - 1)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(Self.chapterEvents(log, id) == [0], "before chapter 1's first frame: \(Self.chapterEvents(log, id))")
        hear(to: rate)
        #expect(log.wait(timeout: 10) { if case .chapterChanged(id, chapter: 1) = $0 { true } else { false } } != nil,
                "chapter 1 once its first frame was heard: \(Self.chapterEvents(log, id))")

        let later = Int(2.5 * Double(rate))
        hear(to: later - 1)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(Self.chapterEvents(log, id) == [0, 1], "before chapter 2's first frame: \(Self.chapterEvents(log, id))")
        hear(to: later)
        #expect(log.wait(timeout: 10) { if case .chapterChanged(id, chapter: 2) = $0 { true } else { false } } != nil,
                "chapter 2 once its first frame was heard: \(Self.chapterEvents(log, id))")

        // A seek lands when the device has played out what it held: heard as the output writes.
        #expect(engine.seek(to: 0.5))
        #expect(clock.run(timeout: 10) { Self.chapterEvents(log, id) == [0, 1, 2, 0] },
                "a seek back into chapter 0 announces it when heard: \(Self.chapterEvents(log, id))")
    }
}
