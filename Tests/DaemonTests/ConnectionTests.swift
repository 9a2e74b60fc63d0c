import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import MediaCore
import Testing

/// How connections end: a client that closes its write side is still answered.
@Suite("backline daemon: connections")
struct ConnectionTests {
    static let config = DaemonFixture.foreground

    @Test("a client that half-closes is answered: a last request without its newline, and add/list/insert (run off the event loop) with one")
    func halfClose() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        try d.start()
        let cases: [(String, String)] = [
            (#"{"id":1,"command":"status"}"#, "status, no newline"),
            (#"{"id":1,"command":"add","path":"album/a.mp3"}"# + "\n", "add"),
            (#"{"id":1,"command":"list"}"# + "\n", "list"),
            (#"{"id":1,"command":"insert","path":"album/b.mp3","position":0}"# + "\n", "insert"),
            (#"{"id":1,"command":"ping"}"# + "\n" + #"{"id":2,"command":"list"}"# + "\n" + #"{"id":3,"command":"ping"}"#, "three, the last without newline"),
        ]
        for (request, what) in cases {
            let c = try d.client()
            try c.sendRaw(Array(request.utf8))
            c.closeWrite()
            let expected = request.split(separator: "\n").count
            for n in 1...expected {
                let r = try c.nextReply(timeout: 10)
                #expect(r.ok && r["id"]?.int == n, "\(what): reply \(n): \(r.text)")
            }
            // Then the daemon closes.
            #expect(throws: (any Error).self, "\(what): closed after the replies") { _ = try c.readLine(timeout: 5) }
        }
        #expect(try d.request("list")["items"]?.array?.count == 2, "the add and the insert happened once each")
        d.expectCleanStop()
    }
}

/// Slow and unauthenticated clients cannot hold the daemon: deadlines, a separate cap, and
/// wrong tokens that cost time. Every loop here is bounded in count and time.
@Suite("backline daemon: slow clients and token guessing", .serialized)
struct SlowClientTests {
    @Test("20 clients dripping a byte every 0.3 s hold all 20 slots only until the request deadline (1 s): each gets `timeout` and is closed, and the slots serve again")
    func slowloris() throws {
        let d = try DaemonFixture(device: "null", config: ConnectionTests.config + "max-connections = 20\nrequest-timeout = 1\n")
        try d.start()
        let drippers = try (0..<20).map { _ in try d.client() }
        for c in drippers { try c.sendRaw(Array(#"{"comm"#.utf8)) }
        usleep(200_000)
        // Every slot is taken: one more is refused.
        let extra = try d.client()
        #expect(try extra.nextReply(timeout: 5).errorCode == "too-many-connections")
        for _ in 0..<3 {
            usleep(300_000)
            for c in drippers { try? c.sendRaw([UInt8(ascii: "a")]) }
        }
        for (n, c) in drippers.enumerated() {
            let r = try? c.nextReply(timeout: 5)
            #expect(r?.errorCode == "timeout", "dripper \(n): \(r?.text ?? "nothing")")
            #expect(throws: (any Error).self) { _ = try c.readLine(timeout: 5) }
        }
        #expect(eventually(timeout: 5) { (try? d.request("ping"))?.ok == true }, "a slot serves again")
        // An idle connection with no partial line (a subscriber) has no deadline.
        let idle = try d.client()
        _ = try idle.request("subscribe", [("events", ["volume"])])
        usleep(1_500_000)
        #expect(try idle.request("ping").ok)
        d.expectCleanStop()
    }

    @Test("a client that pipelines requests and reads no replies for longer than the request deadline is not timed out (its begun line could not arrive: the daemon stopped reading it); once it reads, every reply comes and the line completes")
    func backPressureStopsTheClock() throws {
        let d = try DaemonFixture(device: "null", config: ConnectionTests.config + "request-timeout = 1\n")
        try d.start()
        let c = try d.client()
        #expect((try c.request("add", [("paths", .array(Array(repeating: .string("album"), count: 100)))])["items"]?.array?.count ?? 0) >= 300)
        // 40 lists of 300 items (~2 MB: past the 1 MiB of unread output) and the start of a
        // ping, in one write; then nothing read for 2.5 s.
        let lines = String(repeating: #"{"command":"list"}"# + "\n", count: 40) + #"{"command":"pi"#
        try c.sendRaw(Array(lines.utf8))
        usleep(2_500_000)
        var lists = 0
        while lists < 40, let r = try? c.nextReply(timeout: 10), r.ok, r["items"] != nil { lists += 1 }
        #expect(lists == 40)
        try c.sendRaw(Array(#"ng"}"#.utf8) + [10])
        let pong = try? c.nextReply(timeout: 5)
        #expect(pong?["pong"] == true, "\(pong?.text ?? "nothing")")
        d.expectCleanStop()
    }

    @Test("TCP: an idle unauthenticated connection is closed after auth-timeout; at most max-unauthenticated wait at once (a newer one takes the oldest one's place), and the Unix socket is never crowded out; wrong tokens cost a second each, close the connection and are logged once per 10 s (the rest of a burst when those 10 s are over)")
    func tcp() throws {
        let port = try Harness.freePort()  // (a random one could be an ephemeral port in use: CI once met "Address already in use")
        let token = "s3cret-token-0123456789"
        let d = try DaemonFixture(device: "null", config: ConnectionTests.config
            + "tcp = 127.0.0.1:\(port)\ntoken = \(token)\nauth-timeout = 1\nmax-unauthenticated = 4\nmax-connections = 8\n")
        try d.start()
        var waiting = try (0..<4).map { _ in try TCPLineClient(port: port) }
        usleep(100_000)
        waiting.append(try TCPLineClient(port: port))  // the fifth: the first makes room for it
        let oldest = waiting.removeFirst()
        #expect(oldest.nextLine(within: 5)?.errorCode == "too-many-connections")
        #expect(oldest.closed(within: 5))
        #expect(try d.request("ping").ok, "the Unix socket still serves")
        for (n, c) in waiting.enumerated() {
            let r = c.nextLine(within: 5)
            #expect(r?.errorCode == "unauthorized" && (r?["error"]?["message"]?.string ?? "").contains("authenticate within"), "\(n): \(r?.text ?? "nothing")")
            #expect(c.closed(within: 5))
        }
        // Guessing: five wrong tokens on five connections take at least a second each.
        let t0 = Date()
        for k in 0..<5 {
            let c = try TCPLineClient(port: port)
            let r = try c.send("{\"command\":\"auth\",\"token\":\"guess-\(k)\"}")
            #expect(r.errorCode == "unauthorized")
            #expect(c.closed(within: 5))
        }
        #expect(Date().timeIntervalSince(t0) >= 4.5)
        func logged() -> [String] { d.log().components(separatedBy: "\n").filter { $0.contains("wrong TCP token") } }
        #expect(logged().count == 1, "rate-limited: \(logged())")
        // The rest of the burst is logged when the 10 s are over, not at the next failure.
        #expect(eventually(timeout: 12) { logged().count == 2 }, "\(logged())")
        #expect(logged().last?.contains("attempts=4") == true, "\(logged())")
        let ok = try TCPLineClient(port: port)
        #expect(try ok.send("{\"command\":\"auth\",\"token\":\"\(token)\"}").ok)
        #expect(try ok.send("{\"command\":\"status\"}").ok)
        d.expectCleanStop()
    }
}
