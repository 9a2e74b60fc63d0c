import AudioEngine
import BacklineTestSupport
import Foundation
import Media
import MediaCore
import Testing

/// Crossfade, heard through ALSA's `file` plugin: the capture around a join is the equal-power
/// mix of the two reference decodes; an album in order stays gapless, bit for bit.
@Suite("Crossfade: the equal-power mix of the references, albums gapless (ALSA file plugin)", Harness.audioTools)
struct CrossfadeTests {
    /// Two different sweeps at 48 kHz (7 s and 6 s), FLAC, tagged with `tags`.
    static func pair(_ name: String, tags: ([String], [String]) = ([], [])) throws -> (URL, URL) {
        let srcA = try FormatFixtures.source("xf-a", seconds: 7, rate: 48_000)
        let srcB = try FormatFixtures.source("xf-b", seconds: 6, rate: 48_000)
        return (try FormatFixtures.flac("\(name)-a", from: srcA, args: tags.0), try FormatFixtures.flac("\(name)-b", from: srcB, args: tags.1))
    }

    /// Plays `files` with `crossfade` seconds into a file capture; the samples and the events.
    static func play(_ files: [URL], crossfade: Double, replayGain: ReplayGainSettings = .off) throws -> ([Float], [EngineEvent]) {
        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let engine = makeEngine(device: cap.device)
        defer { engine.shutdown() }
        engine.crossfade = crossfade
        engine.replayGain = replayGain
        let log = EventLog(engine)
        engine.enqueue(files.map(\.path))
        guard log.waitForEnd() else { throw HarnessError("playback did not finish: \(log.all)") }
        return (try cap.f32(), log.all)
    }

    /// `a` then `b` (stereo), the last `fade` frames of `a` mixed with the first of `b` by the
    /// equal-power curve written out here: sin and cos of π/2 · (k + ½) / fade.
    static func mixed(_ a: [Float], _ b: [Float], fade: Int, scaleA: Float = 1) -> [Float] {
        let la = a.count / 2
        var out = Array(a[..<(2 * (la - fade))]).map { $0 * scaleA }
        for k in 0..<fade {
            let theta = (Double(k) + 0.5) / Double(fade) * Double.pi / 2
            for c in 0..<2 {
                out.append(b[2 * k + c] * Float(sin(theta)) + a[2 * (la - fade + k) + c] * scaleA * Float(cos(theta)))
            }
        }
        return out + b[(2 * fade)...]
    }

    static func maxDifference(_ x: [Float], _ y: [Float]) -> Float {
        zip(x, y).reduce(Float(0)) { max($0, abs($1.0 - $1.1)) }
    }

    @Test("crossfade 3: the capture is the first item up to its last 3 s, their equal-power mix, then the rest of the second (within 1 LSB of 16 bits); the second item starts, and the first ends, at the fade's first frame")
    func equalPowerMix() throws {
        let (a, b) = try Self.pair("xf-mix")
        let refA = try FormatReference.flac(a, bits: 16), refB = try FormatReference.flac(b, bits: 16)
        let (got, events) = try Self.play([a, b], crossfade: 3)
        let fade = 3 * 48_000
        let want = Self.mixed(refA, refB, fade: fade)
        #expect(got.count == want.count, "\(got.count) samples, want \(want.count) (\(refA.count) + \(refB.count) less the overlap)")
        let d = Self.maxDifference(got, want)
        #expect(d <= 1.0 / 32768, "up to \(d) from the mix")
        // Not the plain concatenation: the fade really happened.
        #expect(got.count != refA.count + refB.count)
        // The events: A's end, then B's start; B's length is its own.
        let trace = events.compactMap { e -> String? in
            switch e {
            case .itemStarted(let i, _): "start \(URL(fileURLWithPath: i.path).lastPathComponent) \(i.durationFrames)"
            case .itemEnded: "end"
            case .endOfInput: "eoi"
            default: nil
            }
        }
        #expect(trace == ["start xf-mix-a.flac 336000", "end", "start xf-mix-b.flac 288000", "end", "eoi"], "\(trace)")
    }

    @Test("with ReplayGain, each item keeps its own scale through the fade (the ending one's samples times its scale over the next one's)")
    func replayGainThroughTheFade() throws {
        let (a, b) = try Self.pair("xf-rg", tags: (["-T", "REPLAYGAIN_TRACK_GAIN=-6.00 dB"], []))
        let refA = try FormatReference.flac(a, bits: 16), refB = try FormatReference.flac(b, bits: 16)
        let (got, _) = try Self.play([a, b], crossfade: 1, replayGain: ReplayGainSettings(mode: .track))
        let scale = Float(pow(10, -6.0 / 20))
        let want = Self.mixed(refA, refB, fade: 48_000, scaleA: scale)
        let d = Self.maxDifference(got, want)
        #expect(got.count == want.count && d <= 1.0 / 32768, "\(got.count) vs \(want.count), up to \(d)")
    }

