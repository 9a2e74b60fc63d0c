import BacklineTestSupport
import BacklineWire
import Foundation
import Testing

/// Stickers in a running daemon: set by an MPD client (python-mpd2), read by `ctl` and the JSON
/// protocol, told to MPD's `idle sticker`; plays, skips and resume positions kept as stickers
/// as songs are heard; a position that follows its file when it moves within the library.
@Suite("Stickers in the daemon: MPD clients, ctl, JSON; plays, skips and positions", Harness.audioTools)
struct StickerDaemonTests {
    /// A library of three 1.5 s songs and one of 40 s (a "book": long enough to be resumed
    /// with `resume-after = 0.5`).
    static func tree() throws -> URL {
        let dir = try Harness.makeTemporaryDirectory("sticker-tree")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("Books"), withIntermediateDirectories: true)
        for (name, seconds, hz) in [("a.flac", 1.5, 330), ("b.flac", 1.5, 440), ("c.flac", 1.5, 550), ("Books/book.flac", 40, 220)] {
            let r = try runProcess("sox", ["-D", "-n", "-r", "44100", "-b", "16", "-c", "2", dir.path + "/" + name, "synth", String(seconds), "sine", String(hz), "vol", "0.3"])
            guard r.status == 0 else { throw HarnessError("sox: \(r.stderr)") }
        }
        return dir
    }

    static let config = DaemonFixture.foreground + "resume-after = 0.5\n"
    /// The sticker events of a skip of a.flac and plays of b.flac and c.flac.
    static let told: Set<String> = ["a.flac skipCount", "a.flac lastSkipped", "b.flac playCount", "b.flac lastPlayed",
                                    "c.flac playCount", "c.flac lastPlayed"]

    func ctl(_ d: DaemonFixture, _ args: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let r = try d.ctl(args)
        #expect(r.status == 0, "ctl \(args.joined(separator: " ")): \(r.stderr)", sourceLocation: sourceLocation)
        return r.stdoutText
    }

    @Test("python-mpd2 sets a rating: MPD's idle sticker wakes, ctl and the JSON protocol (an absolute path too) read it, find sorts by it; bad requests answer errors and the connection lives",
          .enabled(if: MPDTests.pythonMPD2, "needs python3-mpd"))
    func clients() throws {
        let tree = try Self.tree()
        let (d, port) = try LibraryMPDTests.daemon(tree, config: Self.config)
        defer { d.expectCleanStop() }
        let idle = try TCPLineClient.mpd(port: port)
        defer { idle.close() }
        try idle.write("idle sticker")
        let out = try MPDTests.python(d, "rate.py", """
            import sys, mpd
            c = mpd.MPDClient(); c.timeout = 20; c.connect("127.0.0.1", int(sys.argv[1]))
            c.sticker_set("song", "a.flac", "rating", "8")
            c.sticker_set("song", "b.flac", "rating", "10")
            c.sticker_set("song", "c.flac", "rating", "2")
            print("get", c.sticker_get("song", "a.flac", "rating"))
            print("find", [(x["file"], x["sticker"]) for x in c.sticker_find("song", "", "rating")])
            try:
                c.sticker_get("song", "a.flac", "nosuch")
            except mpd.CommandError as e:
                print("error", e)
            print("alive", c.ping() is None)
            """, [String(port)])
        #expect(out == ["get 8", "find [('a.flac', 'rating=8'), ('b.flac', 'rating=10'), ('c.flac', 'rating=2')]",
                        "error [50@0] {sticker} no such sticker", "alive True"], "\(out)")
        #expect(idle.textLine(within: 10) == "changed: sticker" && idle.textLine(within: 10) == "OK")

        #expect(try ctl(d, "sticker", "get", "a.flac", "rating") == "rating=8\n")
        #expect(try ctl(d, "sticker", "list", "b.flac") == "rating=10\n")
        #expect(try ctl(d, "sticker", "find", "rating", "--sort", "-value_int") == "10  b.flac\n8  a.flac\n2  c.flac\n")
        #expect(try ctl(d, "sticker", "find", "rating", "--op", "gt", "--value", "5") == "8  a.flac\n10  b.flac\n")
        let absolute = try d.request("sticker", [("action", "get"), ("path", .string(tree.path + "/c.flac")), ("name", "rating")])
        #expect(absolute["stickers"]?.array?.first?["value"]?.string == "2" && absolute["stickers"]?.array?.first?["path"]?.string == "c.flac",
                "\(absolute.text)")
        #expect(try ctl(d, "sticker", "inc", "a.flac", "rating", "2") == "rating=10\n")
        #expect(try ctl(d, "sticker", "names") == "rating\n")
        // Errors: the daemon's words and exit 1; the daemon lives on.
        let missing = try d.ctl(["sticker", "get", "nowhere.flac", "rating"])
        #expect(missing.status == 1 && missing.stderr.contains("No such song"), "\(missing.stderr)")
        let bad = try d.request("sticker", [("action", "set"), ("path", "a.flac"), ("name", "x"), ("value", "line\nforged: 1")])
        #expect(bad["ok"] == false && bad["error"]?["message"]?.string == "sticker value holds a control character", "\(bad.text)")
        #expect(try d.request("ping")["ok"] == true)
    }

    @Test("heard to its end, a song's playCount rises and lastPlayed is now; left for the next one, its skipCount rises; a stop is no skip; events tell each change")
    func playsAndSkips() throws {
        let tree = try Self.tree()
        let (d, port) = try LibraryMPDTests.daemon(tree, config: Self.config, realTime: true)
        defer { d.expectCleanStop() }
        let events = try d.client()
        #expect(try events.request("subscribe", [("events", ["sticker"])]).ok)
        let mpd = try TCPLineClient.mpd(port: port)
        defer { mpd.close() }
        func sticker(_ song: String, _ name: String) -> String? {
            guard let r = try? mpd.ask("sticker get song \(song) \(name)"), let line = r.split(separator: "\n").first,
                  line.hasPrefix("sticker: \(name)=") else { return nil }
            return String(line.dropFirst("sticker: \(name)=".count))
        }
        func elapsed() -> Double { (try? d.request("status"))?["elapsed"]?.number ?? 0 }
        _ = try ctl(d, "add", "a.flac", "b.flac", "c.flac")
        let start = Date().timeIntervalSince1970
        _ = try ctl(d, "play")
        #expect(eventually(timeout: 10) { elapsed() > 0.3 })
        _ = try ctl(d, "next")  // a: skipped
        #expect(eventually(timeout: 20) { (try? d.request("status"))?["state"]?.string == "stopped" }, "b and c heard to their ends")
        #expect(eventually(timeout: 5) { sticker("c.flac", "playCount") == "1" }, "\(d.log().suffix(2000))")
        #expect(sticker("a.flac", "skipCount") == "1" && sticker("a.flac", "playCount") == nil)
        #expect(sticker("b.flac", "playCount") == "1" && sticker("b.flac", "skipCount") == nil)
        for song in ["b.flac", "c.flac"] {
            let t = try #require(sticker(song, "lastPlayed").flatMap(Double.init))
            #expect(t >= start.rounded(.down) && t <= Date().timeIntervalSince1970 + 1)
        }
        #expect(sticker("a.flac", "lastSkipped").flatMap(Double.init).map { $0 >= start.rounded(.down) } == true)
        var seen: Set<String> = []
        while let e = try events.nextEvent(timeout: 2) {
            if e["event"]?.string == "sticker" { seen.insert("\(e["path"]?.string ?? "") \(e["name"]?.string ?? "")") }
            if seen.isSuperset(of: Self.told) { break }
        }
        #expect(seen.isSuperset(of: Self.told), "\(seen)")
        // Played again from the first: a stop while a plays is no skip; heard to its end, 2 plays.
        _ = try ctl(d, "play", "1")
        #expect(eventually(timeout: 10) { elapsed() > 0.3 })
        _ = try ctl(d, "stop")
        _ = try ctl(d, "play", "3")
        #expect(eventually(timeout: 10) { sticker("c.flac", "playCount") == "2" })
        #expect(sticker("a.flac", "skipCount") == "1")
    }

    @Test("a book left at 30 s keeps `elapsed` 30; moved within the music directory and queued from its new path, it resumes 5 s back from there; heard to its end, elapsed goes and a play is counted")
    func positionFollowsMoves() throws {
        let tree = try Self.tree()
        let (d, port) = try LibraryMPDTests.daemon(tree, config: Self.config, realTime: true)
        defer { d.expectCleanStop() }
        let mpd = try TCPLineClient.mpd(port: port)
        defer { mpd.close() }
        func elapsed() -> Double { (try? d.request("status"))?["elapsed"]?.number ?? 0 }
        _ = try ctl(d, "add", "Books/book.flac")
        _ = try ctl(d, "play")
        #expect(eventually(timeout: 10) { elapsed() > 0.2 })
        _ = try ctl(d, "seek", "30")
        #expect(eventually(timeout: 10) { elapsed() >= 30.2 })
        _ = try ctl(d, "stop")
        #expect(eventually(timeout: 5) { (try? mpd.ask("sticker get song Books/book.flac elapsed")) == "sticker: elapsed=30\nOK\n" },
                "\((try? mpd.ask("sticker list song Books/book.flac")) ?? "")")
        // Moved: the path's bookmark no longer matches; the song's sticker does.
        try FileManager.default.createDirectory(at: tree.appendingPathComponent("Moved"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(at: tree.appendingPathComponent("Books/book.flac"), to: tree.appendingPathComponent("Moved/book.flac"))
        _ = try ctl(d, "update", "--wait")
        #expect(try mpd.ask("sticker get song Moved/book.flac elapsed") == "sticker: elapsed=30\nOK\n")
        _ = try ctl(d, "clear")
        _ = try ctl(d, "add", "Moved/book.flac")
        _ = try ctl(d, "play")
        #expect(eventually(timeout: 10) { elapsed() > 0 })
        let resumed = elapsed()
        #expect(resumed >= 25 && resumed < 28, "resumed at \(resumed)")
        // Heard to its end: the position goes, a play counts.
        _ = try ctl(d, "seek", "38")
        #expect(eventually(timeout: 15) { (try? mpd.ask("sticker get song Moved/book.flac playCount")) == "sticker: playCount=1\nOK\n" })
        #expect(eventually(timeout: 5) { (try? mpd.ask("sticker get song Moved/book.flac elapsed"))?.hasPrefix("ACK [50@0] {sticker} no such sticker") == true })
    }
}
