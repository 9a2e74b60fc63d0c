import BacklineTestSupport
import Foundation
import Media
import MediaCore
import Testing

/// Chapters as the decoders read them, against FFmpeg's own reading (`ffprobe -show_chapters`).
@Suite("chapters: an M4B's (MP4 chapters through FFmpeg), an MP3's ID3v2 CHAP frames and an Opus file's CHAPTER comments, as ffprobe lists them", Harness.audioTools)
struct ChapterTests {
    /// Three chapters over 30 s: 0–10 "Opening", 10–22.5 "Middle", 22.5–30 "End".
    static let expected = [("Opening", 0.0, 10.0), ("Middle", 10.0, 22.5), ("End", 22.5, 30.0)]

    /// ffprobe's chapters of `file`: title, start and end in seconds.
    static func ffprobe(_ file: URL) throws -> [(title: String?, start: Double, end: Double)] {
        let r = try runProcess("ffprobe", ["-v", "error", "-show_chapters", "-of", "json", file.path])
        guard r.status == 0, let json = try JSONSerialization.jsonObject(with: Data(r.stdoutText.utf8)) as? [String: Any],
              let list = json["chapters"] as? [[String: Any]] else { throw HarnessError("ffprobe: \(r.stderr)") }
        return list.map { c in
            ((c["tags"] as? [String: Any])?["title"] as? String,
             Double(c["start_time"] as? String ?? "") ?? -1, Double(c["end_time"] as? String ?? "") ?? -1)
        }
    }

    static func source() throws -> URL {
        try Fixtures.wav("chapters-src", seconds: 30, synth: ["sine", "300-900"], effects: ["gain", "-6"])
    }

    /// ``source()`` encoded by ffmpeg to `name` with `codec` (its options), titled "The Book",
    /// with ``expected``'s chapters from an FFMETADATA file; checks that ffprobe lists them, and
    /// that the decoder's chapters are ffprobe's (titles, starts and ends within 1 ms).
    static func checkEncoded(_ name: String, _ codec: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> TrackMetadata {
        let dir = try Harness.makeTemporaryDirectory("chapters")
        let meta = dir.appendingPathComponent("chapters.txt")
        var text = ";FFMETADATA1\ntitle=The Book\n"
        for (title, start, end) in expected {
            text += "[CHAPTER]\nTIMEBASE=1/1000\nSTART=\(Int(start * 1000))\nEND=\(Int(end * 1000))\ntitle=\(title)\n"
        }
        try text.write(to: meta, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent(name)
        let r = try runProcess("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-i", try source().path, "-i", meta.path,
                                          "-map", "0:a", "-map_metadata", "1", "-map_chapters", "1"] + codec + [out.path])
        #expect(r.status == 0, "\(r.stderr)", sourceLocation: sourceLocation)
        let probed = try ffprobe(out)
        #expect(probed.map(\.title) == expected.map(\.0), "ffprobe: \(probed)", sourceLocation: sourceLocation)
        let metadata = try DecoderRegistry.standard.info(path: out.path).metadata
        #expect(metadata.chapters.count == probed.count, "\(metadata.chapters)", sourceLocation: sourceLocation)
        for (c, p) in zip(metadata.chapters, probed) {
            #expect(c.title == p.title && abs(c.start - p.start) <= 0.001 && abs((c.end ?? -1) - p.end) <= 0.001, "\(c) against \(p)",
                    sourceLocation: sourceLocation)
        }
        return metadata
    }

    @Test("an M4B made by ffmpeg with three chapters: the decoder's chapters are ffprobe's (titles, starts and ends within 1 ms)")
    func m4b() throws {
        _ = try Self.checkEncoded("book.m4b", ["-c:a", "aac", "-b:a", "96k"])
    }

    @Test("an MP3 with ID3v2.3 and with ID3v2.4 CHAP frames (and a CTOC) as ffmpeg writes them: the decoder's chapters are ffprobe's; CHAP titles do not become the file's title", arguments: ["3", "4"])
    func mp3(id3Version: String) throws {
        let metadata = try Self.checkEncoded("book.mp3", ["-c:a", "libmp3lame", "-b:a", "96k", "-id3v2_version", id3Version])
        #expect(metadata.title == "The Book")
    }

