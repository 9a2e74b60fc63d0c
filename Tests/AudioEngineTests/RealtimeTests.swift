import AudioEngine
import BacklineTestSupport
import Foundation
import MediaCore
import Testing

@Suite("Engine in real time (PulseAudio null sink)", .serialized, Harness.audioTools)
struct RealtimeTests {
    static func sweep(_ name: String, seconds: Double) throws -> URL {
        let wav = try Fixtures.wav(name, seconds: seconds, synth: ["sine", "200-3000", "sine", "300-2500"],
                                   effects: ["gain", "-8"])
        return try Fixtures.mp3(from: wav, name: name)
    }

    @Test("a 3 s item takes 3 s (±10 %), and the recording matches the decode")
    func pacingAndContent() throws {
        try PulseNullSink.exclusive { sink in
            let file = try Self.sweep("rt-sweep-3s", seconds: 3)
            let engine = makeEngine(device: sink.alsaDevice)
            defer { engine.shutdown() }
            let log = EventLog(engine)
            let (elapsed, rec) = try sink.record { () -> Double in
                let t0 = Date()
                engine.enqueue([file.path])
                #expect(log.waitForEnd(timeout: 20))
                return Date().timeIntervalSince(t0)
            }
            #expect(elapsed > 2.7 && elapsed < 3.3, "3 s of audio took \(elapsed) s")
            let ref = try ReferenceDecoder.decodeS16(file)
            let got = removingSilence(rec, minRun: 400)
            try expectSameAudio(got, ref)
        }
    }

    @Test("pause 1 s and resume: with the silence removed, the recording is the continuous decode",
          arguments: [true, false])
    func pauseLosesNothing(hardwarePause: Bool) throws {
        try PulseNullSink.exclusive { sink in
            let file = try Self.sweep("rt-sweep-pause", seconds: 3)
            var settings = OutputSettings(device: sink.alsaDevice, bufferMillis: 200, realtime: false)
            settings.hardwarePause = hardwarePause  // false: drop the buffer, re-seek on resume
            let engine = PlaybackEngine(configuration: EngineConfiguration(output: settings))
            defer { engine.shutdown() }
            let log = EventLog(engine)
            let (_, rec) = try sink.record {
                engine.enqueue([file.path])
                Thread.sleep(forTimeInterval: 1.3)
                engine.pause()
                Thread.sleep(forTimeInterval: 1.0)
                #expect(engine.isPaused)
                engine.resume()
                #expect(log.waitForEnd(timeout: 20))
            }
            // The recording really went silent for about a second in the middle.
            let ref = try ReferenceDecoder.decodeS16(file)
            #expect(rec.count > ref.count + 2 * 44100 * 8 / 10, "recording shows the pause (\(rec.count) samples)")
            let got = removingSilence(rec, minRun: 400)
            // The same alignment before and after the pause: nothing lost, nothing repeated.
            let before = PCM.locate(ref, at: 44100, in: got, near: 44100, radius: 4410)
            let after = PCM.locate(ref, at: 5 * 44100, in: got, near: 5 * 44100, radius: 4410)
            #expect(before.correlation > 0.999 && after.correlation > 0.999)
            let shift = (after.index - 5 * 44100) - (before.index - 44100)
            if hardwarePause {
                #expect(shift == 0, "shift before the pause \(before.index - 44100), after \(after.index - 5 * 44100) samples")
                try expectSameAudio(got, ref)
            } else {
                // Drop + re-seek resumes at the frame the device reported as heard. The harness's
                // sink runs without rewinds, so what it had already rendered when the buffer was
                // dropped is heard once more: measured 4 ms idle, 7 ms under the test suite's load.
                // Never a loss; at most one 23 ms block (1024 frames) repeated.
                #expect(shift >= 0 && shift <= 2048, "resumed \(shift / 2) frames early (negative: frames lost)")
            }
        }
    }

