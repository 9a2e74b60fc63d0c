import BacklineTestSupport
import Foundation
import Testing

@Suite("Test harness", .serialized, Harness.audioTools)
struct HarnessTests {
    @Test("a spawned child keeps only its standard descriptors: one this process holds open for writing (not closed on exec) is closed in it")
    func childDescriptors() throws {
        let dir = try Harness.makeTemporaryDirectory("spawn-fds")
        let fd = open(dir.appendingPathComponent("held").path, O_WRONLY | O_CREAT, 0o644)
        try #require(fd > 2)
        defer { close(fd) }
        let r = try runProcess("/bin/sh", ["-c", "test -e /proc/$$/fd/\(fd) && echo open || echo closed; test -e /proc/$$/fd/2 && echo stderr"])
        #expect(r.stdoutText == "closed\nstderr\n", "\(r.stdoutText)")
    }

    @Test("ALSA file capture reproduces the mpg123 reference decode bit for bit (control)")
    func fileCaptureControl() throws {
        let mp3 = try Fixtures.tone("harness-control", seconds: 1.5)
        let dir = try Harness.makeTemporaryDirectory()
        let cap = ALSAFileCapture(in: dir)
        let r = try runProcess("mpg123", ["-q", "--gapless", "-e", "s16", "-o", "alsa", "-a", cap.device, mp3.path])
        #expect(r.status == 0, "\(r.stderr)")
        let ref = try ReferenceDecoder.decodeS16(mp3)
        let got = try cap.s16()
        #expect(ref.count > 100_000)
        #expect(Array(got.prefix(ref.count)) == ref)
        #expect(got.dropFirst(ref.count).allSatisfy { $0 == 0 }, "only silence padding may follow")
    }

    @Test("the private null sink paces playback in real time and its monitor records it")
    func pulseNullSink() throws {
        try PulseNullSink.exclusive { sink in
            let wav = try Fixtures.wav("harness-tone", seconds: 2, synth: ["sine", "1000"], effects: ["gain", "-6"])
            let start = Date()
            let (r, rec) = try sink.record {
                try runProcess("aplay", ["-q", "-D", sink.alsaDevice, wav.path], environment: sink.environment)
            }
            let elapsed = Date().timeIntervalSince(start)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(elapsed > 1.8 && elapsed < 4, "2 s of audio took \(elapsed) s")
            let first = try #require(PCM.firstNonSilent(rec))
            let tone = rec[first..<min(rec.count, first + 2 * 44100)]
            // A −6 dBFS sine has RMS 0.5/√2 ≈ 0.354.
            #expect(abs(PCM.rms(tone) - 0.354) < 0.03, "rms \(PCM.rms(tone))")
            #expect(rec.count >= 2 * 2 * 44100 * 95 / 100, "about 2 s of stereo recorded, got \(rec.count) samples")
        }
    }

    @Test("the guard process stops a server when asked; its socket disappears")
    func teardown() throws {
        let sink = try PulseNullSink()
        let socket = sink.environment["PULSE_SERVER"]!.replacingOccurrences(of: "unix:", with: "")
        #expect(FileManager.default.fileExists(atPath: socket))
        sink.stop()
        let r = try runProcess("pactl", ["info"], environment: sink.environment)
        #expect(r.status != 0, "server still answers after stop()")
    }

    @Test("fixtures: bad inputs exist as described, the gapless pair splits off-frame")
    func fixtures() throws {
        let bad = try Fixtures.badInputs()
        #expect(!FileManager.default.fileExists(atPath: bad["missing"]!.path))
        #expect(try Data(contentsOf: bad["empty"]!).isEmpty)
        let (a, b) = try Fixtures.gaplessPair()
        let ra = try ReferenceDecoder.decodeS16(a), rb = try ReferenceDecoder.decodeS16(b)
        #expect(ra.count == 88_217 * 2)
        #expect(ra.count + rb.count == 4 * 44100 * 2)
    }
}
