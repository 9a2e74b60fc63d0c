import AudioEngine
import BacklineTestSupport
import Foundation
import Player
import Synchronization
import Testing
import Locking

/// Samples of a time observer: (seconds since the test's start, item time passed in).
final class TimeSamples: Sendable {
    let samples = Lock<[(wall: Double, time: Double)]>([])
    let start: Date
    init(start: Date) { self.start = start }
    func add(_ t: Double) {
        let w = Date().timeIntervalSince(start)
        samples.withLock { $0.append((w, t)) }
    }
    var all: [(wall: Double, time: Double)] { samples.withLock { $0 } }
}

@Suite("QueuePlayer in real time (PulseAudio null sink)", .serialized, Harness.audioTools)
struct RealtimePlayerTests {
    /// Output period of the players below: 200 ms buffer / 4.
    static let period = 0.05

    @Test("paused as soon as it plays, then resumed (the library path, native PulseAudio): the position stands still while paused and goes on from there; observers follow the clock")
    func pauseEarlyThenPlay() throws {
        try PulseNullSink.exclusive { sink in
            let file = try PlayerFixtures.tone("rt-early-pause", seconds: 3, frequency: 440)
            let player = makePlayer([PlayerItem(path: file.path)], device: sink.alsaDevice)
            let log = PlayerLog(player)
            let queue = DispatchQueue(label: "test.early-pause")
            let periodic = TimeSamples(start: log.start), boundary = TimeSamples(start: log.start)
            let p = player.addPeriodicTimeObserver(forInterval: 0.1, queue: queue) { periodic.add($0) }
            let b = player.addBoundaryTimeObserver(forTimes: [0.45], queue: queue) { [player] in boundary.add(player.currentTime()) }
            player.play()
            #expect(log.wait(timeout: 5) { if case .timeControlStatusChanged(.playing, _) = $0 { true } else { false } } != nil)
            player.pause()
            let paused = player.currentTime()
            Thread.sleep(forTimeInterval: 0.5)
            let still = player.currentTime()
            #expect(abs(still - paused) < 0.005, "paused at \(paused), then \(still)")
            let resumed = Date().timeIntervalSince(log.start)
            player.play()
            // Every 20 ms for 0.5 s: the position follows the clock from the resume on.
            for _ in 0..<25 {
                Thread.sleep(forTimeInterval: 0.02)
                let t = player.currentTime(), since = Date().timeIntervalSince(log.start) - resumed
                #expect(abs(t - (still + since)) < Self.period + 0.03, "\(t) at \(since) s after resuming at \(still)")
            }
            let after = player.currentTime()
            #expect(abs(after - (still + 0.5)) < 0.06, "0.5 s after resuming at \(still): \(after)")
            Thread.sleep(forTimeInterval: 0.4)
            queue.sync {}
            player.removeTimeObserver(p)
            player.removeTimeObserver(b)
            // After the resume, each periodic fire's time is where the clock says (within a
            // period and the delivery's latency), from the resume on.
            for s in periodic.all where s.wall > resumed + 0.05 {
                let expected = still + (s.wall - resumed)
                #expect(abs(s.time - expected) < Self.period + 0.06, "fired at \(s.time) at \(s.wall - resumed) s after the resume (expected \(expected))")
            }
            let fired = boundary.all
            #expect(fired.count == 1, "the 0.45 s boundary: \(fired)")
            if let f = fired.first {
                #expect(abs(f.wall - (resumed + 0.45 - still)) < Self.period + 0.06, "the boundary fired \(f.wall - resumed) s after the resume")
            }
            player.removeAllItems()
        }
    }

