import AudioEngine
import BacklineTestSupport
import Foundation
import Media
import MediaCore
import Testing

/// Apple's formats and the rest of FFmpeg's, through the decoder registry and the engine into
/// ALSA's `file` plugin.
@Suite("FFmpeg: AAC and ALAC in M4A, WMA, WavPack (ALSA file plugin)", Harness.audioTools)
struct FFmpegFormatTests {
    private func maxDifference(_ a: [Float], _ b: [Float]) -> Float {
        zip(a, b).reduce(0) { max($0, abs($1.0 - $1.1)) }
    }

    struct Case: CustomStringConvertible {
        var file: URL
        var reference: () throws -> [Float]
        var codec: String
        /// Whether the reference (ffmpeg's CLI) keeps the encoder's padding after the
        /// container's end (MP4's AAC), which the decoder trims.
        var padded = false
        /// Whether the length equals the reference's sample count.
        var exactLength = true
        /// What the decoder says of its length (only MP4 states it to the sample).
        var accuracy = LengthAccuracy.exact
        /// The source's length in frames, when the container's exact length must equal it.
        var sourceFrames: Int?
        var description: String { file.lastPathComponent }
    }

    static func cases() throws -> [Case] {
        let s16 = try FormatFixtures.source("ff-44k", seconds: 1.3)
        let s48 = try FormatFixtures.source("ff-48k", seconds: 1.1, rate: 48_000)
        let s24 = try FormatFixtures.source("ff-48k-24", seconds: 0.9, rate: 48_000, bits: 24)
        let aac = try FormatFixtures.ffmpeg("ff-aac-44k", from: s16, ext: "m4a", args: ["-c:a", "aac", "-b:a", "192k", "-aac_pns", "0"], cover: true)
        let aac48 = try FormatFixtures.ffmpeg("ff-aac-48k", from: s48, ext: "m4a", args: ["-c:a", "aac", "-b:a", "128k", "-aac_pns", "0"])
        let alac = try FormatFixtures.ffmpeg("ff-alac-16", from: s16, ext: "m4a", args: ["-c:a", "alac"], cover: true)
        let alac24 = try FormatFixtures.ffmpeg("ff-alac-24", from: s24, ext: "m4a", args: ["-c:a", "alac", "-sample_fmt", "s32p"])
        let wma = try FormatFixtures.ffmpeg("ff-wma", from: s16, ext: "wma", args: ["-c:a", "wmav2", "-b:a", "128k"])
        let wv = try FormatFixtures.ffmpeg("ff-wavpack", from: s16, ext: "wv", args: ["-c:a", "wavpack"])
        return [
            // Lossless: the source's samples exactly.
            Case(file: alac, reference: { try FormatReference.sox(s16) }, codec: "alac"),
            Case(file: alac24, reference: { try FormatReference.sox(s24) }, codec: "alac"),
            Case(file: wv, reference: { try FormatReference.sox(s16) }, codec: "wavpack", accuracy: .stated),
            // Lossy: FFmpeg's own decode of the same file.
            // (1.3 s and 1.1 s are whole milliseconds: ffmpeg's edit list states them exactly.)
            Case(file: aac, reference: { try FormatReference.ffmpeg(aac) }, codec: "aac", padded: true, sourceFrames: 57_330),
            Case(file: aac48, reference: { try FormatReference.ffmpeg(aac48) }, codec: "aac", padded: true, sourceFrames: 52_800),
            Case(file: wma, reference: { try FormatReference.ffmpeg(wma) }, codec: "wmav2", exactLength: false, accuracy: .stated),
        ]
    }