    @Test("reported position advances with the device clock, within one period")
    func positionTracksDevice() throws {
        try PulseNullSink.exclusive { sink in
            let file = try Self.sweep("rt-sweep-pos", seconds: 3)
            let engine = makeEngine(device: sink.alsaDevice)
            defer { engine.shutdown() }
            let log = EventLog(engine)
            engine.enqueue([file.path])
            // Wait until sound is flowing, then compare position steps with wall-clock steps.
            var samples: [(wall: Double, pos: Double)] = []
            let t0 = Date()
            while Date().timeIntervalSince(t0) < 2.6 {
                if let p = engine.position, p.seconds > 0.3 {
                    samples.append((Date().timeIntervalSince(t0), p.seconds))
                }
                usleep(20_000)
            }
            #expect(log.waitForEnd(timeout: 10))
            let first = try #require(samples.first), last = try #require(samples.last)
            #expect(last.wall - first.wall > 1.5)
            let period = Double(engine.configuration.output.periodMillis) / 1000
            for s in samples {
                let drift = (s.pos - first.pos) - (s.wall - first.wall)
                #expect(abs(drift) <= period, "position drifted \(drift) s from the clock at \(s.wall) s")
            }
            #expect(engine.underrunCount == 0)
        }
    }

    @Test("the position matches the recording: paused mid-item, the reported time equals the audio heard so far (±1 period)")
    func positionMatchesRecording() throws {
        try PulseNullSink.exclusive { sink in
            let file = try Self.sweep("rt-sweep-heard", seconds: 3)
            let engine = makeEngine(device: sink.alsaDevice)
            defer { engine.shutdown() }
            let log = EventLog(engine)
            var reported: [Double] = []
            let (_, rec) = try sink.record {
                engine.enqueue([file.path])
                for pauseAt in [0.9, 1.9] {
                    while (engine.position?.seconds ?? 0) < pauseAt { usleep(2_000) }
                    engine.pause()
                    Thread.sleep(forTimeInterval: 0.4)
                    reported.append(engine.position?.seconds ?? -1)
                    engine.resume()
                }
                #expect(log.waitForEnd(timeout: 10))
            }
            // In the recording: sound runs separated by the two pauses (silences ≥ 0.2 s).
            var runs: [(start: Int, end: Int)] = []
            var i = 0, quiet = 0, start: Int?
            while i < rec.count {
                if abs(Int(rec[i])) > 2 {
                    if start == nil { start = i }
                    quiet = 0
                } else if let s = start {
                    quiet += 1
                    if quiet > 17_640 { runs.append((s, i - quiet)); start = nil; quiet = 0 }
                }
                i += 1
            }
            if let s = start { runs.append((s, rec.count)) }
            try #require(runs.count == 3, "expected three stretches of sound, got \(runs.count)")
            let period = Double(engine.configuration.output.periodMillis) / 1000
            var heard = 0.0
            for (n, r) in runs.prefix(2).enumerated() {
                heard += Double(r.end - r.start) / 2 / Double(PulseNullSink.rate)
                // The recording may miss up to 20 ms at the very start (a new stream's first
                // buffer, see harness.md): allowed for below.
                #expect(abs(reported[n] - heard) <= period + 0.02,
                        "pause \(n + 1): reported \(reported[n]) s, heard \(heard) s")
            }
        }
    }

    @Test("seek while playing: audio continues from the new position")
    func seekWhilePlaying() throws {
        try PulseNullSink.exclusive { sink in
            let file = try Self.sweep("rt-sweep-seek", seconds: 4)
            let engine = makeEngine(device: sink.alsaDevice)
            defer { engine.shutdown() }
            let log = EventLog(engine)
            let (_, rec) = try sink.record {
                engine.enqueue([file.path])
                Thread.sleep(forTimeInterval: 0.8)
                #expect(engine.seek(to: 3.0))
                Thread.sleep(forTimeInterval: 0.1)
                let p = engine.position
                #expect(p != nil && p!.seconds >= 2.99 && p!.seconds < 3.3, "position after seek \(String(describing: p))")
                #expect(log.waitForEnd(timeout: 10))
            }
            let ref = try ReferenceDecoder.decodeS16(file)
            // The audio after the seek is the decode from 3.0 s on: it ends the recording.
            let got = removingSilence(rec, minRun: 400)
            let seekPoint = 3 * 44100 * 2
            let tail = PCM.locate(ref, at: seekPoint + 4410, in: got, near: got.count - (ref.count - seekPoint), radius: 44100)
            #expect(tail.correlation > 0.999, "the audio after the seek is the decode at 3 s (correlation \(tail.correlation))")
            let n = ref.count - seekPoint - 4410
            #expect(PCM.maxDifference(got[tail.index..<(tail.index + n)], ref[(seekPoint + 4410)...]) <= 2)
            #expect(got.count < Int(2.3 * 44100 * 2), "skipped audio was not played (\(got.count) samples)")
        }
    }
}

