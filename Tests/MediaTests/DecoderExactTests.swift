import BacklineTestSupport
import Foundation
@testable import Media
import MediaCore
import Testing

/// Each decoder alone, with no engine or device: a fault in a decoder fails here first.
@Suite("decoders alone: each format equals its reference decode, from the start and after a seek", Harness.audioTools)
struct DecoderExactTests {
    @Test("each format decodes to its reference decoder's samples, with the exact count")
    func wholeFile() throws {
        for c in try FormatCases.all() {
            let expected = try c.reference()
            let got = try FormatCases.decodeAll(try DecoderRegistry.standard.open(path: c.file.path, options: DecoderOptions(outputChannels: { OutputChannels(maximum: 8) })))
            #expect(got.count == expected.count, "\(c): \(got.count) samples, expected \(expected.count)")
            #expect(FormatCases.maxDifference(got, expected) <= c.tolerance, "\(c)")
        }
    }

    @Test("a seek to a third of the file continues with the reference's samples from exactly there (bit for bit; Opus converging on it)")
    func seekIsExact() throws {
        for c in try FormatCases.all() {
            let expected = try c.reference()
            let d = try DecoderRegistry.standard.open(path: c.file.path, options: DecoderOptions(outputChannels: { OutputChannels(maximum: 8) }))
            let channels = d.format.channels
            let frame = expected.count / channels / 3
            try d.seek(toFrame: frame)
            let got = try FormatCases.decodeAll(d)
            let tail = Array(expected[(frame * channels)...])
            #expect(got.count == tail.count, "\(c): \(got.count) samples after the seek, expected \(tail.count)")
            if c.file.pathExtension == "opus" {
                // libopusfile decodes from before the target so its decoder state can build up
                // again, and that state converges on the continuous decode's rather than
                // matching it: here 0.12 apart in the first 20 ms, 0.005 by 80 ms, within 1e-4
                // from 200 ms on (9,600 frames at 48 kHz). The position is exact (the count).
                let settled = 9600 * channels
                #expect(FormatCases.maxDifference(Array(got.dropFirst(settled)), Array(tail.dropFirst(settled))) <= 2e-4, "\(c)")
            } else {
                #expect(FormatCases.maxDifference(got, tail) <= c.tolerance, "\(c)")
            }
        }
    }

    @Test("the registry chooses by content: a FLAC named .mp3 opens as FLAC; bytes of no format fail with what they look like")
    func chosenByContent() throws {
        let flac = try FormatFixtures.flac("registry-flac", from: try FormatFixtures.source("registry-src", seconds: 0.2))
        let misnamed = try Harness.makeTemporaryDirectory("registry").appendingPathComponent("song.mp3")
        try FileManager.default.copyItem(at: flac, to: misnamed)
        let (plugin, _) = try DecoderRegistry.standard.openWithPlugin(try FileSource(path: misnamed.path))
        #expect(plugin.name == "flac")
        let junk = misnamed.deletingLastPathComponent().appendingPathComponent("junk.flac")
        try Data(repeating: 0x5A, count: 4096).write(to: junk)
        do {
            _ = try DecoderRegistry.standard.open(path: junk.path)
            Issue.record("junk opened")
        } catch {
            #expect(error.kind == .unsupportedFormat)
        }
    }

    // (Its own registrations, not the process's: the suites share one process, and others list
    // the standard registry's formats.)
    @Test("a registered plugin is tried before the built-in ones, once however often it registers")
    func registeredPlugin() throws {
        let magic = Array("BLTEST01".utf8)
        let plugin = DecoderPlugin(
            name: "bltest", formatName: "Backline test", suffixes: ["bltest"], mimeTypes: [],
            matches: { Array($0.prefix(8)) == magic },
            open: { (s: any ByteSource, _: DecoderOptions) throws(MediaError) -> any AudioDecoder in
                throw MediaError(.unsupportedFormat, "a test format", item: s.name)
            },
            info: { (s: any ByteSource) throws(MediaError) -> TrackInfo in throw MediaError(.unsupportedFormat, "a test format", item: s.name) })
        let registrations = DecoderRegistry.Registrations()
        registrations.register(plugin)
        registrations.register(plugin)
        let registry = registrations.registry
        #expect(registry.plugins.map(\.name) == ["bltest"] + DecoderRegistry.standard.plugins.map(\.name))
        #expect(registry.plugins.last?.name == "ffmpeg")
        let file = try Harness.makeTemporaryDirectory("registered").appendingPathComponent("x.mp3")
        try Data(magic + [UInt8](repeating: 0, count: 4096)).write(to: file)
        #expect(try registry.plugin(for: FileSource(path: file.path)).name == "bltest")
        #expect(registry.claims("a.bltest"))
        #expect(!DecoderRegistry.standard.claims("a.bltest"))
    }
}
