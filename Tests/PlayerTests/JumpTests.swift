import AudioEngine
import BacklineTestSupport
import Foundation
import Player
import Synchronization
import Testing

/// Jumps through `QueuePlayer` on the PulseAudio null sink (`norewinds=1`), checked against the
/// recording of its monitor: how long the listener hears nothing, whether the reported position
/// is what sounds at every sampled moment, and whether the jump's events come when it is heard.
@Suite("Jumps are heard at once and reported as heard (QueuePlayer, PulseAudio null sink)", .serialized, Harness.audioTools)
struct JumpTests {
    /// Output period of the player: 200 ms buffer / 4.
    static let period = 0.05

    struct Sample {
        var wall: Double
        var file: Int
        var time: Double
    }

    struct Jump {
        var kind: String
        var wall: Double
        /// The file and item time that should be heard next.
        var file: Int
        var time: Double
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
            let completions = Mutex<[Double]>([])
            func now() -> Double { Date().timeIntervalSince(log.start) }
            var samples: [[Sample]] = [[]]  // one run of samples per stretch between jumps
            func sample(for seconds: Double) {
                let end = now() + seconds
                while now() < end {
                    let item = player.currentItem
                    let w = now()
                    let t = player.currentTime()
                    if let item, item === player.currentItem, let f = fileOf[ObjectIdentifier(item)] {
                        samples[samples.count - 1].append(Sample(wall: w, file: f, time: t))
                    }
                    usleep(15_000)
                }
            }
            func file(_ item: PlayerItem?) -> Int { item.flatMap { fileOf[ObjectIdentifier($0)] } ?? -1 }
            var jumps: [Jump] = []
            var streams: [[String]] = []
            /// This process's sink inputs on the server.
            func sinkInputs() -> [String] {
                let text = (try? runProcess("pactl", ["list", "sink-inputs"], environment: sink.environment))?.stdoutText ?? ""
                return text.components(separatedBy: "Sink Input #").dropFirst().filter {
                    $0.contains("application.process.id = \"\(getpid())\"")
                }.compactMap { $0.split(separator: "\n").first.map(String.init) }
            }
            let (_, rec) = try sink.record { () -> Void in
                player.play()
                #expect(log.wait(timeout: 5) { if case .timeControlStatusChanged(.playing, _) = $0 { true } else { false } } != nil)
                sample(for: 2.0)
                streams.append(sinkInputs())
                for _ in 0..<5 {
                    // Seek 3 s ahead within the item, others queued behind it.
                    let target = (player.currentTime() + 3).rounded()
                    samples.append([])
                    jumps.append(Jump(kind: "seek", wall: now(), file: file(player.currentItem), time: target))
                    player.seek(to: target) { ok in
                        let w = Date().timeIntervalSince(log.start)
                        if ok { completions.withLock { $0.append(w) } }
                    }
                    sample(for: 0.6)
                    // Advance, then remove the current item: the next one from its start.
                    for kind in ["advance", "remove"] {
                        let next = player.items()[1]
                        samples.append([])
                        jumps.append(Jump(kind: kind, wall: now(), file: file(next), time: 0))
                        if kind == "advance" { player.advanceToNextItem() } else { player.remove(player.currentItem!) }
                        sample(for: 0.6)
                    }
                    // Advance, pause 0.1 s into the new item, then play: it goes on from there.
                    let next = player.items()[1]
                    samples.append([])
                    jumps.append(Jump(kind: "advance", wall: now(), file: file(next), time: 0))
                    player.advanceToNextItem()
                    sample(for: 0.1)
                    player.pause()
                    Thread.sleep(forTimeInterval: 0.3)
                    let paused = player.currentTime()
                    samples.append([])
                    jumps.append(Jump(kind: "early pause, play", wall: now(), file: file(player.currentItem), time: paused))
                    player.play()
                    sample(for: 0.6)
                }
                streams.append(sinkInputs())
            }
            player.removeAllItems()
            let stalls = log.all.filter { if case .playbackStalled = $0 { true } else { false } }
            #expect(stalls.isEmpty, "a jump is not an underrun: \(stalls.count) stalls reported")
            // One sound-server stream throughout: every jump flushed it in place.
            #expect(streams.count == 2 && streams[0] == streams[1] && !streams[0].isEmpty,
                    "the player's sink inputs before and after the jumps: \(streams)")