    /// An ID3v2.4 tag of `frames` (each an id and its data).
    static func id3v24(_ frames: [(String, [UInt8])]) -> [UInt8] {
        func syncsafe(_ n: Int) -> [UInt8] { [UInt8((n >> 21) & 0x7F), UInt8((n >> 14) & 0x7F), UInt8((n >> 7) & 0x7F), UInt8(n & 0x7F)] }
        let body: [UInt8] = frames.flatMap { (id: String, data: [UInt8]) -> [UInt8] in Array(id.utf8) + syncsafe(data.count) + [0, 0] + data }
        return Array("ID3".utf8) + [4, 0, 0] + syncsafe(body.count) + body
    }

    /// A `CHAP` frame's data: `element` NUL, then `times` bytes of its times (16 in a whole one), then `sub`.
    static func chap(_ element: String, start: UInt32, end: UInt32, times: Int = 16, sub: [UInt8] = []) -> [UInt8] {
        func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        return Array(element.utf8) + [0] + Array((be(start) + be(end) + [UInt8](repeating: 0xFF, count: 8)).prefix(times)) + sub
    }

    @Test("a CHAP frame at its 16 bytes of times is a chapter; one byte short it is none, and its neighbours stay")
    func shortChapterFrame() {
        let title = [UInt8]("TIT2".utf8) + [0, 0, 0, 5, 0, 0] + [3] + Array("Two".utf8) + [0]
        let tag = Self.id3v24([("CHAP", Self.chap("a", start: 0, end: 1000)),
                               ("CHAP", Self.chap("b", start: 500, end: 900, times: 15)),
                               ("CHAP", Self.chap("c", start: 1000, end: 2000, sub: title))])
        let m = ID3Scan.metadata(bytes: tag[...])
        #expect(m.chapters == [Chapter(title: nil, start: 0, end: 1), Chapter(title: "Two", start: 1, end: 2)], "\(m.chapters)")
        let alone = ID3Scan.metadata(bytes: Self.id3v24([("CHAP", Self.chap("b", start: 500, end: 900, times: 15))])[...])
        #expect(alone.chapters.isEmpty)
    }

    @Test("the chapter at a time: none before the first start, each from its start (to the millisecond) until the next one's")
    func index() {
        let chapters = [Chapter(title: "a", start: 1), Chapter(title: "b", start: 10), Chapter(title: "c", start: 22.5)]
        let cases: [(Double, Int?)] = [(0, nil), (0.998, nil), (0.9996, 0), (1, 0), (9.998, 0), (10, 1), (22.499, 1), (22.5, 2), (1e6, 2)]
        for (t, expected) in cases { #expect(Chapter.index(at: t, in: chapters) == expected, "at \(t) s") }
        #expect(Chapter.index(at: 5, in: []) == nil)
        #expect(Chapter.index(at: .nan, in: chapters) == nil)
    }

    @Test("an Opus file with CHAPTER001…003 and their NAMEs (out of order): the decoder's chapters are ffprobe's; a malformed time is left out")
    func opusComments() throws {
        var args: [String] = []
        for (n, (title, start, _)) in Self.expected.enumerated().reversed() {
            let s = Int(start * 1000)
            let stamp = String(format: "%02d:%02d:%02d.%03d", s / 3_600_000, s / 60_000 % 60, s / 1000 % 60, s % 1000)
            args += ["--comment", "CHAPTER00\(n + 1)=\(stamp)", "--comment", "CHAPTER00\(n + 1)NAME=\(title)"]
        }
        args += ["--comment", "CHAPTER009=soon", "--comment", "CHAPTER009NAME=Never"]
        let file = try FormatFixtures.opus("chapters-comments", from: try Self.source(), args: args)
        // (ffprobe lists comment chapters in the comments' order: here, the reverse.)
        let probed = try Self.ffprobe(file).sorted { $0.start < $1.start }
        let chapters = try DecoderRegistry.standard.info(path: file.path).metadata.chapters
        #expect(chapters.map(\.title) == Self.expected.map(\.0), "\(chapters)")
        #expect(probed.map(\.title).prefix(3) == ["Opening", "Middle", "End"], "ffprobe: \(probed)")
        for (c, p) in zip(chapters, probed) {
            #expect(c.title == p.title && abs(c.start - p.start) <= 0.001, "\(c) against \(p)")
        }
        // Each ends where the next starts; the last at the item's end.
        #expect(chapters.map(\.end) == [10, 22.5, nil], "\(chapters)")
    }
}
