import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import Testing

/// The web remote's HTTP listener on real sockets, as a browser and an attacker use it: the
/// page's files and cover art with their validators, what is refused (another site, no
/// session, a wrong or guessed password, a huge request, a flood of idle connections, bytes
/// that are not HTTP), and that the daemon and its Unix socket's clients are unaffected.
@Suite("the web remote over HTTP: files, art, and what is refused")
struct WebRemoteTests {
    static let config = "background-grace = 60\n"

    /// An HTTP request with `Connection: close`: the status, the headers and the body.
    static func get(_ port: Int, _ path: String, _ headers: [String] = [], method: String = "GET", body: String = "") throws
        -> (status: Int, headers: String, body: String)
    {
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for h in headers { request += h + "\r\n" }
        if method == "POST" { request += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n" }
        let r = try HardeningTests.raw(port: port, Array((request + "\r\n" + body).utf8), seconds: 5)
        let parts = r.text.components(separatedBy: "\r\n\r\n")
        return (Int(r.text.split(separator: " ").dropFirst().first ?? "") ?? 0, parts.first ?? "", parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    /// The request that opens the WebSocket on `port`.
    static func upgrade(_ port: Int) -> [UInt8] {
        Array(("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
    }

    /// A client's WebSocket frame (FIN set): `opcode`, masked as RFC 6455 wants unless
    /// `masked` is false, RSV1 as given.
    static func frame(_ opcode: UInt8, _ payload: [UInt8], masked: Bool = true, rsv1: Bool = false) -> [UInt8] {
        precondition(payload.count < 1 << 16)
        var out: [UInt8] = [0x80 | (rsv1 ? 0x40 : 0) | opcode]
        let m: UInt8 = masked ? 0x80 : 0
        out += payload.count < 126 ? [m | UInt8(payload.count)] : [m | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        let key: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        out += masked ? key + payload.enumerated().map { $1 ^ key[$0 % 4] } : payload
        return out
    }

    static func header(_ headers: String, _ name: String) -> String? {
        headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ": ") }
            .map { String($0.dropFirst(name.count + 2)) }
    }

    @Test("the page, its files and a queue item's cover art are served with ETags (304 when unchanged); no item or no art is 404; GET /status is the status reply; bytes that are not HTTP get 400 and run nothing")
    func files() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        let cover = try Fixtures.wav("web-cover-src", seconds: 1)
        #expect(try runProcess("sox", [cover.path, "-n", "spectrogram", "-r", "-x", "128", "-y", "129", "-o", d.music + "/album/cover.png"]).status == 0)
        let port = HardeningTests.port()
        try d.start(["--http-listen", "127.0.0.1:\(port)"])
        #expect(try d.request("add", [("paths", ["album"])]).ok)
        let ids = (try d.request("list")["items"]?.array ?? []).compactMap { $0["id"]?.int }
        try #require(!ids.isEmpty)

        let page = try Self.get(port, "/")
        #expect(page.status == 200 && page.body.contains("<html") && Self.header(page.headers, "Content-Type") == "text/html; charset=utf-8",
                "\(page.headers)")
        let tag = try #require(Self.header(page.headers, "ETag"))
        #expect(try Self.get(port, "/", ["If-None-Match: \(tag)"]).status == 304)
        #expect(try Self.get(port, "/app.js").status == 200)
        #expect(Self.header(try Self.get(port, "/app.js").headers, "Content-Type") == "text/javascript; charset=utf-8")

        let art = try Self.get(port, "/art/\(ids[0])")
        #expect(art.status == 200 && Self.header(art.headers, "Content-Type") == "image/png" && art.body.hasPrefix("\u{FFFD}PNG"), "\(art.headers)")
        let artTag = try #require(Self.header(art.headers, "ETag"))
        #expect(try Self.get(port, "/art/\(ids[0])", ["If-None-Match: \(artTag)"]).status == 304)
        #expect(try Self.get(port, "/art/999999").status == 404)

        // A crafted file whose picture says it is `text/html`: never sent as a page of this origin.
        let html = d.dir.appendingPathComponent("evil.html")
        try "<script>document.title = 'pwned'</script>".write(to: html, atomically: true, encoding: .utf8)
        let tone = try Fixtures.wav("web-evil-tone", seconds: 1)
        #expect(try runProcess("flac", ["-s", "-f", "-o", d.music + "/evil.flac", tone.path]).status == 0)
        let tagged = try runProcess("metaflac", ["--import-picture-from=3|text/html||1x1x24|" + html.path, d.music + "/evil.flac"])
        try #require(tagged.status == 0, "\(tagged.stderr)")
        let evilID = try #require(try d.request("add", [("paths", ["evil.flac"])])["items"]?.array?.first?.int)
        let evil = try Self.get(port, "/art/\(evilID)")
        #expect(evil.status == 200 && Self.header(evil.headers, "Content-Type") == "application/octet-stream"
                && Self.header(evil.headers, "Content-Security-Policy")?.contains("sandbox") == true, "\(evil.headers)")
        _ = try d.request("remove", [("item", .number(Double(evilID)))])

        let status = try Self.get(port, "/status")
        let json = try JSON.parse(Array(status.body.utf8))
        #expect(status.status == 200 && json["count"]?.int == ids.count, "\(status.body)")
        #expect(try Self.get(port, "/nothing.js").status == 404)
        #expect(try Self.get(port, "/.config").status == 404)
        // A link from another site may open the page itself (a top-level navigation).
        let navigate = ["Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate"]
        #expect(try Self.get(port, "/login.html", navigate).status == 200)
        #expect(try Self.get(port, "/", navigate).status == 200)

        // The WebSocket: opened for the page's own origin, refused (403, said why) for another's.
        let upgrade = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        let own = try HardeningTests.raw(port: port, Array((upgrade + "Origin: http://127.0.0.1:\(port)\r\n\r\n").utf8), seconds: 1)
        #expect(own.text.hasPrefix("HTTP/1.1 101"), "\(own.text.prefix(80))")
        let other = try HardeningTests.raw(port: port, Array((upgrade + "Origin: http://evil.example\r\n\r\n").utf8))
        #expect(other.text.hasPrefix("HTTP/1.1 403") && other.text.contains("another site"), "\(other.text.prefix(200))")

        // A client that sends its request and closes its side (keep-alive asked) is answered,
        // then closed at once: not left in CLOSE-WAIT until the deadline.
        let halfClosed = try TCPLineClient(port: port)
        let request = Array("GET /status HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { Glibc.send(halfClosed.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        Glibc.shutdown(halfClosed.fd, Int32(SHUT_WR))
        #expect(halfClosed.closed(within: 3) && halfClosed.buffer.starts(with: Array("HTTP/1.1 200".utf8)),
                "\(String(decoding: halfClosed.buffer.prefix(40), as: UTF8.self))")

        // Not HTTP: an MPD or JSON line sent to the HTTP port.
        let line = try HardeningTests.raw(port: port, Array("{\"command\":\"clear\"}\nclear\n".utf8))
        #expect(line.closed && line.text.hasPrefix("HTTP/1.1 400"), "\(line.text)")
        #expect(try d.request("status")["count"]?.int == ids.count, "nothing ran")
        d.expectCleanStop()
    }

    @Test("with http-password (or the token): no cookie, no page, status or WebSocket; a wrong password costs a second; five wrong in a minute and even the right one is refused; the right one sets an HttpOnly, SameSite=Strict session that opens them; a bearer token works for scripts")
    func login() throws {
        let token = "s3cret-token-0123456789"
        let d = try DaemonFixture(device: "null", config: Self.config + "http-password = open sesame\ntoken = \(token)\n")
        let port = HardeningTests.port()
        try d.start(["--http-listen", "127.0.0.1:\(port)"])
        let page = try Self.get(port, "/")
        #expect(page.status == 303 && Self.header(page.headers, "Location") == "/login.html")
        #expect(try Self.get(port, "/login.html").status == 200)
        #expect(try Self.get(port, "/status").status == 401)
        #expect(try Self.get(port, "/status", ["Authorization: Bearer \(token)"]).status == 200, "a script with the token")
        let guessed = Date()
        #expect(try Self.get(port, "/status", ["Authorization: Bearer guess"]).status == 401)
        #expect(Date().timeIntervalSince(guessed) >= 0.9, "a wrong bearer is answered after a second, as a wrong password")

        let origin = "Origin: http://127.0.0.1:\(port)"
        let start = Date()
        let wrong = try Self.get(port, "/login", [origin], method: "POST", body: "password=nope")
        #expect(wrong.status == 303 && Self.header(wrong.headers, "Location") == "/login.html?failed=1")
        #expect(Date().timeIntervalSince(start) >= 0.9, "a wrong password is answered after a second")
        let right = try Self.get(port, "/login", [origin], method: "POST", body: "password=open%20sesame")
        let cookie = try #require(Self.header(right.headers, "Set-Cookie"), "\(right.headers)")
        #expect(right.status == 303 && cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "\(cookie)")
        let session = String(cookie.prefix { $0 != ";" })
        #expect(try Self.get(port, "/status", ["Cookie: \(session)"]).status == 200)
        #expect(try Self.get(port, "/", ["Cookie: \(session)"]).status == 200)
        #expect(try Self.get(port, "/status", ["Cookie: backline_session=0123456789abcdef"]).status == 401, "a made-up session")
        // The token logs in too; a login from another site is refused before the password is read.
        #expect(Self.header(try Self.get(port, "/login", [origin], method: "POST", body: "password=\(token)").headers, "Set-Cookie") != nil)
        #expect(try Self.get(port, "/login", ["Origin: http://evil.example"], method: "POST", body: "password=open%20sesame").status == 403)

        // Guessing: after five wrong ones within a minute, every try is refused, the right one too.
        for _ in 0..<3 { _ = try Self.get(port, "/login", [origin], method: "POST", body: "password=guess") }  // (5 wrong with the bearer and `nope`)
        let limited = try Self.get(port, "/login", [origin], method: "POST", body: "password=open%20sesame")
        #expect(Self.header(limited.headers, "Location") == "/login.html?limited=1" && Self.header(limited.headers, "Set-Cookie") == nil,
                "\(limited.headers)")
        // A bearer is a password too: locked out the same (the right token refused now), and a
        // wrong one costs a second.
        #expect(try Self.get(port, "/status", ["Authorization: Bearer \(token)"]).status == 401, "the address is locked out")
        #expect(d.log().contains("wrong TCP token"), "wrong passwords are logged (rate-limited)")
        #expect(try d.request("ping").ok)
        d.expectCleanStop()
    }