    @Test("periodic observer fires at multiples of its interval, on time; boundaries fire once; nothing after removal")
    func timeObservers() throws {
        try PulseNullSink.exclusive { sink in
            let file = try PlayerFixtures.tone("rt-obs", seconds: 3, frequency: 440)
            let item = PlayerItem(path: file.path)
            let player = makePlayer([item], device: sink.alsaDevice)
            let log = PlayerLog(player)
            let queue = DispatchQueue(label: "test.observers")
            let periodic = TimeSamples(start: log.start), boundary = TimeSamples(start: log.start)
            let late = TimeSamples(start: log.start)
            let p = player.addPeriodicTimeObserver(forInterval: 0.5, queue: queue) { periodic.add($0) }
            let b = player.addBoundaryTimeObserver(forTimes: [1.0, 2.25], queue: queue) { [player] in
                boundary.add(player.currentTime())
            }
            let removed = player.addPeriodicTimeObserver(forInterval: 0.1, queue: queue) { late.add($0) }
            player.play()
            let playing = try #require(log.wait(timeout: 5) {
                if case .timeControlStatusChanged(.playing, _) = $0 { true } else { false }
            })
            Thread.sleep(forTimeInterval: 1.2)
            player.removeTimeObserver(removed)
            let removedAt = Date().timeIntervalSince(log.start)
            #expect(log.wait(timeout: 6, isCurrentNil) != nil)
            queue.sync {}
            player.removeTimeObserver(p)
            player.removeTimeObserver(b)