    @Test("consecutive tracks of one album in order are joined gaplessly, bit for bit; the same album out of order, and two albums, crossfade")
    func albumStaysGapless() throws {
        let album = ["-T", "ALBUM=Live at the Roundhouse", "-T", "ALBUMARTIST=The Band"]
        let (a, b) = try Self.pair("xf-album", tags: (album + ["-T", "TRACKNUMBER=4"], album + ["-T", "TRACKNUMBER=5"]))
        let refA = try FormatReference.flac(a, bits: 16), refB = try FormatReference.flac(b, bits: 16)
        let (got, _) = try Self.play([a, b], crossfade: 3)
        let whole = got == refA + refB
        #expect(whole, "gapless and bit-exact: \(got.count) vs \(refA.count + refB.count) samples")

        let (c, d) = try Self.pair("xf-album-back", tags: (album + ["-T", "TRACKNUMBER=5"], album + ["-T", "TRACKNUMBER=4"]))
        let (back, _) = try Self.play([c, d], crossfade: 2)
        #expect(back.count == refA.count + refB.count - 2 * 2 * 48_000, "out of order: crossfaded (\(back.count))")
    }

    @Test("no fade out of or into an item whose length is estimated from its bit rate (raw AAC): both joins are gapless, each item heard whole, where a fade would have begun at a guessed end")
    func noFadeOnEstimatedLength() throws {
        let src = try FormatFixtures.source("xf-adts", seconds: 4, rate: 48_000)
        let aac = try FormatFixtures.ffmpeg("xf-adts", from: src, ext: "aac", args: ["-c:a", "aac", "-b:a", "128k"])
        #expect(try DecoderRegistry.standard.open(path: aac.path).lengthAccuracy == .estimated)
        let (_, b) = try Self.pair("xf-adts")
        let (aacAlone, _) = try Self.play([aac], crossfade: 0)
        let (bAlone, _) = try Self.play([b], crossfade: 0)
        let (out, _) = try Self.play([aac, b], crossfade: 2)
        let outWhole = out == aacAlone + bAlone
        #expect(outWhole, "out of raw AAC: \(out.count) samples, the two alone \(aacAlone.count) + \(bAlone.count)")
        let (into, _) = try Self.play([b, aac], crossfade: 2)
        let intoWhole = into == bAlone + aacAlone
        #expect(intoWhole, "into raw AAC: \(into.count) samples, the two alone \(bAlone.count) + \(aacAlone.count)")
    }

    @Test("no fade across a change of rate: the device reopens at the second item, which is heard whole from its first sample")
    func noFadeAcrossRates() throws {
        let src44 = try FormatFixtures.source("xf-44", seconds: 3, rate: 44_100)
        let a = try FormatFixtures.flac("xf-44", from: src44)
        let (_, b) = try Self.pair("xf-rate")
        let (got, events) = try Self.play([a, b], crossfade: 2)
        // ALSA's file plugin starts its file again when the device reopens at the new rate:
        // what it holds is the second item alone, untouched by any fade.
        let refB = try FormatReference.flac(b, bits: 16)
        let same = got == refB
        #expect(same, "\(got.count) samples vs the second item's \(refB.count)")
        #expect(events.filter { if case .deviceOpened = $0 { true } else { false } }.count == 2)
    }

    @Test("the album rule: same album (and album artist, MusicBrainz id where both have one), the next track or the next disc's first; without numbers, the same album")
    func albumRule() {
        func m(_ album: String?, _ track: Int?, disc: Int? = nil, artist: String? = nil) -> TrackMetadata {
            var t = TrackMetadata()
            t.album = album
            t.trackNumber = track
            t.discNumber = disc
            t.albumArtist = artist
            return t
        }
        #expect(Crossfade.continuesAlbum(m("A", 1), m("A", 2)))
        #expect(!Crossfade.continuesAlbum(m("A", 2), m("A", 1)))
        #expect(!Crossfade.continuesAlbum(m("A", 1), m("A", 3)))
        #expect(!Crossfade.continuesAlbum(m("A", 1), m("B", 2)))
        #expect(!Crossfade.continuesAlbum(m(nil, 1), m(nil, 2)))
        #expect(!Crossfade.continuesAlbum(m("", 1), m("", 2)))
        #expect(Crossfade.continuesAlbum(m("A", 12, disc: 1), m("A", 1, disc: 2)))
        #expect(!Crossfade.continuesAlbum(m("A", 12, disc: 1), m("A", 2, disc: 2)))
        #expect(!Crossfade.continuesAlbum(m("A", 1, artist: "X"), m("A", 2, artist: "Y")))
        #expect(Crossfade.continuesAlbum(m("A", nil), m("A", 7)))
        #expect(Crossfade.gains(frame: 0, of: 2).out > 0.9 && Crossfade.gains(frame: 1, of: 2).in > 0.9)
        for k in [0, 17, 99] {
            let g = Crossfade.gains(frame: k, of: 100)
            #expect(abs(g.out * g.out + g.in * g.in - 1) < 1e-6, "equal power at \(k)")
        }
    }
}
