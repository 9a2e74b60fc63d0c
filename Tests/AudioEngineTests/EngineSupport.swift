import AudioEngine
import BacklineTestSupport
import Foundation
import MediaCore
import Synchronization
import Testing
import Locking

/// Collects an engine's events and lets a test wait for one.
final class EventLog: Sendable {
    private let events = Lock<[(time: Double, event: EngineEvent)]>([])
    private let start = Date()

    init(_ engine: PlaybackEngine) {
        engine.onEvent { [self] e in
            let t = Date().timeIntervalSince(start)
            events.withLock { $0.append((t, e)) }
        }
    }

    var all: [EngineEvent] { events.withLock { $0.map(\.event) } }

    /// Waits until `predicate` holds for some event; returns its time, or nil on timeout.
    @discardableResult
    func wait(timeout: Double = 30, _ predicate: (EngineEvent) -> Bool) -> Double? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let hit = events.withLock({ $0.first { predicate($0.event) } }) { return hit.time }
            usleep(5_000)
        }
        return nil
    }

    func waitForEnd(timeout: Double = 60) -> Bool {
        wait(timeout: timeout) { if case .endOfInput = $0 { true } else { false } } != nil
    }
}

/// An engine playing into `device`, real time off (tests run many at once).
func makeEngine(device: String, format: DeviceSampleFormat = .float32, bufferMillis: Int = 200,
                mmap: Bool = false, maxChannels: Int = 8) -> PlaybackEngine {
    var output = OutputSettings(device: device, bufferMillis: bufferMillis, preferredFormat: format, realtime: false)
    output.mmap = mmap
    output.maxChannels = maxChannels
    return PlaybackEngine(configuration: EngineConfiguration(output: output))
}

/// Plays `files` into a fresh ALSA file capture and returns the captured float32 samples and the events.
func playToFile(_ files: [URL], format: DeviceSampleFormat = .float32, mmap: Bool = false, maxChannels: Int = 8) throws
    -> (capture: ALSAFileCapture, events: [EngineEvent])
{
    let dir = try Harness.makeTemporaryDirectory()
    let cap = ALSAFileCapture(in: dir)
    let engine = makeEngine(device: cap.device, format: format, mmap: mmap, maxChannels: maxChannels)
    defer { engine.shutdown() }
    let log = EventLog(engine)
    engine.enqueue(files.map(\.path))
    guard log.waitForEnd() else { throw HarnessError("playback did not finish; events: \(log.all)") }
    return (cap, log.all)
}

extension EngineEvent {
    var startedPath: String? {
        if case .itemStarted(let info, _) = self { return info.path }
        return nil
    }
    var failedPath: String? {
        if case .itemFailed(_, let path, _) = self { return path }
        return nil
    }
}

/// The engine's position once the output has taken in the last step of `clock`: it has written
/// the device full again (and published the reading after that write), and three reads agree.
func settledPosition(_ engine: PlaybackEngine, _ clock: PacedClock, sourceLocation: SourceLocation = #_sourceLocation) -> PlaybackPosition? {
    #expect(clock.waitUntilHolding(clock.bufferFrames / 2), "the output refills the device", sourceLocation: sourceLocation)
    var last: PlaybackPosition?
    var same = 0
    _ = eventually(timeout: 10, every: 0.01) {
        let p = engine.position
        same = p == last ? same + 1 : 0
        last = p
        return same >= 3
    }
    return last
}
