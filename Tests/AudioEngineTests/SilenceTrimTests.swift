import AudioEngine
import BacklineTestSupport
import Foundation
import MediaCore
import Testing

/// Long silences shortened in spoken word: speech made by espeak-ng with 1.2 s pauses, heard in
/// ALSA's `file` capture (every word there, sample for sample; each pause cut to 0.3 s) and on
/// a device the test paces (the position after a cut is the content heard).
@Suite("Silence trimming: speech with long pauses, each cut to 0.3 s, every word kept, the position content time", Harness.audioTools)
struct SilenceTrimTests {
    static let threshold: Float = 0.003_162
    static let kept = Int(0.3 * 44100)

    /// Three phrases spoken by espeak-ng, 1.2 s of silence between them (44.1 kHz stereo WAV).
    static func speech() throws -> URL {
        let dir = try Harness.makeTemporaryDirectory("speech")
        var parts: [String] = []
        for (i, text) in ["Hello there.", "This is a test of silence trimming.", "Goodbye for now."].enumerated() {
            let raw = dir.path + "/raw\(i).wav", part = dir.path + "/part\(i).wav"
            var r = try runProcess("espeak-ng", ["-w", raw, text])
            guard r.status == 0 else { throw HarnessError("espeak-ng: \(r.stderr)") }
            // (Resampled without dither: espeak's silence stays digital zero.)
            r = try runProcess("sox", ["-D", raw, "-r", "44100", "-c", "2", "-b", "16", part])
            guard r.status == 0 else { throw HarnessError("sox: \(r.stderr)") }
            parts.append(part)
        }
        let pause = dir.path + "/pause.wav"
        var r = try runProcess("sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", pause, "trim", "0", "1.2"])
        guard r.status == 0 else { throw HarnessError("sox: \(r.stderr)") }
        let out = dir.appendingPathComponent("speech.wav")
        r = try runProcess("sox", [parts[0], pause, parts[1], pause, parts[2], out.path])
        guard r.status == 0 else { throw HarnessError("sox: \(r.stderr)") }
        return out
    }

    /// `file` played with `mode` into a file capture: its frames (interleaved stereo).
    static func capture(_ file: URL, _ mode: SilenceTrimMode) throws -> [Float] {
        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory("trim"))
        let engine = makeEngine(device: cap.device)
        defer { engine.shutdown() }
        engine.silenceTrimming = mode
        let log = EventLog(engine)
        engine.enqueue(items: [EngineItem(path: file.path)])
        guard log.waitForEnd() else { throw HarnessError("playback did not finish; events: \(log.all)") }
        return try cap.f32()
    }

    /// The runs of sound (a frame with a sample at or above the threshold) in `x`, as frame
    /// ranges, with silences shorter than 50 ms inside a run (between syllables) kept in it.
    static func sounds(_ x: [Float]) -> [Range<Int>] {
        var runs: [Range<Int>] = []
        let frames = x.count / 2
        var f = 0
        while f < frames {
            guard abs(x[2 * f]) >= threshold || abs(x[2 * f + 1]) >= threshold else { f += 1; continue }
            var end = f + 1, quiet = 0
            while end < frames, quiet < 2205 {
                quiet = abs(x[2 * end]) >= threshold || abs(x[2 * end + 1]) >= threshold ? 0 : quiet + 1
                end += 1
            }
            runs.append(f..<(end - quiet))
            f = end
        }
        return runs
    }

    /// The silent runs of `x` (every sample below the threshold), as frame counts.
    static func silences(_ x: [Float], in range: Range<Int>) -> [Int] {
        var out: [Int] = [], run = 0
        for f in range {
            if abs(x[2 * f]) < threshold && abs(x[2 * f + 1]) < threshold { run += 1 } else if run > 0 { out.append(run); run = 0 }
        }
        if run > 0 { out.append(run) }
        return out
    }

    @Test("every word of the speech is in the capture sample for sample, in order; each 1.2 s pause is 0.3 s there, no silence longer; off, the capture is the file",
          .enabled(if: Harness.has("espeak-ng"), "needs espeak-ng"))
    func wordsKept() throws {
        let file = try Self.speech()
        let reference = try Self.capture(file, .off)
        let trimmed = try Self.capture(file, .all)
        let speech = Self.sounds(reference)
        #expect(speech.count >= 3, "the phrases: \(speech)")
        // Found in order, each exactly: the first frame of each phrase where the previous ended.
        var from = 0
        var gaps: [Int] = []
        for run in speech {
            let needle = Array(reference[(2 * run.lowerBound)..<(2 * run.upperBound)])
            guard let at = Self.find(needle, in: trimmed, from: from) else {
                Issue.record("the sound at \(Double(run.lowerBound) / 44100) s (\(run.count) frames) is not in the capture")
                return
            }
            if from > 0 { gaps.append(at / 2 - from / 2) }
            from = at + needle.count
        }
        // Between phrases: the pauses (1.2 s and espeak's own silence) are 0.3 s; within a phrase a
        // silence shorter than 0.3 s is as it was.
        let referenceGaps = zip(speech, speech.dropFirst()).map { $1.lowerBound - $0.upperBound }
        #expect(gaps == referenceGaps.map { min($0, Self.kept) }, "gaps \(gaps) from \(referenceGaps)")
        #expect(referenceGaps.filter { $0 > 44100 }.count == 2, "the two long pauses: \(referenceGaps)")
        let saved = reference.count / 2 - trimmed.count / 2
        let expected = referenceGaps.reduce(0) { $0 + max(0, $1 - Self.kept) }
        // (Leading and trailing silence is cut to 0.3 s too.)
        let leading = speech.first!.lowerBound, trailing = reference.count / 2 - speech.last!.upperBound
        let ends = max(0, leading - Self.kept) + max(0, trailing - Self.kept)
        #expect(saved == expected + ends, "saved \(saved) frames: \(expected) between phrases, \(ends) at the ends (\(leading), \(trailing))")
        #expect(Self.silences(trimmed, in: 0..<(trimmed.count / 2)).allSatisfy { $0 <= Self.kept }, "no silence past 0.3 s")
    }

    /// Where `needle` starts in `haystack` (interleaved samples), at `from` or after.
    static func find(_ needle: [Float], in haystack: [Float], from: Int) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        var i = from
        while i + needle.count <= haystack.count {
            if haystack[i] == needle[0], haystack[i + 1] == needle[1], Array(haystack[i..<(i + needle.count)]) == needle { return i }
            i += 2
        }
        return nil
    }

    @Test("after each cut the position is the content heard (within a period): the 50 ms heard last are found at the reported position of the file",
          .enabled(if: Harness.has("espeak-ng"), "needs espeak-ng"))
    func positionAfterCuts() throws {
        let file = try Self.speech()
        let reference = try Self.capture(file, .off)
        let speech = Self.sounds(reference)
        try #require(speech.count >= 3)
        let name = "trim-position-\(getpid())"
        let clock = PacedDevice.clock(name)
        let recording = PacedDevice.recording(name)
        let engine = makeEngine(device: clock.device)
        defer { engine.shutdown() }
        engine.silenceTrimming = .all
        let id = try #require(engine.enqueue(items: [EngineItem(path: file.path)]).first)
        // Heard: into the second phrase, then into the third (each after a cut).
        let longPauses = zip(speech, speech.dropFirst()).filter { $1.lowerBound - $0.upperBound > 44100 }.map(\.1)
        try #require(longPauses.count == 2)
        var heardSoFar = 0.0
        var trimmedBefore = 0, lead = 0
        for (k, phrase) in longPauses.enumerated() {
            // The output time of 0.2 s into the phrase: its content time less what was cut before it.
            let gapsBefore = zip(speech, speech.dropFirst()).filter { $1.lowerBound <= phrase.lowerBound }.map { $1.lowerBound - $0.upperBound }
            trimmedBefore = gapsBefore.reduce(0) { $0 + max(0, $1 - Self.kept) }
            lead = speech.first!.lowerBound - min(speech.first!.lowerBound, Self.kept)
            let target = Double(phrase.lowerBound - trimmedBefore - lead) / 44100 + 0.2
            #expect(clock.hear(seconds: target - heardSoFar))
            heardSoFar = target
            guard let p = settledPosition(engine, clock) else { Issue.record("no position after cut \(k + 1)"); continue }
            let (samples, _) = recording.heard(clock)
            let window = Array(samples.suffix(2 * 2205))
            guard let at = Self.find(window, in: reference, from: 0) else {
                Issue.record("the last 50 ms heard are not in the file (after cut \(k + 1))")
                continue
            }
            // The content heard now: the end of the window.
            let heardFrame = at / 2 + 2205
            #expect(abs(p.frame - heardFrame) <= 2205, "after cut \(k + 1): reported \(p.frame), heard \(heardFrame)")
            // What the item says was cut so far: the pauses heard (and the lead-in), to the frame.
            let saved = try #require(engine.info(for: id)).silenceTrimmed
            #expect(abs(saved - Double(trimmedBefore + lead) / 44100) < 1.0 / 44100 * 2, "after cut \(k + 1): \(saved) s saved")
        }
    }

    @Test("the threshold of 0.3 s (13,230 frames): a silence of 13,229 or 13,230 frames between two square-wave tones is kept whole, one of 13,231 loses exactly one frame")
    func keptAtTheThreshold() throws {
        let dir = try Harness.makeTemporaryDirectory("trim-edge")
        let tone = dir.path + "/tone.wav"
        var r = try runProcess("sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", tone, "synth", "0.2", "square", "660", "gain", "-6"])
        try #require(r.status == 0, "\(r.stderr)")
        for frames in [Self.kept - 1, Self.kept, Self.kept + 1] {
            let pause = dir.path + "/pause-\(frames).wav", file = dir.appendingPathComponent("edge-\(frames).wav")
            // (The rate given for the null input too: its samples are counted at its own rate.)
            r = try runProcess("sox", ["-r", "44100", "-c", "2", "-n", "-r", "44100", "-c", "2", "-b", "16", pause, "trim", "0", "\(frames)s"])
            try #require(r.status == 0, "\(r.stderr)")
            r = try runProcess("sox", [tone, pause, tone, file.path])
            try #require(r.status == 0, "\(r.stderr)")
            // (Where the second tone starts: a capture ends at the device's last whole period.)
            let whole = try #require(try Self.sounds(Self.capture(file, .off)).dropFirst().first).lowerBound
            let trimmed = try #require(try Self.sounds(Self.capture(file, .all)).dropFirst().first).lowerBound
            #expect(whole == 8820 + frames && whole - trimmed == max(0, frames - Self.kept), "a pause of \(frames) frames: \(whole - trimmed) cut, the tone at \(whole)")
        }
    }

}