extension RealtimeTests {
    @Test("skip to next: the next item is heard at once; stop: silence, no end event, device released")
    func skipAndStop() throws {
        try PulseNullSink.exclusive { sink in
            let a = try Fixtures.tone("rt-skip-a", seconds: 4, frequency: 330)
            let b = try Fixtures.tone("rt-skip-b", seconds: 4, frequency: 880)
            let engine = makeEngine(device: sink.alsaDevice)
            defer { engine.shutdown() }
            let log = EventLog(engine)
            let ids = engine.enqueue([a.path, b.path])
            Thread.sleep(forTimeInterval: 0.6)
            #expect(engine.position?.item == ids[0])
            engine.skipToNext()
            #expect(log.wait(timeout: 2) { $0.startedPath == b.path } != nil)
            Thread.sleep(forTimeInterval: 0.3)
            let p = try #require(engine.position)
            #expect(p.item == ids[1] && p.seconds > 0.1 && p.seconds < 0.6, "\(p)")
            #expect(engine.queuedItems == [ids[1]])
            engine.stop()
            Thread.sleep(forTimeInterval: 0.5)
            #expect(engine.position == nil)
            #expect(engine.queuedItems.isEmpty)
            #expect(!log.all.contains(.endOfInput), "stop is not the end of the queue")
            let inputs = try runProcess("pactl", ["list", "short", "sink-inputs"], environment: sink.environment)
            #expect(inputs.stdoutText.split(separator: "\n").count == 1, "only the keep-alive stream: \(inputs.stdoutText)")
        }
    }
}


extension RealtimeTests {
    @Test("a ReplayGain mode set while an item plays is heard from the next item: the first at its own level, the second 6 dB down (both tagged −6 dB)")
    func replayGainAtTheNextItem() throws {
        try PulseNullSink.exclusive { sink in
            let src = try FormatFixtures.source("rt-rg-src", seconds: 1.5)
            let a = try FormatFixtures.flac("rt-rg-a", from: src, args: ["-T", "REPLAYGAIN_TRACK_GAIN=-6.00 dB"])
            let b = try FormatFixtures.flac("rt-rg-b", from: src, args: ["-T", "REPLAYGAIN_TRACK_GAIN=-6.00 dB"])
            let engine = makeEngine(device: sink.alsaDevice)
            defer { engine.shutdown() }
            let log = EventLog(engine)
            let (_, rec) = try sink.record {
                engine.enqueue([a.path, b.path])
                #expect(log.wait(timeout: 10) { if case .itemStarted = $0 { true } else { false } } != nil)
                Thread.sleep(forTimeInterval: 0.4)
                engine.replayGain = ReplayGainSettings(mode: .track)  // both items were decoded long before
                #expect(log.waitForEnd(timeout: 20))
            }
            let sound = removingSilence(rec, minRun: 400)
            let ref = try FormatReference.sox(src)[(2 * 22050)..<(2 * 44100)]  // (PCM.rms is of full scale 1, as these)
            let full = (ref.reduce(0) { $0 + Double($1) * Double($1) } / Double(ref.count)).squareRoot()
            // The middle half second of each item, as heard.
            let first = PCM.rms(sound[(2 * 22050)..<(2 * 44100)])
            let second = PCM.rms(sound[(2 * (66150 + 22050))..<min(sound.count, 2 * (66150 + 44100))])
            #expect(abs(first / full - 1) < 0.03, "the item playing when the mode was set keeps its level: \(first / full)")
            #expect(abs(second / full - 0.501) < 0.03, "the next one is 6 dB down: \(second / full)")
        }
    }

