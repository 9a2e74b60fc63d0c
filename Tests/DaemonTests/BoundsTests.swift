import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import MediaCore
import Testing

/// What one client, one playlist by URL or one stream may cost the daemon, each bounded:
/// requests read behind one that takes long, a playlist fetch (its framing, size, time,
/// encoding, entries), nested playlists in all, and the threads that answer everyone else.
@Suite("backline daemon: bounded per client, per fetch, per playlist", Harness.audioTools)
struct BoundsTests {
    static let config = DaemonFixture.foreground

    /// A test HTTP server whose directory holds `radio.m3u` (3 entries) and the files `extra` names.
    static func server(_ extra: [String: String] = [:]) throws -> HTTPTestServer {
        let dir = try Harness.makeTemporaryDirectory("bounds-http")
        let files = extra.merging(["radio.m3u": "#EXTM3U\none.mp3\ntwo.mp3\nhttp://127.0.0.1:1/three.mp3\n"]) { a, _ in a }
        for (name, text) in files { try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        return try HTTPTestServer(directory: dir)
    }

    /// Connects to 127.0.0.1:`port` (or the Unix socket `unix`), non-blocking.
    static func connect(port: Int? = nil, unix: String? = nil) throws -> Int32 {
        let fd = try LoopbackSocket.connect(port: port, unix: unix)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// Sends `bytes` whole (waiting for room at most `seconds`); false when it could not.
    @discardableResult
    static func sendAll(_ fd: Int32, _ bytes: [UInt8], seconds: Double = 5) -> Bool {
        var sent = 0
        let deadline = Date().addingTimeInterval(seconds)
        while sent < bytes.count, Date() < deadline {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            guard n < 0, errno == EAGAIN || errno == EWOULDBLOCK else { return false }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, 100)
        }
        return sent == bytes.count
    }

    /// Sends `chunk` again and again for at most `seconds`, or `limit` bytes; how many were sent
    /// (a daemon that stops reading makes the kernel's buffers fill, and sending stop).
    static func flood(_ fd: Int32, _ chunk: [UInt8], limit: Int, seconds: Double) -> Int {
        var total = 0
        let deadline = Date().addingTimeInterval(seconds)
        while total < limit, Date() < deadline {
            let n = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n > 0 { total += n; continue }
            guard n < 0, errno == EAGAIN || errno == EWOULDBLOCK else { break }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, 100)
        }
        return total
    }

