import AudioEngine
import BacklineTestSupport
import Foundation
import Testing

@Suite("MPG123Decoder", Harness.audioTools)
struct DecoderTests {
    private func decodeAll(_ d: MPG123Decoder) throws -> [Float] {
        var out: [Float] = []
        var buf = [Float](repeating: 0, count: 8192)
        while true {
            let (bytes, status) = try buf.withUnsafeMutableBytes { try d.read(into: $0) }
            out += buf.prefix(bytes / 4)
            if status == .done { return out }
        }
    }

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
        #expect(d.lengthFrames * 2 == (try ReferenceDecoder.decodeF32(url)).count)
    }

    @Test("opening by file descriptor decodes the same samples as by path")
    func fileDescriptor() throws {
        let url = try Fixtures.tone("fd-src", seconds: 1.1, rate: 32000, channels: 1)
        let fd = open(url.path, O_RDONLY)
        #expect(fd >= 0)
        defer { close(fd) }
        let d = try MPG123Decoder(fileDescriptor: fd, name: "fd:\(url.lastPathComponent)")
        let got = try decodeAll(d)
        let same = got == (try ReferenceDecoder.decodeF32(url))
        #expect(same)
    }
}