    /// This process's threads (tid → context switches, voluntary and not) whose names `keep` accepts.
    static func threadSwitches(_ keep: (String) -> Bool) -> [String: Int] {
        var out: [String: Int] = [:]
        for tid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
            let dir = "/proc/self/task/\(tid)/"
            guard let comm = try? String(contentsOfFile: dir + "comm", encoding: .utf8),
                  keep(comm.trimmingCharacters(in: .whitespacesAndNewlines)),
                  let status = try? String(contentsOfFile: dir + "status", encoding: .utf8) else { continue }
            out[tid] = status.split(separator: "\n").filter { $0.contains("ctxt_switches") }
                .compactMap { $0.split(separator: "\t").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
                .reduce(0, +)
        }
        return out
    }

    @Test("paused, or stopped while paused, the engine's threads and its PulseAudio stream's do not wake; the stop releases the device; what is queued next plays")
    func quietWhenPausedOrStopped() throws {
        try PulseNullSink.exclusive { sink in
            let a = try Fixtures.tone("rt-quiet-a", seconds: 4, frequency: 330)
            let b = try Fixtures.tone("rt-quiet-b", seconds: 4, frequency: 880)
            let ours: (String) -> Bool = { $0.hasPrefix("bl-") || $0 == "threaded-ml" }
            let before = Set(Self.threadSwitches(ours).keys)
            let engine = makeEngine(device: sink.alsaDevice)
            defer { engine.shutdown() }
            let log = EventLog(engine)
            engine.enqueue([a.path])
            #expect(log.wait(timeout: 5) { $0.startedPath == a.path } != nil)
            // This engine's decoder, output and monitor, and the stream's mainloop thread (the
            // suite runs alone: no other engine starts meanwhile).
            let mine = Set(Self.threadSwitches(ours).keys).subtracting(before)
            #expect(mine.count == 4, "threads: \(Self.threadSwitches(ours))")
            func wakeUps(over seconds: Double) -> [String: Int] {
                let s0 = Self.threadSwitches(ours).filter { mine.contains($0.key) }
                Thread.sleep(forTimeInterval: seconds)
                return Self.threadSwitches(ours).filter { mine.contains($0.key) }.map { ($0.key, $0.value - (s0[$0.key] ?? 0)) }
                    .reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            engine.pause()
            Thread.sleep(forTimeInterval: 1.2)  // (the monitor watches closely for 1 s after a command)
            let paused = wakeUps(over: 2)
            // What this guards against: the output once woke every 100 ms while paused, the monitor
            // every 100 ms, the decoder every 250 ms and libpulse's timing updates every 1.5 s of a
            // corked stream.
            #expect(paused.values.allSatisfy { $0 <= 1 }, "context switches in 2 s, paused: \(paused)")
            #expect(!sinkInputs(ofProcess: getpid(), environment: sink.environment).isEmpty, "paused: the stream is held")

            engine.stop()
            engine.pause()  // as QueuePlayer.removeAllItems does at rate 0
            Thread.sleep(forTimeInterval: 1.2)
            #expect(sinkInputs(ofProcess: getpid(), environment: sink.environment).isEmpty, "stopped: the device is released")
            let stopped = wakeUps(over: 2)
            #expect(stopped.values.allSatisfy { $0 <= 1 }, "context switches in 2 s, stopped: \(stopped)")

            engine.enqueue([b.path])
            engine.resume()
            #expect(log.wait(timeout: 5) { $0.startedPath == b.path } != nil, "the next item plays")
        }
    }
}

extension RealtimeTests {
    /// The amplitude of the `frequency` component of channel 0 in `frames` frames of a 44.1 kHz
    /// stereo recording from `start` (Goertzel), full scale 1.
    static func toneLevel(_ rec: [Int16], at start: Int, frames: Int = 4410, frequency: Double) -> Double {
        let w = 2 * Double.pi * frequency / 44100
        var (s1, s2) = (0.0, 0.0)
        for i in max(0, start)..<min(start + frames, rec.count / 2) {
            let s = Double(rec[2 * i]) / 32768 + 2 * cos(w) * s1 - s2
            (s2, s1) = (s1, s)
        }
        let power = s1 * s1 + s2 * s2 - 2 * cos(w) * s1 * s2
        return 2 * power.squareRoot() / Double(frames)
    }

