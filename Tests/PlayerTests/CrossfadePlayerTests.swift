import AudioEngine
import BacklineTestSupport
import Foundation
import Player
import Testing

/// Crossfade seen by a `QueuePlayer` on a device the test paces: the next item becomes current,
/// and the position counts from its first frame, exactly when the fade begins to be heard.
@Suite("Crossfade in the player: current item and position at the fade (paced device)", Harness.audioTools)
struct CrossfadePlayerTests {
    /// Three different FLAC sweeps at 48 kHz: 4 s, 3 s and 2 s.
    static func files() throws -> (URL, URL, URL) {
        let a = try FormatFixtures.source("pxf-a", seconds: 4, rate: 48_000)
        let b = try FormatFixtures.source("pxf-b", seconds: 3, rate: 48_000)
        let c = try FormatFixtures.source("pxf-c", seconds: 2, rate: 48_000)
        return (try FormatFixtures.flac("pxf-a", from: a), try FormatFixtures.flac("pxf-b", from: b), try FormatFixtures.flac("pxf-c", from: c))
    }

    /// A player with a 1 s crossfade playing `items` on a paced device, its clock and its log.
    static func playing(_ items: [PlayerItem]) -> (QueuePlayer, PacedClock, PlayerLog) {
        let clock = PacedDevice.clock("xfade-\(UUID().uuidString)")
        let player = makePlayer(items, device: clock.device)
        player.crossfade = 1
        let log = PlayerLog(player)
        player.play()
        return (player, clock, log)
    }

    @Test("crossfade 1: at 2.9 s the first item is current; the fade starts at 3.0 s, and from there the second is current, its position counting from its first frame, the first ended")
    func currentChangesWhenTheFadeIsHeard() throws {
        let (a, b, _) = try Self.files()
        let ia = PlayerItem(path: a.path), ib = PlayerItem(path: b.path)
        let (player, clock, log) = Self.playing([ia, ib])
        defer { player.engine.shutdown() }
        #expect(clock.waitUntilHolding(1))
        #expect(clock.hear(seconds: 2.95))
        usleep(100_000)
        #expect(player.currentItem === ia && player.currentTime() == 2.95, "\(log.trace) \(player.currentTime())")
        #expect(log.trace.isEmpty, "\(log.trace)")
        #expect(clock.hear(seconds: 0.1))  // 3.05 s: 0.05 s into the fade
        #expect(log.wait(timeout: 10, isChange(to: ib)) != nil, "\(log.trace)")
        #expect(player.currentItem === ib && player.items() == [ib])
        #expect(eventually { player.currentTime() == 0.05 }, "the second item's own position: \(player.currentTime())")
        #expect(log.trace == ["end pxf-a", "current pxf-b"], "\(log.trace)")
        #expect(ib.duration.map { abs($0 - 3) < 1e-9 } == true, "its whole length")
        #expect(clock.run { player.currentItem == nil }, "\(log.trace)")
        // The second item plays to its own end: 3 s in all, from the fade's start.
        #expect(clock.heardFrames == 6 * 48_000, "4 s + 3 s − the 1 s overlap: \(clock.heardFrames)")
    }

    @Test("an edit after the ending item once its fade is decoded (not yet heard) lands: the new next item (never the removed one) becomes current at the fade's place (the audio of the re-made fade is checked on the sink's recording, RealtimeTests)")
    func editAfterTheFadeWasDecoded() throws {
        let (a, b, c) = try Self.files()
        let ia = PlayerItem(path: a.path), ib = PlayerItem(path: b.path), ic = PlayerItem(path: c.path)
        let (player, clock, log) = Self.playing([ia, ib])
        defer { player.engine.shutdown() }
        #expect(clock.waitUntilHolding(1))
        #expect(clock.hear(seconds: 2.5))  // the decoder, ~2 s ahead, is inside the fade
        #expect(player.insert(ic, after: ia))
        player.remove(ib)
        #expect(player.items() == [ia, ic])
        #expect(clock.hear(seconds: 0.4))  // 2.9 s
        usleep(100_000)
        #expect(player.currentItem === ia, "\(log.trace)")
        #expect(clock.hear(seconds: 0.2))  // 3.1 s
        #expect(log.wait(timeout: 10, isChange(to: ic)) != nil, "\(log.trace)")
        #expect(!log.trace.contains("current pxf-b"), "\(log.trace)")
        #expect(clock.run { player.currentItem == nil }, "\(log.trace)")
        // A's 4 s and C's 2 s, overlapping by 1 s; the re-plan from the heard frame adds at most a few ms.
        #expect(abs(clock.heardFrames - 5 * 48_000) < 48_000 / 20, "\(clock.heardFrames)")
    }
}
