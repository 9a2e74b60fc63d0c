import Foundation

/// Test audio made at test time from synthesised sound (sox + lame): nothing downloaded, all ours.
///
/// Files are cached per process in one temporary directory, keyed by their recipe.
public enum Fixtures {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var _directory: URL?  // guarded by lock

    /// The per-process fixture directory.
    public static func directory() throws -> URL {
        try lock.withLock {
            if let d = _directory { return d }
            let d = try Harness.makeTemporaryDirectory("backline-fixtures")
            _directory = d
            return d
        }
    }

    /// Makes `url` once: `produce` writes a temporary file beside it (same extension), which is
    /// then renamed into place, so tests running side by side never read half a file.
    public static func once(_ url: URL, _ produce: (URL) throws -> Void) throws -> URL {
        if FileManager.default.fileExists(atPath: url.path) { return url }
        let tmp = url.deletingLastPathComponent().appendingPathComponent(".tmp-\(UUID().uuidString)-\(url.lastPathComponent)")
        try produce(tmp)
        guard rename(tmp.path, url.path) == 0 else { throw HarnessError("cannot rename \(tmp.path) to \(url.path)") }
        return url
    }

    /// The bundled demo queue in `Resources/demo`.
    public static var demoTracks: [URL] {
        let dir = Harness.packageRoot.appendingPathComponent("Resources/demo")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { $0.hasSuffix(".mp3") }.sorted().map { dir.appendingPathComponent($0) }
    }

    /// Creates (once) a WAV with `sox -n … synth` and the given synth arguments.
    public static func wav(_ name: String, rate: Int = 44100, channels: Int = 2, seconds: Double,
                           synth: [String] = ["sine", "440"], effects: [String] = []) throws -> URL {
        try once(try directory().appendingPathComponent("\(name).wav")) { out in
            let r = try runProcess("sox", ["-n", "-r", "\(rate)", "-c", "\(channels)", "-b", "16", out.path,
                                           "synth", "\(seconds)"] + synth + effects)
            guard r.status == 0 else { throw HarnessError("sox failed: \(r.stderr)") }
        }
    }

    /// Encodes a WAV to MP3 with lame (`lameArgs`, e.g. `["-b", "128"]` or `["-V", "2"]`).
    public static func mp3(from wav: URL, name: String, lameArgs: [String] = ["-b", "128"]) throws -> URL {
        try once(try directory().appendingPathComponent("\(name).mp3")) { out in
            let r = try runProcess("lame", ["--quiet"] + lameArgs + [wav.path, out.path])
            guard r.status == 0 else { throw HarnessError("lame failed: \(r.stderr)") }
        }
    }

    /// A sine tone as MPEG Layer II (`twolame`; MPEG-1 at 32/44.1/48 kHz, MPEG-2 LSF at 16–24 kHz).
    public static func layer2Tone(_ name: String, seconds: Double, rate: Int, channels: Int, bitrate: Int) throws -> URL {
        let w = try wav(name, rate: rate, channels: channels, seconds: seconds,
                        synth: ["sine", "300-1200"], effects: ["gain", "-6"])
        return try once(try directory().appendingPathComponent("\(name).mp2")) { out in
            let r = try runProcess("twolame", ["--quiet", "-b", "\(bitrate)", w.path, out.path])
            guard r.status == 0 else { throw HarnessError("twolame failed: \(r.stderr)") }
        }
    }

    /// A sine tone as MP3.
    public static func tone(_ name: String, seconds: Double, frequency: Double = 440, rate: Int = 44100,
                            channels: Int = 2, lameArgs: [String] = ["-b", "128"]) throws -> URL {
        let w = try wav(name, rate: rate, channels: channels, seconds: seconds, synth: ["sine", "\(frequency)"],
                        effects: ["gain", "-6"])
        return try mp3(from: w, name: name, lameArgs: lameArgs)
    }

    /// A sweep split into two files at a non-frame boundary (`splitSample`), each encoded on its own:
    /// played back to back, gapless playback must reproduce the concatenation of their decodes.
    public static func gaplessPair(seconds: Double = 4, splitSample: Int = 88_217, rate: Int = 44100)
        throws -> (URL, URL)
    {
        let whole = try wav("gapless-whole-\(rate)", rate: rate, seconds: seconds,
                            synth: ["sine", "300-900", "sine", "450-1350"], effects: ["gain", "-6"])
        let dir = try directory()
        let a = dir.appendingPathComponent("gapless-a-\(rate).wav"), b = dir.appendingPathComponent("gapless-b-\(rate).wav")
        _ = try once(a) { try runProcess("sox", [whole.path, $0.path, "trim", "0s", "\(splitSample)s"]) }
        _ = try once(b) { try runProcess("sox", [whole.path, $0.path, "trim", "\(splitSample)s"]) }
        return (try mp3(from: a, name: "gapless-a-\(rate)"), try mp3(from: b, name: "gapless-b-\(rate)"))
    }

    /// Broken inputs, each a named file (or directory) an MP3 player must reject cleanly.
    public static func badInputs() throws -> [String: URL] {
        let dir = try directory().appendingPathComponent("bad")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let good = try tone("bad-source", seconds: 2)
        let goodData = try Data(contentsOf: good)
        var files: [String: URL] = [:]
        func make(_ name: String, _ data: Data) throws -> URL {
            let u = dir.appendingPathComponent(name)
            try data.write(to: u, options: .atomic)
            return u
        }
        files["missing"] = dir.appendingPathComponent("does-not-exist.mp3")
        files["empty"] = try make("empty.mp3", Data())
        var rng = SystemRandomNumberGenerator()
        files["random"] = try make("random.mp3", Data((0..<65_536).map { _ in UInt8.random(in: 0...255, using: &rng) }))
        files["text"] = try make("notes.mp3", Data(String(repeating: "not audio at all\n", count: 400).utf8))
        files["truncated"] = try make("truncated.mp3", goodData.prefix(goodData.count / 2 + 7))
        let d = dir.appendingPathComponent("folder.mp3")
        try? FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        files["directory"] = d
        return files
    }
}