    @Test("a 10 MB request gets 413 and a close; 500 idle connections past max-connections get 503; the Unix socket's clients are served meanwhile, and the HTTP listener again once they go; a loopback listener answers only to a loopback Host")
    func limits() throws {
        // (request-timeout 60: the held connections must outlast the 500 connects on a loaded machine.)
        let d = try DaemonFixture(device: "null", config: Self.config + "max-connections = 40\nrequest-timeout = 60\n")
        let port = HardeningTests.port()
        try d.start(["--http-listen", "127.0.0.1:\(port)"])
        let head = "POST /login HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 10485760\r\n\r\n"
        let big = try HardeningTests.raw(port: port, Array(head.utf8) + [UInt8](repeating: 0x61, count: 1 << 20))
        #expect(big.closed && big.text.hasPrefix("HTTP/1.1 413"), "\(big.text.prefix(100))")

        var held: [TCPLineClient] = []
        for _ in 0..<500 { if let c = try? TCPLineClient(port: port) { held.append(c) } }
        usleep(300_000)
        #expect(try d.request("ping").ok, "the Unix socket serves")
        #expect(try d.ctl(["status"]).status == 0)
        let refused = try HardeningTests.raw(port: port, Array("GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8), seconds: 3)
        #expect(refused.closed && refused.text.hasPrefix("HTTP/1.1 503"), "\(refused.text.prefix(80))")
        for c in held { c.close() }
        // (500 closes to notice: on a loaded machine that takes seconds)
        #expect(eventually(timeout: 30) { (try? Self.get(port, "/status"))?.status == 200 }, "serving again")

        let rebound = try HardeningTests.raw(port: port, Array("GET /status HTTP/1.1\r\nHost: evil.example:\(port)\r\nConnection: close\r\n\r\n".utf8))
        #expect(rebound.text.hasPrefix("HTTP/1.1 403"), "DNS rebinding: \(rebound.text.prefix(80))")
        d.expectCleanStop()
    }

    @Test("a loopback listener reads Host as the URL grammar does: `[::1].evil.example`, `127.0.0.1:80@evil.example`, digits of another script and a second Host header are refused; `localhost`, `127.0.0.1:PORT` and `[::1]:PORT` are served")
    func hostHeader() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        let port = HardeningTests.port()
        try d.start(["--http-listen", "127.0.0.1:\(port)"])
        func status(_ hosts: [String]) throws -> Int {
            let request = "GET /status HTTP/1.1\r\n" + hosts.map { "Host: \($0)\r\n" }.joined() + "Connection: close\r\n\r\n"
            let r = try HardeningTests.raw(port: port, Array(request.utf8))
            return Int(r.text.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        // A port is 0–65535 in ASCII digits, or none after the colon (as the grammar allows).
        for host in ["localhost", "localhost:\(port)", "127.0.0.1:\(port)", "[::1]:\(port)", "[0:0:0:0:0:0:0:1]", "localhost:", "localhost:65535"] {
            #expect(try status([host]) == 200, "Host: \(host)")
        }
        // Not a host[:port] by the URL grammar: 400. A well-formed host that is not loopback: 403.
        for host in ["[::1].evil.example", "[::1]evil.example:\(port)", "127.0.0.1:80@evil.example", "127.0.0.1:\(port)@evil.example",
                     "127.\u{0660}.\u{0660}.\u{0661}", "127.0.0.1:\u{0668}\u{0660}", "[::1", "localhost:65536", "localhost:000080"] {
            #expect(try status([host]) == 400, "Host: \(host)")
        }
        for host in ["evil.example", "evil.example:\(port)", "127.0.0.2.evil.example", "[::2]:\(port)"] {
            #expect(try status([host]) == 403, "Host: \(host)")
        }
        #expect(try status(["127.0.0.1:\(port)", "evil.example"]) == 400, "two Host headers")
        #expect(try status(["evil.example", "127.0.0.1:\(port)"]) == 400, "two Host headers")
        d.expectCleanStop()
    }

    @Test("the WebSocket fails the connection (close 1002) on an unmasked client frame, RSV1 without an extension, or opcode 3; a masked text frame is answered")
    func webSocketFrames() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        let port = HardeningTests.port()
        try d.start(["--http-listen", "127.0.0.1:\(port)"])
        let ping = Array(#"{"command":"ping"}"#.utf8)
        /// What the daemon sends after its 101 response, and whether it closed.
        func after(_ frame: [UInt8]) throws -> (bytes: [UInt8], closed: Bool) {
            let r = try HardeningTests.rawBytes(port: port, Self.upgrade(port) + frame, seconds: 3)
            let end = try #require(r.bytes.indices.dropLast(3).first { Array(r.bytes[$0..<($0 + 4)]) == [13, 10, 13, 10] })
            #expect(r.bytes.starts(with: Array("HTTP/1.1 101".utf8)))
            return (Array(r.bytes[(end + 4)...]), r.closed)
        }
        let answered = try after(Self.frame(1, ping))
        #expect(answered.bytes.first == 0x81 && String(decoding: answered.bytes, as: UTF8.self).contains("\"ok\":true"), "\(answered.bytes)")
        let close1002: [UInt8] = [0x88, 0x02, 0x03, 0xEA]
        for (what, frame) in [("unmasked", Self.frame(1, ping, masked: false)), ("RSV1", Self.frame(1, ping, rsv1: true)),
                              ("opcode 3", Self.frame(3, ping))] {
            let r = try after(frame)
            #expect(r.bytes == close1002 && r.closed, "\(what): \(r.bytes) closed \(r.closed)")
        }
        d.expectCleanStop()
    }

    @Test("http-listen on a non-loopback address without http-password or token: the daemon refuses to start and says why")
    func needsPassword() throws {
        let d = try DaemonFixture(device: "null", config: Self.config + "http-listen = 0.0.0.0:\(HardeningTests.port())\n")
        #expect(throws: (any Error).self) { try d.start() }
        #expect(d.log().contains("is not loopback: it needs http-password"), "\(d.log())")
    }

    @Test("a page from another site in a real browser (headless Chromium) cannot open the WebSocket or post to the web remote; nothing runs",
          .enabled(if: Harness.has("chromium"), "needs chromium"))
    func crossSiteBrowser() throws {
        let ps = HardeningTests.ports(2)
        let (port, evilPort) = (ps[0], ps[1])
        let d = try DaemonFixture(device: "null", config: Self.config)
        try d.start(["--http-listen", "127.0.0.1:\(port)"])
        #expect(try d.request("add", [("paths", ["album"])]).ok)
        let site = try Harness.makeTemporaryDirectory("evil-site")
        let page = """
            <!doctype html><title>cats</title><body>loading
            <script>
            const out = [];
            const ws = new Promise((done) => {
              const ws = new WebSocket("ws://127.0.0.1:\(port)/ws");
              ws.onopen = () => { out.push("ws-open"); ws.send('{"command":"clear"}'); done(); };
              ws.onerror = () => { out.push("ws-error"); done(); };
            });
            const read = fetch("http://127.0.0.1:\(port)/status").then(r => r.text())
              .then(t => out.push("read:" + t.length), () => out.push("read-blocked"));
            const post = fetch("http://127.0.0.1:\(port)/login", {method: "POST", mode: "no-cors", body: "password=x"}).catch(() => {});
            // Written once every outcome is in (not on a timer: virtual time may outrun a handshake).
            Promise.all([ws, read, post]).then(() => { document.body.textContent = "result:" + out.join(","); });
            </script>
            """
        try page.write(to: site.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
        let web = try SpawnedProcess("/usr/bin/python3", ["-m", "http.server", "--bind", "127.0.0.1", "--directory", site.path, String(evilPort)])
        defer { web.signal(SIGKILL); _ = try? web.wait(timeout: 5) }
        #expect(eventually(timeout: 10) { (try? HardeningTests.raw(port: evilPort, Array("HEAD / HTTP/1.0\r\n\r\n".utf8), seconds: 1))?.closed == true })
        let profile = try Harness.makeTemporaryDirectory("chromium-profile")
        // Through chromedriver, waiting (in real time, up to a minute) until the page has written
        // its result. (`--dump-dom` with a virtual-time budget dumped "loading" on a loaded
        // machine: the budget ran out before the refused handshake came back.)
        let script = Harness.packageRoot.appendingPathComponent("scripts/lib/pageresult.py").path
        let browser = try runProcess("/usr/bin/python3", [script, "http://127.0.0.1:\(evilPort)/", profile.path],
                                     environment: ["HOME": profile.path], timeout: 120)
        let dom = browser.stdoutText
        #expect(dom.contains("result:") && dom.contains("ws-error") && !dom.contains("ws-open") && dom.contains("read-blocked"),
                "\(dom.prefix(400)) \(browser.stderr.suffix(300))")
        #expect(try d.request("status")["count"]?.int ?? 0 > 0, "nothing ran")
        #expect(d.log().contains("request from another site refused"), "\(d.log().suffix(500))")
        d.expectCleanStop()
    }
}
