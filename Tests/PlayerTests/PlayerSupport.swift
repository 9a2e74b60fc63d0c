import AudioEngine
import BacklineTestSupport
import Foundation
import Player
import Session
import Synchronization
import Locking

/// Collects a player's events with their times (seconds since creation) and lets a test wait.
final class PlayerLog: Sendable {
    private let events = Lock<[(time: Double, event: PlayerEvent)]>([])
    let start = Date()
    private let queue = DispatchQueue(label: "test.player.log")

    init(_ player: QueuePlayer) {
        player.addObserver(queue: queue) { [self] e in
            let t = Date().timeIntervalSince(start)
            events.withLock { $0.append((t, e)) }
        }
    }

    var all: [PlayerEvent] { events.withLock { $0.map(\.event) } }
    var timed: [(time: Double, event: PlayerEvent)] { events.withLock { $0 } }

    /// Waits until `predicate` holds for some event; returns its time, or nil on timeout.
    @discardableResult
    func wait(timeout: Double = 30, _ predicate: (PlayerEvent) -> Bool) -> Double? {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if let hit = events.withLock({ $0.first { predicate($0.event) } }) { return hit.time }
            usleep(2_000)
        } while Date() < deadline
        return nil
    }

    /// Waits for the `n`th event matching `predicate` (1-based).
    @discardableResult
    func wait(count n: Int, timeout: Double = 30, _ predicate: (PlayerEvent) -> Bool) -> Double? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let hits = events.withLock { $0.filter { predicate($0.event) } }
            if hits.count >= n { return hits[n - 1].time }
            usleep(2_000)
        }
        return nil
    }

    /// A compact, comparable trace of the queue events.
    var trace: [String] {
        all.compactMap { e in
            switch e {
            case .currentItemChanged(let i): "current \(i.map(Self.name) ?? "nil")"
            case .itemDidPlayToEnd(let i): "end \(Self.name(i))"
            case .itemFailedToPlayToEnd(let i, _): "failed \(Self.name(i))"
            default: nil
            }
        }
    }

    static func name(_ item: PlayerItem) -> String {
        ((item.path as NSString).lastPathComponent as NSString).deletingPathExtension
    }
}

func isEnd(_ e: PlayerEvent) -> Bool { if case .itemDidPlayToEnd = e { true } else { false } }
func isCurrentNil(_ e: PlayerEvent) -> Bool { if case .currentItemChanged(nil) = e { true } else { false } }
func isChange(to item: PlayerItem) -> (PlayerEvent) -> Bool {
    { if case .currentItemChanged(let i?) = $0 { i === item } else { false } }
}

/// The players' audio session: a private registry, so tests never touch the user's sessions.
let testSession: AudioSession = {
    let dir = (try? Harness.makeTemporaryDirectory().path) ?? NSTemporaryDirectory()
    return AudioSession(registryDirectory: dir + "/sessions")
}()

/// A player on `device`, real-time scheduling off (tests run many at once).
func makePlayer(_ items: [PlayerItem], device: String, bufferMillis: Int = 200) -> QueuePlayer {
    QueuePlayer(items: items, configuration: EngineConfiguration(
        output: OutputSettings(device: device, bufferMillis: bufferMillis, realtime: false)), session: testSession)
}

func items(_ urls: [URL]) -> [PlayerItem] { urls.map { PlayerItem(path: $0.path) } }


enum PlayerFixtures {
    static func tone(_ name: String, seconds: Double, frequency: Double, gain: Double = -6) throws -> URL {
        let w = try Fixtures.wav(name, seconds: seconds, synth: ["sine", "\(frequency)"], effects: ["gain", "\(gain)"])
        return try Fixtures.mp3(from: w, name: name)
    }
}
