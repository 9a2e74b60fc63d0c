import BacklineTestSupport
import BacklineWire
import Control
@testable import Daemon
import Foundation
import Logging
import MediaCore
import NIOCore
import NIOEmbedded
import Testing

/// The codecs on their own: each protocol's pipeline, exactly as the transport builds it for a
/// connection (``ControlServer/accept``), driven in memory by an `EmbeddedChannel` over a
/// daemon core built in this process (device `null`, no library). Commands that run on the
/// event loop only (the embedded loop runs on the test's thread).
@Suite("codecs in memory: JSON lines, MPD, HTTP and its WebSocket")
struct CodecTests {
    /// A core and a server (never listening) whose transport builds the pipelines.
    final class Rig: @unchecked Sendable {
        let dir: URL
        let core: DaemonCore
        let server: ControlServer
        /// The endpoints, built once (as the server builds them: the HTTP ones share one site).
        var endpoints: [Endpoint] = []
        /// Every connection made, closed at the end (an embedded channel left open keeps its
        /// pipeline and handlers alive: LeakSanitizer's reports in `scripts/sanitize address`).
        private var channels: [EmbeddedChannel] = []

        init(http: String? = nil, password: String? = nil) throws {
            dir = try Harness.makeTemporaryDirectory("codec")
            let music = dir.appendingPathComponent("music")
            try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
            var config = DaemonConfig.defaults(environment: [
                "HOME": dir.path, "XDG_RUNTIME_DIR": dir.path + "/run", "XDG_STATE_HOME": dir.path + "/state",
                "XDG_CONFIG_HOME": dir.path + "/config",
            ])
            config.device = "null"
            config.mpris = false
            config.musicDirectory = music.path
            config.maxRequestBytes = 1024
            try config.set("library", "off")
            if let http { config.httpListen = [http] }
            config.httpPassword = password
            // (A session registry of its own: not the user's, where sessions interrupt each other.)
            core = try DaemonCore(config: config, logger: Logger(label: "codec-test"), version: "test",
                                  registryDirectory: dir.path + "/sessions")
            server = ControlServer(config: config, logger: Logger(label: "codec-test"))
            endpoints = server.endpoints(core: core)
        }

        /// A connection on `endpoint` (the n-th of ``ControlServer/endpoints(core:)`` whose name starts so).
        func connect(_ name: String, needsToken: Bool = false) throws -> EmbeddedChannel {
            let endpoint = try #require(endpoints.first { $0.name.hasPrefix(name) })
            let channel = EmbeddedChannel()
            _ = server.accept(channel, endpoint, core: core, listener: server.listener(endpoint.name), peer: "test",
                              needsToken: needsToken)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            channels.append(channel)
            return channel
        }

        deinit {
            for c in channels { _ = try? c.finish(acceptAlreadyClosed: true) }
            core.shutdown()
            server.stop()
            try? FileManager.default.removeItem(at: dir)
        }
    }

    static func send(_ channel: EmbeddedChannel, _ text: String) throws {
        var b = channel.allocator.buffer(capacity: text.utf8.count)
        b.writeString(text)
        try channel.writeInbound(b)
        channel.embeddedEventLoop.run()
    }

    /// Everything written to the client so far.
    static func output(_ channel: EmbeddedChannel) throws -> String {
        String(decoding: try bytes(channel), as: UTF8.self)
    }

    static func bytes(_ channel: EmbeddedChannel) throws -> [UInt8] {
        var out: [UInt8] = []
        while var b = try channel.readOutbound(as: ByteBuffer.self) { out += b.readBytes(length: b.readableBytes) ?? [] }
        return out
    }

    // MARK: - JSON lines

    @Test("JSON lines: a request split across reads and two in one read are answered in order; invalid JSON gets invalid-json and the connection stays; blank lines and a trailing CR are ignored")
    func jsonLines() throws {
        let rig = try Rig()
        let c = try rig.connect("control socket")
        try Self.send(c, "{\"id\":1,\"comm")
        #expect(try Self.output(c).isEmpty)
        try Self.send(c, "and\":\"ping\"}\r\n\n{\"id\":2,\"command\":\"volume\",\"volume\":30}\n")
        let lines = try Self.output(c).split(separator: "\n").map(String.init)
        #expect(lines == ["{\"id\":1,\"ok\":true,\"pong\":true}", "{\"id\":2,\"ok\":true,\"volume\":30,\"muted\":false}"], "\(lines)")
        try Self.send(c, "{nope\n")
        let bad = try JSON.parse(Array(try Self.output(c).utf8.dropLast()))
        #expect(bad["ok"] == false && bad["error"]?["code"] == "invalid-json" && bad["id"] == .null, "\(bad.text)")
        #expect(c.isActive)
        try Self.send(c, "{\"id\":3,\"command\":\"nope\"}\n")
        #expect(try Self.output(c).contains("\"code\":\"unknown-command\""))
    }