    /// What arrives on `fd` until `done` holds for it, or `seconds` pass.
    static func receive(_ fd: Int32, seconds: Double, until done: ([UInt8]) -> Bool) -> [UInt8] {
        var got: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, !done(got) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            got += chunk[..<n]
        }
        return got
    }

    /// A masked WebSocket text frame holding `text` (a client's frames are masked).
    static func frame(_ text: String) -> [UInt8] {
        let payload = Array(text.utf8)
        precondition(payload.count < 126)
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        return [0x81, 0x80 | UInt8(payload.count)] + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }

    /// Opens the web remote's WebSocket at 127.0.0.1:`port`; the connection.
    static func webSocket(port: Int) throws -> Int32 {
        let fd = try connect(port: port)
        let upgrade = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        sendAll(fd, Array(upgrade.utf8))
        let head = receive(fd, seconds: 10) { String(decoding: $0, as: UTF8.self).contains("\r\n\r\n") }
        guard String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
            close(fd)
            throw HarnessError("no WebSocket: \(String(decoding: head, as: UTF8.self))")
        }
        return fd
    }

    /// The first reply in `bytes`, what arrived after the greeting (MPD) or the 101 (the
    /// WebSocket): the first WebSocket frame's payload, or the first line.
    static func firstReply(_ bytes: [UInt8], webSocket: Bool) -> String {
        guard webSocket else { return String(decoding: bytes.prefix { $0 != 0x0A }, as: UTF8.self) }
        // A server's frame: FIN and opcode, then a 7-bit length (126: 16 bits follow, 127: 64), unmasked.
        guard bytes.count >= 2 else { return "" }
        var length = Int(bytes[1] & 0x7F), start = 2
        if length == 126, bytes.count >= 4 {
            (length, start) = (Int(bytes[2]) << 8 | Int(bytes[3]), 4)
        } else if length == 127, bytes.count >= 10 {
            (length, start) = (bytes[2..<10].reduce(0) { $0 << 8 | Int($1) }, 10)
        }
        return String(decoding: bytes.dropFirst(start).prefix(length), as: UTF8.self)
    }

    @Test("a client that sends `add` of a playlist URL that drips, then floods `ping` (MPD TCP, the JSON socket, the WebSocket), is not read while the `add` runs: only what the kernel buffers is sent, the `add` is answered first with the reason in time, the flood after it")
    func floodBehindSlowAdd() throws {
        let server = try Self.server()
        let drip = server.url("drip/radio.m3u")
        let (mpdPort, httpPort) = (MPDTests.port(40), MPDTests.port(41))
        let d = try DaemonFixture(device: "null", config: Self.config)
        try d.start(["--mpd-listen", "127.0.0.1:\(mpdPort)", "--http-listen", "127.0.0.1:\(httpPort)"])
        let doors: [(name: String, open: () throws -> Int32, add: [UInt8], ping: [UInt8], webSocket: Bool)] = [
            ("MPD TCP", { let fd = try Self.connect(port: mpdPort); _ = Self.receive(fd, seconds: 5) { $0.contains(0x0A) }; return fd },
             Array("add \"\(drip)\"\n".utf8), Array("ping\n".utf8), false),
            ("the JSON socket", { try Self.connect(unix: d.socket) },
             Array("{\"id\":1,\"command\":\"add\",\"path\":\"\(drip)\"}\n".utf8), Array("{\"command\":\"ping\"}\n".utf8), false),
            ("the WebSocket", { try Self.webSocket(port: httpPort) },
             Self.frame("{\"id\":1,\"command\":\"add\",\"path\":\"\(drip)\"}"), Self.frame("{\"command\":\"ping\"}"), true),
        ]
        for door in doors {
            let fd = try door.open()
            defer { close(fd) }
            #expect(Self.sendAll(fd, door.add))
            usleep(300_000)  // (the fetch under way, libcurl loaded)
            // A daemon that stops reading leaves only the kernel's buffers to fill (a few MiB on
            // loopback TCP at most, `tcp_rmem` and `tcp_wmem`; less on a Unix socket); one that
            // read on, holding the pings behind the `add`, took all 96 MiB within the 8 s.
            let chunk = Array([[UInt8]](repeating: door.ping, count: 65536 / door.ping.count).joined())
            let sent = Self.flood(fd, chunk, limit: 96 << 20, seconds: 8)
            #expect(sent < 32 << 20, "\(door.name): \(sent >> 20) MiB of pings were taken while the add ran")
            // The add is answered first, with the reason, once the fetch's time is up.
            let bytes = Self.receive(fd, seconds: 30) { String(decoding: $0, as: UTF8.self).contains("in time") }
            let answer = String(decoding: bytes, as: UTF8.self)
            #expect(answer.contains("did not send all of it in time"), "\(door.name): \(answer.prefix(300))")
            let first = Self.firstReply(bytes, webSocket: door.webSocket)
            let expected = door.webSocket || door.name == "the JSON socket" ? "\"id\":1" : "ACK"
            #expect(first.contains(expected) && first.contains("in time"), "\(door.name): the first reply is not the add's: \(first.prefix(300))")
        }
        #expect(try d.request("ping").ok)
        d.expectCleanStop()
    }

    @Test("a playlist URL without Content-Length (chunked, or ended by the close) is read to its end once, not taken for a stream: `add` answers with its entries")
    func playlistWithoutLength() throws {
        let server = try Self.server()
        let d = try DaemonFixture(device: "null", config: Self.config)
        try d.start()
        for path in ["chunked/radio.m3u", "eof/radio.m3u"] {
            let r = try d.client().request("add", [("path", .string(server.url(path)))], timeout: 20)
            #expect(r["items"]?.array?.count == 3, "\(path): \(r.text)")
            #expect(server.requests(path).count == 1, "\(path) fetched \(server.requests(path).count) times")
        }
        d.expectCleanStop()
    }

    @Test("two `add`s of playlist URLs that drip hold nobody else: the owner's `list`, `browse`, `add`, MPD's `lsinfo` and `playlistinfo`, the web page and cover art answer meanwhile; each `add` fails with the reason once its 10 s are up; SIGTERM with two such fetches under way stops the daemon within 10 s")
    func slowFetchesHoldNobody() throws {
        let server = try Self.server()
        let (mpdPort, httpPort) = (MPDTests.port(42), MPDTests.port(43))
        let d = try DaemonFixture(device: "null", config: Self.config)
        let cover = try Fixtures.wav("bounds-cover-src", seconds: 1)
        #expect(try runProcess("sox", [cover.path, "-n", "spectrogram", "-r", "-x", "128", "-y", "129", "-o", d.music + "/album/cover.png"]).status == 0)
        try d.start(["--mpd-listen", "127.0.0.1:\(mpdPort)", "--http-listen", "127.0.0.1:\(httpPort)"])
        let item = try #require(try d.request("add", [("paths", ["album/a.mp3"])])["items"]?.array?.first?.int)
        // The library's first scan (its own process) must be over before the fetches start: a
        // loaded machine was still scanning when `lsinfo` asked, and the library was empty.
        let mpd = try TCPLineClient.mpd(port: mpdPort)
        #expect(eventually(timeout: 60) { (try? mpd.ask("lsinfo album"))?.contains("file: album/a.mp3") == true },
                "the library's first scan did not end: \(d.log().suffix(2000))")
        func dripping() throws -> [ControlClient] {
            try (0..<2).map { k in
                let c = try d.client()
                try c.sendRaw(Array("{\"id\":7,\"command\":\"add\",\"path\":\"\(server.url("drip/radio.m3u?\(k)"))\"}\n".utf8))
                return c
            }
        }
        let slow = try dripping()
        usleep(500_000)  // (both fetches under way)
        let owner = try d.client()
        #expect(owner.requestWithin(5, "list")?["items"]?.array?.count == 1)
        #expect(owner.requestWithin(5, "browse", [("path", "album")])?.ok == true)
        #expect(owner.requestWithin(5, "add", [("paths", ["album/b.mp3"])])?["items"]?.array?.count == 1)
        #expect((try? mpd.ask("lsinfo album"))?.contains("file: album/a.mp3") == true)
        #expect((try? mpd.ask("playlistinfo"))?.contains("file: album/b.mp3") == true)
        #expect(try WebRemoteTests.get(httpPort, "/").status == 200)
        #expect(try WebRemoteTests.get(httpPort, "/art/\(item)").status == 200)
        for c in slow {
            let r = try c.nextReply(timeout: 30)
            #expect(r.errorCode == "unsupported" && r.text.contains("in time") && r.text.contains("10 s in all"), "\(r.text)")
        }
        // SIGTERM while two fetches drip: the daemon stops without waiting for them.
        let again = try dripping()
        usleep(500_000)
        let p = try #require(d.process)
        p.signal(SIGTERM)
        // (Before fetches were cancelled at stop it had not stopped after 15 s; 10 s leaves a
        // loaded machine room for the stop's own work.)
        let status = try? p.wait(timeout: 10)
        #expect(status == 0, "the daemon did not stop within 10 s of SIGTERM with two fetches under way: \(d.log().suffix(2000))")
        if status == nil { p.signal(SIGKILL) }
        _ = again
    }

    @Test("a playlist URL larger than 1 MiB is refused with the reason; so is one whose body is not text")
    func fetchSizeAndText() throws {
        let big = String(repeating: "http://127.0.0.1:1/" + String(repeating: "x", count: 80) + ".mp3\n", count: 20_000)
        let server = try Self.server(["big.m3u": big])
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) }).write(to: server.directory.appendingPathComponent("noise.m3u"))
        let d = try DaemonFixture(device: "null", config: Self.config)
        try d.start()
        let large = try d.client().request("add", [("path", .string(server.url("files/big.m3u")))], timeout: 20)
        #expect(large.errorCode == "too-large" && large.text.contains("larger than 1048576 bytes"), "\(large.text.prefix(300))")
        let noise = try d.client().request("add", [("path", .string(server.url("files/noise.m3u")))], timeout: 20)
        #expect(noise.errorCode == "unsupported" && noise.text.contains("not text"), "\(noise.text.prefix(300))")
        #expect(try d.request("status")["count"] == 0)
        d.expectCleanStop()
    }

    @Test("a gzip-encoded playlist URL is decoded: its 3 entries are queued, not its compressed bytes; entries that are no URL are skipped, each with the reason")
    func encodedPlaylistAndBadEntries() throws {
        let server = try Self.server(["mixed.m3u": "ok.mp3\nbad\u{90}entry.mp3\nhttp:///nohost.mp3\nMy Song.mp3\n"])
        let d = try DaemonFixture(device: "null", config: Self.config)
        try d.start()
        let gz = try d.client().request("add", [("path", .string(server.url("gzip/radio.m3u")))], timeout: 20)
        let paths = try d.request("list")["items"]?.array?.compactMap { $0["path"]?.string } ?? []
        #expect(gz["items"]?.array?.count == 3 && paths == [server.url("gzip/one.mp3"), server.url("gzip/two.mp3"), "http://127.0.0.1:1/three.mp3"],
                "\(gz.text.prefix(300)) \(paths.prefix(5))")
        let mixed = try d.client().request("add", [("path", .string(server.url("files/mixed.m3u")))], timeout: 20)
        #expect(mixed["items"]?.array?.count == 2, "\(mixed.text)")
        let skipped = mixed["skipped"]?.array ?? []
        #expect(skipped.count == 2 && skipped.allSatisfy { $0["reason"]?.string?.hasPrefix("not a URL") == true }, "\(mixed.text)")
        #expect(skipped.first?["path"] == "bad\\x90entry.mp3", "\(mixed.text)")
        let last = try d.request("list")["items"]?.array?.last?["path"]?.string
        #expect(last == server.url("files/My%20Song.mp3"), "\(last ?? "")")
        d.expectCleanStop()
    }

    @Test("2,000 nested playlists of 100,000 entries each, by URL and in the music directory, are refused once 100,000 entries are read in all, before the daemon grows")
    func nestedPlaylistsBounded() throws {
        let top = String(repeating: "sub.m3u\n", count: 2_000)
        let sub = String(repeating: "m.mp3\n", count: 100_000)
        let server = try Self.server(["top.m3u": top, "sub.m3u": sub])
        let d = try DaemonFixture(device: "null", config: Self.config)
        try top.write(toFile: d.music + "/top.m3u", atomically: true, encoding: .utf8)
        try sub.write(toFile: d.music + "/sub.m3u", atomically: true, encoding: .utf8)
        try d.start()
        let pid = try #require(d.process?.pid)
        let before = try #require(SoakTests.rss(pid))
        for path in [server.url("files/top.m3u"), "top.m3u"] {
            let r = try d.client().request("add", [("path", .string(path))], timeout: 30)
            #expect(r.errorCode == "too-large" && r.text.contains("more than 100000 entries in all"), "\(path): \(r.text.prefix(300))")
        }
        #expect(server.requests("files/sub.m3u").count == 1, "one nested playlist read, not 2,000")
        let grown = (SoakTests.rss(pid) ?? 0) - before
        #expect(grown < 128 * 1024, "grew by \(grown >> 10) MiB")
        #expect(try d.request("status")["count"] == 0)
        d.expectCleanStop()
    }
}