    @Test("float32 device: ALAC and WavPack captures are the source's samples, AAC and WMA FFmpeg's own decode, with exact sample counts")
    func bitExact() throws {
        for c in try Self.cases() {
            let (cap, events) = try playToFile([c.file])
            let d = try DecoderRegistry.standard.open(path: c.file.path)
            let full = try c.reference()
            // ffmpeg's CLI keeps AAC's end padding: the decoder stops at the container's end.
            // The decoder's length is checked against the source's, not taken on trust.
            if let n = c.sourceFrames { #expect(d.lengthFrames == n, "\(c): length \(String(describing: d.lengthFrames)), source \(n)") }
            let ref = c.padded ? Array(full.prefix((d.lengthFrames ?? 0) * d.format.channels)) : full
            #expect(!c.padded || (full.count > ref.count && full.count - ref.count < 2048 * d.format.channels), "\(c): \(full.count) vs \(ref.count)")
            let got = try cap.f32()
            #expect(got.count == ref.count && maxDifference(got, ref) == 0,
                    "\(c): \(got.count) vs \(ref.count) samples, up to \(maxDifference(got, ref)) apart")
            #expect(events.compactMap(\.startedPath) == [c.file.path], "\(c): \(events.filter { $0.failedPath != nil })")
            #expect((d as? FFmpegDecoder)?.codecName == c.codec, "\(c)")
            #expect(d.lengthAccuracy == c.accuracy, "\(c): \(d.lengthAccuracy)")
            if c.exactLength {
                #expect(d.lengthFrames.map { $0 * d.format.channels } == ref.count, "\(c): length \(String(describing: d.lengthFrames))")
            }
        }
    }

    @Test("gapless AAC: a sweep cut at an odd sample into two .m4a files keeps each half's exact length and timing; MP3 → M4A → FLAC stays one device stream")
    func gapless() throws {
        let whole = try FormatFixtures.source("ff-gap-whole", seconds: 1.0)
        let a = try Fixtures.directory().appendingPathComponent("ff-gap-a-src.wav")
        let b = try Fixtures.directory().appendingPathComponent("ff-gap-b-src.wav")
        _ = try runProcess("sox", [whole.path, a.path, "trim", "0s", "22051s"])
        _ = try runProcess("sox", [whole.path, b.path, "trim", "22051s"])
        // The movie's time scale at the sample rate: the edit list then states each file's
        // length to the sample (at ffmpeg's default of 1000 it is rounded to the millisecond).
        let exact = ["-c:a", "aac", "-b:a", "256k", "-aac_pns", "0", "-movie_timescale", "44100"]
        let ma = try FormatFixtures.ffmpeg("ff-gap-a", from: a, ext: "m4a", args: exact)
        let mb = try FormatFixtures.ffmpeg("ff-gap-b", from: b, ext: "m4a", args: exact)
        let (cap, _) = try playToFile([ma, mb])
        let got = try cap.f32()
        let source = try FormatReference.sox(whole)
        // No gap and no repeated sample: the exact length, and each half lined up with the
        // source: AAC's error is smallest with no shift at all, against one frame either way
        // (the first and last 2048 frames of each file, where the codec starts and stops, left out).
        #expect(got.count == source.count, "\(got.count) vs \(source.count) samples")
        // And sample for sample FFmpeg's own decodes of the two files, each cut at its source's length.
        let joined = Array(try FormatReference.ffmpeg(ma).prefix(22051 * 2)) + Array(try FormatReference.ffmpeg(mb).prefix(22049 * 2))
        #expect(got.count == joined.count && maxDifference(got, joined) == 0, "up to \(maxDifference(got, joined)) from ffmpeg's decodes")
        let cut = 22051 * 2, edge = 2048 * 2
        for range in [edge..<(cut - edge), (cut + edge)..<(source.count - edge)] where range.upperBound + 2 <= got.count {
            // (RMS: a shift by one frame of this sweep costs ~0.05, the codec's own error less than half that.)
            let errors = [-2, 0, 2].map { shift in
                let d = zip(got[(range.lowerBound + shift)..<(range.upperBound + shift)], source[range]).map { ($0 - $1) * ($0 - $1) }
                return (d.reduce(0, +) / Float(d.count)).squareRoot()
            }
            #expect(errors[1] * 1.5 < errors[0] && errors[1] * 1.5 < errors[2],
                    "samples \(range): RMS error \(errors[1]) in place, \(errors[0]) and \(errors[2]) a frame off")
        }