    @Test("crossfade: a `next` during the fade is a clean jump (only the third item after it, at once); an edit after the ending item once its fade was decoded fades it into the new next one instead")
    func crossfadeJumpAndEdit() throws {
        let a = try Fixtures.tone("rt-xf-a", seconds: 4, frequency: 330)
        let b = try Fixtures.tone("rt-xf-b", seconds: 4, frequency: 880)
        let c = try Fixtures.tone("rt-xf-c", seconds: 3, frequency: 550)
        let level = 0.5  // sox's -6 dB
        /// A recording of an engine with a 2 s crossfade, driven by `body`.
        func recorded(_ body: (PlaybackEngine, EventLog) throws -> Void) throws -> (rec: [Int16], log: EventLog) {
            try PulseNullSink.exclusive { sink in
                let engine = makeEngine(device: sink.alsaDevice)
                defer { engine.shutdown() }
                engine.crossfade = 2
                let log = EventLog(engine)
                return (try sink.record { try body(engine, log) }.recording, log)
            }
        }
        do {
            // 1. `next` 0.5 s into the 2 s fade from A to B.
            let (rec, _) = try recorded { engine, log in
                let ids = engine.enqueue([a.path, b.path, c.path])
                #expect(log.wait(timeout: 10) { if case .itemStarted(let i, _) = $0 { i.id == ids[1] } else { false } } != nil)
                Thread.sleep(forTimeInterval: 0.5)
                engine.skipToNext()
                #expect(log.wait(timeout: 5) { $0.startedPath == c.path } != nil)
                Thread.sleep(forTimeInterval: 1)
                engine.stop()
            }
            let t = HeardTimeline(recording: rec, rate: 44100)
            let first = try #require(t.firstSound())
            // The fade: A and B together at 2.3 s.
            let inFade = first + Int(2.3 * 44100)
            #expect(Self.toneLevel(rec, at: inFade, frequency: 330) > 0.1 && Self.toneLevel(rec, at: inFade, frequency: 880) > 0.1,
                    "both items in the fade")
            // C from the jump: its first 0.1 s block with C at full level; after it, neither A nor B.
            let blocks = stride(from: inFade, to: rec.count / 2 - 4410, by: 441)
            let jump = try #require(blocks.first { Self.toneLevel(rec, at: $0, frequency: 550) > level * 0.9 }, "C heard")
            #expect(jump - inFade < Int(0.9 * 44100), "the jump is heard within 0.9 s of the fade's 2.3 s (0.5 s after B started)")
            // (The block found may begin up to 10 ms before C: the checks start one step later.)
            for k in 0..<8 {
                let at = jump + 441 + k * 4410
                #expect(Self.toneLevel(rec, at: at, frequency: 330) < 0.01 && Self.toneLevel(rec, at: at, frequency: 880) < 0.01,
                        "only C after the jump (block \(k))")
            }
            #expect(t.longestSilence(from: inFade, to: jump + 4410) < 0.03, "no gap at the jump")
        }
        do {
            // 2. B replaced by C while A is at 1 s: the decoder (2 s ahead) had begun A's fade into B.
            let (rec, log) = try recorded { engine, log in
                let ids = engine.enqueue([a.path, b.path])
                #expect(log.wait(timeout: 10) { $0.startedPath == a.path } != nil)
                Thread.sleep(forTimeInterval: 1)
                #expect(engine.replaceItems(after: ids[0], with: [c.path]) != nil)
                #expect(log.waitForEnd(timeout: 20))
            }
            let t = HeardTimeline(recording: rec, rate: 44100)
            let first = try #require(t.firstSound())
            let mid = first + Int(3 * 44100)  // the middle of the fade
            #expect(Self.toneLevel(rec, at: mid, frequency: 330) > 0.15 && Self.toneLevel(rec, at: mid, frequency: 550) > 0.15,
                    "A fades into C: \(Self.toneLevel(rec, at: mid, frequency: 330)), \(Self.toneLevel(rec, at: mid, frequency: 550))")
            let heardB = stride(from: first, to: rec.count / 2 - 4410, by: 4410).contains { Self.toneLevel(rec, at: $0, frequency: 880) > 0.01 }
            #expect(!heardB, "nothing of B")
            #expect(!log.all.contains { $0.startedPath == b.path })
        }
    }
}
