import BacklineTestSupport
import Foundation
import HTTPInput
import MediaCore
import Testing

/// `HTTPSource` gives every byte where its reader asks, whatever the resource's size against
/// the input's windows and whatever the server: a decoder's opening moves (a look at the end
/// and back), then a play through, and random seeks and reads, each read compared with the
/// file's own bytes.
@Suite("HTTP source: the file's bytes wherever the reader reads, at every size and from every server", Harness.audioTools)
struct HTTPSourceTests {
    /// The windows of the HTTP input: the reader's 16 KiB wake-up batch, the 64 KiB of first
    /// bytes kept, the 512 KiB network buffer, the 1 MiB parking window.
    static let windows = [16384, 65536, 512 * 1024, 1 << 20]
    /// Sizes just below, at and just above each window, and one of a few bytes.
    static let sizes = [300] + windows.flatMap { [$0 - 1, $0, $0 + 1] }

    /// Files of every size, random bytes (a fixed seed), in a directory served by `server`.
    final class Fixture: @unchecked Sendable {
        let directory: URL
        var files: [Int: [UInt8]] = [:]
        let servers: HTTPServers

        init(nginx wantNginx: Bool) throws {
            directory = try Harness.makeTemporaryDirectory("http-source")
            var rng = SplitMix64(seed: 0x5EED_B17E)
            for size in HTTPSourceTests.sizes {
                let bytes = (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                files[size] = bytes
                try Data(bytes).write(to: directory.appendingPathComponent("f\(size).bin"))
            }
            servers = try HTTPServers(directory: directory, nginx: wantNginx)
        }

        func url(_ server: HTTPServerKind, size: Int) -> String { servers.url(server, "f\(size).bin") }
    }

    /// Reads `count` bytes at `offset` through `source` (seeking there first) and checks them
    /// against `file`; the bytes read.
    static func check(_ source: HTTPSource, _ file: [UInt8], at offset: Int, count: Int, _ what: String) throws -> Int {
        try source.seek(to: offset)
        var got = [UInt8](repeating: 0, count: count)
        let n = try got.withUnsafeMutableBytes { raw in try source.readFully(into: raw) }
        let want = Array(file[min(offset, file.count)..<min(offset + count, file.count)])
        #expect(n == want.count && Array(got[..<n]) == want,
                "\(what): \(n) bytes at \(offset), \(want.count) wanted; first difference at \((0..<min(n, want.count)).first { got[$0] != want[$0] }.map { offset + $0 } ?? -1)")
        return n
    }

    @Test("a decoder's opening (a look at the end and back, as libmpg123's ID3v1 check), then reading on to the end in 4 KiB reads, gives the file", arguments: HTTPServerKind.available)
    func openThenPlay(_ server: HTTPServerKind) throws {
        let fixture = try Fixture(nginx: server == .nginx)
        for size in Self.sizes {
            let file = fixture.files[size]!
            let source = try HTTPSource(url: fixture.url(server, size: size))
            #expect(source.length == size)
            let name = "\(server.rawValue) \(size) B"
            _ = try Self.check(source, file, at: 0, count: 64, name)
            if source.isSeekable {
                _ = try Self.check(source, file, at: max(0, size - 128), count: 128, name + ", the end")
                _ = try Self.check(source, file, at: 0, count: 10, name + ", back")
                _ = try Self.check(source, file, at: max(0, size - 128), count: 128, name + ", the end again")
            }
            var at = min(417, size)
            while at < size { at += try Self.check(source, file, at: at, count: 4096, name) }
            try source.seek(to: size)
            var one = [UInt8](repeating: 0, count: 1)
            #expect(try one.withUnsafeMutableBytes { try source.read(into: $0) } == 0, "\(name): a read past the end")
        }
    }

    @Test("random seeks and reads (a fixed seed) give the file's bytes; a file from a server without ranges is kept whole", arguments: HTTPServerKind.available)
    func randomReads(_ server: HTTPServerKind) throws {
        let fixture = try Fixture(nginx: server == .nginx)
        var rng = SplitMix64(seed: 0xB4C4_11E5 &+ UInt64(HTTPServerKind.allCases.firstIndex(of: server)!))
        for size in Self.sizes {
            let file = fixture.files[size]!
            let source = try HTTPSource(url: fixture.url(server, size: size))
            let rounds = server == .rangesPaced ? 25 : 60
            for _ in 0..<rounds {
                // Places a decoder goes: the start, the end's tags and index, the windows'
                // edges, anywhere.
                let places = [0, size - 128, size - 64 * 1024, 65535, 65536, 65537, 16384, 512 * 1024, size - (1 << 20),
                              Int(rng.next() % UInt64(size + 1))]
                let offset = max(0, min(size, places[Int(rng.next() % UInt64(places.count))] + Int(rng.next() % 9) - 4))
                let count = 1 + Int(rng.next() % 40_000)
                _ = try Self.check(source, file, at: offset, count: count, "\(server.rawValue) \(size) B")
            }
        }
    }

    @Test("a file from a server without ranges is kept whole, and seeks, up to and at the kept-whole limit; one byte over, it reads front to back only", arguments: [-1, 0, 1])
    func wholeFileLimit(_ over: Int) throws {
        let fixture = try Fixture(nginx: false)
        var options = HTTPOptions()
        let size = 512 * 1024  // (over the 64 KiB kept of every file)
        options.wholeFileLimit = size + over
        let file = fixture.files[size]!
        let source = try HTTPSource(url: fixture.url(.noRanges, size: size), options: options)
        #expect(source.isSeekable == (over >= 0), "limit \(options.wholeFileLimit), file \(size) B")
        if source.isSeekable {
            _ = try Self.check(source, file, at: size - 128, count: 128, "the end")
            _ = try Self.check(source, file, at: 0, count: size, "back to the start, then all of it")
        } else {
            _ = try Self.check(source, file, at: 0, count: size, "front to back")
        }
    }

    @Test("a file over 16 MiB from a server without ranges keeps its first 64 KiB: going back behind them fails with the reason, and the source reads on where it stood")
    func noRangesGoingBack() throws {
        let dir = try Harness.makeTemporaryDirectory("http-source-large")
        var rng = SplitMix64(seed: 16)
        let file = (0..<(16 << 20) + 1).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        try Data(file).write(to: dir.appendingPathComponent("large.bin"))
        let server = try HTTPTestServer(directory: dir)
        let source = try HTTPSource(url: server.url("plain/large.bin"))
        #expect(!source.isSeekable)
        _ = try Self.check(source, file, at: 100_000, count: 1000, "forward")
        do {
            try source.seek(to: 70_000)
            Issue.record("a seek behind the transfer succeeded")
        } catch {
            #expect(error.message.contains("does not serve ranges"), "\(error)")
        }
        _ = try Self.check(source, file, at: 101_000, count: 1000, "on")
        _ = try Self.check(source, file, at: 10, count: 1000, "within the first bytes")
        _ = try Self.check(source, file, at: 65_000, count: 536, "to the first bytes' end")
    }
}
