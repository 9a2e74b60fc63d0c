import AudioEngine
import BacklineTestSupport
import Foundation
import MediaCore
import Testing

/// Playback at other rates, heard in ALSA's `file` capture: what each algorithm makes of a
/// 440 Hz tone (its pitch, its length), and rate 1 untouched.
@Suite("Rates: the pitch kept or followed, the length content / rate, rate 1 bit-exact (ALSA file plugin)", Harness.audioTools)
struct RateTests {
    /// A 6 s, 440 Hz stereo tone at −6 dB as 16-bit WAV.
    static func tone() throws -> URL {
        try Fixtures.wav("rate-tone-440", seconds: 6, synth: ["sine", "440"], effects: ["gain", "-6"])
    }

    /// Plays `file` at `speed` with `algorithm` into a file capture: the left channel's samples.
    static func play(_ file: URL, speed: Double, algorithm: TimePitchAlgorithm) throws -> (left: [Float], events: [EngineEvent]) {
        let dir = try Harness.makeTemporaryDirectory("rate")
        let cap = ALSAFileCapture(in: dir)
        let engine = makeEngine(device: cap.device)
        defer { engine.shutdown() }
        engine.speed = speed
        let log = EventLog(engine)
        var item = EngineItem(path: file.path)
        item.pitchAlgorithm = algorithm
        engine.enqueue(items: [item])
        guard log.waitForEnd() else { throw HarnessError("playback did not finish; events: \(log.all)") }
        let samples = try cap.f32()
        return (stride(from: 0, to: samples.count, by: 2).map { samples[$0] }, log.all)
    }

    /// The frequency of a steady tone in `x` (at 44.1 kHz), from its rising zero crossings
    /// (each placed between its two samples): crossings counted over the time they span.
    static func frequency(_ x: ArraySlice<Float>) -> Double {
        var crossings: [Double] = []
        var i = x.startIndex + 1
        while i < x.endIndex {
            let (a, b) = (x[i - 1], x[i])
            if a < 0, b >= 0 { crossings.append(Double(i - 1) + Double(-a / (b - a))) }
            i += 1
        }
        guard let first = crossings.first, let last = crossings.last, crossings.count > 2 else { return 0 }
        return Double(crossings.count - 1) / ((last - first) / 44100)
    }

    @Test("the pitch kept: a 440 Hz tone at 0.5, 1.5, 2 and 3 measures 440 Hz ± 0.5 % (time-domain and spectral), and lasts its 6 s / rate within 1,024 frames",
          arguments: [TimePitchAlgorithm.timeDomain, .spectral], [0.5, 1.5, 2.0, 3.0])
    func pitchKept(_ algorithm: TimePitchAlgorithm, _ speed: Double) throws {
        let (left, events) = try Self.play(try Self.tone(), speed: speed, algorithm: algorithm)
        #expect(!events.contains { $0.failedPath != nil }, "\(events)")
        let expected = Int((6 * 44100 / speed).rounded())
        #expect(abs(left.count - expected) <= 1024, "\(left.count) frames, \(expected) expected")
        // The steady middle: a second from a quarter in.
        let from = left.count / 4
        let f = Self.frequency(left[from..<min(left.count, from + 44100)])
        #expect(abs(f - 440) <= 440 * 0.005, "\(f) Hz")
    }

    @Test("varispeed: the pitch follows the rate (440 Hz at 1.5 is 660 Hz ± 0.5 %), the length 6 s / 1.5 within 1,024 frames")
    func varispeed() throws {
        let (left, _) = try Self.play(try Self.tone(), speed: 1.5, algorithm: .varispeed)
        #expect(abs(left.count - 4 * 44100) <= 1024, "\(left.count) frames")
        let from = left.count / 4
        let f = Self.frequency(left[from..<(from + 44100)])
        #expect(abs(f - 660) <= 660 * 0.005, "\(f) Hz")
    }

    @Test("rate 1 after another: nothing stretched, the capture equals the reference decode sample for sample")
    func rateOneBitExact() throws {
        let file = try Fixtures.tone("rate-one", seconds: 2, frequency: 550)
        let dir = try Harness.makeTemporaryDirectory("rate-one")
        let cap = ALSAFileCapture(in: dir)
        let engine = makeEngine(device: cap.device)
        defer { engine.shutdown() }
        engine.speed = 2
        engine.speed = 1
        let log = EventLog(engine)
        engine.enqueue([file.path])
        #expect(log.waitForEnd())
        let got = try cap.f32(), ref = try ReferenceDecoder.decodeF32(file)
        #expect(got == ref, "\(describeDifference(got, ref))")
    }
}

/// Positions at another rate, on a device the test paces (each step heard exactly, whatever the
/// machine's load), against what that device let the listener hear: two sweeps whose frequency
/// says which content plays.
@Suite("Rates: the position is the content heard, through a rate change, a seek and a gapless join (paced device)", Harness.audioTools)
struct RatePositionTests {
    /// 200 → 2,200 Hz over 20 s, then 3,000 → 3,800 Hz over 8 s, each an exponential sweep
    /// (sox's `-`): a frequency names the item and the second in it.
    static func sweeps() throws -> (URL, URL) {
        (try Fixtures.wav("rate-sweep-a", seconds: 20, synth: ["sine", "200-2200"], effects: ["gain", "-6"]),
         try Fixtures.wav("rate-sweep-b", seconds: 8, synth: ["sine", "3000-3800"], effects: ["gain", "-6"]))
    }