        let mp3 = try Fixtures.mp3(from: whole, name: "ff-mixed")
        let flac = try FormatFixtures.flac("ff-mixed", from: whole)
        let (_, events) = try playToFile([mp3, ma, flac])
        #expect(events.compactMap(\.startedPath) == [mp3.path, ma.path, flac.path])
        #expect(events.filter { if case .deviceOpened = $0 { true } else { false } }.count == 1, "one device stream")
    }

    @Test("seeks in M4A (AAC, ALAC) land on the exact frame: decoding from frame 23456 gives the full decode's tail")
    func seekExact() throws {
        for c in try Self.cases() where c.file.pathExtension == "m4a" {
            let full = try FormatCases.decodeAll(try DecoderRegistry.standard.open(path: c.file.path))
            let d = try DecoderRegistry.standard.open(path: c.file.path)
            try d.seek(toFrame: 23456)
            let tail = try FormatCases.decodeAll(d)
            let expected = Array(full.dropFirst(23456 * d.format.channels))
            #expect(tail.count == expected.count && maxDifference(tail, expected) == 0,
                    "\(c): \(tail.count) vs \(expected.count) samples, up to \(maxDifference(tail, expected)) apart")
        }
    }

    @Test("tags and cover from MP4 atoms: title, artist, album, track 3 of 12, the PNG cover")
    func tags() throws {
        let c = try Self.cases()
        for file in [c[0].file, c[3].file] {
            let info = try DecoderRegistry.standard.info(path: file.path)
            let m = info.metadata
            #expect(m.title == file.deletingPathExtension().lastPathComponent && m.artist == "Backline" && m.album == "Formats", "\(m)")
            #expect(m.trackNumber == 3 && m.trackCount == 12, "\(m)")
            #expect(m.artwork?.mimeType == "image/png" && m.artwork?.data.starts(with: [0x89, 0x50, 0x4E, 0x47]) == true,
                    "\(String(describing: m.artwork?.mimeType))")
        }
    }

    @Test("bad input: a truncated M4A fails or plays what decodes with its reason, an MP4 with no audio says so; the queue goes on")
    func badInput() throws {
        let dir = try Harness.makeTemporaryDirectory()
        let good = try Self.cases()[0].file
        let bytes = try Data(contentsOf: good)
        let truncated = dir.appendingPathComponent("truncated.m4a")
        try bytes.prefix(bytes.count / 2).write(to: truncated)
        let video = dir.appendingPathComponent("video.mp4")
        let r = try runProcess("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=blue:s=32x32:d=0.2",
                                          "-c:v", "mpeg4", video.path])
        #expect(r.status == 0, "\(r.stderr)")
        // A FairPlay-protected file, as iTunes' store sold them: the audio's sample entry is
        // `drms` instead of `mp4a` (the encrypted samples do not matter: nothing decodes them).
        let aac = try #require(try Self.cases().first { $0.codec == "aac" }).file
        var protected = try Data(contentsOf: aac)
        let mp4a = Data("mp4a".utf8)
        let at = try #require(protected.range(of: mp4a), "the sample entry")
        protected.replaceSubrange(at, with: Data("drms".utf8))
        let drm = dir.appendingPathComponent("store.m4a")
        try protected.write(to: drm)
        let tone = try Fixtures.tone("ff-after", seconds: 0.3, frequency: 440)
        let (_, events) = try playToFile([truncated, video, drm, tone])
        let failures = events.compactMap { e -> (String, String)? in
            if case .itemFailed(_, let path, let error) = e { (URL(fileURLWithPath: path).lastPathComponent, error.reason) } else { nil }
        }
        #expect(failures.contains { $0.0 == "video.mp4" && $0.1 == "unsupported format: MPEG-4 video with no audio" }, "\(failures)")
        #expect(failures.contains { $0.0 == "store.m4a" && $0.1 == "unsupported format: DRM-protected audio (drms), which cannot be played" },
                "\(failures)")
        #expect(events.compactMap(\.startedPath).last == tone.path, "the queue went on: \(events)")
    }
}
