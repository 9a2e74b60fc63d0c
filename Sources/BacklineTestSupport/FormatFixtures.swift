import Foundation

/// Test audio in the open formats, made at test time by the reference encoders (`sox`, `flac`,
/// `oggenc`, `opusenc`), and their reference decodes (`flac -d`, `oggdec`, `opusdec --float`, `sox`).
public enum FormatFixtures {
    /// A sweep WAV (16- or 24-bit) as the encoders' input, rich enough that a wrong sample shows.
    public static func source(_ name: String, seconds: Double, rate: Int = 44100, channels: Int = 2, bits: Int = 16) throws -> URL {
        try Fixtures.once(try Fixtures.directory().appendingPathComponent("\(name)-src.wav")) { out in
            var synth = ["sine", "300-2000"]
            if channels > 1 { for c in 1..<channels { synth += ["sine", "\(400 + 150 * c)-\(900 + 200 * c)"] } }
            let r = try runProcess("sox", ["-n", "-r", "\(rate)", "-c", "\(channels)", "-b", "\(bits)", out.path,
                                           "synth", "\(seconds)"] + synth + ["gain", "-3"])
            guard r.status == 0 else { throw HarnessError("sox failed: \(r.stderr)") }
        }
    }

    /// `source` encoded to FLAC (`flac`, compression 5).
    public static func flac(_ name: String, from source: URL, args: [String] = []) throws -> URL {
        try Fixtures.once(try Fixtures.directory().appendingPathComponent("\(name).flac")) { out in
            let r = try runProcess("flac", ["--silent", "-f", "-o", out.path] + args + [source.path])
            guard r.status == 0 else { throw HarnessError("flac failed: \(r.stderr)") }
        }
    }

    /// An audiobook in small: 7 s of 16-bit stereo FLAC at 44.1 kHz, 1 s of a 523 Hz tone (its
    /// only zero sample the first: 523 and 44,100 have no common factor, so no stretch of it
    /// looks like another) and then 6 s of 1 kHz (starting at phase 0: frame 44,100 is 0), with
    /// three chapters as `CHAPTERnnn` comments: "Opening" at 0, "Tone" at 1 s (the 1 kHz tone's
    /// first sample), "Later" at 2.5 s.
    public static func chaptered() throws -> URL {
        // Made at 44.1 kHz (not resampled from sox's default 48 kHz, which rings) and without
        // dither: each part is its sine exactly, starting on its frame.
        let source = try Fixtures.once(try Fixtures.directory().appendingPathComponent("chaptered-src-v2.wav")) { out in
            let tones = [("1", "523"), ("6", "1000")]
            let parts = tones.map { out.path + ".\($0.1).wav" }
            for ((seconds, f), part) in zip(tones, parts) {
                let r = try runProcess("sox", ["-D", "-r", "44100", "-c", "2", "-n", "-b", "16", part, "synth", seconds, "sine", f, "gain", "-6"])
                guard r.status == 0 else { throw HarnessError("sox failed: \(r.stderr)") }
            }
            let r = try runProcess("sox", ["-D"] + parts + [out.path])
            guard r.status == 0 else { throw HarnessError("sox failed: \(r.stderr)") }
        }
        return try flac("chaptered-v2", from: source, args: [
            "--tag=CHAPTER001=00:00:00.000", "--tag=CHAPTER001NAME=Opening",
            "--tag=CHAPTER002=00:00:01.000", "--tag=CHAPTER002NAME=Tone",
            "--tag=CHAPTER003=00:00:02.500", "--tag=CHAPTER003NAME=Later",
        ])
    }

    /// `source` encoded to Ogg Vorbis (`oggenc -q 4`).
    public static func vorbis(_ name: String, from source: URL, args: [String] = []) throws -> URL {
        try Fixtures.once(try Fixtures.directory().appendingPathComponent("\(name).ogg")) { out in
            let r = try runProcess("oggenc", ["--quiet", "-q", "4", "-o", out.path] + args + [source.path])
            guard r.status == 0 else { throw HarnessError("oggenc failed: \(r.stderr)") }
        }
    }

