import AudioEngine
import BacklineTestSupport
import Foundation
import Player
import Synchronization
import Testing
import Locking

/// Jumps through `QueuePlayer` on the PulseAudio null sink (`norewinds=1`), checked against the
/// recording of its monitor: how long the listener hears nothing, whether the reported position
/// is what sounds at every sampled moment, and whether the jump's events come when it is heard.
@Suite("Jumps are heard at once and reported as heard (QueuePlayer, PulseAudio null sink)", .serialized, Harness.audioTools)
struct JumpTests {
    /// Output period of the player: 200 ms buffer / 4.
    static let period = 0.05

    /// A time observer's calls: when, the current item then, and the time each reported.
    final class ObserverCalls: Sendable {
        struct Call {
            var wall: Double
            var item: ObjectIdentifier?
            var time: Double
        }
        private let calls = Lock<[Call]>([])
        func append(wall: Double, item: PlayerItem?, time: Double) {
            calls.withLock { $0.append(Call(wall: wall, item: item.map(ObjectIdentifier.init), time: time)) }
        }
        var all: [Call] { calls.withLock { $0 } }
    }

    @Test("seek, advance, remove the current item, pause early then play: ≤ 20 ms of silence (median of 5), positions within a period of the recording, events when heard")
    func jumps() throws {
        try PulseNullSink.exclusive { sink in
            let files = try (0..<3).map { try Fixtures.noise("jump-noise-\($0)", seconds: 12) }
            let refs = try files.map { try ReferenceDecoder.decodeS16($0) }
            let queue = (0..<17).map { PlayerItem(path: files[$0 % 3].path) }
            let fileOf = Dictionary(uniqueKeysWithValues: queue.enumerated().map { (ObjectIdentifier($0.element), $0.offset % 3) })
            let player = makePlayer(queue, device: sink.alsaDevice)
            let log = PlayerLog(player)
            let completions = Lock<[Double]>([])
            func now() -> Double { Date().timeIntervalSince(log.start) }
            // Time observers, as an app would have them: every 0.25 s, and at 0.45 s into an item
            // (crossed after every jump to an item's start). What they report is checked against
            // the recording like any other position.
            let observerQueue = DispatchQueue(label: "jump-observers")
            let periodic = ObserverCalls(), boundary = ObserverCalls()
            let start = log.start
            let periodicToken = player.addPeriodicTimeObserver(forInterval: 0.25, queue: observerQueue) { t in
                periodic.append(wall: Date().timeIntervalSince(start), item: player.currentItem, time: t)
            }
            let boundaryToken = player.addBoundaryTimeObserver(forTimes: [0.45], queue: observerQueue) {
                boundary.append(wall: Date().timeIntervalSince(start), item: player.currentItem, time: 0.45)
            }
            var samples: [[PositionSample]] = [[]]  // one run of samples per stretch between jumps
            func sample(for seconds: Double) {
                let end = now() + seconds
                while now() < end {
                    let item = player.currentItem
                    let w = now()
                    let t = player.currentTime()
                    if let item, item === player.currentItem, let f = fileOf[ObjectIdentifier(item)] {
                        samples[samples.count - 1].append(PositionSample(wall: w, file: f, time: t))
                    }
                    usleep(15_000)
                }
            }
            func file(_ item: PlayerItem?) -> Int { item.flatMap { fileOf[ObjectIdentifier($0)] } ?? -1 }
            var jumps: [JumpRecord] = []
            var pauses: [Double] = []
            var streams: [[String]] = []
            func sinkInputs() -> [String] { BacklineTestSupport.sinkInputs(ofProcess: getpid(), environment: sink.environment) }
            let (_, rec) = try sink.record { () -> Void in
                player.play()
                #expect(log.wait(timeout: 5) { if case .timeControlStatusChanged(.playing, _) = $0 { true } else { false } } != nil)
                sample(for: 2.0)
                streams.append(sinkInputs())
                for _ in 0..<5 {
                    // Seek 3 s ahead within the item, others queued behind it.
                    let target = (player.currentTime() + 3).rounded()
                    samples.append([])
                    jumps.append(JumpRecord(kind: "seek", wall: now(), file: file(player.currentItem), time: target,
                                            events: ["completion"], optionalEvents: [".playing"]))
                    player.seek(to: target) { ok in
                        let w = Date().timeIntervalSince(log.start)
                        if ok { completions.withLock { $0.append(w) } }
                    }
                    sample(for: 0.6)
                    // Advance, then remove the current item: the next one from its start.
                    for kind in ["advance", "remove"] {
                        let next = player.items()[1]
                        samples.append([])
                        jumps.append(JumpRecord(kind: kind, wall: now(), file: file(next), time: 0, optionalEvents: [".playing"]))
                        if kind == "advance" { player.advanceToNextItem() } else { player.remove(player.currentItem!) }
                        sample(for: 0.6)
                    }
                    // Advance, pause 0.1 s into the new item, then play: it goes on from there.
                    let next = player.items()[1]
                    samples.append([])
                    jumps.append(JumpRecord(kind: "advance", wall: now(), file: file(next), time: 0, optionalEvents: [".playing"]))
                    player.advanceToNextItem()
                    sample(for: 0.1)
                    pauses.append(now())
                    player.pause()
                    Thread.sleep(forTimeInterval: 0.3)
                    let paused = player.currentTime()
                    samples.append([])
                    jumps.append(JumpRecord(kind: "early pause, play", wall: now(), file: file(player.currentItem), time: paused,
                                            optionalEvents: [".playing"]))
                    player.play()
                    sample(for: 0.6)
                }
                streams.append(sinkInputs())
            }
            player.removeTimeObserver(periodicToken)
            player.removeTimeObserver(boundaryToken)
            player.removeAllItems()
            let stalls = log.all.filter { if case .playbackStalled = $0 { true } else { false } }
            #expect(stalls.isEmpty, "a jump is not an underrun: \(stalls.count) stalls reported")
            // One sound-server stream throughout: every jump flushed it in place.
            #expect(streams.count == 2 && streams[0] == streams[1] && !streams[0].isEmpty,
                    "the player's sink inputs before and after the jumps: \(streams)")

            let playing = log.timed.filter { if case .timeControlStatusChanged(.playing, _) = $0.event { true } else { false } }
            let events = playing.map { (name: ".playing", wall: $0.time) } + completions.withLock { $0 }.map { (name: "completion", wall: $0) }
            // The observers' reports are positions too (the periodic one's own time, the
            // boundary's 0.45 s), held to the same bound as `currentTime()`; the boundary is
            // never early (a report ahead of the listener is positive).
            // (Not the calls reporting a pause: what follows that moment in the recording is
            // silence, then the resume, which the jump check covers.)
            // (Nor those after the last sample: the recording stops soon after it, while the
            // observers still run until removed.)
            let recorded = samples.last?.last?.wall ?? 0
            let ticks = periodic.all.filter { t in t.wall <= recorded && !pauses.contains { t.wall >= $0 && t.wall < $0 + 0.1 } }.compactMap { t in
                t.item.flatMap { fileOf[$0] }.map { PositionSample(wall: t.wall, file: $0, time: t.time) }
            }
            let crossings = boundary.all.filter { $0.wall <= recorded }.compactMap { b in
                b.item.flatMap { fileOf[$0] }.map { PositionSample(wall: b.wall, file: $0, time: b.time) }
            }
            try Self.check(recording: rec, references: refs, jumps: jumps, samples: samples, events: events,
                           ticks: ticks, crossings: crossings)
        }
    }

    /// The recording against the jumps, the positions and the time observers' calls.
    static func check(recording: [Int16], references: [[Int16]], jumps: [JumpRecord], samples: [[PositionSample]],
                      events: [(name: String, wall: Double)], ticks: [PositionSample], crossings: [PositionSample]) throws {
        try checkJumps(recording: recording, rate: PulseNullSink.rate, references: references, jumps: jumps,
                                   samples: samples, events: events, period: Self.period,
                                   observers: [("periodic observer", ticks, -Self.period...Self.period),
                                               ("boundary observer at 0.45 s", crossings, -Self.period...0.006)])
        // A stretch after a jump that passes 0.45 s of its item: one boundary call, never
        // skipped, never twice.
        for (n, j) in jumps.enumerated() {
            let run = samples[n + 1]
            guard let first = run.first, let last = run.last, first.time < 0.4, last.time > 0.5 else { continue }
            let end = n + 1 < jumps.count ? jumps[n + 1].wall : .infinity
            let calls = crossings.filter { $0.wall >= j.wall && $0.wall < end }
            #expect(calls.count == 1, "\(j.kind) at \(j.wall): \(calls.count) boundary calls (0.45 s crossed once)")
        }
        // The periodic observer: once per multiple of 0.25 s within each stretch.
        for (n, j) in jumps.enumerated() {
            let end = n + 1 < jumps.count ? jumps[n + 1].wall : .infinity
            // (Calls at a jump, a pause or a resume report that moment, any time; the
            // regular ones report a multiple.)
            let times = ticks.filter { $0.wall >= j.wall && $0.wall < end }.map(\.time)
            let multiples = times.filter { abs($0 / 0.25 - ($0 / 0.25).rounded()) < 0.01 }.map { Int(($0 / 0.25).rounded()) }
            #expect(Set(multiples).count == multiples.count, "\(j.kind) at \(j.wall): a multiple fired twice: \(times)")
        }
    }
}
