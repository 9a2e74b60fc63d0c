import AudioEngine
import BacklineTestSupport
import Foundation
import HTTPInput
import Media
import MediaCore
import Testing

/// Items over HTTP, from a server the test starts on loopback: bit-exact through ALSA's `file`
/// plugin, seeks to the sample, bad URLs failing with their reasons, Icecast titles heard on time.
@Suite("HTTP input: files and streams over HTTP (a test server on loopback)", Harness.audioTools)
struct HTTPStreamTests {
    /// A server over a directory holding a FLAC and an MP3 (3 s), and their local paths.
    static func server() throws -> (HTTPTestServer, flac: URL, mp3: URL) {
        HTTPInput.register(options: Self.options)
        let dir = try Harness.makeTemporaryDirectory("http")
        // (Made once, one test at a time: the suite's tests start together.)
        let (flac, mp3) = try Self.fixtureLock.withLock {
            let src = try FormatFixtures.source("http-src", seconds: 3)
            return (try FormatFixtures.flac("http-flac", from: src), try Fixtures.mp3(from: src, name: "http-mp3"))
        }
        for f in [flac, mp3] { try FileManager.default.copyItem(at: f, to: dir.appendingPathComponent(f.lastPathComponent)) }
        return (try HTTPTestServer(directory: dir), flac, mp3)
    }

    static let fixtureLock = NSLock()

    /// Short timeouts, so the failures below take seconds.
    static var options: HTTPOptions {
        var o = HTTPOptions()
        o.readTimeout = 2
        o.connectTimeout = 2
        o.reconnectAttempts = 3
        return o
    }

    /// Plays `items` into a file capture; the samples and the events.
    static func play(_ items: [String], startingAt seconds: Double? = nil) throws -> ([Float], [EngineEvent]) {
        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let engine = makeEngine(device: cap.device)
        defer { engine.shutdown() }
        let log = EventLog(engine)
        if let seconds {
            _ = engine.enqueue(items[0], startingAt: seconds)
            _ = engine.enqueue(Array(items.dropFirst()))
        } else {
            engine.enqueue(items)
        }
        guard log.waitForEnd(timeout: 60) else { throw HarnessError("playback did not finish: \(log.all)") }
        return (try cap.f32(), log.all)
    }

    @Test("a FLAC and an MP3 over HTTP play bit for bit as the same files on disk, gapless, with their lengths")
    func bitExact() throws {
        let (server, flac, mp3) = try Self.server()
        let (local, _) = try Self.play([flac.path, mp3.path])
        let (remote, events) = try Self.play([server.url("files/http-flac.flac"), server.url("files/http-mp3.mp3")])
        let same = remote == local
        #expect(same, "\(remote.count) samples over HTTP, \(local.count) from the files; \(events)")
        let lengths = events.compactMap { if case .itemStarted(let i, _) = $0 { i.durationFrames } else { nil } }
        #expect(lengths.count == 2 && lengths[0] == 3 * 44100, "\(lengths)")
        #expect(!events.contains { if case .itemStarted(let i, _) = $0 { i.isLive } else { false } })
    }

    @Test("a seek in an HTTP file lands on the exact sample (a Range request), FLAC and MP3")
    func seek() throws {
        let (server, flac, mp3) = try Self.server()
        for (name, file) in [("http-flac.flac", flac), ("http-mp3.mp3", mp3)] {
            let (local, _) = try Self.play([file.path], startingAt: 1.75)
            let (remote, _) = try Self.play([server.url("files/\(name)")], startingAt: 1.75)
            let same = remote == local
            #expect(same && remote.count == 2 * (3 * 44100 - 77175), "\(name): \(remote.count) vs \(local.count)")
        }
    }

    @Test("bad URLs fail with their reasons and the next item plays: 404, an HTML page, a redirect loop, HLS, a closed port, ftp, an endless header, a server that sends nothing, one that closes mid-file")
    func badURLs() throws {
        let (server, flac, _) = try Self.server()
        let closed = try Harness.freePort()
        let cases: [(String, String)] = [
            (server.url("missing"), "HTTP 404"),
            (server.url("html"), "sent an HTML page"),
            (server.url("loop"), "redirect"),
            (server.url("hls.m3u8"), "HLS is not supported"),
            ("http://127.0.0.1:\(closed)/x.mp3", "127.0.0.1"),
            ("ftp://127.0.0.1/x.mp3", "no input for ftp"),
            (server.url("endless-header"), "no data from 127.0.0.1"),
            (server.url("silent"), "no data from 127.0.0.1"),
            (server.url("close/http-flac.flac"), "closed"),
        ]
        for (url, reason) in cases {
            let (_, events) = try Self.play([url, flac.path])
            let failure = events.compactMap { if case .itemFailed(_, _, let e) = $0 { e.reason } else { nil } }.first
            #expect(failure?.contains(reason) == true, "\(url): \(String(describing: failure))")
            #expect(events.compactMap(\.startedPath).last == flac.path, "\(url): the next item played")
        }
    }

    @Test("a flush while a server keeps the decoder waiting (it sent a head, then nothing) lets go at once: the next item plays")
    func flushWhileWaiting() throws {
        let (server, flac, _) = try Self.server()
        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let engine = makeEngine(device: cap.device)
        defer { engine.shutdown() }
        let log = EventLog(engine)
        engine.enqueue([server.url("silent"), flac.path])
        Thread.sleep(forTimeInterval: 0.3)
        let t0 = Date()
        engine.skipToNext()
        #expect(log.wait(timeout: 10) { $0.startedPath == flac.path } != nil)
        let took = Date().timeIntervalSince(t0)
        #expect(took < 1, "the next item after \(took) s (the read timeout is 2 s)")
        #expect(!log.all.contains { if case .itemFailed = $0 { true } else { false } }, "a flushed item does not fail: \(log.all)")
    }
}