    /// `source` encoded to Opus (`opusenc`, 96 kbit/s; 44.1 kHz input is resampled to 48 kHz).
    public static func opus(_ name: String, from source: URL, args: [String] = []) throws -> URL {
        try Fixtures.once(try Fixtures.directory().appendingPathComponent("\(name).opus")) { out in
            let r = try runProcess("opusenc", ["--quiet", "--bitrate", "96"] + args + [source.path, out.path])
            guard r.status == 0 else { throw HarnessError("opusenc failed: \(r.stderr)") }
        }
    }

    /// A chained Ogg stream: each source encoded (`oggenc`, or `opusenc` when `opus`) with its
    /// title (and artist `Backline`), the files joined: one logical stream after another.
    public static func chainedOgg(_ name: String, parts: [(source: URL, title: String)], opus: Bool = false) throws -> URL {
        try Fixtures.once(try Fixtures.directory().appendingPathComponent("\(name).\(opus ? "opus" : "ogg")")) { out in
            var joined = Data()
            for (k, p) in parts.enumerated() {
                // Each link its own serial number: the encoders pick one from the time and their
                // process id, so two links encoded across a second's turn could share one, and a
                // decoder reads a chain whose links share a serial as one stream with a hole.
                let serial = "\(k + 1)"
                let link = try opus
                    ? Self.opus("\(name)-link\(k)", from: p.source, args: ["--title", p.title, "--artist", "Backline", "--serial", serial])
                    : vorbis("\(name)-link\(k)", from: p.source, args: ["-t", p.title, "-a", "Backline", "--serial", serial])
                joined += try Data(contentsOf: link)
            }
            try joined.write(to: out)
        }
    }

    /// `source` encoded by `ffmpeg` (`args`: the codec and its options, e.g. `["-c:a", "aac", "-b:a",
    /// "256k"]`) into `name.ext`, with a title, an artist, an album, track 3/12, and, when `cover`,
    /// a PNG front cover as an attached picture.
    public static func ffmpeg(_ name: String, from source: URL, ext: String, args: [String], cover: Bool = false) throws -> URL {
        try Fixtures.once(try Fixtures.directory().appendingPathComponent("\(name).\(ext)")) { out in
            var input = ["-i", source.path]
            var maps: [String] = []
            if cover {
                let png = try Fixtures.directory().appendingPathComponent("\(name)-cover.png")
                let c = try runProcess("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=red:s=16x16",
                                                  "-frames:v", "1", png.path])
                guard c.status == 0 else { throw HarnessError("ffmpeg cover failed: \(c.stderr)") }
                input += ["-i", png.path]
                maps = ["-map", "0:a", "-map", "1:v", "-c:v", "png", "-disposition:v", "attached_pic"]
            }
            let tags = ["-metadata", "title=\(name)", "-metadata", "artist=Backline", "-metadata", "album=Formats",
                        "-metadata", "track=3/12"]
            let r = try runProcess("ffmpeg", ["-nostdin", "-loglevel", "error", "-y"] + input + maps + args + tags + [out.path])
            guard r.status == 0 else { throw HarnessError("ffmpeg failed: \(r.stderr)") }
        }
    }

    /// Fills `tree` with `copies` FLAC files of 0.2 s whose title is 30,000 `a`s (`a0.flac`…)
    /// and as many whose title is those `a`s and `!` (`b0.flac`…): a regular expression's hard
    /// case. The source they were encoded from, for more files alike.
    @discardableResult
    public static func longTitles(in tree: URL, copies: Int) throws -> URL {
        let source = try Self.source("regex-cost", seconds: 0.2)
        let long = String(repeating: "a", count: 30_000)
        let ending = try flac("regex-cost-a", from: source, args: ["-T", "TITLE=\(long)"])
        let stopped = try flac("regex-cost-bang", from: source, args: ["-T", "TITLE=\(long)!"])
        for i in 0..<copies {
            try FileManager.default.copyItem(at: ending, to: tree.appendingPathComponent("a\(i).flac"))
            try FileManager.default.copyItem(at: stopped, to: tree.appendingPathComponent("b\(i).flac"))
        }
        return source
    }

    /// `source` converted by sox (the extension picks WAV or AIFF; `args` the sample encoding,
    /// e.g. `["-e", "floating-point", "-b", "32"]`).
    public static func sox(_ name: String, from source: URL, ext: String, args: [String]) throws -> URL {
        try Fixtures.once(try Fixtures.directory().appendingPathComponent("\(name).\(ext)")) { out in
            let r = try runProcess("sox", [source.path] + args + [out.path])
            guard r.status == 0 else { throw HarnessError("sox failed: \(r.stderr)") }
        }
    }
}