extension BoundsTests {
    @Test("an `add` of 20 paths each naming a playlist of 100,000 entries is refused once 100,000 entries are read in all (the request's bound, not each path's), with `partial` too, before the daemon grows")
    func manyPathsShareOneBound() throws {
        let big = String(repeating: "album/a.mp3\n", count: 100_000)
        let d = try DaemonFixture(device: "null", config: Self.config)
        try big.write(toFile: d.music + "/big.m3u", atomically: true, encoding: .utf8)
        try d.start()
        let pid = try #require(d.process?.pid)
        let before = try #require(SoakTests.rss(pid))
        let paths = JSON.array([JSON](repeating: "big.m3u", count: 20))
        for partial in [false, true] {
            let r = try d.client().request("add", [("paths", paths), ("partial", .bool(partial))], timeout: 60)
            #expect(r.errorCode == "too-large" && r.text.contains("more than 100000 entries in all"),
                    "partial \(partial): \(r.text.prefix(300))")
        }
        let grown = (SoakTests.rss(pid) ?? 0) - before
        #expect(grown < 64 * 1024, "grew by \(grown >> 10) MiB")
        #expect(try d.request("status")["count"] == 0)
        d.expectCleanStop()
    }

    @Test("an `add` of three playlist URLs that drip, with `partial`, is answered once the request's 10 s are up, not after 10 s for each: the reason says the time is the request's")
    func slowURLsShareOneDeadline() throws {
        let server = try Self.server()
        let d = try DaemonFixture(device: "null", config: Self.config)
        try d.start()
        let urls = (0..<3).map { JSON.string(server.url("drip/radio.m3u?\($0)")) }
        let started = Date()
        let r = try d.client().request("add", [("paths", .array(urls)), ("partial", true)], timeout: 60)
        let took = Date().timeIntervalSince(started)
        #expect(r.errorCode == "unsupported" && r.text.contains("in time") && r.text.contains("10 s in all per request"), "\(r.text.prefix(400))")
        #expect(took >= 9.5 && took < 20, "answered after \(Int(took)) s: the request has 10 s; each URL having its own would take 30")
        #expect(try d.request("status")["count"] == 0)
        d.expectCleanStop()
    }

    @Test("a playlist URL answered with 404 and an error page over 1 MiB, or one that drips, is refused as `HTTP 404 Not Found from` its host, not as too large or too slow")
    func errorStatusBeforeBody() throws {
        let server = try Self.server()
        let d = try DaemonFixture(device: "null", config: Self.config)
        try d.start()
        for path in ["error/big.m3u?code=404&size=2000000", "error/drip.m3u?code=404&drip=1", "error/small.m3u?code=500&size=10"] {
            let r = try d.client().request("add", [("path", .string(server.url(path)))], timeout: 30)
            let status = path.contains("500") ? "500 Internal Server Error" : "404 Not Found"
            #expect(r.errorCode == "unsupported" && r.text.contains("HTTP \(status) from 127.0.0.1"), "\(path): \(r.text.prefix(300))")
        }
        #expect(try d.request("status")["count"] == 0)
        d.expectCleanStop()
    }
}

extension ControlClient {
    /// `command`'s reply if it comes within `seconds` (nil: none).
    func requestWithin(_ seconds: Double, _ command: String, _ arguments: [(String, JSON)] = []) -> JSON? {
        try? request(command, arguments, timeout: seconds)
    }
}