    /// The content heard last: which sweep and its second, from the last 50 ms heard (their
    /// frequency is the content's at their middle, 25 ms of device time ago).
    static func heardContent(_ recording: PacedRecording, _ clock: PacedClock, speed: Double) -> (item: Int, seconds: Double) {
        let (samples, channels) = recording.heard(clock)
        let frames = samples.count / channels
        let window = stride(from: max(0, frames - 2205) * channels, to: samples.count, by: channels).map { samples[$0] }
        let f = RateTests.frequency(window[...])
        let middle = 0.025 * speed
        return f < 2600 ? (0, 20 * log(f / 200) / log(11) + middle) : (1, 8 * log(f / 3000) / log(3800 / 3000) + middle)
    }

    @Test("at 1.5 (time-domain), then 2 (spectral is the second item's), through a seek and the join: the position is the content heard within a period (50 ms of device time)")
    func positions() throws {
        let (a, b) = try Self.sweeps()
        let name = "rate-position-\(getpid())"
        let clock = PacedDevice.clock(name)
        let recording = PacedDevice.recording(name)
        let engine = makeEngine(device: clock.device)
        defer { engine.shutdown() }
        engine.speed = 1.5
        var itemB = EngineItem(path: b.path)
        itemB.pitchAlgorithm = .spectral
        let ids = engine.enqueue(items: [EngineItem(path: a.path), itemB])
        func check(_ step: String, speed: Double) {
            guard let p = settledPosition(engine, clock) else {
                Issue.record("\(step): no position")
                return
            }
            let heard = Self.heardContent(recording, clock, speed: speed)
            let item = p.item == ids[0] ? 0 : p.item == ids[1] ? 1 : -1
            let reported = Double(p.frame) / Double(p.rate)
            #expect(item == heard.item && abs(reported - heard.seconds) <= 0.05 * speed,
                    "\(step): reported item \(item) at \(reported) s, heard item \(heard.item) at \(heard.seconds) s")
        }
        #expect(clock.hear(seconds: 2))
        check("2 s heard at 1.5", speed: 1.5)  // 3 s of content
        #expect(clock.hear(seconds: 1.3))
        check("3.3 s heard at 1.5", speed: 1.5)
        engine.speed = 2
        #expect(clock.hear(seconds: 1))
        check("1 s after the change to 2", speed: 2)
        #expect(engine.seek(to: 15))
        #expect(clock.hear(seconds: 0.7))
        check("0.7 s after a seek to 15 s", speed: 2)
        #expect(clock.hear(seconds: 2.2))  // 4.4 s of content after 15 s: 0.6 s into the second sweep
        check("across the join", speed: 2)
        #expect(clock.hear(seconds: 1))
        check("1 s later in the second item", speed: 2)
    }
}

/// A speed change while playing, heard on the PulseAudio null sink's monitor.
@Suite("Rates: a change while playing is heard at once, without a gap (PulseAudio null sink)", Harness.audioTools)
struct RateChangeRealtimeTests {
    @Test("1 → 1.5 → 0.75 → 1 in the middle of a 440 Hz tone: the silence around each change ≤ 20 ms (a jump's bound), their median ≤ 10 ms, none elsewhere; the tone 440 Hz ± 0.5 % in each stretch (time-domain)")
    func changeHeard() throws {
        let tone = try Fixtures.wav("rate-change-440", seconds: 12, synth: ["sine", "440"], effects: ["gain", "-6"])
        try PulseNullSink.exclusive { sink in
            let engine = makeEngine(device: sink.alsaDevice)
            defer { engine.shutdown() }
            let log = EventLog(engine)
            let (_, rec) = try sink.record { () throws -> Void in
                engine.enqueue([tone.path])
                #expect(log.wait(timeout: 15) { if case .itemStarted = $0 { true } else { false } } != nil, "\(log.all)")
                for speed in [1.5, 0.75, 1] {
                    Thread.sleep(forTimeInterval: 1.2)
                    engine.speed = speed
                }
                Thread.sleep(forTimeInterval: 1.2)
                engine.stop()
                Thread.sleep(forTimeInterval: 0.2)
            }
            let heard = HeardTimeline(recording: rec, rate: PulseNullSink.rate)
            let first = try #require(heard.firstSound(), "nothing heard")
            // The stop's own silence at the end: up to the last sound.
            var last = heard.frameCount - 1
            while last > first, abs(Int(rec[2 * last])) <= HeardTimeline.silenceThreshold { last -= 1 }
            // Around each change (0.3 s either side), and in all.
            let around: [Double] = (1...3).map { (k: Int) -> Double in
                let at = first + Int(1.2 * Double(k) * 44100)
                return heard.longestSilence(from: at - 13230, to: at + 13230) * 1000
            }
            // (Measured on this 2-core VM: 2–6.5 ms around a change, a median of 3–5 ms; a
            // change is a re-plan from the frame heard, as a seek, which the jump tests bound.)
            let median = around.sorted()[1]
            #expect(around.allSatisfy { $0 <= 20 } && median <= 10, "the longest silence around each change: \(around) ms")
            let silence = heard.longestSilence(from: first, to: last)
            #expect(silence <= 0.020, "the longest silence from the first sound to the stop: \(silence * 1000) ms; around each change: \(around) ms")
            // The tone in each stretch: four windows of 0.3 s, one in each speed's time.
            let left = stride(from: 0, to: rec.count, by: 2).map { Float(rec[$0]) / 32768 }
            for k in 0..<4 {
                let from = first + Int((0.4 + 1.2 * Double(k)) * 44100)
                guard from + 13230 <= left.count else { Issue.record("the recording ends early: \(left.count) frames"); break }
                let f = RateTests.frequency(left[from..<(from + 13230)])
                #expect(abs(f - 440) <= 440 * 0.005, "stretch \(k): \(f) Hz")
            }
        }
    }
}
