import AudioEngine
import BacklineTestSupport
import Foundation
import Media
import MediaCore
import Testing

/// The open formats, through the decoder registry and the engine into ALSA's `file` plugin.
@Suite("Every format plays bit-exact and gapless (ALSA file plugin)", Harness.audioTools)
struct FormatTests {
    @Test("float32 device: each format's capture equals its reference decoder's, sample for sample, with the exact sample count")
    func bitExact() throws {
        for c in try FormatCases.all() {
            let (cap, events) = try playToFile([c.file])
            let ref = try c.reference()
            let got = try cap.f32()
            #expect(got.count == ref.count, "\(c): \(got.count) vs \(ref.count) samples")
            let diff = FormatCases.maxDifference(got, ref)
            #expect(diff <= c.tolerance, "\(c): differs by up to \(diff)")
            #expect(events.compactMap(\.startedPath) == [c.file.path], "\(c): \(events)")
        }
    }

    @Test("multichannel: a 5.1 FLAC, WAV and Opus reach a device that takes 6 channels as they are (ALSA's order), bit-exact; capped at 2 they are down-mixed (ITU-R BS.775) and the item says so")
    func multichannel() throws {
        let src = try FormatFixtures.source("fmt-51", seconds: 0.9, rate: 48_000, channels: 6)
        let flac = try FormatFixtures.flac("fmt-flac-51", from: src)
        let wav = try FormatFixtures.sox("fmt-wav-51-f32", from: src, ext: "wav", args: ["-e", "floating-point", "-b", "32"])
        let opus = try FormatFixtures.opus("fmt-opus-51", from: src)
        // Opus (mapping family 1) is stored in Vorbis's order; opusdec writes WAVE's.
        let cases: [(URL, () throws -> [Float], Float)] = [
            (flac, { try FormatReference.flac(flac, bits: 16) }, 0), (wav, { try FormatReference.sox(wav) }, 0),
            (opus, { try FormatReference.opus(opus) }, 6e-8),
        ]
        for (file, reference, tolerance) in cases {
            let ref = try reference()  // FL FR FC LFE BL BR (WAVE's order)
            let frames = ref.count / 6
            // ALSA's 5.1 order: FL FR RL RR FC LFE.
            var alsa = [Float](repeating: 0, count: ref.count)
            for i in 0..<frames { for (k, c) in [0, 1, 4, 5, 2, 3].enumerated() { alsa[6 * i + k] = ref[6 * i + c] } }
            let (cap, events) = try playToFile([file])
            let got = try cap.f32()
            #expect(got.count == alsa.count && FormatCases.maxDifference(got, alsa) <= tolerance,
                    "\(file.lastPathComponent): 6 channels as they are, \(got.count) vs \(alsa.count) samples, up to \(FormatCases.maxDifference(got, alsa)) apart")
            let audio = events.compactMap { if case .itemStarted(let i, _) = $0 { i.audio } else { nil } }.first
            #expect(audio?.sourceChannels == 6 && audio?.channels == 6 && audio?.isDownmixed == false, "\(String(describing: audio))")
            if tolerance == 0 {
                // After a stereo item of an odd length the 5.1 item would start at a ring position
                // that is no multiple of its 24-byte frame, were it not aligned: its 1 MB wraps the
                // 755 KiB ring, and a frame split there would rotate the channels after it.
                let odd = try FormatFixtures.source("fmt-odd-stereo", seconds: 1001.0 / 48_000, rate: 48_000)
                let (cap2, _) = try playToFile([odd, file])
                let tail = Array(try cap2.f32().suffix(alsa.count))
                #expect(tail == alsa, "\(file.lastPathComponent) after an odd stereo item: up to \(FormatCases.maxDifference(tail, alsa)) apart")
            }

            // BS.775 with each side normalised: L = (FL + h·FC + h·BL) / (1 + 2h), likewise R; LFE left out.
            let h: Float = 0.70710677, n: Float = 1 + h + h
            var mix = [Float](repeating: 0, count: frames * 2)
            for i in 0..<frames {
                let f = ref[(6 * i)..<(6 * i + 6)].map { $0 }
                mix[2 * i] = f[0] / n + f[2] * (h / n) + f[4] * (h / n)
                mix[2 * i + 1] = f[1] / n + f[2] * (h / n) + f[5] * (h / n)
            }
            let (down, downEvents) = try playToFile([file], maxChannels: 2)
            let stereo = try down.f32()
            #expect(stereo.count == mix.count, "\(file.lastPathComponent): \(stereo.count) vs \(mix.count) samples")
            #expect(FormatCases.maxDifference(stereo, mix) <= 1e-6 + 3 * tolerance, "\(file.lastPathComponent): down-mix differs by \(FormatCases.maxDifference(stereo, mix))")
            let downAudio = downEvents.compactMap { if case .itemStarted(let i, _) = $0 { i.audio } else { nil } }.first
            #expect(downAudio?.isDownmixed == true && downAudio?.channels == 2, "\(String(describing: downAudio))")
            #expect(downAudio.map(String.init(describing:))?.contains("5.1, down-mixed to stereo (ITU-R BS.775)") == true,
                    "\(String(describing: downAudio))")
        }
    }

    @Test("chained Ogg (Vorbis and Opus): the links play as one item, gapless; the next link's tags take effect at its first sample")
    func chained() throws {
        let a = try FormatFixtures.source("fmt-chain-a", seconds: 0.7, rate: 48_000)
        let b = try FormatFixtures.source("fmt-chain-b", seconds: 0.5, rate: 48_000)
        for opus in [false, true] {
            let chained = try FormatFixtures.chainedOgg(opus ? "fmt-chain-opus" : "fmt-chain-vorbis",
                                                        parts: [(a, "First"), (b, "Second")], opus: opus)
            let first = try FormatCases.decodeAll(try DecoderRegistry.standard.open(path: chained.deletingPathExtension().path + "-link0." + chained.pathExtension))
            let second = try FormatCases.decodeAll(try DecoderRegistry.standard.open(path: chained.deletingPathExtension().path + "-link1." + chained.pathExtension))
            let d = try DecoderRegistry.standard.open(path: chained.path)
            #expect(d.metadata.title == "First")
            var got: [Float] = [], updates: [(sample: Int, title: String?)] = []
            var buf = [Float](repeating: 0, count: 16384)
            while true {
                let (bytes, status) = try buf.withUnsafeMutableBytes { try d.decode(into: $0, spillingInto: .init(start: nil, count: 0)) }
                got += buf.prefix(bytes / 4)
                if let m = d.takeMetadataUpdate() { updates.append((got.count, m.title)) }
                if status == .done { break }
            }
            let joined = first + second
            #expect(got.count == joined.count && FormatCases.maxDifference(got, joined) == 0,
                    "\(chained.lastPathComponent): \(got.count) vs \(first.count) + \(second.count) samples, up to \(FormatCases.maxDifference(got, joined)) apart")
            #expect(updates.count == 1 && updates.first?.sample == first.count && updates.first?.title == "Second",
                    "\(chained.lastPathComponent): \(updates) (link 1 starts at sample \(first.count))")
            #expect(d.lengthFrames == (first.count + second.count) / 2)
            // A seek back into the first link announces its tags again, before its first frame.
            try d.seek(toFrame: 100)
            let (bytes, _) = try buf.withUnsafeMutableBytes { try d.decode(into: $0, spillingInto: .init(start: nil, count: 0)) }
            #expect(bytes == 0 && d.takeMetadataUpdate()?.title == "First", "\(chained.lastPathComponent): the first link's tags after a seek back")
        }
    }

    @Test("gapless: a sweep cut at an odd sample into two files rejoins exactly, in FLAC, WAV and AIFF; Opus and Vorbis keep the exact length")
    func gapless() throws {
        let whole = try FormatFixtures.source("fmt-gapless-whole", seconds: 2.2)
        let dir = try Fixtures.directory()
        let a = try Fixtures.once(dir.appendingPathComponent("fmt-gap-a.wav")) { _ = try runProcess("sox", [whole.path, $0.path, "trim", "0s", "44117s"]) }
        let b = try Fixtures.once(dir.appendingPathComponent("fmt-gap-b.wav")) { _ = try runProcess("sox", [whole.path, $0.path, "trim", "44117s"]) }
        let wholeRef = try FormatReference.sox(whole)
        let pairs: [(URL, URL)] = [
            (try FormatFixtures.flac("fmt-gap-a", from: a), try FormatFixtures.flac("fmt-gap-b", from: b)),
            (a, b),
            (try FormatFixtures.sox("fmt-gap-a", from: a, ext: "aiff", args: []), try FormatFixtures.sox("fmt-gap-b", from: b, ext: "aiff", args: [])),
        ]
        for (x, y) in pairs {
            let (cap, events) = try playToFile([x, y])
            let got = try cap.f32()
            #expect(got == wholeRef, "\(x.lastPathComponent) + \(y.lastPathComponent): \(got.count) vs \(wholeRef.count) samples, max difference \(FormatCases.maxDifference(got, wholeRef))")
            let opened = events.filter { if case .deviceOpened = $0 { true } else { false } }
            #expect(opened.count == 1, "one device stream: \(opened)")
        }
        // Lossy codecs: each half keeps its exact length (Opus at 48 kHz: the encoder's pre-skip
        // and end trimming give back exactly the input's duration).
        let va = try FormatFixtures.vorbis("fmt-gap-a", from: a), vb = try FormatFixtures.vorbis("fmt-gap-b", from: b)
        let (vcap, _) = try playToFile([va, vb])
        #expect(try vcap.f32().count == wholeRef.count)
        let oa = try FormatFixtures.opus("fmt-gap-a", from: a), ob = try FormatFixtures.opus("fmt-gap-b", from: b)
        let (ocap, _) = try playToFile([oa, ob])
        #expect(try ocap.f32().count == (try FormatReference.opus(oa)).count + (try FormatReference.opus(ob)).count)
    }

    @Test("a FLAC → Vorbis → MP3 → WAV queue at one rate stays one device stream; an Opus item at 48 kHz after it reopens the device")
    func mixedQueue() throws {
        let s = try FormatFixtures.source("fmt-mixed", seconds: 0.8)
        let files = [try FormatFixtures.flac("fmt-mixed", from: s), try FormatFixtures.vorbis("fmt-mixed", from: s),
                     try Fixtures.mp3(from: s, name: "fmt-mixed"), s, try FormatFixtures.opus("fmt-mixed", from: s)]
        let (_, events) = try playToFile(files)
        #expect(events.compactMap(\.startedPath) == files.map(\.path))
        let rates = events.compactMap { if case .deviceOpened(let c) = $0 { c.rate } else { nil } }
        #expect(rates == [44100, 48000], "\(rates)")
        #expect(!events.contains { $0.failedPath != nil })
    }

    @Test("seeks land on the exact sample in every format: decoding from frame 23456 gives the reference's tail")
    func seekExact() throws {
        for c in try FormatCases.all() {
            let d = try DecoderRegistry.standard.open(path: c.file.path)
            let ref = try c.reference()
            let frame = 23456
            try d.seek(toFrame: frame)
            let got = try FormatCases.decodeAll(d)
            let tail = Array(ref.dropFirst(frame * d.format.channels))
            #expect(got.count == tail.count, "\(c): \(got.count) vs \(tail.count) samples after the seek")
            // Opus decodes from a pre-roll after a seek (opusfile's 80 ms): the sample lands
            // exactly (the count above), the decoder state converges over that pre-roll.
            let settle = c.file.pathExtension == "opus" ? 3840 * d.format.channels : 0
            let after = FormatCases.maxDifference(Array(got.dropFirst(settle)), Array(tail.dropFirst(settle)))
            if settle == 0 {
                #expect(after <= c.tolerance, "\(c): differs by up to \(after) after the seek")
            } else {
                // Lossy state after a pre-roll: close, and closest with no shift (the exact sample).
                let ch = d.format.channels
                let shifted = [-2, -1, 1, 2].map { k in
                    FormatCases.maxDifference(Array(got.dropFirst(settle + k * ch)), Array(tail.dropFirst(settle)))
                }
                #expect(after < 0.02 && shifted.allSatisfy { $0 > after * 2 }, "\(c): \(after) unshifted, \(shifted) shifted by ±1, 2 frames")
            }
            #expect(d.lengthFrames.map { $0 * d.format.channels } == ref.count, "\(c): length \(String(describing: d.lengthFrames))")
        }
    }

    @Test("by content, not by name: a .flac that is MP3 and an .mp3 that is FLAC both play; AAC in .m4a plays (through FFmpeg); Sun audio, random bytes, an empty file and a truncated FLAC fail with a clear reason and the queue goes on")
    func badInput() throws {
        let s = try FormatFixtures.source("fmt-bad", seconds: 0.6)
        let dir = try Harness.makeTemporaryDirectory("fmt-bad")
        let mp3 = try Fixtures.mp3(from: s, name: "fmt-bad")
        let flac = try FormatFixtures.flac("fmt-bad", from: s)
        let fakeFLAC = dir.appendingPathComponent("really-mp3.flac"), fakeMP3 = dir.appendingPathComponent("really-flac.mp3")
        try FileManager.default.copyItem(at: mp3, to: fakeFLAC)
        try FileManager.default.copyItem(at: flac, to: fakeMP3)
        let m4a = dir.appendingPathComponent("t.m4a")
        let r = try runProcess("ffmpeg", ["-loglevel", "error", "-y", "-i", s.path, "-c:a", "aac", "-b:a", "96k", m4a.path])
        #expect(r.status == 0, "\(r.stderr)")
        let au = dir.appendingPathComponent("t.au")
        #expect(try runProcess("sox", [s.path, au.path]).status == 0)
        let random = dir.appendingPathComponent("noise.flac")
        var rng = SystemRandomNumberGenerator()
        try Data((0..<40_000).map { _ in UInt8.random(in: 0...255, using: &rng) }).write(to: random)
        let empty = dir.appendingPathComponent("empty.ogg")
        try Data().write(to: empty)
        let whole = try Data(contentsOf: flac)
        let truncated = dir.appendingPathComponent("cut.flac")
        try whole.prefix(whole.count / 2).write(to: truncated)

        // Headers shorter than the chunk type they name (found by the fuzzer: the description
        // of a 7-byte `FORM` file stopped the process).
        let shortIFF = dir.appendingPathComponent("short.aiff"), shortRIFF = dir.appendingPathComponent("short.wav")
        try Data("FORM\u{1F}\u{0C}\u{01}".utf8).write(to: shortIFF)
        try Data("RIFF\u{08}\u{00}\u{00}\u{00}WA".utf8).write(to: shortRIFF)

        let (_, events) = try playToFile([fakeFLAC, m4a, au, random, fakeMP3, empty, shortIFF, shortRIFF, truncated, s])
        let started = events.compactMap(\.startedPath)
        #expect(started == [fakeFLAC.path, m4a.path, fakeMP3.path, truncated.path, s.path], "\(started)")
        func reason(_ url: URL) -> String? {
            for e in events { if case .itemFailed(_, let path, let error) = e, path == url.path { return error.reason } }
            return nil
        }
        #expect(reason(au) == "unsupported format: Sun/NeXT audio", "\(String(describing: reason(au)))")
        #expect(reason(random) == "unsupported format: not an audio format this player knows", "\(String(describing: reason(random)))")
        #expect(reason(empty) == "unsupported format: empty file", "\(String(describing: reason(empty)))")
        #expect(reason(shortIFF) == "unsupported format: IFF", "\(String(describing: reason(shortIFF)))")
        #expect(reason(shortRIFF) == "unsupported format: RIFF WA", "\(String(describing: reason(shortRIFF)))")
        #expect(reason(truncated)?.hasPrefix("truncated: it ends after ") == true, "\(String(describing: reason(truncated)))")
        #expect(events.contains(.endOfInput))
    }

    @Test("clips (MPD's rangeid): the part of a file between two times plays sample-exact, two clips of one file rejoin gaplessly, in MP3 and FLAC")
    func clips() throws {
        let s = try FormatFixtures.source("fmt-clip", seconds: 2.0)
        for file in [try Fixtures.mp3(from: s, name: "fmt-clip"), try FormatFixtures.flac("fmt-clip", from: s)] {
            let ref = file.pathExtension == "mp3" ? try ReferenceDecoder.decodeF32(file) : try FormatReference.flac(file, bits: 16)
            let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
            let engine = makeEngine(device: cap.device)
            defer { engine.shutdown() }
            let log = EventLog(engine)
            // 0.25–0.75 s, then 0.75 s to the end: the second half of the file from 0.25 s, with no seam.
            engine.enqueue(items: [EngineItem(path: file.path, clip: PlaybackClip(start: 0.25, end: 0.75)),
                                   EngineItem(path: file.path, clip: PlaybackClip(start: 0.75))])
            #expect(log.waitForEnd())
            let got = try cap.f32()
            let expected = Array(ref[(11025 * 2)...])
            #expect(got.count == expected.count && got == expected,
                    "\(file.lastPathComponent): \(got.count) vs \(expected.count) samples, max difference \(FormatCases.maxDifference(got, expected))")
            let lengths = log.all.compactMap { if case .itemLoaded(let i) = $0 { i.durationFrames } else { nil } }
            #expect(lengths == [22050, ref.count / 2 - 33075], "\(lengths)")
        }
    }

    @Test("every decoder reads any byte source (one in memory, with no file descriptor, as the HTTP input will be): the same samples as the reference")
    func memorySource() throws {
        let s16 = try FormatFixtures.source("fmt-mem", seconds: 0.9)
        let mp3 = try Fixtures.mp3(from: s16, name: "fmt-mem")
        let cases: [(URL, [Float], Float)] = [
            (mp3, try ReferenceDecoder.decodeF32(mp3), 0),
            (try FormatFixtures.flac("fmt-mem", from: s16), try FormatReference.flac(try FormatFixtures.flac("fmt-mem", from: s16), bits: 16), 0),
            (try FormatFixtures.opus("fmt-mem", from: s16), try FormatReference.opus(try FormatFixtures.opus("fmt-mem", from: s16)), 6e-8),
            (s16, try FormatReference.sox(s16), 0),
        ]
        for (url, ref, tolerance) in cases {
            let d = try DecoderRegistry.standard.open(MemorySource(name: url.lastPathComponent, bytes: Array(try Data(contentsOf: url))))
            let got = try FormatCases.decodeAll(d)
            #expect(got.count == ref.count && FormatCases.maxDifference(got, ref) <= tolerance, "\(url.lastPathComponent): \(got.count) vs \(ref.count)")
        }
    }

    @Test("a FLAC file whose frames hold more than its STREAMINFO says (fuzz finding decoder/flac-past-length): exactly the declared length decodes, the reference's first samples, and the position never passes the duration")
    func flacPastItsLength() throws {
        let s16 = try FormatFixtures.source("fmt-flac-len", seconds: 0.5)
        var bytes = [UInt8](try Data(contentsOf: try FormatFixtures.flac("fmt-flac-len", from: s16)))
        // STREAMINFO's 36-bit total: 5,000 frames of the 22,050 the frames hold.
        let declared = 5000
        bytes[21] &= 0xF0
        bytes.replaceSubrange(22..<26, with: [0, 0, UInt8(declared >> 8), UInt8(declared & 0xFF)])
        let file = try Fixtures.directory().appendingPathComponent("fmt-flac-len-short.flac")
        try Data(bytes).write(to: file)
        let d = try DecoderRegistry.standard.open(path: file.path)
        #expect(d.lengthFrames == declared)
        let got = try FormatCases.decodeAll(d)
        let reference = try FormatReference.sox(s16)
        #expect(got.count == declared * 2 && Array(got) == Array(reference.prefix(declared * 2)), "\(got.count) samples")
    }

    @Test("raw AAC whose channels change (a stereo ADTS stream, then a mono one; fuzz finding decoder/ffmpeg-channels): the stereo part decodes, then the item fails with the reason, as a chained Ogg stream that changes its format does")
    func aacChannelsChange() throws {
        let stereo = try FormatFixtures.ffmpeg("fmt-adts-2ch", from: try FormatFixtures.source("fmt-adts-2ch", seconds: 1),
                                               ext: "aac", args: ["-c:a", "aac", "-b:a", "128k"])
        let mono = try FormatFixtures.ffmpeg("fmt-adts-1ch", from: try FormatFixtures.source("fmt-adts-1ch", seconds: 1, channels: 1),
                                             ext: "aac", args: ["-c:a", "aac", "-b:a", "64k"])
        let file = try Fixtures.directory().appendingPathComponent("fmt-adts-2-then-1.aac")
        try (Data(contentsOf: stereo) + Data(contentsOf: mono)).write(to: file)
        let d = try DecoderRegistry.standard.open(path: file.path)
        #expect(d.format.channels == 2 && d.format.rate == 44100 && d.lengthAccuracy == .estimated)
        var frames = 0
        var buf = [Float](repeating: 0, count: 16384)
        var failure: MediaError?
        while failure == nil {
            do {
                let (bytes, status) = try buf.withUnsafeMutableBytes { (b) throws(MediaError) in
                    try d.decode(into: b, spillingInto: .init(start: nil, count: 0))
                }
                frames += bytes / 8
                if status == .done { break }
            } catch {
                failure = error as? MediaError ?? MediaError(.io, "\(error)", item: file.path)
            }
        }
        #expect(failure?.reason.contains("the format changes mid-stream to 44100 Hz, 1 channel") == true, "\(String(describing: failure))")
        #expect(frames >= 44100 && frames < 44100 + 8 * 1024, "\(frames) stereo frames before the mono part")
    }

    @Test("items by location: a file: URI (percent-escaped) plays as its path does; another scheme fails with its name")
    func locations() throws {
        let s = try FormatFixtures.source("fmt-uri", seconds: 0.3)
        let dir = try Harness.makeTemporaryDirectory("fmt uri")
        let spaced = dir.appendingPathComponent("a b.flac")
        try FileManager.default.copyItem(at: try FormatFixtures.flac("fmt-uri", from: s), to: spaced)
        let uri = "file://" + spaced.path.replacingOccurrences(of: " ", with: "%20")
        let engine = makeEngine(device: ALSAFileCapture(in: dir).device)
        defer { engine.shutdown() }
        let log = EventLog(engine)
        // (A scheme no input takes: the HTTP input may be registered in this process.)
        engine.enqueue([uri, "gopher://example.invalid/x.mp3"])
        #expect(log.waitForEnd())
        #expect(log.all.compactMap(\.startedPath) == [uri])
        let reason = log.all.compactMap { e -> String? in if case .itemFailed(_, _, let err) = e { err.reason } else { nil } }
        #expect(reason == ["unsupported format: no input for gopher: URLs"], "\(reason)")
    }

    @Test("tags without decoding: Vorbis comments (two ARTIST comments are two artists), the FLAC picture, ReplayGain; WAV's INFO chunk")
    func tags() throws {
        let s = try FormatFixtures.source("fmt-tags", seconds: 0.4)
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 64))
        let pic = try Fixtures.directory().appendingPathComponent("fmt-cover.png")
        try png.write(to: pic)
        let flac = try FormatFixtures.flac("fmt-tags", from: s, args: [
            "-T", "TITLE=Étude", "-T", "ARTIST=Ann", "-T", "ARTIST=Bob", "-T", "ALBUM=Tests", "-T", "DATE=2026",
            "-T", "TRACKNUMBER=3", "-T", "TRACKTOTAL=9", "-T", "GENRE=Ambient", "-T", "REPLAYGAIN_TRACK_GAIN=-6.50 dB",
            "--picture", "3|image/png||16x16x24|\(pic.path)"])
        let info = try DecoderRegistry.standard.info(path: flac.path)
        let m = info.metadata
        #expect(m.values(.artist) == ["Ann", "Bob"], "\(m.tags)")
        #expect(m.title == "Étude" && m.album == "Tests" && m.year == "2026" && m.genre == "Ambient")
        #expect(m.trackNumber == 3 && m.trackCount == 9)
        #expect(m.replayGain.trackGain == -6.5)
        #expect(m.artwork?.mimeType == "image/png" && m.artwork?.data == Array(png))
        #expect(info.lengthFrames == 17640 && info.format == StreamFormat(rate: 44100, channels: 2) && info.encoding == .integer(bits: 16))

        let opus = try FormatFixtures.opus("fmt-tags", from: s, args: ["--artist", "Ann", "--artist", "Bob", "--title", "Op"])
        let o = try DecoderRegistry.standard.info(path: opus.path).metadata
        #expect(o.values(.artist) == ["Ann", "Bob"] && o.title == "Op", "\(o.tags)")

        let vorbis = try FormatFixtures.vorbis("fmt-tags", from: s, args: ["-a", "Ann", "-t", "Vor", "-G", "Jazz"])
        let v = try DecoderRegistry.standard.info(path: vorbis.path).metadata
        #expect(v.artist == "Ann" && v.title == "Vor" && v.genre == "Jazz", "\(v.tags)")

        // A LIST INFO chunk, as FFmpeg writes one (odd-sized values padded).
        let wav = try Fixtures.directory().appendingPathComponent("fmt-tags-info.wav")
        let r = try runProcess("ffmpeg", ["-loglevel", "error", "-y", "-i", s.path, "-metadata", "title=Wave Title",
                                          "-metadata", "artist=Ann", "-metadata", "comment=A comment", "-c", "copy", wav.path])
        #expect(r.status == 0, "\(r.stderr)")
        let w = try DecoderRegistry.standard.info(path: wav.path)
        #expect(w.lengthFrames == 17640 && w.encoding == .integer(bits: 16))
        #expect(w.metadata.title == "Wave Title" && w.metadata.artist == "Ann" && w.metadata.values(.comment) == ["A comment"], "\(w.metadata.tags)")
    }
}