            var heard = HeardTimeline(recording: rec, rate: PulseNullSink.rate)
            let first = try #require(heard.firstSound(), "nothing recorded")
            // The sink's clock against ours, from the straight path before the first jump.
            heard.fitAnchor(firstSound: first, samples: samples[0].filter { $0.wall > 0.3 }.map { ($0.wall, $0.time) })

            let playing = log.timed.filter { if case .timeControlStatusChanged(.playing, _) = $0.event { true } else { false } }.map(\.time)
            let done = completions.withLock { $0 }
            var silences: [String: [Double]] = [:]
            var worst = 0.0
            for (n, j) in jumps.enumerated() {
                // Wall↔recording near this jump, from the stretch just before it (samples[n]).
                let before = samples[n].suffix(8).map { (wall: $0.wall, file: $0.file, time: $0.time) }
                heard.refitOffset(references: refs, samples: before)
                // Where the jump's audio begins in the recording (a resume continues up to a sink
                // render after the frame reported at the pause: look a little later, step back).
                let lead = j.kind == "early pause, play" ? 0.05 : 0
                let begin = heard.locate(refs[j.file], frame: Int((j.time + lead) * Double(heard.rate)),
                                         near: heard.frame(atWall: j.wall + 0.3), radius: Int(0.35 * Double(heard.rate)))
                    .map { $0.frame - Int(lead * Double(heard.rate)) }
                #expect(begin != nil, "\(j.kind) at \(j.wall): \(j.time) s of file \(j.file) never heard")
                guard let begin else { continue }
                let heardAt = heard.wall(atFrame: begin)
                // The silence the listener hears: the silent run just before the new audio; after
                // a pause, from the play command to the sound.
                silences[j.kind, default: []].append(lead > 0 ? max(0, heardAt - j.wall)
                    : heard.longestSilence(from: begin - Int(0.3 * Double(heard.rate)), to: begin))
                // The jump's events: a seek's completion, `.playing`, when the target is heard.
                let next = n + 1 < jumps.count ? jumps[n + 1].wall : .infinity
                var reports: [(String, Double)] = []
                if j.kind == "seek" {
                    let c = done.first { $0 >= j.wall && $0 < next }
                    #expect(c != nil, "seek at \(j.wall): no completion")
                    if let c { reports.append(("completion", c)) }
                }
                if let p = playing.first(where: { $0 >= j.wall && $0 < next }) { reports.append((".playing", p)) }
                for (what, at) in reports {
                    // (The wall↔recording map is good to a few milliseconds on a loaded machine.)
                    #expect(at >= heardAt - 0.006 && at <= heardAt + Self.period + 0.01,
                            "\(j.kind) at \(String(format: "%.3f", j.wall)): \(what) at \(String(format: "%.3f", at)), target heard at \(String(format: "%.3f", heardAt))")
                }
                // Positions after the jump: monotonic, and within one period of the recording.
                let run = samples[n + 1]
                for (a, b) in zip(run, run.dropFirst()) where a.file == b.file {
                    #expect(b.time >= a.time, "after \(j.kind): position went back \(a.time) → \(b.time) at \(b.wall)")
                }
                for s in run {
                    let err = heard.positionError(reference: refs[s.file], time: s.time, wall: s.wall)
                    #expect(err != nil, "after \(j.kind): \(s.time) s of file \(s.file) not heard near \(s.wall)")
                    if let err {
                        worst = max(worst, abs(err))
                        #expect(abs(err) <= Self.period, "after \(j.kind) at \(String(format: "%.3f", s.wall)): reported \(s.time), \(String(format: "%+.1f", err * 1000)) ms from what was heard")
                    }
                }
            }
            print("jump silences (ms): \(silences.mapValues { $0.map { Int(($0 * 1000).rounded()) } }); worst position error \(Int((worst * 1000).rounded())) ms")
            for (kind, values) in silences {
                #expect(median(values) <= 0.02, "\(kind): median silence \(median(values)) s (\(values))")
            }
        }
    }
}
