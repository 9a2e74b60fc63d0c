import AudioEngine
import BacklineTestSupport
import BacklineWire
import Foundation
import HTTPInput
import Media
import MediaCore
import Testing
import Locking

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

    @Test("a seek in an HTTP file lands on the exact sample (a Range request), FLAC and MP3, and from a server that ignores ranges")
    func seek() throws {
        let (server, flac, mp3) = try Self.server()
        // (`norange`: a server that answers a range with the whole body; its first bytes are skipped.)
        for (path, file) in [("files/http-flac.flac", flac), ("files/http-mp3.mp3", mp3), ("norange/http-flac.flac", flac)] {
            let name = path
            let (local, _) = try Self.play([file.path], startingAt: 1.75)
            let (remote, _) = try Self.play([server.url(path)], startingAt: 1.75)
            let same = remote == local
            #expect(same && remote.count == 2 * (3 * 44100 - 77175), "\(name): \(remote.count) vs \(local.count)")
        }
    }

    @Test("opening an HTTP file whose tags or index sit at its end takes two requests (the file, then its end), not three or four: the transfer from the start waits while the end is read and goes on when the decoder comes back; an MP3 with ID3v2 and ID3v1 tags, an M4A with its moov last and an Opus file, all larger than the network buffer, play bit for bit as on disk, with their tags")
    func openRequests() throws {
        HTTPInput.register(options: Self.options)
        let dir = try Harness.makeTemporaryDirectory("http-open")
        let files = try Self.fixtureLock.withLock {
            let src = try FormatFixtures.source("http-open-src", seconds: 40)
            return [try Fixtures.mp3(from: src, name: "http-open-tagged",
                                     lameArgs: ["-b", "128", "--tt", "Tagged", "--ta", "Backline", "--add-id3v2"]),
                    try FormatFixtures.ffmpeg("http-open", from: src, ext: "m4a", args: ["-c:a", "aac", "-b:a", "128k"]),
                    try FormatFixtures.opus("http-open", from: src, args: ["--bitrate", "160", "--title", "Tagged"])]
        }
        for f in files { try FileManager.default.copyItem(at: f, to: dir.appendingPathComponent(f.lastPathComponent)) }
        let server = try HTTPTestServer(directory: dir)
        func titles(_ events: [EngineEvent]) -> [String?] {
            events.compactMap { if case .itemStarted(let i, _) = $0 { i.metadata.title } else { nil } }
        }
        for file in files {
            let path = "files/" + file.lastPathComponent
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int)
            #expect(size > Self.options.bufferBytes, "the end is not in the first request's buffer")
            let (local, localEvents) = try Self.play([file.path])
            let (remote, events) = try Self.play([server.url(path)])
            let same = remote == local
            #expect(same, "\(path): \(remote.count) samples over HTTP, \(local.count) from the file")
            #expect(titles(events) == titles(localEvents) && titles(events).first??.isEmpty == false, "\(path): \(titles(events))")
            // The second request starts in the file's last 64 KiB and runs to its end.
            let requests = server.requests(path)
            let tail = requests.count == 2 ? requests[1].split(separator: "=").last.flatMap { Int($0.dropLast()) } : nil
            #expect(requests.first == "-" && tail.map { $0 >= size - 65536 && requests[1].hasSuffix("-") } == true,
                    "\(path) (\(size) bytes): \(requests)")
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

    @Test("a stream that asks for ICY metadata after every audio byte (`icy-metaint: 1`, a long title each time) is refused with the reason before any byte is read; one of 1024 is taken")
    func tinyMetaInterval() throws {
        let (server, _, _) = try Self.server()
        let title = String(repeating: "x", count: 4000)
        let url = server.url("live/http-mp3.mp3?metaint=1&titles=\(title)")
        var reason: String?
        do throws(MediaError) { _ = try HTTPSource(url: url, options: Self.options) } catch { reason = error.reason }
        #expect(reason?.contains("icy-metaint 1 from 127.0.0.1") == true, "\(reason ?? "opened")")
        // Just below, at and above the smallest interval taken.
        for interval in [ICYDemuxer.minimumInterval - 1, ICYDemuxer.minimumInterval, ICYDemuxer.minimumInterval + 1] {
            var refusal: String?
            do throws(MediaError) {
                let source = try HTTPSource(url: server.url("live/http-mp3.mp3?metaint=\(interval)&titles=A"), options: Self.options)
                #expect(source.isLive)
            } catch { refusal = error.reason }
            #expect((refusal != nil) == (interval < ICYDemuxer.minimumInterval), "icy-metaint \(interval): \(refusal ?? "opened")")
        }
    }

    @Test("pending ICY blocks are bounded while nobody reads: the newest are kept, the oldest go, the last one passed is the one handed over")
    func icyMarksBounded() {
        // Just below, at and above the bound: nothing is dropped until it is passed.
        for n in [ICYMarks.capacity - 1, ICYMarks.capacity, ICYMarks.capacity + 1] {
            var m = ICYMarks()
            for k in 0..<n { m.add([UInt8(truncatingIfNeeded: k)], at: k * 1024) }
            #expect(m.count == min(n, ICYMarks.capacity) && m.nextOffset == (n > ICYMarks.capacity ? 1024 : 0), "\(n) blocks")
        }
        var marks = ICYMarks()
        let block = [UInt8](repeating: 0x41, count: 4080)
        for k in 0..<100_000 { marks.add(block + [UInt8(truncatingIfNeeded: k)], at: k * 1024) }
        #expect(marks.count == ICYMarks.capacity && marks.bytes <= ICYMarks.capacity * 4081)
        #expect(marks.nextOffset == (100_000 - ICYMarks.capacity) * 1024)
        let taken = marks.take(through: 99_990 * 1024)
        #expect(taken?.last == UInt8(truncatingIfNeeded: 99_990) && marks.count == 9)
        #expect(marks.take(through: 99_990 * 1024) == nil)
    }

    @Test("a throttled server (a third of the MP3's speed): the decoder waits for the bytes and the item plays whole, bit for bit")
    func throttled() throws {
        let (server, _, mp3) = try Self.server()
        let (local, _) = try Self.play([mp3.path])
        // 128 kbit/s is 16,000 bytes a second: sent at 6,000, 3 s of audio take 8 s.
        let (remote, events) = try Self.play([server.url("slow/http-mp3.mp3?bps=6000")])
        let same = remote == local
        #expect(same, "\(remote.count) vs \(local.count) samples")
        #expect(!events.contains { if case .itemFailed = $0 { true } else { false } })
    }

    @Test("a flush while a server keeps the decoder waiting (it sent a head and then nothing, or not even a head) lets go at once: the next item plays", arguments: ["silent", "hang"])
    func flushWhileWaiting(_ path: String) throws {
        let (server, flac, _) = try Self.server()
        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let engine = makeEngine(device: cap.device)
        defer { engine.shutdown() }
        let log = EventLog(engine)
        engine.enqueue([server.url(path), flac.path])
        Thread.sleep(forTimeInterval: 0.3)
        let t0 = Date()
        engine.skipToNext()
        #expect(log.wait(timeout: 10) { $0.startedPath == flac.path } != nil)
        let took = Date().timeIntervalSince(t0)
        #expect(took < 1, "the next item after \(took) s (the read timeout is 2 s)")
        #expect(!log.all.contains { if case .itemFailed = $0 { true } else { false } }, "a flushed item does not fail: \(log.all)")
    }
}