            // Regular fires: item time within one period of a multiple of 0.5 s, and the wall
            // clock agreeing with the item time (playing began at `playing`).
            let regular = periodic.all.filter { $0.time > 0.25 && $0.time < 2.9 }
            let times = regular.map(\.time)
            #expect(regular.count >= 5, "fires: \(times)")
            for s in regular {
                let k = (s.time / 0.5).rounded()
                #expect(abs(s.time - k * 0.5) <= Self.period, "fired at item time \(s.time)")
                #expect(abs((s.wall - playing) - k * 0.5) <= 2 * Self.period + 0.03,
                        "fired \(s.wall - playing) s after playing began, for \(k * 0.5)")
            }
            let multiples = Set(regular.map { Int(($0.time / 0.5).rounded()) })
            #expect(multiples.isSuperset(of: [1, 2, 3, 4, 5]), "every multiple fired: \(times)")
            let perMultiple = Dictionary(grouping: regular) { Int(($0.time / 0.5).rounded()) }
            #expect(perMultiple.values.allSatisfy { $0.count == 1 }, "each multiple fired once: \(times)")
            let boundaryTimes = boundary.all.map(\.time)
            #expect(boundaryTimes.count == 2, "boundary fires: \(boundaryTimes)")
            if boundaryTimes.count == 2 {
                #expect(abs(boundaryTimes[0] - 1.0) <= Self.period && abs(boundaryTimes[1] - 2.25) <= Self.period)
            }
            #expect(!late.all.isEmpty)
            #expect(late.all.allSatisfy { $0.wall <= removedAt }, "no call after removeTimeObserver returned")
        }
    }

    @Test("item changes are announced when the boundary is heard (within one period of the recording)")
    func itemChangeMatchesRecording() throws {
        try PulseNullSink.exclusive { sink in
            // Quiet first item, loud second one: the boundary is where the level jumps.
            let a = try PlayerFixtures.tone("rt-quiet", seconds: 1.5, frequency: 440, gain: -30)
            let b = try PlayerFixtures.tone("rt-loud", seconds: 1.0, frequency: 440, gain: -3)
            let ia = PlayerItem(path: a.path), ib = PlayerItem(path: b.path)
            let player = makePlayer([ia, ib], device: sink.alsaDevice)
            let log = PlayerLog(player)
            let (_, rec) = try sink.record { () -> Void in
                player.play()
                #expect(log.wait(timeout: 10, isCurrentNil) != nil)
            }
            let started = try #require(log.wait(timeout: 0) {
                if case .timeControlStatusChanged(.playing, _) = $0 { true } else { false }
            })
            let changed = try #require(log.wait(timeout: 0, isChange(to: ib)))
            // In the recording: first sound (item A starts) and the first loud sample (item B).
            let first = try #require(PCM.firstNonSilent(rec, threshold: 64))
            let loud = try #require(rec.indices.first { $0 > first && abs(Int(rec[$0])) > 8000 })
            let heardGap = Double(loud / 2 - first / 2) / Double(PulseNullSink.rate)
            let eventGap = changed - started
            #expect(abs(heardGap - 1.5) < 0.02, "item A lasted \(heardGap) s in the recording")
            #expect(abs(eventGap - heardGap) <= Self.period + 0.02,
                    "change announced \(eventGap) s after the start; heard after \(heardGap) s; events \(log.timed.map { ($0.time, "\($0.event)".prefix(60)) })")
        }
    }

    @Test("insert after the current item while it plays: heard next, without a gap or a lost sample")
    func insertWhilePlaying() throws {
        try PulseNullSink.exclusive { sink in
            let a = try Fixtures.mp3(from: Fixtures.wav("rt-ins-a", seconds: 1.5, synth: ["sine", "200-2000"], effects: ["gain", "-8"]), name: "rt-ins-a")
            let b = try PlayerFixtures.tone("rt-ins-b", seconds: 0.8, frequency: 660)
            let c = try Fixtures.mp3(from: Fixtures.wav("rt-ins-c", seconds: 0.9, synth: ["sine", "2500-300"], effects: ["gain", "-8"]), name: "rt-ins-c")
            let ia = PlayerItem(path: a.path), ib = PlayerItem(path: b.path), ic = PlayerItem(path: c.path)
            let player = makePlayer([ia, ib], device: sink.alsaDevice)
            let log = PlayerLog(player)
            let (_, rec) = try sink.record { () -> Void in
                player.play()
                Thread.sleep(forTimeInterval: 0.7)
                #expect(player.insert(ic, after: ia))
                #expect(log.wait(timeout: 10, isCurrentNil) != nil)
            }
            #expect(log.trace == ["end rt-ins-a", "current rt-ins-c", "end rt-ins-c", "current rt-ins-b", "end rt-ins-b", "current nil"])
            let ref = try ReferenceDecoder.decodeS16(a) + ReferenceDecoder.decodeS16(c) + ReferenceDecoder.decodeS16(b)
            try expectSameAudio(removingSilence(rec, minRun: 400), ref)
            // No gap either: between the first and the last sound there is no silent run longer
            // than a zero crossing (a re-plan would leave one while the device refills).
            let first = try #require(PCM.firstNonSilent(rec, threshold: 64))
            let last = try #require(rec.lastIndex { abs(Int($0)) > 64 })
            var run = 0, longest = 0
            for x in rec[first...last] {
                run = abs(Int(x)) <= 2 ? run + 1 : 0
                longest = max(longest, run)
            }
            #expect(longest < 64, "a silent run of \(longest) samples inside the recording")
        }
    }

    @Test("actionAtItemEnd .pause in real time: the first item is heard to its end, then silence; removeAllItems while playing stops at once")
    func pauseAtEndAndRemoveAll() throws {
        try PulseNullSink.exclusive { sink in
            let a = try PlayerFixtures.tone("rt-end-a", seconds: 0.8, frequency: 440)
            let b = try PlayerFixtures.tone("rt-end-b", seconds: 3, frequency: 660)
            let ia = PlayerItem(path: a.path), ib = PlayerItem(path: b.path)
            let player = makePlayer([ia, ib], device: sink.alsaDevice)
            player.actionAtItemEnd = .pause
            let log = PlayerLog(player)
            let (_, rec) = try sink.record { () -> Void in
                player.play()
                #expect(log.wait(timeout: 5) { if case .rateChanged(0, .reachedEndOfItem) = $0 { true } else { false } } != nil)
                Thread.sleep(forTimeInterval: 0.4)
                #expect(player.currentItem === ia && player.timeControlStatus == .paused)
                player.actionAtItemEnd = .advance  // applies at once: the player advances to B
                #expect(player.currentItem === ib && player.rate == 0)
                player.play()
                #expect(log.wait(count: 2, timeout: 5) { if case .timeControlStatusChanged(.playing, _) = $0 { true } else { false } } != nil)
                Thread.sleep(forTimeInterval: 0.5)
                player.removeAllItems()
                Thread.sleep(forTimeInterval: 0.5)
            }
            #expect(player.timeControlStatus == .paused && player.rate == 0, "removeAllItems stops playback")
            // Sound: all of A (0.8 s), a pause, then B for about 0.5 s, then nothing.
            let sound = rec.indices.filter { abs(Int(rec[$0])) > 64 }
            let heard = Double(sound.count / 2) / Double(PulseNullSink.rate)
            #expect(heard > 1.2 && heard < 1.45, "heard \(heard) s; \(log.timed.map { ($0.time, "\($0.event)".prefix(70)) })")
            let trace = log.trace
            #expect(trace == ["end rt-end-a", "current rt-end-b", "current nil"], "\(trace)")
            let aSound = try ReferenceDecoder.decodeS16(a)
            try expectSameAudio(Array(removingSilence(rec, minRun: 400).prefix(aSound.count)), aSound)
        }
    }

    @Test("seek: a newer seek completes the older with false; landing reports true, time jumped, and the position")
    func seeks() throws {
        try PulseNullSink.exclusive { sink in
            let file = try PlayerFixtures.tone("rt-seek", seconds: 4, frequency: 440)
            let item = PlayerItem(path: file.path)
            let player = makePlayer([item], device: sink.alsaDevice)
            let log = PlayerLog(player)
            let results = Lock<[String: Bool]>([:])
            // Paused: completes at once.
            player.seek(to: 1.0) { ok in results.withLock { $0["paused"] = ok } }
            #expect(eventually(timeout: 2) { results.withLock { $0["paused"] } == true })
            #expect(abs(player.currentTime() - 1.0) < 0.001)
            player.play()
            let playing = try #require(log.wait(timeout: 5) {
                if case .timeControlStatusChanged(.playing, _) = $0 { true } else { false }
            })
            Thread.sleep(forTimeInterval: 0.3)
            let t = player.currentTime()
            let expected = 1.0 + Date().timeIntervalSince(log.start) - playing
            #expect(abs(t - expected) <= 2 * Self.period, "playing from 1.0 since \(playing) s: \(t), expected \(expected)")
            player.seek(to: 0.5) { ok in results.withLock { $0["first"] = ok } }
            player.seek(to: 3.0) { ok in results.withLock { $0["second"] = ok } }
            #expect(eventually(timeout: 5) { results.withLock { $0["second"] } != nil })
            #expect(results.withLock { $0["first"] } == false)
            #expect(results.withLock { $0["second"] } == true)
            let now = player.currentTime()
            #expect(now >= 3.0 && now < 3.0 + 2 * Self.period, "after the seek: \(now)")
            let jumps = log.all.compactMap { e -> Double? in if case .timeJumped(_, let t) = e { t } else { nil } }
            #expect(jumps.count == 2 && abs(jumps[0] - 1.0) < 0.001 && abs(jumps[1] - 3.0) < Self.period, "\(jumps)")
            player.removeAllItems()
            player.seek(to: 1) { ok in results.withLock { $0["none"] = ok } }
            #expect(eventually(timeout: 2) { results.withLock { $0["none"] } != nil })
            #expect(results.withLock { $0["none"] } == false, "no current item: the seek fails")
        }
    }

    @Test("pause and play: status and rate events in order, the audio stops and resumes, nothing lost")
    func pauseResume() throws {
        try PulseNullSink.exclusive { sink in
            let file = try PlayerFixtures.tone("rt-pause", seconds: 2, frequency: 440)
            let player = makePlayer([PlayerItem(path: file.path)], device: sink.alsaDevice)
            let log = PlayerLog(player)
            let (_, rec) = try sink.record { () -> Void in
                player.play()
                Thread.sleep(forTimeInterval: 0.8)
                player.pause()
                Thread.sleep(forTimeInterval: 0.02)  // the output thread acts on it at once
                let t = player.currentTime()
                Thread.sleep(forTimeInterval: 0.6)
                #expect(abs(player.currentTime() - t) < 0.001, "time stands still while paused")
                player.play()
                #expect(log.wait(timeout: 6, isCurrentNil) != nil)
            }
            let statuses = log.all.compactMap { e -> String? in
                switch e {
                case .timeControlStatusChanged(let s, let r): "\(s)\(r.map { "(\($0))" } ?? "")"
                case .rateChanged(let r, let why): "rate \(r) \(why)"
                default: nil
                }
            }
            #expect(Array(statuses.prefix(7)) == [
                "rate 1.0 setRateCalled", "waitingToPlayAtSpecifiedRate(evaluatingBufferingRate)", "playing",
                "rate 0.0 setRateCalled", "paused", "rate 1.0 setRateCalled", "playing",
            ])
            #expect(statuses.last == "waitingToPlayAtSpecifiedRate(noItemToPlay)")
            // The recording holds a gap of ≥ 0.5 s and, without it, 2 s of tone.
            let sound = rec.indices.filter { abs(Int(rec[$0])) > 64 }
            let heard = Double(sound.count / 2) / Double(PulseNullSink.rate)
            #expect(abs(heard - 2.0) < 0.1, "heard \(heard) s of a 2 s item")
        }
    }
}
