import AudioEngine
import BacklineTestSupport
import Foundation
import HTTPInput
import Locking
import Media
import MediaCore
import Synchronization
import Testing

/// HTTP files of every size around the HTTP input's windows (the 16 KiB wake-up batch, the
/// 64 KiB of first bytes kept, the 512 KiB buffer, the 1 MiB parking window), just below, at
/// and just above each, in the formats whose decoders read the end first (an MP3 with an ID3v1
/// tag, an M4A with its `moov` last, Opus), from a server with ranges, one sending slowly, one
/// that ignores them, one without them, and nginx: each plays sample for sample as the same
/// file from disk. (And the cases first reported: Layer II named .mp3, a 48 kHz VBR MP3.)
@Suite("HTTP files at every size: sample for sample as from disk, from every kind of server", Harness.audioTools)
struct HTTPSizeTests {
    static let windows = [16384, 65536, 512 * 1024, 1 << 20]

    /// The files, made once for the suite: MP3s padded to exact sizes (an ID3v2 tag's padding
    /// before the audio, an ID3v1 tag after it), M4As padded by a `free` box after the `moov`,
    /// and Opus files around the windows (their size follows the audio).
    static let files: Result<[URL], any Error> = Result {
        let dir = try Fixtures.directory().appendingPathComponent("http-sizes")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var out: [URL] = []
        for window in windows {
            // 128 kbit/s: 16,000 bytes a second; room for the tags.
            let seconds = max(0.5, Double(window - 6000) / 16000)
            let src = try FormatFixtures.source("http-size-\(window)", seconds: seconds)
            let mp3 = try Fixtures.mp3(from: src, name: "http-size-\(window)", lameArgs: ["-b", "128", "--id3v1-only", "--tt", "Sized"])
            for size in [window - 1, window, window + 1] {
                out.append(try padMP3(mp3, to: size, as: dir.appendingPathComponent("mp3-\(size).mp3")))
            }
            guard window >= 65536 else { continue }
            let m4a = try FormatFixtures.ffmpeg("http-size-\(window)", from: src, ext: "m4a", args: ["-c:a", "aac", "-b:a", "96k"])
            for size in [window - 1, window, window + 1] {
                out.append(try padM4A(m4a, to: size, as: dir.appendingPathComponent("m4a-\(size).m4a")))
            }
            out.append(try FormatFixtures.opus("http-size-\(window)", from: src, args: ["--bitrate", "112"]))
        }
        // The reported cases: MPEG Layer II named .mp3 (no Info header: its length is found
        // by a scan, which reads the whole file and starts again), and a 48 kHz VBR MP3.
        let layer2 = dir.appendingPathComponent("layer2.mp3")
        try? FileManager.default.removeItem(at: layer2)
        try FileManager.default.copyItem(at: try Fixtures.layer2Tone("http-size-layer2", seconds: 12, rate: 44100, channels: 2, bitrate: 96), to: layer2)
        out.append(layer2)
        let vbr = try FormatFixtures.source("http-size-vbr48", seconds: 12, rate: 48000)
        out.append(try Fixtures.mp3(from: vbr, name: "http-size-vbr48", lameArgs: ["-V", "2"]))
        return out
    }

    /// `mp3` (which ends in a 128-byte ID3v1 tag) with an ID3v2 tag of padding before it, `size` bytes in all.
    static func padMP3(_ mp3: URL, to size: Int, as out: URL) throws -> URL {
        let body = try Data(contentsOf: mp3)
        let padding = size - body.count - 10
        guard padding > 0, padding < 1 << 28 else { throw HarnessError("\(mp3.lastPathComponent) (\(body.count) B) cannot be padded to \(size)") }
        var tag = Data("ID3".utf8) + Data([3, 0, 0])
        tag += Data((0..<4).map { UInt8((padding >> (7 * (3 - $0))) & 0x7F) })  // syncsafe
        tag += Data(count: padding)
        try (tag + body).write(to: out)
        return out
    }