    @Test("JSON lines: a subscriber gets events rendered by the codec (kind, one sequence, fields) with the reply of the command that caused them; `message` events through the same hub")
    func jsonEvents() throws {
        let rig = try Rig()
        let c = try rig.connect("control socket")
        try Self.send(c, "{\"id\":1,\"command\":\"subscribe\",\"events\":[\"volume\",\"message\"]}\n")
        #expect(try Self.output(c).hasPrefix("{\"id\":1,\"ok\":true,\"events\":[\"message\",\"volume\"]}"))
        try Self.send(c, "{\"id\":2,\"command\":\"volume\",\"volume\":55}\n")
        let lines = try Self.output(c).split(separator: "\n").map { try JSON.parse(Array($0.utf8)) }
        let event = lines.first { $0["event"] != nil }, reply = lines.first { $0["id"] == 2 }
        #expect(lines.count == 2 && event?["event"] == "volume" && event?["volume"] == 55 && event?["seq"]?.int != nil
                && reply?["volume"] == 55, "\(lines.map(\.text))")
        rig.core.hub.deliver(to: 1, .message(channel: "c", text: "t"))  // (connection ids count from 1)
        c.embeddedEventLoop.run()
        let m = try JSON.parse(Array(try Self.output(c).utf8.dropLast()))
        #expect(m["event"] == "message" && m["channel"] == "c" && m["message"] == "t" && m["seq"]?.int ?? 0 > event?["seq"]?.int ?? 0)
    }

    @Test("the transport's limits for a line codec: a line past max-request-bytes gets request-too-large and a close; an HTTP request line is closed with no answer and runs nothing")
    func lineLimits() throws {
        let rig = try Rig()
        let c = try rig.connect("control socket")
        try Self.send(c, String(repeating: "x", count: 2000))
        let out = try Self.output(c)
        #expect(out.contains("\"code\":\"request-too-large\"") && !c.isActive, "\(out)")

        let h = try rig.connect("control socket")
        try Self.send(h, "POST / HTTP/1.1\r\nHost: x\r\n\r\n{\"command\":\"volume\",\"volume\":1}\n")
        #expect(try Self.output(h).isEmpty && !h.isActive)
        #expect(rig.core.playback.volumeToSave != 0.01, "nothing ran")
    }

    @Test("the event kinds have one source: every kind the command layer emits is in EventKinds, and subscribe accepts exactly those")
    func eventKinds() {
        #expect(EventKinds.all == EventKind.allCases.map(\.rawValue))
        #expect(ControlEvent.kinds == EventKinds.all)
        let rendered = JSONCodec.event(PublishedEvent(seq: 7, event: .control(.seeked(item: 3, time: 1.2345))))
        #expect(rendered.text == "{\"event\":\"seeked\",\"seq\":7,\"item\":3,\"time\":1.235}")
    }

    // MARK: - MPD

    @Test("MPD: the greeting, then commands checked by the command table (unknown, arity, argument kinds in mpd's words), and an HTTP line closing the connection")
    func mpd() throws {
        let rig = try Rig()
        var config = rig.core.config
        config.mpdListen = [rig.dir.path + "/mpd.sock"]
        let server = ControlServer(config: config, logger: Logger(label: "codec-test"))
        defer { server.stop() }
        func connect() throws -> EmbeddedChannel {
            let endpoint = try #require(server.endpoints(core: rig.core).first { $0.name.hasPrefix("MPD") })
            let c = EmbeddedChannel()
            _ = server.accept(c, endpoint, core: rig.core, listener: server.listener(endpoint.name), peer: "test", needsToken: false)
            try c.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            return c
        }
        let c = try connect()
        #expect(try Self.output(c) == "OK MPD 0.23.5\n")
        try Self.send(c, "ping\n")
        #expect(try Self.output(c) == "OK\n")
        try Self.send(c, "frobnicate\n")
        #expect(try Self.output(c) == "ACK [5@0] {} unknown command \"frobnicate\"\n")
        try Self.send(c, "ping now\n")
        #expect(try Self.output(c) == "ACK [2@0] {ping} wrong number of arguments for \"ping\"\n")
        try Self.send(c, "binarylimit x\n")
        #expect(try Self.output(c) == "ACK [2@0] {binarylimit} Integer expected: x\n")
        try Self.send(c, "status\n")
        let status = try Self.output(c)
        #expect(status.hasPrefix("volume: 100\nrepeat: 0\n") && status.contains("state: stop\n") && status.hasSuffix("\nOK\n"), "\(status)")
        try Self.send(c, "GET / HTTP/1.1\nping\n")
        #expect(try Self.output(c).isEmpty && !c.isActive)
    }

    // MARK: - HTTP and the WebSocket

    static func http(_ c: EmbeddedChannel, _ request: String) throws -> (status: Int, headers: String, body: String) {
        // (A refused upgrade is an error the upgrader fires down the pipeline, which an
        // embedded channel throws here; the request then goes on to the web handler.)
        try? send(c, request)
        c.embeddedEventLoop.run()
        let out = try output(c)
        let parts = out.components(separatedBy: "\r\n\r\n")
        let status = Int(out.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, parts.first ?? "", parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    @Test("HTTP: GET /status is the status reply as JSON; another site's Origin, a cross-site fetch and a Host that is not this machine get 403; no directory listing or escape from the web root; a method other than GET/HEAD/POST is 405")
    func http() throws {
        let rig = try Rig(http: "127.0.0.1:0")
        let c = try rig.connect("HTTP")
        let status = try Self.http(c, "GET /status HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n")
        #expect(status.status == 200 && status.headers.contains("Content-Type: application/json"), "\(status)")
        let body = try JSON.parse(Array(status.body.utf8))
        #expect(body["state"] == "stopped" && body["volume"] == 100, "\(status.body)")
        let evil = try Self.http(c, "GET /status HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nOrigin: http://evil.example\r\n\r\n")
        #expect(evil.status == 403, "\(evil)")
        let c2 = try rig.connect("HTTP")
        let crossSite = try Self.http(c2, "GET /status HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nSec-Fetch-Site: cross-site\r\nSec-Fetch-Mode: cors\r\n\r\n")
        #expect(crossSite.status == 403)
        let c3 = try rig.connect("HTTP")
        let rebound = try Self.http(c3, "GET /status HTTP/1.1\r\nHost: evil.example:8080\r\n\r\n")
        #expect(rebound.status == 403 && rebound.body.contains("localhost"), "DNS rebinding: \(rebound)")
        // (Refused before any file is opened; files themselves are read off the loop: WebRemoteTests.)
        for path in ["/../../etc/passwd", "/%2e%2e/etc/passwd", "/.hidden", "/a/../../x"] {
            let r = try Self.http(try rig.connect("HTTP"), "GET \(path) HTTP/1.1\r\nHost: localhost:8080\r\n\r\n")
            #expect(r.status == 404 && !r.body.contains("root:"), "\(path): \(r)")
        }
        let put = try Self.http(try rig.connect("HTTP"), "PUT /status HTTP/1.1\r\nHost: localhost:8080\r\nContent-Length: 0\r\n\r\n")
        #expect(put.status == 405)
    }

    @Test("a link from another site may open the page (a top-level navigation) but nothing else: cover art, /status and the WebSocket answer 403; the WebSocket opens at /ws only; only 127/8 literals, ::1 and localhost are loopback")
    func crossSiteNavigation() throws {
        let rig = try Rig(http: "127.0.0.1:0")
        let nav = "Sec-Fetch-Site: cross-site\r\nSec-Fetch-Mode: navigate\r\n"
        #expect(try Self.http(try rig.connect("HTTP"), "GET /art/1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\(nav)\r\n").status == 403)
        #expect(try Self.http(try rig.connect("HTTP"), "GET /status HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\(nav)\r\n").status == 403)
        // (That it may open `/login.html` is WebRemoteTests': a file is read off the event loop,
        // which an embedded channel's loop cannot take from another thread.)
        let elsewhere = try Self.http(try rig.connect("HTTP"), Self.upgrade().replacingOccurrences(of: "GET /ws ", with: "GET /status ")
                                      + "Origin: http://127.0.0.1:8080\r\n\r\n")
        #expect(elsewhere.status == 200 && elsewhere.body.contains("\"state\""), "no WebSocket but at /ws: \(elsewhere.status)")
        for host in ["127.0.0.1", "127.1.2.3", "::1", "localhost"] { #expect(DaemonConfig.isLoopback(host), "\(host)") }
        for host in ["127.example.net", "0.0.0.0", "10.0.0.1", "1270.0.0.1", "127.0.0"] { #expect(!DaemonConfig.isLoopback(host), "\(host)") }
    }

    /// A masked client frame (final unless `fin` is false).
    static func frame(_ payload: [UInt8], opcode: UInt8, fin: Bool = true) -> [UInt8] {
        let mask: [UInt8] = [1, 2, 3, 4]
        var f: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        if payload.count < 126 { f.append(0x80 | UInt8(payload.count)) } else { f += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] }
        return f + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }

    /// A masked client text frame.
    static func frame(_ text: String) -> [UInt8] { frame(Array(text.utf8), opcode: 0x1) }

    /// The server frames in `bytes`: opcode and payload (unmasked, each at most 64 KiB).
    static func serverFrames(_ bytes: [UInt8]) -> [(opcode: UInt8, payload: ArraySlice<UInt8>)] {
        var out: [(opcode: UInt8, payload: ArraySlice<UInt8>)] = [], i = 0
        while i + 2 <= bytes.count {
            var n = Int(bytes[i + 1] & 0x7F), at = i + 2
            if n == 126 { n = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3]); at = i + 4 }
            guard at + n <= bytes.count else { break }
            out.append((bytes[i] & 0x0F, bytes[at..<at + n]))
            i = at + n
        }
        return out
    }

    /// The text of the server frames in `bytes`.
    static func frames(_ bytes: [UInt8]) -> [String] { serverFrames(bytes).map { String(decoding: $0.payload, as: UTF8.self) } }

    static func upgrade(host: String = "127.0.0.1:8080") -> String {
        "GET /ws HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    }

    @Test("the WebSocket carries the JSON protocol unchanged: one request, reply or event per message, through the JSON codec's handler; another site's Origin gets no WebSocket")
    func webSocket() throws {
        let rig = try Rig(http: "127.0.0.1:0")
        let c = try rig.connect("HTTP")
        let head = try Self.http(c, Self.upgrade() + "Origin: http://127.0.0.1:8080\r\n\r\n")
        #expect(head.status == 101 && head.headers.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "\(head)")
        try c.writeInbound(ByteBuffer(bytes: Self.frame("{\"id\":1,\"command\":\"subscribe\",\"events\":[\"volume\"]}")
                                      + Self.frame("{\"id\":2,\"command\":\"volume\",\"volume\":42}")))
        c.embeddedEventLoop.run()
        let texts = Self.frames(try Self.bytes(c))
        #expect(texts.count == 3, "\(texts)")
        let replies = try texts.map { try JSON.parse(Array($0.utf8)) }
        let event = replies.first { $0["event"] != nil }, reply = replies.first { $0["id"] == 2 }
        #expect(replies.first?["id"] == 1 && event?["event"] == "volume" && event?["volume"] == 42 && reply?["volume"] == 42, "\(texts)")

        let evil = try rig.connect("HTTP")
        let refused = try Self.http(evil, Self.upgrade() + "Origin: http://evil.example\r\n\r\n")
        #expect(refused.status == 403, "\(refused)")
    }

    @Test("the WebSocket sends one close at most: a client's close then a bad frame in the same read gets 1000 and nothing more; a bad frame alone gets 1002, an oversized message 1009; the connection closes")
    func webSocketOneClose() throws {
        let rig = try Rig(http: "127.0.0.1:0")
        /// The server's frames after an upgrade and `bytes`: (opcode, close code).
        func answer(_ bytes: [UInt8]) throws -> [(UInt8, Int?)] {
            let c = try rig.connect("HTTP")
            #expect(try Self.http(c, Self.upgrade() + "Origin: http://127.0.0.1:8080\r\n\r\n").status == 101)
            _ = try? c.writeInbound(ByteBuffer(bytes: bytes))  // (an error fired down the pipeline is thrown here)
            c.embeddedEventLoop.run()
            let frames = Self.serverFrames(try Self.bytes(c))
            #expect(!c.isActive, "the connection is closed")
            return frames.map { f in (f.opcode, f.payload.count >= 2 ? Int(f.payload.first!) << 8 | Int(f.payload.dropFirst().first!) : nil) }
        }
        let close = Self.frame([0x03, 0xE8], opcode: 0x8)
        let badControl = Self.frame([UInt8](repeating: 0, count: 128), opcode: 0x9)  // a ping of 128 bytes: at most 125
        let closed = try answer(close + badControl)
        #expect(closed.count == 1 && closed[0].0 == 0x8 && closed[0].1 == 1000, "\(closed)")
        let bad = try answer(badControl)
        #expect(bad.count == 1 && bad[0].0 == 0x8 && bad[0].1 == 1002, "\(bad)")
        // Two fragments over the 1,024-byte limit together (each under it): the aggregator's refusal.
        let half = [UInt8](repeating: 0x61, count: 600)
        let tooBig = try answer(Self.frame(half, opcode: 0x1, fin: false) + Self.frame(half, opcode: 0x0))
        #expect(tooBig.count == 1 && tooBig[0].0 == 0x8 && tooBig[0].1 == 1009, "\(tooBig)")
    }

    @Test("with http-password: the page redirects to the login, /status and the WebSocket need a session; a wrong password is refused (after a second); the right one sets an HttpOnly, SameSite=Strict cookie that opens them")
    func login() throws {
        let rig = try Rig(http: "0.0.0.0:0", password: "open sesame")
        let c = try rig.connect("HTTP", needsToken: true)
        let page = try Self.http(c, "GET / HTTP/1.1\r\nHost: box:8080\r\n\r\n")
        #expect(page.status == 303 && page.headers.contains("Location: /login.html"), "\(page)")
        let status = try Self.http(c, "GET /status HTTP/1.1\r\nHost: box:8080\r\n\r\n")
        #expect(status.status == 401)
        let c2 = try rig.connect("HTTP", needsToken: true)
        let ws = try Self.http(c2, Self.upgrade(host: "box:8080") + "Origin: http://box:8080\r\n\r\n")
        #expect(ws.status == 401, "no session, no WebSocket: \(ws)")

        let c3 = try rig.connect("HTTP", needsToken: true)
        try Self.send(c3, "POST /login HTTP/1.1\r\nHost: box:8080\r\nOrigin: http://box:8080\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 14\r\n\r\npassword=wrong")
        #expect(try Self.output(c3).isEmpty, "a wrong password is answered after a second")
        c3.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(try Self.output(c3).contains("Location: /login.html?failed=1"))

        let c4 = try rig.connect("HTTP", needsToken: true)
        let body = "password=open+sesame"
        let ok = try Self.http(c4, "POST /login HTTP/1.1\r\nHost: box:8080\r\nOrigin: http://box:8080\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        #expect(ok.status == 303 && ok.headers.contains("Location: /\r\n"), "\(ok)")
        let cookieLine = try #require(ok.headers.split(separator: "\r\n").first { $0.hasPrefix("Set-Cookie: ") })
        #expect(cookieLine.contains("HttpOnly") && cookieLine.contains("SameSite=Strict"), "\(cookieLine)")
        let cookie = String(cookieLine.dropFirst("Set-Cookie: ".count).prefix { $0 != ";" })
        let c5 = try rig.connect("HTTP", needsToken: true)
        #expect(try Self.http(c5, "GET /status HTTP/1.1\r\nHost: box:8080\r\nCookie: \(cookie)\r\n\r\n").status == 200)
        let c6 = try rig.connect("HTTP", needsToken: true)
        #expect(try Self.http(c6, Self.upgrade(host: "box:8080") + "Origin: http://box:8080\r\nCookie: \(cookie)\r\n\r\n").status == 101)
        // The login from another site is refused before the password is looked at.
        let c7 = try rig.connect("HTTP", needsToken: true)
        #expect(try Self.http(c7, "POST /login HTTP/1.1\r\nHost: box:8080\r\nOrigin: http://evil.example\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)").status == 403)
    }
}
