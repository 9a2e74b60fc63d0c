import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import MediaCore
import Testing

/// Streams through the daemon's doors, from a test HTTP server on loopback: JSON, `ctl` and MPD
/// `add` of URLs, the station's name and the title heard in `currentsong`, `status` and `ctl`,
/// seeks refused, the stream saved across a restart, `allow-streams = no`.
@Suite("backline daemon plays streams: add by URL, live titles, no seeking, saved state", Harness.audioTools)
struct StreamDaemonTests {
    static func server() throws -> HTTPTestServer {
        let dir = try Harness.makeTemporaryDirectory("stream-daemon")
        let tone = try Fixtures.tone("stream-daemon-tone", seconds: 3, frequency: 440)
        try FileManager.default.copyItem(at: tone, to: dir.appendingPathComponent("tone.mp3"))
        try "#EXTM3U\ntone.mp3\nhttp://127.0.0.1:1/not-there.mp3\n".write(to: dir.appendingPathComponent("radio.m3u"), atomically: true, encoding: .utf8)
        return try HTTPTestServer(directory: dir)
    }

    @Test("JSON, ctl and MPD add of http URLs; the station's name and the title heard in currentsong, status and ctl; a seek refused; the stream kept across a restart",
          .enabled(if: Harness.has("mpc"), "needs mpc"))
    func streamsThroughEveryDoor() throws {
        let server = try Self.server()
        let live = server.url("live/tone.mp3?metaint=8000&titles=Morning%20Show")
        let (d, sock) = try MPDTests.daemon(port: MPDTests.port(12))
        let added = try d.request("add", [("paths", .array([.string(live)]))])
        #expect(added["items"]?.array?.count == 1, "\(added.text)")
        let ctlAdd = try d.ctl(["add", server.url("files/tone.mp3")])
        #expect(ctlAdd.status == 0, "\(ctlAdd.stderr)")
        let mpcAdd = try MPDTests.mpc(sock, ["add", server.url("files/tone.mp3")])
        #expect(mpcAdd.status == 0, "\(mpcAdd.stderr)")
        #expect(try MPDTests.mpc(sock, ["add", "ftp://127.0.0.1/x.mp3"]).stderr.contains("Unsupported URI scheme"))
        #expect(try d.request("list")["items"]?.array?.count == 3)
        #expect(try d.request("play")["state"] == "playing")
        // The title arrives with the stream's first block (8,000 bytes in: half a second).
        #expect(eventually(timeout: 15) { (try? d.request("status"))?["current"]?["title"] == "Morning Show" }, "\((try? d.request("status"))?.text ?? "")")
        let lines = try MPDTests.python(d, "stream.py", """
            import sys, mpd
            c = mpd.MPDClient(); c.connect(sys.argv[1])
            s = c.currentsong()
            print(s.get("name"), "|", s.get("title"), "|", "time" in s)
            st = c.status()
            print("duration" in st, st.get("audio"), st.get("bitrate"))
            try:
                c.seekcur(10)
            except mpd.CommandError as e:
                print("refused:", e)
            """, [sock])
        #expect(lines.count == 3 && lines[0] == "Test Radio | Morning Show | False", "\(lines)")
        #expect(lines.count == 3 && lines[1] == "False 44100:f:2 128", "\(lines)")
        #expect(lines.count == 3 && lines[2].hasPrefix("refused:") && lines[2].contains("live stream cannot seek"), "\(lines)")
        let title = try d.ctl(["--format", "%title%", "status"])
        #expect(title.stdoutText.trimmingCharacters(in: .newlines) == "Morning Show", "\(title.stdoutText) \(title.stderr)")
        d.expectCleanStop()
        try d.start(["--mpd-listen", sock])
        let restored = try d.request("list")["items"]?.array?.compactMap { $0["path"]?.string } ?? []
        #expect(restored == [live, server.url("files/tone.mp3"), server.url("files/tone.mp3")], "\(restored)")
        // A playlist by URL: its entries, one relative to it (a URL is tried when it plays, as mpd does).
        let pl = try d.request("add", [("paths", .array([.string(server.url("files/radio.m3u"))]))])
        #expect(pl["items"]?.array?.count == 2, "\(pl.text)")
    }

