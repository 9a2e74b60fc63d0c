import AudioEngine
import BacklineTestSupport
import Foundation
import Media
import MediaCore
import Testing

/// ReplayGain applied in the output's gain multiply, with mpd's arithmetic, heard through ALSA's
/// `file` plugin.
@Suite("ReplayGain: track, album, preamps and limiting, every format's values (ALSA file plugin)", Harness.audioTools)
struct ReplayGainTests {
    /// Plays `files` with `settings`, returning the capture and the scales the items were heard with.
    private func play(_ files: [URL], _ settings: ReplayGainSettings) throws -> (samples: [Float], scales: [Float]) {
        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let engine = makeEngine(device: cap.device)
        defer { engine.shutdown() }
        engine.replayGain = settings
        let log = EventLog(engine)
        engine.enqueue(files.map(\.path))
        guard log.waitForEnd() else { throw HarnessError("playback did not finish: \(log.all)") }
        let scales = log.all.compactMap { if case .itemStarted(let i, _) = $0 { i.replayGainScale } else { nil } }
        return (try cap.f32(), scales)
    }

    /// mpd's arithmetic, written out: 10^(gain/20) × preamp, at most 15, then 1/peak if limiting and it would clip.
    private func expected(gain: Double?, peak: Double?, preamp: Double = 0, missing: Double = 0, limit: Bool = true) -> Float {
        guard let gain else { return Float(pow(10, missing / 20)) }
        var s = min(pow(10, gain / 20) * pow(10, preamp / 20), 15)
        if limit, let peak, peak > 0, s * peak > 1 { s = 1 / peak }
        return Float(s)
    }

    @Test("FLAC's Vorbis comments, Opus R128 (+5 dB, the header gain once), MP3's TXXX, M4A's iTunes atoms: the capture is the decode times mpd's scale; off is bit-exact")
    func applied() throws {
        let src = try FormatFixtures.source("rg-src", seconds: 0.5)
        let tags = ["-T", "REPLAYGAIN_TRACK_GAIN=-6.00 dB", "-T", "REPLAYGAIN_TRACK_PEAK=0.5",
                    "-T", "REPLAYGAIN_ALBUM_GAIN=+3.00 dB", "-T", "REPLAYGAIN_ALBUM_PEAK=0.9"]
        let flac = try FormatFixtures.flac("rg-flac", from: src, args: tags)
        let plain = try FormatFixtures.flac("rg-plain", from: src)
        let opus = try FormatFixtures.opus("rg-opus", from: src, args: ["--comment", "R128_TRACK_GAIN=-2560"])
        let albumOnly = try FormatFixtures.flac("rg-album-only", from: src, args: ["-T", "REPLAYGAIN_ALBUM_GAIN=-3.00 dB"])
        let loud = try FormatFixtures.flac("rg-loud", from: src, args: ["-T", "REPLAYGAIN_TRACK_GAIN=+30.00 dB"])
        let ref = try FormatReference.flac(flac, bits: 16)
        let opusRef = try FormatReference.opus(opus)

        let off = try play([flac], .off)
        #expect(off.samples == ref, "off: bit-exact")
        let cases: [(ReplayGainSettings, URL, [Float], Float)] = [
            (ReplayGainSettings(mode: .track), flac, ref, expected(gain: -6, peak: 0.5)),
            // Album: +3 dB would clip a 0.9 peak: limited to 1/0.9.
            (ReplayGainSettings(mode: .album), flac, ref, expected(gain: 3, peak: 0.9)),
            (ReplayGainSettings(mode: .album, limit: false), flac, ref, expected(gain: 3, peak: 0.9, limit: false)),
            (ReplayGainSettings(mode: .track, preamp: 4), flac, ref, expected(gain: -6, peak: 0.5, preamp: 4)),
            (ReplayGainSettings(mode: .track, missingPreamp: -3), plain, ref, expected(gain: nil, peak: nil, missing: -3)),
            // Track mode falls back to the album's value; +30 dB with no peak stops at 15.
            (ReplayGainSettings(mode: .track), albumOnly, ref, expected(gain: -3, peak: nil)),
            (ReplayGainSettings(mode: .track), loud, ref, 15),
            // Opus: R128_TRACK_GAIN −2560/256 = −10 dB, + 5 dB to ReplayGain's reference; album mode falls back to it.
            (ReplayGainSettings(mode: .album), opus, opusRef, expected(gain: -5, peak: nil)),
        ]
        for (settings, file, reference, scale) in cases {
            let (got, scales) = try play([file], settings)
            let want = reference.map { $0 * scale }
            let d = zip(got, want).reduce(Float(0)) { max($0, abs($1.0 - $1.1)) }
            #expect(got.count == want.count && d <= 2e-7, "\(settings) \(file.lastPathComponent): scale \(scale), \(got.count) vs \(want.count), up to \(d) apart")
            #expect(scales == [scale], "\(settings): heard with \(scales)")
        }
        // MP3 (ID3v2 TXXX:REPLAYGAIN_*) and M4A (----:com.apple.iTunes:replaygain_*): the values are read from each.
        let mp3 = try Fixtures.mp3(from: src, name: "rg-mp3", lameArgs: ["-b", "192", "--tv", "TXXX=REPLAYGAIN_TRACK_GAIN=-4.00 dB",
                                                                          "--tv", "TXXX=REPLAYGAIN_TRACK_PEAK=0.8"])
        let m4a = try FormatFixtures.ffmpeg("rg-m4a", from: src, ext: "m4a", args: ["-c:a", "alac", "-movflags", "use_metadata_tags",
                                                                                    "-metadata", "replaygain_album_gain=-2.50 dB"])
        for (file, scale) in [(mp3, expected(gain: -4, peak: 0.8)), (m4a, expected(gain: -2.5, peak: nil))] {
            let plainDecode = try play([file], .off).samples
            let (got, scales) = try play([file], ReplayGainSettings(mode: .album))
            let d = zip(got, plainDecode.map { $0 * scale }).reduce(Float(0)) { max($0, abs($1.0 - $1.1)) }
            #expect(scales == [scale] && got.count == plainDecode.count && d <= 2e-7, "\(file.lastPathComponent): \(scales), up to \(d)")
        }
        // No values and no missing preamp: untouched, bit for bit.
        #expect(try play([plain], ReplayGainSettings(mode: .track)).samples == ref)
    }
}
