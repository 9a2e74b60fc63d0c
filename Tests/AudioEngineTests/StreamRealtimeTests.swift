import AudioEngine
import BacklineTestSupport
import Foundation
import HTTPInput
import Media
import MediaCore
import Synchronization
import Testing
import Locking

/// Streams in real time through the PulseAudio null sink: a title heard on time against the
/// recording, and a real Icecast server killed, restarted and stopped under a playing stream.
@Suite("Streams in real time (PulseAudio null sink): titles on time, Icecast dropped and back", .serialized, Harness.audioTools)
struct StreamRealtimeTests {
    /// Whether the Icecast tests run: icecast2 is installed, or the tests run under CI.
    static var icecast: Bool { IcecastServer.available || Harness.isCI }

    /// The byte offset of each MPEG audio frame of a CBR MPEG-1 Layer III file (no ID3v2 tag).
    static func frameOffsets(_ data: [UInt8]) -> [Int] {
        let rates = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
        var out: [Int] = []
        var i = 0
        while i + 4 <= data.count, data[i] == 0xFF, data[i + 1] & 0xE0 == 0xE0 {
            out.append(i)
            let bitrate = rates[Int(data[i + 2] >> 4)] * 1000
            let padding = Int(data[i + 2] >> 1) & 1
            i += 144 * bitrate / 44100 + padding
        }
        return out
    }

    /// The amplitude of `frequency` in channel 0 of 441 frames (10 ms) from `start` (Goertzel), full scale 1.
    static func level(_ rec: [Int16], at start: Int, frequency: Double) -> Double {
        RealtimeTests.toneLevel(rec, at: start, frames: 441, frequency: frequency)
    }

