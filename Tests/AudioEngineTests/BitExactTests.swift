import AudioEngine
import BacklineTestSupport
import Foundation
import MediaCore
import Testing

@Suite("Engine output is bit-exact (ALSA file plugin)", Harness.audioTools)
struct BitExactTests {
    /// Every kind of stream we ship or generate: MPEG-1/2/2.5 Layer III, MPEG-1/2 Layer II,
    /// mono/stereo, 8–48 kHz, CBR/VBR. (No Layer I encoder exists in Debian to make a fixture.)
    static func fixtures() throws -> [URL] {
        try Fixtures.demoTracks + [
            Fixtures.tone("mpeg2-22k-mono", seconds: 2.3, rate: 22050, channels: 1, lameArgs: ["-b", "64"]),
            Fixtures.tone("mpeg25-8k-stereo", seconds: 1.7, rate: 8000, channels: 2, lameArgs: ["-b", "16"]),
            Fixtures.tone("mpeg1-48k-vbr", seconds: 2.1, rate: 48000, channels: 2, lameArgs: ["-V", "0"]),
            Fixtures.tone("mpeg1-32k-mono-cbr", seconds: 1.1, rate: 32000, channels: 1, lameArgs: ["-b", "96"]),
            Fixtures.layer2Tone("layer2-48k-stereo", seconds: 1.3, rate: 48000, channels: 2, bitrate: 192),
            Fixtures.layer2Tone("layer2-24k-mono", seconds: 1.2, rate: 24000, channels: 1, bitrate: 64),
        ]
    }

    @Test("float32 device: captured samples equal libmpg123's decode, sample for sample (rendered into the device's mmap buffer, or written)",
          arguments: [true, false])
    func float32(mmap: Bool) throws {
        for file in try Self.fixtures() {
            let (cap, events) = try playToFile([file], mmap: mmap)
            let opened = events.compactMap { if case .deviceOpened(let c) = $0 { c } else { nil } }
            #expect(!opened.isEmpty && opened.allSatisfy { $0.mmap == mmap }, "\(opened)")
            let ref = try ReferenceDecoder.decodeF32(file)
            let got = try cap.f32()
            #expect(got.count == ref.count, "\(file.lastPathComponent): \(got.count) vs \(ref.count) samples")
            let same = got == ref
            #expect(same, "\(file.lastPathComponent) differs: \(describeDifference(got, ref))")
            #expect(events.compactMap(\.startedPath) == [file.path])
            #expect(events.contains(.endOfInput))
        }
    }

    @Test("S16 device: converted with rounding and clipping, within 1 LSB of libmpg123's S16 decode (mmap or written)",
          arguments: [true, false])
    func s16(mmap: Bool) throws {
        for file in try Self.fixtures().prefix(3) {
            let (cap, _) = try playToFile([file], format: .s16, mmap: mmap)
            let ref = try ReferenceDecoder.decodeS16(file)
            let got = try cap.s16()
            #expect(got.count == ref.count, "\(file.lastPathComponent)")
            #expect(PCM.maxDifference(got[...], ref[...]) <= 1, "\(file.lastPathComponent)")
        }
    }

    @Test("gapless: a sweep cut off-frame into two MP3s plays back as exactly the two decodes joined")
    func gapless() throws {
        let (a, b) = try Fixtures.gaplessPair()
        let (cap, events) = try playToFile([a, b])
        let ref = try ReferenceDecoder.decodeF32(a) + ReferenceDecoder.decodeF32(b)
        let got = try cap.f32()
        #expect(got.count == ref.count, "no sample added or dropped at the join")
        let same = got == ref
        #expect(same, "\(describeDifference(got, ref))")
        #expect(events.compactMap(\.startedPath) == [a.path, b.path])
    }

    @Test("items of different formats: device reopened, every item started and ended in order, last item exact")
    func formatChanges() throws {
        let files = try [
            Fixtures.tone("fmt-a", seconds: 1.2, rate: 44100, channels: 2),
            Fixtures.tone("fmt-b", seconds: 1.3, rate: 48000, channels: 1, lameArgs: ["-V", "4"]),
            Fixtures.tone("fmt-c", seconds: 0.9, rate: 22050, channels: 2, lameArgs: ["-b", "64"]),
        ]
        let (cap, events) = try playToFile(files)
        #expect(events.compactMap(\.startedPath) == files.map(\.path))
        let ended = events.filter { if case .itemEnded = $0 { true } else { false } }
        #expect(ended.count == 3)
        // The file plugin truncates on reopen: what is left is the last item, complete.
        let got = try cap.f32(), ref = try ReferenceDecoder.decodeF32(files[2])
        let same = got == ref
        #expect(same, "\(describeDifference(got, ref))")
    }

