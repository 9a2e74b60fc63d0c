import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import MediaCore
import Testing

/// Bad input, stuck clients, permissions, path escapes, a second daemon.
@Suite("backline daemon: bad input and security", Harness.audioTools)
struct RobustnessTests {
    static let config = DaemonFixture.foreground

    @Test("bad input gets an error reply or a clean close; the daemon and other clients are unaffected")
    func badInput() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        try d.start()
        let bystander = try d.client()
        func stillFine(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(try bystander.request("ping")["pong"] == true, "after \(what)", sourceLocation: sourceLocation)
        }
        let c = try d.client()
        func raw(_ line: String) throws -> JSON {
            try c.sendRaw(Array((line + "\n").utf8))
            return try c.nextReply(timeout: 10)
        }
        var r = try raw("{not json")
        #expect(r["id"] == .null && r.errorCode == "invalid-json", "\(r.text)")
        r = try raw("[1, 2]")
        #expect(r["id"] == .null && r.errorCode == "invalid-request")
        r = try raw("{\"id\": 7}")
        #expect(r["id"] == 7 && r.errorCode == "invalid-request")
        r = try raw("{\"id\": \"abc\", \"command\": 5}")
        #expect(r["id"] == "abc" && r.errorCode == "invalid-request")
        r = try raw("{\"id\": 8, \"command\": \"teleport\"}")
        #expect(r["id"] == 8 && r.errorCode == "unknown-command")
        for bad in [
            "{\"id\":9,\"command\":\"seek\",\"position\":\"abc\"}", "{\"id\":9,\"command\":\"remove\",\"items\":\"x\"}",
            "{\"id\":9,\"command\":\"volume\",\"volume\":true}", "{\"id\":9,\"command\":\"add\",\"paths\":[1,2]}",
            "{\"id\":9,\"command\":\"move\",\"item\":1.5,\"position\":0}", "{\"id\":9,\"command\":\"subscribe\",\"events\":[\"weather\"]}",
        ] {
            r = try raw(bad)
            #expect(r["id"] == 9 && r.errorCode == "bad-argument", "\(bad) → \(r.text)")
        }
        // A request id of any JSON type comes back as it was sent.
        r = try raw("{\"id\": {\"n\": [1, \"two\"]}, \"command\": \"ping\"}")
        #expect(r["id"] == ["n": [1, "two"]] && r.ok)
        #expect(try c.request("ping").ok, "the connection is still usable")
        try stillFine("malformed requests")

        // Binary garbage, newlines included: errors, no crash.
        var rng = SystemRandomNumberGenerator()
        let garbage = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let g = try d.client()
        try g.sendRaw(garbage + [0x0A])
        let lines = garbage.filter { $0 == 0x0A }.count + 1
        for _ in 0..<lines {
            guard let reply = try? g.nextReply(timeout: 5) else { break }
            #expect(!reply.ok)
        }
        try stillFine("binary garbage")