    @Test("a title placed in the stream where its tone changes (440 → 880 Hz at 2 s) is announced when that audio is heard: the engine's position at the event is the switch's place in the recording (± 50 ms), though the whole stream was downloaded seconds before")
    func titleHeardOnTime() throws {
        HTTPInput.register()
        let dir = try Harness.makeTemporaryDirectory("icy-switch")
        let a = try Fixtures.wav("icy-switch-a", seconds: 2, synth: ["sine", "440"], effects: ["gain", "-6"])
        let b = try Fixtures.wav("icy-switch-b", seconds: 2, synth: ["sine", "880"], effects: ["gain", "-6"])
        let both = dir.appendingPathComponent("both.wav")
        #expect(try runProcess("sox", [a.path, b.path, both.path]).status == 0)
        let mp3 = try Fixtures.mp3(from: both, name: "icy-switch", lameArgs: ["-b", "128", "--cbr"])
        try FileManager.default.copyItem(at: mp3, to: dir.appendingPathComponent("switch.mp3"))
        let offsets = Self.frameOffsets(Array(try Data(contentsOf: mp3)))
        // A live stream is not trimmed: frame k (after the Info frame, offsets[0]) holds the
        // stream's samples from k × 1152, and the source's sample s is the stream's s + 1105 (the
        // encoder and decoder delay). The first frame wholly after the switch at 2 s is 78.
        let delay = 1105
        let frame = 78
        let at = offsets[frame + 1]
        let titleTime = Double(frame * 1152) / 44100
        let server = try HTTPTestServer(directory: dir)
        try PulseNullSink.exclusive { sink in
            let engine = makeEngine(device: sink.alsaDevice)
            defer { engine.shutdown() }
            let heardAt = Lock<Double?>(nil)
            engine.onEvent { e in
                if case .metadataChanged(let i) = e, i.metadata.title == "Second" {
                    heardAt.withLock { $0 = engine.position?.seconds }
                }
            }
            let log = EventLog(engine)
            let (_, rec) = try sink.record {
                engine.enqueue([server.url("live/switch.mp3?metaint=\(at)&titles=First|Second&every=\(at)")])
                #expect(log.wait(timeout: 10) { if case .metadataChanged = $0 { true } else { false } } != nil)
                Thread.sleep(forTimeInterval: 0.5)
                engine.stop()
            }
            // Each tone's onset is the first 10 ms window where it is at half its level or more
            // (and the stronger one): the same rule for both, so their distance is the distance
            // between the onsets, whatever sounds before the stream (the pre-echo of the
            // encoder's delay reaches the threshold of silence about 480 samples early).
            let blocks = Array(stride(from: 0, to: rec.count / 2 - 441, by: 21))
            func onset(_ frequency: Double, over other: Double, after: Int = -1) -> Int? {
                blocks.first {
                    let l = Self.level(rec, at: $0, frequency: frequency)
                    return $0 > after && l > 0.25 && l > Self.level(rec, at: $0, frequency: other)
                }
            }
            let start = try #require(onset(440, over: 880), "the 440 Hz tone was heard")
            let switchFrame = try #require(onset(880, over: 440, after: start), "the 880 Hz tone was heard")
            #expect(abs(Double(switchFrame - start) / 44100 - 2) < 0.01, "the tone changes 2 s after it starts on the recording: \(Double(switchFrame - start) / 44100)")
            let heardSwitch = Double(switchFrame - start + delay) / 44100  // in the stream's time
            let position = try #require(heardAt.withLock { $0 }, "the title's event")
            #expect(abs(position - titleTime) < 0.05 && abs(position - heardSwitch) < 0.05,
                    "the title was announced at \(position) s of the stream; it sits at \(titleTime) s, heard at \(heardSwitch) s")
        }
    }

    @Test("a stall, heard: the server holds the rest of the file back 1.5 s in; the sink plays silence for as long (no underrun), then the item goes on from the very sample where it stopped: the recording without its silence is the file's decode")
    func stallHeard() throws {
        HTTPInput.register()
        let dir = try Harness.makeTemporaryDirectory("stall-heard")
        let noise = try Fixtures.noise("stall-heard", seconds: 4)
        try FileManager.default.copyItem(at: noise, to: dir.appendingPathComponent("noise.mp3"))
        let server = try HTTPTestServer(directory: dir)
        try PulseNullSink.exclusive { sink in
            let engine = makeEngine(device: sink.alsaDevice)
            defer { engine.shutdown() }
            let log = EventLog(engine)
            let (_, rec) = try sink.record { () throws -> Void in
                // 128 kbit/s: the first 24,000 bytes are 1.5 s; the rest comes a byte at a time until opened.
                engine.enqueue([server.url("gate/noise.mp3?after=24000")])
                #expect(log.wait(timeout: 15) { if case .stalled = $0 { true } else { false } } != nil, "\(log.all)")
                Thread.sleep(forTimeInterval: 1)
                try server.open("noise.mp3")
                #expect(log.waitForEnd(timeout: 20))
            }
            let kinds = log.all.compactMap { e -> String? in
                switch e {
                case .itemStarted: "started"
                case .stalled: "stalled"
                case .stallEnded: "stallEnded"
                case .itemEnded: "ended"
                case .itemFailed: "failed"
                default: nil
                }
            }
            #expect(kinds == ["started", "stalled", "stallEnded", "ended"], "\(kinds)")
            #expect(engine.underrunCount == 0, "a stall is not an underrun")
            let ref = try ReferenceDecoder.decodeS16(noise)
            #expect(rec.count > ref.count + 2 * 44100, "the recording holds the stall's second of silence (\(rec.count) samples, \(ref.count) decoded)")
            // Nothing lost, nothing repeated across the stall.
            try expectSameAudio(removingSilence(rec, minRun: 400), ref)
        }
    }

    @Test("Icecast Ogg mounts (Vorbis, Opus, copied by `ffmpeg -re`): each plays live, its tags from the stream's own comments, the tone heard on the sink",
          .enabled(if: icecast, "needs icecast2"), arguments: ["vorbis", "opus"])
    func icecastOgg(_ codec: String) throws {
        HTTPInput.register()
        let src = try Fixtures.wav("icecast-ogg-src", seconds: 5, synth: ["sine", "660"], effects: ["gain", "-6"])
        let file = codec == "vorbis" ? try FormatFixtures.vorbis("icecast-ogg", from: src, args: ["-t", "Ogg On Air"])
            : try FormatFixtures.opus("icecast-ogg", from: src, args: ["--title", "Ogg On Air"])
        let ice = try IcecastServer(file: file, format: "ogg")
        // A station on the air a while (as its listeners find it): Icecast's burst then holds
        // seconds, more than the gaps between the pages of a quiet stream (a sine's Vorbis
        // pages hold a second or more each). Joined at once, the few pages there are run out
        // before the next comes: the item stalls, as it should, and this test would hear that.
        Thread.sleep(forTimeInterval: 4)
        try PulseNullSink.exclusive { sink in
            let engine = makeEngine(device: sink.alsaDevice)
            defer { engine.shutdown() }
            let log = EventLog(engine)
            let (_, rec) = try sink.record { () throws -> Void in
                engine.enqueue([ice.url])
                #expect(log.wait(timeout: 15) { if case .itemStarted = $0 { true } else { false } } != nil, "\(log.all)")
                Thread.sleep(forTimeInterval: 2)
            }
            let info = try #require(log.all.compactMap { if case .itemStarted(let i, _) = $0 { i } else { nil } }.first)
            #expect(info.isLive, "a live mount")
            #expect(info.audio?.formatName == (codec == "vorbis" ? "Ogg Vorbis" : "Opus"), "\(String(describing: info.audio))")
            #expect(info.metadata.title == "Ogg On Air", "\(info.metadata.tags)")
            #expect(!log.all.contains { if case .itemFailed = $0 { true } else { false } }, "\(log.all)")
            // The tone was heard: 660 Hz in most 100 ms blocks of the last second recorded.
            let end = rec.count / 2
            let heard = stride(from: end - 44100, to: end - 4410, by: 4410).filter { RealtimeTests.toneLevel(rec, at: $0, frequency: 660) > 0.2 }
            #expect(heard.count >= 7, "the mount was heard: \(heard.count) of 9 blocks; \(log.all.map { "\($0)".prefix(30) }), \(rec.count / 2) frames recorded")
        }
    }

    @Test("Icecast: a live mount plays; a title set through icecast's admin interface is announced; icecast killed and back, and stopped for 10 s, the same item plays on (stalls, no failure, no restart)",
          .enabled(if: icecast, "needs icecast2"))
    func icecastDroppedAndBack() throws {
        HTTPInput.register()
        let tone = try Fixtures.tone("icecast-tone", seconds: 5, frequency: 550)
        let ice = try IcecastServer(file: tone)
        try PulseNullSink.exclusive { sink in
            let engine = makeEngine(device: sink.alsaDevice)
            defer { engine.shutdown() }
            let log = EventLog(engine)
            let (_, rec) = try sink.record { () throws -> Void in
                engine.enqueue([ice.url])
                #expect(log.wait(timeout: 15) { if case .itemStarted(let i, _) = $0 { i.isLive } else { false } } != nil, "\(log.all)")
                try ice.setTitle("Hello from Icecast")
                #expect(log.wait(timeout: 15) { if case .metadataChanged(let i) = $0 { i.metadata.title == "Hello from Icecast" } else { false } } != nil,
                        "the title reached the engine: \(log.all.suffix(3))")
                // Killed: the stream drops; reconnects fail until it is back (1, 2, 4 s…).
                ice.kill()
                Thread.sleep(forTimeInterval: 3)
                try ice.startServer()
                try ice.startSource()
                Thread.sleep(forTimeInterval: 8)
                // Stopped for 10 s (within the 15 s read timeout): a stall, then the same connection goes on.
                ice.pause(true)
                Thread.sleep(forTimeInterval: 10)
                ice.pause(false)
                Thread.sleep(forTimeInterval: 6)
            }
            let starts = log.all.filter { if case .itemStarted = $0 { true } else { false } }
            #expect(starts.count == 1, "one item, never restarted: \(starts.count)")
            // The drops were stalls (silence, the item held), each of which ended.
            let stalls = log.all.filter { if case .stalled = $0 { true } else { false } }.count
            let stallEnds = log.all.filter { if case .stallEnded = $0 { true } else { false } }.count
            #expect(stalls >= 1 && stallEnds == stalls, "\(stalls) stalls, \(stallEnds) ended")
            #expect(!log.all.contains { if case .itemFailed = $0 { true } else { false } }, "\(log.all.suffix(5))")
            // Heard at the end: the 550 Hz tone in the last two seconds of the recording.
            let end = rec.count / 2
            let heard = stride(from: end - 2 * 44100, to: end - 4410, by: 4410).filter { RealtimeTests.toneLevel(rec, at: $0, frequency: 550) > 0.2 }
            #expect(heard.count > 10, "the stream plays again at the end: \(heard.count) of 18 blocks")
        }
    }
}