/// The open formats' reference decoders, to interleaved float32.
public enum FormatReference {
    /// `flac -d` to raw signed little-endian integers, scaled by 2^-(bits-1).
    public static func flac(_ file: URL, bits: Int) throws -> [Float] {
        let r = try runProcess("flac", ["-d", "-c", "--silent", "--force-raw-format", "--endian=little", "--sign=signed", file.path])
        guard r.status == 0 else { throw HarnessError("flac -d failed: \(r.stderr)") }
        return integers(r.stdout, bytes: (bits + 7) / 8, scale: 1 / Float(1 << (bits - 1)))
    }

    /// `opusdec --float --rate 48000` (the header gain applied, pre-skip and end trimmed).
    public static func opus(_ file: URL) throws -> [Float] {
        let out = try Fixtures.directory().appendingPathComponent("ref-\(UUID().uuidString).wav")
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try runProcess("opusdec", ["--quiet", "--float", "--rate", "48000", file.path, out.path])
        guard r.status == 0 else { throw HarnessError("opusdec failed: \(r.stderr)") }
        return try sox(out)
    }

    /// `oggdec` to 16-bit (libvorbisfile's own rounding), as integers.
    public static func vorbisS16(_ file: URL) throws -> [Int16] {
        let r = try runProcess("oggdec", ["--quiet", "-R", "-b", "16", "-e", "0", "-s", "1", "-o", "-", file.path])
        guard r.status == 0 else { throw HarnessError("oggdec failed: \(r.stderr)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// `ffmpeg`'s own decode to float32 (`-f f32le`), interleaved.
    public static func ffmpeg(_ file: URL) throws -> [Float] {
        let r = try runProcess("ffmpeg", ["-nostdin", "-loglevel", "error", "-i", file.path, "-map", "0:a", "-f", "f32le", "-"])
        guard r.status == 0 else { throw HarnessError("ffmpeg -f f32le failed: \(r.stderr)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// `sox` to raw float32 (exact for integer sources of up to 24 bits and float32 sources).
    public static func sox(_ file: URL) throws -> [Float] {
        let r = try runProcess("sox", [file.path, "-t", "raw", "-e", "floating-point", "-b", "32", "-L", "-"])
        guard r.status == 0 else { throw HarnessError("sox failed: \(r.stderr)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    private static func integers(_ data: Data, bytes: Int, scale: Float) -> [Float] {
        let n = data.count / bytes
        var out = [Float](repeating: 0, count: n)
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            let p = raw.bindMemory(to: UInt8.self)
            for i in 0..<n {
                var v: Int32 = 0
                for b in 0..<bytes { v |= Int32(p[i * bytes + b]) << (8 * b) }
                v = (v << (32 - 8 * bytes)) >> (32 - 8 * bytes)
                out[i] = Float(v) * scale
            }
        }
        return out
    }
}