        // A 10 MB line: an error, then the connection is closed.
        let big = try d.client()
        let huge = [UInt8]("{\"id\":1,\"command\":\"add\",\"path\":\"".utf8) + [UInt8](repeating: 0x61, count: 10 << 20)
        try? big.sendRaw(huge + [0x0A])  // the daemon may close before it has all of it
        r = try big.nextReply(timeout: 10)
        #expect(r.errorCode == "request-too-large" && r["id"] == .null, "\(r.text)")
        #expect(throws: (any Error).self) { _ = try big.readLine(timeout: 5) }
        try stillFine("a 10 MB line")
        d.expectCleanStop()
    }

    @Test("a subscriber that never reads is dropped at its output cap; playback and other clients carry on")
    func stuckSubscriber() throws {
        let d = try DaemonFixture.onSharedSink(config: Self.config + "max-output-bytes = 8192\nposition-interval = 0.05\n")
        try d.start()
        let stuck = try d.client()
        _ = try stuck.request("subscribe")
        let c = try d.client()
        _ = try c.request("mute", [("on", true)])
        _ = try c.request("add", [("path", "long.mp3")])
        _ = try c.request("play")
        // Thousands of events for the subscriber that reads none of them.
        for k in 0..<3000 { #expect(try c.request("volume", [("volume", .int(k % 100))]).ok) }
        #expect(eventually { d.log().contains("subscriber not reading; connection dropped") }, "\(d.log().suffix(2000))")
        let s = try c.request("status")
        #expect(s["state"] == "playing" && s["underruns"] == 0)
        d.expectCleanStop()
    }

    @Test("socket 0600 in a 0700 directory; another user cannot connect; a second daemon is refused")
    func permissions() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        try d.start()
        var st = stat()
        #expect(stat(d.socket, &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(stat((d.socket as NSString).deletingLastPathComponent, &st) == 0 && st.st_mode & 0o777 == 0o700)
        // Another user: the file system says no (ctl reports it, exit 3).
        let nobody = try runProcess("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", backlineForAnotherUser, "ctl", "--socket", d.socket, "ping"])
        #expect(nobody.status == 3 && nobody.stderr.contains("permission denied"), "\(nobody.stderr)")
        // A second daemon on the same socket.
        let second = try runProcess(backline, ["daemon", "--music-dir", d.music, "--device", "null", "--config", d.configFile],
                                    environment: d.environment, timeout: 30)
        #expect(second.status == 1)
        #expect(second.stderr.contains("another backline daemon is already running on \(d.socket)"), "\(second.stderr)")
        #expect(try d.request("ping").ok, "the first one is untouched")
        #expect(FileManager.default.fileExists(atPath: d.socket), "the refused one removes nothing of the first one's")
        d.expectCleanStop()
        #expect(!FileManager.default.fileExists(atPath: d.socket), "the socket goes with the daemon")
    }

    @Test("the peer's uid is checked: a daemon run by another user refuses this one")
    func peerCredentials() throws {
        let (p, _, socket) = try daemonOfAnotherUser(socket: "run/control.sock")
        defer { p.signal(SIGKILL); _ = try? p.wait(timeout: 5) }
        // Root may open the 0600 socket of another user, but the daemon checks who connected.
        // (The file appears at bind, a moment before listen: a loaded machine may refuse at first.)
        var client: ControlClient?
        #expect(eventually(timeout: 10) { client = try? ControlClient(socketPath: socket); return client != nil }, "\(p.stderr)")
        let c = try #require(client)
        let r = try c.nextReply(timeout: 10)
        #expect(r.errorCode == "forbidden", "\(r.text)")
        #expect(throws: (any Error).self) { _ = try c.readLine(timeout: 5) }
        #expect(eventually { p.stderr.contains("connection refused: another user") }, "\(p.stderr)")
    }

    @Test("add stays inside the music directory: absolute paths, .., symlinks and playlist entries that escape are refused")
    func pathEscapes() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        let outsideDir = try Harness.makeTemporaryDirectory("backline-outside")
        let outside = outsideDir.path + "/secret.mp3"
        try FileManager.default.copyItem(atPath: d.music + "/album/a.mp3", toPath: outside)
        try FileManager.default.createSymbolicLink(atPath: d.music + "/escape.mp3", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: d.music + "/album/zz-escape.mp3", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: d.music + "/inside-link.mp3", withDestinationPath: d.music + "/album/b.mp3")
        try "# a playlist\nalbum/c.mp3\n\(outside)\n../\(outsideDir.lastPathComponent)/secret.mp3\nalbum/a.mp3\nmissing.mp3\n"
            .write(toFile: d.music + "/list.m3u", atomically: true, encoding: .utf8)
        try d.start()
        for bad in [outside, "../" + outsideDir.lastPathComponent + "/secret.mp3", "album/../../x.mp3", "escape.mp3", "/etc/passwd"] {
            let r = try d.request("add", [("path", .string(bad))])
            #expect(r.errorCode == "forbidden" || r.errorCode == "not-found", "\(bad) → \(r.text)")
            #expect(r["error"]?["message"]?.string?.contains(bad) == true)
        }
        #expect(try d.request("add", [("path", "escape.mp3")]).errorCode == "forbidden")
        #expect(try d.request("status")["count"] == 0, "nothing was added")
        // A symlink that stays inside is fine; a directory with an escaping link skips just that one.
        #expect(try d.request("add", [("path", "inside-link.mp3")]).ok)
        let dirAdd = try d.request("add", [("path", "album")])
        #expect(dirAdd["items"]?.array?.count == 3 && dirAdd["skipped"]?.array?.count == 1, "\(dirAdd.text)")
        let pl = try d.request("add", [("path", "list.m3u")])
        #expect(pl["items"]?.array?.count == 2 && pl["skipped"]?.array?.count == 3, "\(pl.text)")
        let paths = try d.request("list")["items"]?.array?.compactMap { $0["path"]?.string } ?? []
        #expect(paths.allSatisfy { $0.hasPrefix(d.music) || $0.hasPrefix((d.music as NSString).resolvingSymlinksInPath) }, "\(paths)")
        d.expectCleanStop()

        // With allow-absolute-paths, files anywhere may be queued.
        try (Self.config + "allow-absolute-paths = yes\n").write(toFile: d.configFile, atomically: true, encoding: .utf8)
        try d.start()
        #expect(try d.request("add", [("path", .string(outside))]).ok)
        d.expectCleanStop()
    }

    @Test("connections past max-connections get one error and a close; a freed slot serves again")
    func connectionLimit() throws {
        let d = try DaemonFixture(device: "null", config: Self.config + "max-connections = 3\n")
        try d.start()
        usleep(300_000)  // the start-up probe's connection is closed by now
        var held = [try d.client(), try d.client(), try d.client()]
        for c in held { #expect(try c.request("ping").ok) }
        let extra = try d.client()
        let r = try extra.nextReply(timeout: 10)
        #expect(r.errorCode == "too-many-connections", "\(r.text)")
        #expect(throws: (any Error).self) { _ = try extra.readLine(timeout: 5) }
        held.removeLast()  // closes one
        #expect(eventually { (try? d.client().request("ping"))?.ok == true })
        #expect(try held[0].request("ping").ok)
        d.expectCleanStop()
    }

    @Test("config errors name the file and line; the daemon does not start")
    func configErrors() throws {
        let d = try DaemonFixture(device: "null", config: "restore = paused\nvolume-boost = 11\n")
        let r = try runProcess(backline, ["daemon", "--music-dir", d.music, "--device", "null", "--config", d.configFile],
                               environment: d.environment, timeout: 30)
        #expect(r.status == 1 && r.stderr.contains("\(d.configFile):2: unknown setting 'volume-boost'"), "\(r.stderr)")
        try "tcp = 127.0.0.1:7777\n".write(toFile: d.configFile, atomically: true, encoding: .utf8)
        let t = try runProcess(backline, ["daemon", "--music-dir", d.music, "--device", "null", "--config", d.configFile],
                               environment: d.environment, timeout: 30)
        #expect(t.status == 1 && t.stderr.contains("tcp needs a token"), "\(t.stderr)")
    }

    @Test("TCP on loopback: nothing before auth; a wrong token is refused; the right one opens every command")
    func tcpToken() throws {
        let port = try Harness.freePort()  // (a random one could be an ephemeral port in use: CI once met "Address already in use")
        let token = "s3cret-token-0123456789"
        let d = try DaemonFixture(device: "null", config: Self.config + "tcp = 127.0.0.1:\(port)\ntoken = \(token)\n")
        try d.start()
        let c = try TCPLineClient(port: port)
        var r = try c.send("{\"id\":1,\"command\":\"status\"}")
        #expect(r.errorCode == "unauthorized")
        r = try c.send("{\"id\":1,\"command\":\"ping\"}")
        #expect(r.errorCode == "unauthorized", "not even ping: \(r.text)")
        // A wrong token: answered a second later, then the connection is closed.
        let t0 = Date()
        r = try c.send("{\"id\":2,\"command\":\"auth\",\"token\":\"guess\"}")
        #expect(r.errorCode == "unauthorized" && Date().timeIntervalSince(t0) >= 0.9)
        #expect(c.closed(within: 5), "closed after a wrong token")
        let c2 = try TCPLineClient(port: port)
        r = try c2.send("{\"id\":3,\"command\":\"auth\",\"token\":\"\(token)\"}")
        #expect(r.ok)
        r = try c2.send("{\"id\":4,\"command\":\"status\"}")
        #expect(r.ok && r["state"] == "stopped")
        d.expectCleanStop()
    }
}