    @Test("a station that sends a title holding a newline and `OK` (fuzz finding, icy/seed-newline): MPD clients see one Title line with spaces, and the next command answers in step")
    func titleCannotSplitALine() throws {
        let server = try Self.server()
        let live = server.url("live/tone.mp3?metaint=8000&titles=Evil%0AOK%0Afile:%20x")
        let (d, sock) = try MPDTests.daemon(port: MPDTests.port(14))
        #expect(try d.request("add", [("paths", .array([.string(live)]))])["items"]?.array?.count == 1)
        #expect(try d.request("play")["state"] == "playing")
        #expect(eventually(timeout: 15) { (try? d.request("status"))?["current"]?["title"] == "Evil OK file: x" }, "\((try? d.request("status"))?.text ?? "")")
        let lines = try MPDTests.python(d, "title.py", """
            import sys, mpd
            c = mpd.MPDClient(); c.connect(sys.argv[1])
            print(repr(c.currentsong().get("title")))
            print(c.status().get("state"), len(c.playlistinfo()))
            """, [sock])
        #expect(lines == ["'Evil OK file: x'", "play 1"], "\(lines)")
        d.expectCleanStop()
    }

    @Test("a stalled stream through the daemon: status says buffering (JSON, ctl status, --format %buffering%), `buffering` events on and off in order; the rest arrives and the item plays to its end")
    func stallShown() throws {
        let server = try Self.server()
        let d = try DaemonFixture.onSharedSink(config: DaemonFixture.foreground)
        try d.start()
        let w = try d.client()
        #expect(try w.request("subscribe", [("events", ["buffering", "state"])]).ok)
        // 128 kbit/s: the first 24,000 bytes are 1.5 s of the 3 s tone; the rest waits for the gate.
        #expect(try d.request("add", [("paths", .array([.string(server.url("gate/tone.mp3?after=24000"))]))])["items"]?.array?.count == 1)
        #expect(try d.request("play")["state"] == "playing")
        var events: [JSON] = []
        func read(until done: ([JSON]) -> Bool) {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline, !done(events) {
                if let e = try? w.nextEvent(timeout: 0.2) { events.append(e) }
            }
        }
        let stalls = { (es: [JSON]) in es.filter { $0["event"] == "buffering" && $0["buffering"] == .bool(true) }.count }
        // Buffering at the start (the first audio on its way), then playing, then the stall.
        read { stalls($0) >= 2 }
        #expect(stalls(events) == 2, "\(events.map(\.text))")
        let status = try d.request("status")
        #expect(status["state"] == "playing" && status["buffering"] == .bool(true), "\(status.text)")
        let ctl = try d.ctl(["status"])
        #expect(ctl.stdoutText.hasPrefix("▶ playing (buffering)"), "\(ctl.stdoutText)")
        #expect(try d.ctl(["--format", "%state% %buffering%", "status"]).stdoutText == "playing buffering\n")
        try server.open("tone.mp3")
        read { es in es.contains { $0["event"] == "state" && $0["state"] == "stopped" } }
        // (The two kinds come from two observers: only each one's own order is fixed.)
        let buffering = events.filter { $0["event"] == "buffering" }.map { $0["buffering"] == .bool(true) ? "on" : "off" }
        #expect(buffering == ["on", "off", "on", "off"], "\(events.map(\.text))")
        #expect(events.compactMap { $0["event"] == "state" ? $0["state"]?.string : nil } == ["playing", "stopped"], "\(events.map(\.text))")
        #expect(try d.request("status")["buffering"] == .bool(false))
        d.expectCleanStop()
    }

    @Test("allow-streams = no: a URL is refused by add, MPD's add and urlhandlers say so",
          .enabled(if: Harness.has("mpc"), "needs mpc"))
    func streamsRefused() throws {
        let (d, sock) = try MPDTests.daemon(port: MPDTests.port(13), config: DaemonFixture.foreground + "allow-streams = no\n")
        let refused = try d.ctl(["add", "http://127.0.0.1:1/x.mp3"])
        #expect(refused.status != 0 && refused.stderr.contains("allow-streams = no"), "\(refused.stderr)")
        #expect(try MPDTests.mpc(sock, ["add", "http://127.0.0.1:1/x.mp3"]).stderr.contains("Unsupported URI scheme"))
        #expect(try MPDTests.python(d, "handlers.py", "import sys, mpd\nc = mpd.MPDClient(); c.connect(sys.argv[1])\nprint(c.urlhandlers())\n", [sock]) == ["['file://']"])
    }
}
