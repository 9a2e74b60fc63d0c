import MediaCore
import BacklineTestSupport
import Media
import Foundation
import Testing

@Suite("MPG123Decoder", Harness.audioTools)
struct DecoderTests {
    /// Every sample, decoded frame by frame into a buffer of 3 frames' room.
    private func decodeAll(_ d: MPG123Decoder) throws -> [Float] { try decodeFrames(d, room: d.maxFrameBytes * 3) }

    @Test("the composer (TCOM) is read with the other tags")
    func composer() throws {
        let url = try Fixtures.tone("tagged-composer", seconds: 0.5, lameArgs: ["-b", "128", "--id3v2-only", "--tt", "Étude",
                                                                               "--tv", "TCOM=Clara Schumann"])
        let d = try MPG123Decoder(path: url.path)
        #expect(d.metadata.title == "Étude" && d.metadata.composer == "Clara Schumann", "\(d.metadata)")
    }

    @Test("tags, artwork, exact length, format")
    func metadata() throws {
        let url = try #require(Fixtures.demoTracks.first)
        let d = try MPG123Decoder(path: url.path)
        #expect(d.format == StreamFormat(rate: 44100, channels: 2))
        #expect(d.metadata.title == "Sunrise Chord" && d.metadata.artist == "Backline")
        #expect(d.metadata.album == "Backline Demo" && d.metadata.genre == "Ambient" && d.metadata.year == "2026")
        #expect(d.metadata.trackNumber == 1 && d.metadata.trackCount == 3)
        let art = try #require(d.metadata.artwork)
        #expect(art.mimeType == "image/png")
        #expect(Array(art.data.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])
        #expect(d.length * 2 == (try ReferenceDecoder.decodeF32(url)).count)
    }

    @Test("a reopened source (a second reader of the same open file) decodes the same samples, after the file is deleted")
    func reopenedSource() throws {
        let url = try Fixtures.tone("fd-src", seconds: 1.1, rate: 32000, channels: 1)
        let reference = try ReferenceDecoder.decodeF32(url)
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("reopen-\(getpid()).mp3")
        try? FileManager.default.removeItem(at: copy)
        try FileManager.default.copyItem(at: url, to: copy)
        let first = try FileSource(path: copy.path)
        try FileManager.default.removeItem(at: copy)
        let d = try MPG123Decoder(source: first.reopened())
        #expect(try decodeAll(d) == reference)
    }

    /// Every sample `decodeFrame(into:)` yields, each frame decoded in place at the start of a
    /// fresh slice of `room` bytes.
    private func decodeFrames(_ d: MPG123Decoder, room: Int) throws -> [Float] {
        var out: [Float] = []
        var buf = [Float](repeating: .nan, count: room / 4)
        while true {
            let (bytes, status) = try buf.withUnsafeMutableBytes { try d.decode(into: $0) }
            #expect(bytes % d.format.bytesPerFrame == 0 && bytes <= d.maxFrameBytes)
            out += buf.prefix(bytes / 4)
            if status == .done { return out }
        }
    }

    /// Every sample `decodeFrame(into:spillingInto:)` yields when each frame's room is two
    /// separate buffers, the first shorter than a frame (0, one sample frame, …, one short).
    private func decodeSplitFrames(_ d: MPG123Decoder) throws -> [Float] {
        var out: [Float] = []
        let bpf = d.format.bytesPerFrame
        let splits = [0, bpf, 1000, d.maxFrameBytes - bpf]
        var k = 0
        while true {
            let split = splits[k % splits.count]
            k += 1
            var end = [Float](repeating: .nan, count: split / 4)
            var start = [Float](repeating: .nan, count: d.maxFrameBytes / 4)
            let (bytes, status) = try end.withUnsafeMutableBytes { e in
                try start.withUnsafeMutableBytes { try d.decode(into: e, spillingInto: $0) }
            }
            let inEnd = min(bytes, split) / 4
            out += end.prefix(inEnd) + start.prefix(bytes / 4 - inEnd)
            if status == .done { return out }
        }
    }

    @Test("decoding frame by frame in place is bit-exact: gapless trims, mono MPEG-2, a frame split over two buffers, after a seek (as read(into:) there)")
    func inPlaceFrames() throws {
        let stereo = try Fixtures.tone("inplace-stereo", seconds: 1.3, frequency: 523)
        let mono = try Fixtures.tone("inplace-mono", seconds: 0.9, rate: 22050, channels: 1, lameArgs: ["-b", "64"])
        for url in [stereo, mono] {
            let d = try MPG123Decoder(path: url.path)
            #expect(d.maxFrameBytes >= 576 * d.format.bytesPerFrame)
            let reference = try ReferenceDecoder.decodeF32(url)
            let got = try decodeFrames(d, room: d.maxFrameBytes)
            #expect(got.count == reference.count && got == reference, "\(url.lastPathComponent)")
            #expect(d.position == d.length)

            // The free space of a ring that ends inside a frame: the frame is split over two
            // separate buffers (end of the ring, then its start), at a different point each time.
            let w = try MPG123Decoder(path: url.path)
            #expect(try decodeSplitFrames(w) == reference, "\(url.lastPathComponent), split over two buffers")

            // From frame 12345 (mid MPEG frame): the reference's tail, sample for sample.
            let s = try MPG123Decoder(path: url.path)
            try s.seek(toFrame: 12345)
            let tail = try decodeFrames(s, room: s.maxFrameBytes * 3)
            let expected = Array(reference[(12345 * s.format.channels)...])
            let r = try MPG123Decoder(path: url.path)
            try r.seek(toFrame: 12345)
            let viaRead = try decodeAll(r)
            // As `read(into:)` after the same seek, sample for sample; and for MPEG-1 the
            // reference itself (libmpg123's pre-roll does not rebuild an MPEG-2 stream's first
            // samples exactly, in either way of reading).
            #expect(tail == viaRead, "\(url.lastPathComponent) after the seek: frame by frame differs from read(into:)")
            if url == stereo {
                let firstDiff = zip(tail, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                #expect(tail.count == expected.count && firstDiff == nil,
                        "after the seek: \(tail.count) of \(expected.count) samples, first difference at \(String(describing: firstDiff))")
            }
        }
    }

    @Test("decoding into less than a frame's room fails with the sizes, and decoding goes on")
    func inPlaceTooSmall() throws {
        let url = try Fixtures.tone("inplace-small", seconds: 0.5)
        let d = try MPG123Decoder(path: url.path)
        var end = [UInt8](repeating: 0, count: 100), start = [UInt8](repeating: 0, count: d.maxFrameBytes - 101)
        do {
            _ = try end.withUnsafeMutableBytes { e in try start.withUnsafeMutableBytes { try d.decode(into: e, spillingInto: $0) } }
            Issue.record("room one byte short was accepted")
        } catch let e as MediaError {
            #expect(e.description.contains("buffer of \(d.maxFrameBytes - 1) bytes is smaller than a frame (\(d.maxFrameBytes))"), "\(e)")
        }
        #expect(try decodeFrames(d, room: d.maxFrameBytes) == (try ReferenceDecoder.decodeF32(url)))
    }
}