extension HTTPStreamTests {
    /// The title changes the engine announced, in order.
    static func titles(_ events: [EngineEvent]) -> [String?] {
        events.compactMap { if case .metadataChanged(let i) = $0 { i.metadata.title } else { nil } }
    }

    @Test("Icecast titles (icy-metaint) change when that audio is heard, not when it is downloaded: the station's name from icy-name, a live stream with no length (paced device)")
    func icyTitlesOnTime() throws {
        let (server, _, _) = try Self.server()
        // 128 kbit/s: 16,000 bytes a second. A block every 4,000 bytes; the title turns to
        // "Second" at byte 24,000: about 1.45 s in (less the 418-byte Info frame and the encoder delay).
        let url = server.url("live/http-mp3.mp3?metaint=4000&titles=First|Second&every=24000")
        let clock = PacedDevice.clock("icy-\(UUID().uuidString)")
        let engine = makeEngine(device: clock.device)
        defer { engine.shutdown() }
        let log = EventLog(engine)
        engine.enqueue([url])
        #expect(clock.waitUntilHolding(1, timeout: 20))
        #expect(clock.hear(seconds: 0.1))
        #expect(log.wait(timeout: 10) { if case .itemStarted = $0 { true } else { false } } != nil)
        let info = try #require(log.all.compactMap { if case .itemStarted(let i, _) = $0 { i } else { nil } }.first)
        #expect(info.isLive && info.durationFrames == 0, "live: \(info.isLive), \(info.durationFrames) frames")
        #expect(info.metadata.values(.name) == ["Test Radio"] && info.metadata.genre == "Testing", "\(info.metadata.tags)")
        // Heard up to a place in the item, 10 ms at a time (not a length of clock: on a loaded
        // machine the clock can outrun the network, and the item then stalls, holding its place).
        func hear(upTo seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(20)
            while (engine.position?.seconds ?? 0) < seconds {
                if Date() > deadline { return false }
                clock.advance(frames: min(441, clock.held))
                usleep(1000)
            }
            return true
        }
        #expect(hear(upTo: 0.5))
        #expect(log.wait(timeout: 5) { if case .metadataChanged = $0 { true } else { false } } != nil)
        #expect(Self.titles(log.all) == ["First"], "\(Self.titles(log.all))")
        #expect(hear(upTo: 1.35))  // the decoder is far past byte 24,000, the listener is not
        usleep(150_000)
        #expect(Self.titles(log.all) == ["First"], "not yet: \(Self.titles(log.all))")
        #expect(hear(upTo: 1.55))
        #expect(log.wait(timeout: 5) { if case .metadataChanged(let i) = $0 { i.metadata.title == "Second" } else { false } } != nil,
                "\(Self.titles(log.all)) at \(String(describing: engine.position)); \(log.all.map { "\($0)".prefix(24) })")
        #expect(engine.info(for: info.id)?.metadata.title == "Second")
        #expect(engine.info(for: info.id)?.metadata.values(.name) == ["Test Radio"], "the station's name stays")
    }

    @Test("a live mount whose URL has no suffix is told by its bytes or its Content-Type: one starting with an ID3v2 tag (read past, though the stream cannot seek) and one joined mid-frame (audio/mpeg: libmpg123 finds the next frame)")
    func liveWithoutSuffix() throws {
        let (server, _, _) = try Self.server()
        let src = try FormatFixtures.source("http-id3-src", seconds: 2)
        let tagged = try Fixtures.mp3(from: src, name: "http-id3", lameArgs: ["-b", "128", "--add-id3v2", "--tt", "Tagged"])
        let bytes = try Data(contentsOf: tagged)
        #expect(bytes.starts(with: Array("ID3".utf8)), "the fixture starts with its tag")
        try bytes.write(to: server.directory.appendingPathComponent("tagged"))
        try FileManager.default.copyItem(at: server.directory.appendingPathComponent("http-mp3.mp3"),
                                         to: server.directory.appendingPathComponent("radio"))
        for path in ["live/tagged", "live/radio?offset=1001"] {
            let engine = makeEngine(device: "null")
            defer { engine.shutdown() }
            let log = EventLog(engine)
            engine.enqueue([server.url(path)])
            _ = log.wait(timeout: 20) { if case .itemStarted = $0 { true } else if case .itemFailed = $0 { true } else { false } }
            let started = log.all.first { if case .itemStarted = $0 { true } else if case .itemFailed = $0 { true } else { false } }
            guard case .itemStarted(let info, _)? = started else {
                Issue.record("\(path): \(log.all)")
                continue
            }
            #expect(info.isLive && info.audio?.formatName == "MPEG audio", "\(path): \(String(describing: info.audio))")
            // Audio goes on: the engine's position moves past a second of the stream.
            #expect(eventually(timeout: 20) { (engine.position?.seconds ?? 0) > 1 }, "\(path): \(log.all)")
        }
    }

    @Test("a live stream joined on bytes that look like a frame header (MPEG-1 layer I, 48 kHz, 416 kbit/s: the 416 bytes before a 44.1 kHz MP3's first frame) is not fooled: the header after it is checked first, as on a file, and the stream plays at its own rate, sample for sample as the reference decoder plays the MP3")
    func liveFalseSync() throws {
        let (server, _, mp3) = try Self.server()
        // FF FF D4 00: sync, MPEG-1, layer I, no CRC, 416 kbit/s, 48 kHz, stereo: a 416-byte frame.
        let fake: [UInt8] = [0xFF, 0xFF, 0xD4, 0x00] + [UInt8](repeating: 0, count: 412)
        try (Data(fake) + Data(contentsOf: mp3)).write(to: server.directory.appendingPathComponent("falsesync"))
        let reference = try ReferenceDecoder.decodeF32(mp3, gapless: false)  // (a live stream is not trimmed)
        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let engine = makeEngine(device: cap.device)
        let log = EventLog(engine)
        engine.enqueue([server.url("live/falsesync")])
        // Past the 3 s the file lasts: the server sends it again, the fake header and all, now
        // where the next frame's header belongs (a false frame mid-stream: dropped).
        let far = eventually(timeout: 20) { (engine.position?.seconds ?? 0) > 4 }
        engine.shutdown()
        #expect(far, "\(log.all)")
        let info = log.all.compactMap { if case .itemStarted(let i, _) = $0 { i } else { nil } }.first
        #expect(info?.format.rate == 44100 && info?.format.channels == 2, "\(String(describing: info?.format))")
        #expect(!log.all.contains { if case .itemFailed = $0 { true } else { false } }, "\(log.all)")
        let heard = try cap.f32()
        let n = 88200 * 3 / 2  // 1.5 s
        #expect(heard.count >= n && reference.count >= n, "\(heard.count) samples heard, \(reference.count) decoded")
        if heard.count >= n && reference.count >= n {
            let same = heard[..<n] == reference[..<n]
            #expect(same, "first difference at sample \(String(describing: (0..<n).first { heard[$0] != reference[$0] }))")
        }
    }

    @Test("a live stream that really changes its format (a 44.1 kHz MP3, then a 48 kHz one) fails with the reason once the new format has lasted (a few frames in another format are dropped, as a false header); what came before is heard")
    func liveFormatChange() throws {
        let (server, _, mp3) = try Self.server()
        let other = try Fixtures.tone("http-48k", seconds: 1, rate: 48000)
        try (Data(contentsOf: mp3) + Data(contentsOf: other)).write(to: server.directory.appendingPathComponent("changes"))
        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let engine = makeEngine(device: cap.device)
        defer { engine.shutdown() }
        let log = EventLog(engine)
        engine.enqueue([server.url("live/changes")])
        let failed = log.wait(timeout: 20) { if case .itemFailed = $0 { true } else { false } }
        let reason = log.all.compactMap { if case .itemFailed(_, _, let e) = $0 { "\(e)" } else { nil } }.first ?? ""
        #expect(failed != nil && reason.contains("the format changes mid-stream to 48000 Hz, 2 channels") && reason.contains("live/changes"),
                "\(reason); \(log.all.map { "\($0)".prefix(80) })")
        #expect(log.waitForEnd(timeout: 10))
        // The 44.1 kHz part was heard whole, sample for sample (untrimmed, as a live stream is),
        // and nothing of the 48 kHz frames before the failure: they were dropped.
        let reference = try ReferenceDecoder.decodeF32(mp3, gapless: false)
        let heard = try cap.f32(waitingFor: reference.count)
        let same = heard == reference
        #expect(same, "\(heard.count) samples heard, \(reference.count) in the 44.1 kHz part")
    }

    @Test("a stall: the input waits for the network and the ring runs dry: the device plays silence (no underrun), the position holds at the frame reached, `stalled` and then `stallEnded` once enough is buffered, and the item plays on from that frame to its end (paced device)")
    func stallHoldsAndResumes() throws {
        let (server, _, _) = try Self.server()
        let clock = PacedDevice.clock("stall-\(UUID().uuidString)")
        let engine = makeEngine(device: clock.device)
        defer { engine.shutdown() }
        let log = EventLog(engine)
        // 128 kbit/s: the gate holds all but the first 12,000 bytes of a request (opening,
        // libmpg123 reads the end and goes back: the request played from starts at byte 834),
        // about 0.75 s: less than the second a stall waits for before it ends (as mpv's
        // `cache-pause-wait`), so every stall before the gate holds until the gate opens, wherever
        // it begins: where the bytes run out, or sooner, when the clock (run faster than real
        // time) outruns a reader waiting for the rest of a burst (held then where the first piece
        // ends: seen at 1.02 s with a gate at 24,000 bytes, whose last 0.48 s could never end it).
        engine.enqueue([server.url("gate/http-mp3.mp3?after=12000")])
        // Heard once the device is full, as a card starts at its threshold: before that, a
        // device this test drains as fast as it is written would run dry between two reads.
        #expect(clock.waitUntilHolding(1, timeout: 20))
        #expect(clock.waitUntilHolding(clock.bufferFrames, timeout: 20))
        let stalled = { (e: EngineEvent) -> Bool in if case .stalled = e { true } else { false } }
        let ended = { (e: EngineEvent) -> Bool in if case .stallEnded = e { true } else { false } }
        func count(_ p: (EngineEvent) -> Bool) -> Int { log.all.filter(p).count }
        // Heard until the stall (the bound is wall time: the decoder reads as the network and
        // the machine allow, whatever the clock does).
        let deadline = Date().addingTimeInterval(60)
        while count(stalled) == 0, Date() < deadline {
            #expect(clock.hear(seconds: 0.05))
            usleep(2000)
        }
        #expect(count(stalled) == 1 && count(ended) == 0, "\(log.all)")
        let held = try #require(engine.position)
        #expect(held.seconds > 0 && held.seconds < 0.8, "held at most where the bytes ran out: \(held.seconds) s")
        #expect(clock.hear(seconds: 0.5), "silence goes on being played: the device stays open")
        #expect(engine.position == held, "the position holds through the silence: \(String(describing: engine.position)) vs \(held)")
        #expect(count(stalled) > count(ended), "\(log.all.map { "\($0)".prefix(40) }) heard \(clock.heardFrames)")

        try server.open("http-mp3.mp3")
        let again = Date().addingTimeInterval(60)
        while count(stalled) > count(ended), Date() < again {
            #expect(clock.hear(seconds: 0.02))
            usleep(2000)
        }
        #expect(count(stalled) == count(ended), "\(log.all)")
        #expect(eventually(timeout: 5) { (engine.position?.frame ?? 0) > held.frame }, "on from where it held")
        // Heard again, it advances as the clock does (whatever of the stall's silence was
        // still in the device is played first: the position moves once the audio comes).
        usleep(50_000)
        let resumed = try #require(engine.position)
        #expect(clock.hear(seconds: 0.5))
        #expect(eventually(timeout: 5) { engine.position?.frame == resumed.frame + 22050 },
                "0.5 s heard, 0.5 s on: \(resumed) then \(String(describing: engine.position))")
        #expect(clock.run(timeout: 20) { log.all.contains { if case .itemEnded = $0 { true } else { false } } })
        #expect(engine.underrunCount == 0, "a stall is not an underrun")
        let kinds = log.all.map { "\($0)".prefix(12) }
        let failed = log.all.contains { if case .itemFailed = $0 { true } else { false } }
        let starts = log.all.filter { if case .itemStarted = $0 { true } else { false } }.count
        #expect(!failed && starts == 1, "\(kinds)")
    }

    @Test("a live stream that drops is connected again after a second: the item goes on, never failing or restarting; one that stays gone fails after the reconnects, with the reason (paced device)")
    func liveReconnects() throws {
        let (server, _, _) = try Self.server()
        let clock = PacedDevice.clock("reconnect-\(UUID().uuidString)")
        let engine = makeEngine(device: clock.device)
        defer { engine.shutdown() }
        let log = EventLog(engine)
        // The connection closes after 40,000 bytes (2.5 s of audio); the next one starts again.
        engine.enqueue([server.url("live/http-mp3.mp3?drop=40000")])
        #expect(clock.waitUntilHolding(1, timeout: 20))
        // The clock runs faster than real time: the ring may run dry before the reconnect
        // (a second later, in real time) and the item stall; it goes on from where it held.
        let onward = clock.run(timeout: 30) { (engine.position?.seconds ?? 0) >= 4.5 }
        #expect(onward, "audio went on across the drop: \(String(describing: engine.position)) \(log.all.map { "\($0)".prefix(60) })")
        let starts = log.all.filter { if case .itemStarted = $0 { true } else { false } }
        #expect(starts.count == 1 && !log.all.contains { if case .itemFailed = $0 { true } else { false } }, "\(log.all)")
        let stalls = log.all.filter { if case .stalled = $0 { true } else { false } }.count
        let stallEnds = log.all.filter { if case .stallEnded = $0 { true } else { false } }.count
        #expect(stalls == stallEnds, "every stall ended: \(stalls) and \(stallEnds)")

        // Gone after the first connection: 503 on every reconnect, three attempts (1 + 2 + 4 s), then the item fails.
        let gone = makeEngine(device: "null")
        defer { gone.shutdown() }
        let goneLog = EventLog(gone)
        gone.enqueue([server.url("live/http-mp3.mp3?drop=20000&gone=1")])
        let failed = goneLog.wait(timeout: 20) { if case .itemFailed = $0 { true } else { false } }
        #expect(failed != nil, "\(goneLog.all)")
        let reason = goneLog.all.compactMap { if case .itemFailed(_, _, let e) = $0 { e.reason } else { nil } }.first ?? ""
        #expect(reason.contains("gave up after 3 reconnects") && reason.contains("HTTP 503"), "\(reason)")
    }
}