    /// `m4a` with a `free` box after its last box, `size` bytes in all.
    static func padM4A(_ m4a: URL, to size: Int, as out: URL) throws -> URL {
        let body = try Data(contentsOf: m4a)
        let box = size - body.count
        guard box >= 8 else { throw HarnessError("\(m4a.lastPathComponent) (\(body.count) B) cannot be padded to \(size)") }
        var free = Data([UInt8(box >> 24 & 0xFF), UInt8(box >> 16 & 0xFF), UInt8(box >> 8 & 0xFF), UInt8(box & 0xFF)]) + Data("free".utf8)
        free += Data(count: box - 8)
        try (body + free).write(to: out)
        return out
    }

    @Test("an MP3 larger than what is kept whole, from a server without ranges, is read front to back: Layer II (no header: its length estimated from its size) and a LAME MP3 (its header's length, stated, not checked) decode sample for sample as from disk")
    func frontToBack() throws {
        var options = HTTPStreamTests.options
        options.wholeFileLimit = 32768
        let dir = try Harness.makeTemporaryDirectory("http-front-to-back")
        let layer2 = try Fixtures.layer2Tone("http-size-layer2", seconds: 12, rate: 44100, channels: 2, bitrate: 96)
        // (Both larger than the 64 KiB kept of every file, which a file within them is kept whole in.)
        let lame = try Fixtures.mp3(from: try FormatFixtures.source("http-size-524288", seconds: Double(524_288 - 6000) / 16000),
                                    name: "http-size-524288", lameArgs: ["-b", "128", "--id3v1-only", "--tt", "Sized"])
        for f in [layer2, lame] { try FileManager.default.copyItem(at: f, to: dir.appendingPathComponent(f.lastPathComponent)) }
        let server = try HTTPTestServer(directory: dir)
        for (file, fromHeader) in [(layer2, false), (lame, true)] {
            let local = try MPG123Decoder(source: try FileSource(path: file.path))
            let source = try HTTPSource(url: server.url("plain/" + file.lastPathComponent), options: options)
            #expect(!source.isSeekable, "\(file.lastPathComponent) is larger than the limit")
            let remote = try MPG123Decoder(source: source)
            // (Estimated either way: a header read front to back cannot be checked by a scan.)
            #expect(remote.lengthAccuracy == .estimated, "\(file.lastPathComponent): \(remote.lengthAccuracy)")
            if fromHeader { #expect(remote.lengthFrames == local.lengthFrames, "the header's length") }
            let expected = try FormatCases.decodeAll(local)
            let got = try FormatCases.decodeAll(remote)
            #expect(got == expected && !got.isEmpty, "\(file.lastPathComponent): \(got.count) samples, \(expected.count) from disk")
        }
    }

    /// The samples `file` plays from disk, decoded once for every server's case.
    static func fromDisk(_ file: URL) throws -> [Float] {
        if let done = decoded.withLock({ $0[file] }) { return done }
        let (samples, _) = try HTTPStreamTests.play([file.path])
        decoded.withLock { $0[file] = samples }
        return samples
    }

    static let decoded = Lock<[URL: [Float]]>([:])

    @Test("every file plays sample for sample as from disk", arguments: HTTPServerKind.available)
    func sweep(_ server: HTTPServerKind) throws {
        let files = try Self.files.get()
        let dir = try Harness.makeTemporaryDirectory("http-sizes")
        for f in files { try FileManager.default.copyItem(at: f, to: dir.appendingPathComponent(f.lastPathComponent)) }
        let servers = try HTTPServers(directory: dir, nginx: server == .nginx)
        HTTPInput.register(options: HTTPStreamTests.options)
        for file in files {
            let name = file.lastPathComponent
            let url = servers.url(server, name)
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int)
            let local = try Self.fromDisk(file)
            let (remote, events) = try HTTPStreamTests.play([url])
            let failed = events.compactMap { if case .itemFailed(_, _, let e) = $0 { e.reason } else { nil } }
            let firstDifference = (0..<min(remote.count, local.count)).first { remote[$0] != local[$0] }
            #expect(remote == local && !local.isEmpty && failed.isEmpty,
                    "\(name) (\(size) B): \(remote.count) samples over HTTP, \(local.count) from disk, the first difference at sample \(firstDifference.map(String.init) ?? "-"); \(failed)")
        }
    }
}