    @Test("start at t: the first sample out is exactly the decode's sample at t")
    func seekExact() throws {
        let file = try Fixtures.tone("seek-src", seconds: 3, frequency: 523)
        let dir = try Harness.makeTemporaryDirectory()
        let cap = ALSAFileCapture(in: dir)
        let engine = makeEngine(device: cap.device)
        defer { engine.shutdown() }
        let log = EventLog(engine)
        engine.enqueue(file.path, startingAt: 1.2345)
        #expect(log.waitForEnd())
        let ref = try ReferenceDecoder.decodeF32(file)
        let startFrame = Int((1.2345 * 44100).rounded())
        let got = try cap.f32(), want = Array(ref[(startFrame * 2)...])
        let same = got == want
        #expect(same, "\(describeDifference(got, want))")
    }

    @Test("volume and mute set before playing apply from the first sample; unity gain is bit-exact")
    func gain() throws {
        let file = try Fixtures.tone("gain-src", seconds: 1)
        let dir = try Harness.makeTemporaryDirectory()
        let cap = ALSAFileCapture(in: dir)
        let engine = makeEngine(device: cap.device)
        defer { engine.shutdown() }
        engine.volume = 0.5
        let log = EventLog(engine)
        engine.enqueue([file.path])
        #expect(log.waitForEnd())
        let ref = try ReferenceDecoder.decodeF32(file)
        let got = try cap.f32()
        #expect(got.count == ref.count)
        // Set before the device opened: every sample is exactly half, from the first one.
        let halved = zip(got, ref).allSatisfy { $0 == $1 * 0.5 }
        #expect(halved)

        // At unity gain the output is the decode, bit for bit.
        let rampCap = ALSAFileCapture(in: dir, name: "ramp")
        let ramped = makeEngine(device: rampCap.device)
        defer { ramped.shutdown() }
        let rlog = EventLog(ramped)
        ramped.enqueue([file.path])
        #expect(rlog.waitForEnd())
        #expect(try rampCap.f32() == ref, "unity gain stays bit-exact")

        // Mute: after the ramp down, silence; the volume setting itself is kept.
        let muteCap = ALSAFileCapture(in: dir, name: "muted")
        let muted = makeEngine(device: muteCap.device)
        defer { muted.shutdown() }
        muted.volume = 0.5
        muted.isMuted = true
        #expect(muted.volume == 0.5)
        let mlog = EventLog(muted)
        muted.enqueue([file.path])
        #expect(mlog.waitForEnd())
        let silent = try muteCap.f32()
        #expect(silent.count == ref.count)
        #expect(silent.allSatisfy { $0 == 0 }, "a first item played muted is silent from its first sample")
    }
}

/// A short account of where two sample arrays differ (never the arrays themselves).
func describeDifference(_ a: [Float], _ b: [Float]) -> String {
    guard let first = zip(a, b).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset else {
        return a.count == b.count ? "equal" : "lengths \(a.count) vs \(b.count), common prefix equal"
    }
    let maxDiff = zip(a, b).map { abs($0 - $1) }.max() ?? 0
    return "lengths \(a.count) vs \(b.count); first difference at sample \(first) (\(a[first]) vs \(b[first])); max |diff| \(maxDiff)"
}

@Suite("Engine events", Harness.audioTools)
struct EngineEventStreamTests {
    @Test("the AsyncStream delivers item and end events in order; failed items carry path and reason")
    func asyncStream() async throws {
        let good = try Fixtures.tone("events-good", seconds: 0.7)
        let bad = try #require(Fixtures.badInputs()["text"])
        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let engine = makeEngine(device: cap.device)
        defer { engine.shutdown() }
        let stream = engine.events()
        let ids = engine.enqueue([good.path, bad.path, good.path])
        var seen: [String] = []
        for await event in stream {
            switch event {
            case .itemStarted(let info, _): seen.append("start \(info.id)")
            case .itemEnded(let id): seen.append("end \(id)")
            case .itemFailed(let id, let path, let error):
                seen.append("fail \(id)")
                #expect(path == bad.path)
                #expect(error.message.contains("no MPEG audio frames"))
            case .endOfInput: seen.append("eoi")
            default: break
            }
            if event == .endOfInput { break }
        }
        #expect(seen == ["start \(ids[0])", "end \(ids[0])", "fail \(ids[1])", "start \(ids[2])", "end \(ids[2])", "eoi"])
    }
}
