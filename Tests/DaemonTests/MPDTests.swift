import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import MediaCore
import Synchronization
import Testing
import Locking

/// The MPD protocol (`--mpd-listen`) driven by Debian's own MPD clients: stock `mpc` on a Unix
/// socket and on 127.0.0.1, and python-mpd2 as an independent client; raw bad input over the
/// socket. The daemon plays through the shared PulseAudio null sink (real-time pacing).
@Suite("backline daemon speaks MPD: stock mpc and python-mpd2", Harness.audioTools)
struct MPDTests {
    /// Whether the python-mpd2 tests run: Debian's python3-mpd is installed, or the tests run under CI.
    static var pythonMPD2: Bool {
        FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/mpd") || Harness.isCI
    }

    /// A daemon with an MPD Unix socket and an MPD TCP port on loopback.
    static func daemon(port: Int, config: String = DaemonFixture.foreground) throws -> (DaemonFixture, String) {
        let d = try DaemonFixture.onSharedSink(config: config)
        let socket = d.dir.path + "/mpd.sock"
        try d.start(["--mpd-listen", socket, "--mpd-listen", "127.0.0.1:\(port)"])
        // The library's first scan over before the test (mpc prints it: `Updating DB (#1)`).
        guard eventually(timeout: 120, { (try? d.request("stats"))?["updating"] == .null }) else {
            throw HarnessError("the first library scan did not end")
        }
        return (d, socket)
    }

    /// `mpc ARGS` against `host` (a socket path or an address); its output.
    static func mpc(_ host: String, port: Int? = nil, _ args: [String]) throws -> ProcessResult {
        var env = ["MPD_HOST": host]
        if let port { env["MPD_PORT"] = String(port) }
        return try runProcess("/usr/bin/mpc", args, environment: env, timeout: 20)
    }

    /// The loopback port of test slot `slot` (each test that listens has its own): a port the
    /// kernel says is free when the slot is first asked for, the same one after. (It was
    /// 20,000 + pid % 20,000 + slot: up to 40,013, inside the kernel's ephemeral range, where a
    /// connection of another test can hold it; HardeningTests lost a port that way in CI.)
    static func port(_ slot: Int = 0) -> Int {
        slots.withLock { taken in
            if let p = taken[slot] { return p }
            var p = HardeningTests.port()
            while taken.values.contains(p) { p = HardeningTests.port() }
            taken[slot] = p
            return p
        }
    }

    private static let slots = Lock<[Int: Int]>([:])

    /// Runs `script` (python-mpd2) with `arguments`; it must exit 0; its output lines.
    static func python(_ d: DaemonFixture, _ name: String, _ script: String, _ arguments: [String],
                       timeout: Double = 30, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        let file = d.dir.appendingPathComponent(name)
        try script.write(to: file, atomically: true, encoding: .utf8)
        let r = try runProcess("/usr/bin/python3", [file.path] + arguments, timeout: timeout)
        #expect(r.status == 0, "\(r.stderr) \(r.stdoutText)", sourceLocation: sourceLocation)
        return r.stdoutText.split(separator: "\n").map(String.init)
    }

    @Test("mpc on the Unix socket: add, playlist, play, status line and time, volume, seek 50%, insert, crop, queued, del, move, cdprev, repeat/random/single, outputs; the same over TCP; errors as mpd prints them",
          .enabled(if: Harness.has("mpc"), "needs mpc"))
    func mpcCommands() throws {
        let port = Self.port()
        let (d, sock) = try Self.daemon(port: port)
        func mpc(_ args: String...) throws -> String {
            let r = try Self.mpc(sock, args)
            #expect(r.status == 0, "mpc \(args.joined(separator: " ")): \(r.stderr)")
            return r.stdoutText
        }
        #expect(try mpc("add", "album/a.mp3", "album/b.mp3", "long.mp3").isEmpty)
        let listed = try mpc("playlist")
        #expect(listed == "album/a.mp3\nalbum/b.mp3\nlong.mp3\n", "\(listed)")
        let stopped = try mpc("status")
        #expect(stopped.hasPrefix("volume:100%   repeat: off   random: off   single: off   consume: off"), "\(stopped)")

        let playing = try mpc("play", "3")
        #expect(playing.contains("long.mp3\n[playing] #3/3   0:0"), "\(playing)")
        #expect(playing.contains("/1:00 ("), "the total comes from `time: E:T`: \(playing)")
        let seek = try mpc("seek", "50%")
        #expect(seek.contains("[playing] #3/3   0:30/1:00 (50%)"), "\(seek)")
        let elapsed = try #require(d.request("status")["elapsed"]?.number)
        #expect(elapsed >= 30 && elapsed < 31, "the daemon's own elapsed: \(elapsed)")
        #expect(try mpc("volume", "40").contains("volume: 40%"))
        #expect(try mpc("volume", "+5").contains("volume: 45%"))
        #expect(try d.request("status")["volume"]?.number == 45)

        // insert (after the current one), queued, del, move, crop.
        _ = try mpc("insert", "short/1.mp3")
        #expect(try mpc("playlist") == "album/a.mp3\nalbum/b.mp3\nlong.mp3\nshort/1.mp3\n")
        #expect(try mpc("queued") == "short/1.mp3\n")
        _ = try mpc("move", "4", "1")
        #expect(try mpc("playlist") == "short/1.mp3\nalbum/a.mp3\nalbum/b.mp3\nlong.mp3\n")
        _ = try mpc("del", "2")
        #expect(try mpc("playlist") == "short/1.mp3\nalbum/b.mp3\nlong.mp3\n")
        _ = try mpc("crop")
        #expect(try mpc("playlist") == "long.mp3\n")
        #expect(try mpc("current") == "long.mp3\n", "cropping kept the playing item")

        // cdprev more than 3 s in: back to the start of the item.
        let back = try mpc("cdprev")
        #expect(back.contains("[playing] #1/1   0:00/1:00"), "\(back)")

        // Modes, and how mpc shows them.
        #expect(try mpc("repeat", "on").contains("repeat: on "))
        #expect(try mpc("random", "on").contains("random: on "))
        #expect(try mpc("single", "once").contains("single: once"))
        #expect(try d.request("status")["stopAfterCurrent"] == true)
        #expect(try mpc("single", "off").contains("single: off"))
        #expect(try mpc("repeat", "off").contains("repeat: off"))
        // single without repeat stays on: stop after each item.
        #expect(try mpc("single", "on").contains("repeat: off   random: on    single: on"))
        #expect(try d.request("status")["stopAfterEach"] == true)
        #expect(try mpc("repeat", "on").contains("repeat: on    random: on    single: on"))
        #expect(try d.request("status")["repeat"] == "one")
        #expect(try mpc("repeat", "off").contains("single: on"))
        #expect(try mpc("single", "off").contains("single: off"))

        // The one output: disabling it mutes (the volume stays).
        #expect(try mpc("outputs") == "Output 1 (pulse) is enabled\n")
        _ = try mpc("disable", "1")
        #expect(try d.request("status")["muted"] == true)
        _ = try mpc("enable", "1")
        #expect(try d.request("status")["muted"] == false)

        // TCP on loopback: the same daemon, the same answers.
        let tcp = try Self.mpc("127.0.0.1", port: port, ["status"])
        #expect(tcp.status == 0 && tcp.stdoutText.contains("long.mp3\n[playing] #1/1"), "\(tcp.stdoutText) \(tcp.stderr)")
        // An absolute path over TCP is refused, as mpd refuses it.
        let abs = try Self.mpc("127.0.0.1", port: port, ["add", d.music + "/album/c.mp3"])
        #expect(abs.status != 0 && abs.stderr.contains("Access denied"), "\(abs.stderr)")

        // searchplay: a search of the queue, then playid.
        _ = try mpc("add", "album/c.mp3")
        #expect(try mpc("searchplay", "filename", "c.mp3").contains("album/c.mp3\n[playing] #2/2"))
        // The library: `update` answers with its job (mpc waits for nothing without --wait).
        let update = try Self.mpc(sock, ["update"])
        #expect(update.status == 0 && update.stdoutText.contains("Updating DB (#"), "\(update.stdoutText) \(update.stderr)")

        // Errors as mpc prints them; nothing changes.
        let missing = try Self.mpc(sock, ["add", "nothing.mp3"])
        #expect(missing.status != 0 && missing.stderr.contains("error adding nothing.mp3"), "\(missing.stderr)")
        _ = try mpc("stop")
        let next = try Self.mpc(sock, ["next"])
        #expect(next.status != 0 && next.stderr.contains("MPD error: Not playing"), "\(next.stderr)")
        d.expectCleanStop()
    }

    @Test("idle: mpc idle is woken by another client's mpc next and by a JSON next; ctl watch sees mpc's next; mpc idleloop reports several changes and is never timed out",
          .enabled(if: Harness.has("mpc"), "needs mpc"))
    func idle() throws {
        let (d, sock) = try Self.daemon(port: Self.port(1))
        _ = try Self.mpc(sock, ["add", "long.mp3", "album"])
        _ = try Self.mpc(sock, ["play"])

        // mpc idle player, woken by another mpc's next.
        let waiter = try SpawnedProcess("/usr/bin/mpc", ["idle", "player"], environment: ["MPD_HOST": sock])
        usleep(300_000)
        #expect(waiter.isRunning, "idle waits")
        let watcher = try d.client()
        _ = try watcher.request("subscribe", [("events", ["current"])])
        _ = try Self.mpc(sock, ["next"])
        #expect(try waiter.wait(timeout: 5) == 0)
        #expect(waiter.stdout == "player\n")
        let event = try watcher.nextEvent(timeout: 5)
        #expect(event?["item"]?["path"]?.string?.hasSuffix("album/a.mp3") == true, "ctl watch sees mpc's next: \(event?.text ?? "nothing")")

        // The other way round: the JSON protocol's next wakes mpc idle.
        // (`idle player`: the skip the first next counted is written as a sticker meanwhile, and
        // `idle` without a subsystem would wake for that.)
        let second = try SpawnedProcess("/usr/bin/mpc", ["idle", "player"], environment: ["MPD_HOST": sock])
        usleep(300_000)
        #expect(try d.request("next").ok)
        #expect(try second.wait(timeout: 5) == 0)
        #expect(second.stdout.contains("player"), "\(second.stdout)")

        // idleloop: several changes, then killed; the daemon lives on.
        let loop = try SpawnedProcess("/usr/bin/mpc", ["idleloop"], environment: ["MPD_HOST": sock])
        usleep(300_000)
        _ = try Self.mpc(sock, ["volume", "50"])
        _ = try Self.mpc(sock, ["repeat", "on"])
        _ = try Self.mpc(sock, ["del", "3"])
        #expect(eventually(timeout: 5) { ["mixer", "options", "playlist"].allSatisfy(loop.stdout.contains) }, "\(loop.stdout)")
        loop.signal(SIGKILL)
        _ = try loop.wait(timeout: 5)
        #expect(try d.request("ping").ok)
        d.expectCleanStop()
    }

    @Test("python-mpd2 (an independent client): command lists, idle woken by another client, plchanges, error codes",
          .enabled(if: pythonMPD2, "needs python-mpd2"))
    func pythonMPD() throws {
        let (d, sock) = try Self.daemon(port: Self.port(2))
        let script = """
            import mpd, sys
            c = mpd.MPDClient()
            c.connect(sys.argv[1])
            out = []
            c.command_list_ok_begin()
            c.add("album/a.mp3")
            c.add("album/b.mp3")
            c.status()
            r = c.command_list_end()
            out.append("list %s %s" % (r[:2], r[2]["playlistlength"]))
            v = int(c.status()["playlist"])
            c.addid("album/c.mp3", 0)
            ch = c.plchanges(v)
            out.append("plchanges %s" % ",".join(s["file"] for s in ch))
            out.append("songs %s" % ",".join(s["file"] + "@" + s["pos"] for s in c.playlistinfo()))
            try:
                c.playid(999)
            except mpd.CommandError as e:
                out.append("error %s" % e)
            try:
                c.command_list_ok_begin()
                c.ping()
                c.seekcur("x")
                c.command_list_end()
            except mpd.CommandError as e:
                out.append("listerror %s" % e)
            import threading
            def other():
                d = mpd.MPDClient()
                d.connect(sys.argv[1])
                d.setvol(20)
            threading.Timer(0.3, other).start()
            out.append("idle %s" % c.idle("mixer"))
            print("\\n".join(out))
            """
        let lines = try Self.python(d, "client.py", script, [sock], timeout: 30)
        #expect(lines.first == "list [None, None] 2", "\(lines)")
        #expect(lines.contains("plchanges album/c.mp3,album/a.mp3,album/b.mp3"), "\(lines)")
        #expect(lines.contains("songs album/c.mp3@0,album/a.mp3@1,album/b.mp3@2"), "\(lines)")
        #expect(lines.contains("error [50@0] {playid} No such song"), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("listerror [2@1] {seekcur}") }, "\(lines)")
        #expect(lines.contains("idle ['mixer']"), "\(lines)")
        d.expectCleanStop()
    }

    @Test("python-mpd2: browsing (lsinfo, listall, listallinfo, listfiles), albumart and readpicture in chunks, consume, priorities in random mode, plchanges of only what moved, changed: output",
          .enabled(if: pythonMPD2, "needs python-mpd2"))
    func pythonLibrary() throws {
        let (d, sock) = try Self.daemon(port: Self.port(6))
        // An album cover beside album/*.mp3, a track with a picture in its tags, a symlink out.
        let cover = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }
        try Data(cover).write(to: URL(fileURLWithPath: d.music + "/album/cover.png"))
        try FileManager.default.createDirectory(atPath: d.music + "/demo", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try #require(Fixtures.demoTracks.first).path, toPath: d.music + "/demo/sunrise.mp3")
        try FileManager.default.createSymbolicLink(atPath: d.music + "/outside", withDestinationPath: "/etc")
        let script = """
            import mpd, sys, time
            c = mpd.MPDClient()
            c.timeout = 20  # a reply that never comes fails here, with where, not at the test's 60 s
            c.connect(sys.argv[1])
            out = []
            import atexit
            atexit.register(lambda: print("\\n".join(out)))
            def names(items):
                return ",".join(i.get("directory", i.get("file", i.get("playlist", "?"))) for i in items)
            # The files added after the start, into the library (the listings are the library's).
            c.update()
            while "updating_db" in c.status():
                time.sleep(0.02)
            out.append("lsinfo %s" % names(c.lsinfo()))
            out.append("lsinfo-album %s" % ",".join("%s:%s" % (i["file"], i.get("time")) for i in c.lsinfo("album")))
            out.append("listall %s" % names(c.listall("short")))
            out.append("listallinfo %s" % ",".join("%s:%s" % (i["file"], i["title"]) if "file" in i else "dir " + i["directory"] for i in c.listallinfo("demo")))
            out.append("listfiles %s" % ",".join("%s:%s" % (i["file"], i["size"]) for i in c.listfiles("album")))
            for bad in ("outside", "../"):
                try:
                    c.lsinfo(bad)
                    out.append("escaped %s" % bad)
                except mpd.CommandError as e:
                    out.append("lsinfo-error %s" % e)
            # binarylimit (python-mpd2 3.0 has no method for it): by hand on a raw socket.
            import socket
            raw = socket.socket(socket.AF_UNIX)
            raw.connect(sys.argv[1])
            f = raw.makefile("rb")
            f.readline()
            raw.sendall(b"binarylimit 64\\nalbumart album/a.mp3 100\\n")
            ok, size, binary = f.readline(), f.readline(), f.readline()
            chunk = f.read(64)
            rest = f.read(4)
            cover = open(sys.argv[2], "rb").read()
            out.append("raw %s %s %s %s %s" % (ok.strip(), size.strip(), binary.strip(), chunk == cover[100:164], rest))
            art = c.albumart("album/a.mp3")
            out.append("albumart %d %s" % (len(art["binary"]), art["binary"] == open(sys.argv[2], "rb").read()))
            pic = c.readpicture("demo/sunrise.mp3")
            out.append("readpicture %s %d %s" % (pic["type"], len(pic["binary"]), pic["binary"][:4] == b"\\x89PNG"))
            out.append("readpicture-none %s" % c.readpicture("album/a.mp3"))
            try:
                c.albumart("long.mp3")
            except mpd.CommandError as e:
                out.append("albumart-error %s" % e)

            # Priorities: in random mode the higher ones come next.
            for f in ("short/1.mp3", "short/2.mp3", "short/3.mp3", "album/a.mp3", "album/b.mp3"):
                c.add(f)
            ids = [int(s["id"]) for s in c.playlistinfo()]
            c.random(1)
            c.play(0)
            c.prioid(200, ids[4])
            c.prio(100, "3:4")
            st = c.status()
            out.append("nextsong %s" % (int(st["nextsongid"]) == ids[4]))
            out.append("prio %s" % ",".join(s.get("prio", "0") for s in c.playlistinfo()))
            c.random(0)
            c.stop()

            # plchanges: a move lists only the positions it changed.
            v = int(c.status()["playlist"])
            c.moveid(ids[3], 1)
            out.append("plchanges %s" % ",".join(s["pos"] for s in c.plchanges(v)))
            out.append("plchangesposid %s" % ",".join(s["cpos"] for s in c.plchangesposid(v)))

            # Consume: each song heard (1 s) leaves the queue; oneshot takes one.
            c.clear()
            for f in ("short/1.mp3", "short/2.mp3", "short/3.mp3"):
                c.add(f)
            c.consume(1)
            out.append("consume %s" % c.status()["consume"])
            c.play(0)
            deadline = time.time() + 15
            while len(c.playlistinfo()) > 1 and time.time() < deadline:
                time.sleep(0.1)  # (not idle: the last change may come before it, and idle would wait for ever)
            out.append("consumed %s" % names(c.playlistinfo()))
            c.consume("oneshot")
            out.append("consume %s" % c.status()["consume"])
            c.stop()

            # Disabling the one output is an output change (and a mixer one: it mutes).
            other = mpd.MPDClient()
            other.timeout = 20
            other.connect(sys.argv[1])
            import threading
            # (The timer's thread uses `c`: joined before `c` is used again, or the two threads
            # would read each other's replies: a hang under load, twice in CI.)
            t = threading.Timer(0.3, lambda: c.disableoutput(0))
            t.start()
            out.append("idle %s" % other.idle("output"))
            t.join()
            c.enableoutput(0)
            """
        let lines = try Self.python(d, "library.py", script, [sock, d.music + "/album/cover.png"], timeout: 60)
        #expect(lines.contains("lsinfo long.mp3,album,broken,demo,short"), "files first, then directories; no escape: \(lines)")
        #expect(lines.contains("lsinfo-album album/a.mp3:3,album/b.mp3:4,album/c.mp3:5"), "\(lines)")
        // `listall DIR` and `listallinfo DIR` name the directory first, as mpd's do.
        #expect(lines.contains("listall short,short/1.mp3,short/2.mp3,short/3.mp3"), "\(lines)")
        #expect(lines.contains("listallinfo dir demo,demo/sunrise.mp3:Sunrise Chord"), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("listfiles a.mp3:") && $0.contains("cover.png:20000") }, "\(lines)")
        #expect(lines.filter { $0.hasPrefix("lsinfo-error [50@0] {lsinfo} No such directory") }.count == 2, "\(lines)")
        #expect(lines.contains("albumart 20000 True"), "all chunks, byte for byte: \(lines)")
        #expect(lines.contains("raw b'OK' b'size: 20000' b'binary: 64' True b'\\nOK\\n'"), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("readpicture image/png ") && $0.hasSuffix(" True") }, "\(lines)")
        #expect(lines.contains("readpicture-none {}"), "\(lines)")
        #expect(lines.contains("albumart-error [50@0] {albumart} No file exists"), "\(lines)")
        #expect(lines.contains("nextsong True"), "\(lines)")
        #expect(lines.contains("prio 0,0,0,100,200"), "\(lines)")
        #expect(lines.contains("plchanges 1,2,3"), "\(lines)")
        #expect(lines.contains("plchangesposid 1,2,3"), "\(lines)")
        #expect(lines.contains("consume 1") && lines.contains("consume oneshot"), "\(lines)")
        #expect(lines.contains("consumed short/3.mp3"), "\(lines)")
        #expect(lines.contains("idle ['output']"), "\(lines)")
        d.expectCleanStop()
    }

    @Test("300 clients on the MPD socket: at most max-connections are greeted, the rest closed at once without a word; when they leave, new clients are served")
    func manyConnections() throws {
        let (d, sock) = try Self.daemon(port: Self.port(7))
        var clients: [ControlClient] = []
        for _ in 0..<300 { clients.append(try ControlClient(socketPath: sock)) }
        var greeted: [ControlClient] = []
        var closed = 0
        for c in clients {
            switch try? c.readRawLine(timeout: 5) {
            case "OK MPD 0.23.5": greeted.append(c)
            case nil: closed += 1
            case let other?: Issue.record("unexpected \(other)")
            }
        }
        #expect(greeted.count <= 256 && greeted.count >= 250 && closed == 300 - greeted.count, "\(greeted.count) greeted, \(closed) closed")
        // Those served are served in full.
        for c in [greeted.first, greeted.last].compactMap({ $0 }) {
            try c.sendRaw(Array("ping\n".utf8))
            #expect(try c.readRawLine(timeout: 5) == "OK")
        }
        clients = []
        greeted = []
        #expect(eventually(timeout: 10) { (try? Self.mpc(sock, ["status"]).status) == 0 || Harness.which("mpc") == nil })
        #expect(try d.request("ping").ok)
        d.expectCleanStop()
    }

    @Test("stored playlists over both protocols: mpc save/lsplaylists/playlist/load/rm, ctl playlists/playlist-add/playlist, an idle woken with stored_playlist; a second save is refused; the file is M3U, relative to the music directory",
          .enabled(if: Harness.has("mpc"), "needs mpc"))
    func storedPlaylists() throws {
        let (d, sock) = try Self.daemon(port: Self.port(5))
        func mpc(_ args: String...) throws -> ProcessResult { try Self.mpc(sock, args) }
        _ = try mpc("add", "album/a.mp3", "long.mp3")
        let waiter = try SpawnedProcess("/usr/bin/mpc", ["idle", "stored_playlist"], environment: ["MPD_HOST": sock])
        usleep(300_000)
        #expect(try mpc("save", "mix").status == 0)
        #expect(try waiter.wait(timeout: 5) == 0 && waiter.stdout == "stored_playlist\n", "\(waiter.stdout)")
        let again = try mpc("save", "mix")
        #expect(again.status != 0 && again.stderr.contains("exists"), "\(again.stderr)")
        #expect(try mpc("lsplaylists").stdoutText == "mix\n")
        #expect(try mpc("playlist", "mix").stdoutText == "album/a.mp3\nlong.mp3\n")
        let file = try String(contentsOfFile: d.dir.path + "/state/backline/playlists/mix.m3u", encoding: .utf8)
        #expect(file == "#EXTM3U\nalbum/a.mp3\nlong.mp3\n", "\(file)")

        // The JSON protocol sees and edits the same playlists.
        let listed = try d.ctl(["playlists"])
        #expect(listed.status == 0 && listed.stdoutText == "mix\n", "\(listed.stdoutText) \(listed.stderr)")
        #expect(try d.ctl(["playlist-add", "mix", "short/1.mp3"]).status == 0)
        #expect(try d.ctl(["playlist", "mix"]).stdoutText == "1. album/a.mp3\n2. long.mp3\n3. short/1.mp3\n")

        _ = try mpc("clear")
        #expect(try mpc("load", "mix").status == 0)
        #expect(try mpc("playlist").stdoutText == "album/a.mp3\nlong.mp3\nshort/1.mp3\n")
        #expect(try mpc("rm", "mix").status == 0)
        #expect(try mpc("lsplaylists").stdoutText.isEmpty)
        let gone = try mpc("load", "mix")
        #expect(gone.status != 0 && gone.stderr.contains("No such playlist"), "\(gone.stderr)")
        let bad = try d.ctl(["save", "../escape"])
        #expect(bad.status == 1 && bad.stderr.contains("a playlist name may not"), "\(bad.stderr)")
        d.expectCleanStop()
    }

    @Test("mpd-password on TCP: only ping and password before it; a wrong one costs a second; the right one (MPD_HOST=pw@host) opens every command",
          .enabled(if: Harness.has("mpc"), "needs mpc"))
    func password() throws {
        let port = Self.port(4)
        let d = try DaemonFixture.onSharedSink(config: DaemonFixture.foreground + "mpd-password = open-sesame\n")
        try d.start(["--mpd-listen", "127.0.0.1:\(port)"])
        let none = try Self.mpc("127.0.0.1", port: port, ["status"])
        #expect(none.status != 0 && none.stderr.contains("you don't have permission for \"status\""), "\(none.stderr)")
        let t0 = Date()
        let wrong = try Self.mpc("guess@127.0.0.1", port: port, ["status"])
        #expect(wrong.status != 0 && wrong.stderr.contains("incorrect password") && Date().timeIntervalSince(t0) >= 0.9, "\(wrong.stderr)")
        let right = try Self.mpc("open-sesame@127.0.0.1", port: port, ["status"])
        #expect(right.status == 0 && right.stdoutText.contains("volume:"), "\(right.stderr)")
        #expect(d.log().contains("wrong TCP token"), "guesses are logged")
        d.expectCleanStop()
    }

    @Test("bad input on the MPD socket: an unknown command, bad quoting, a command during idle, a 10 MB line, a float out of range, binary garbage, a line never finished, a list that never ends: an ACK or a closed connection, and everyone else is served")
    func badInput() throws {
        let (d, sock) = try Self.daemon(port: Self.port(3), config: DaemonFixture.foreground + "request-timeout = 1\n")
        func session(_ bytes: [UInt8], readFor seconds: Double = 1) throws -> String {
            let c = try ControlClient(socketPath: sock)
            try? c.sendRaw(bytes)  // (the daemon may close before it has read everything)
            var got = ""
            while let line = try? c.readRawLine(timeout: seconds) { got += line + "\n" }
            return got
        }
        #expect(try session(Array("ping\n".utf8)) == "OK MPD 0.23.5\nOK\n")
        #expect(try session(Array("foo\n".utf8)) == "OK MPD 0.23.5\nACK [5@0] {} unknown command \"foo\"\n")
        #expect(try session(Array("play \"1\n".utf8)).contains("ACK [2@0] {} Missing closing"))
        #expect(try session(Array("setvol \"abc\"\n".utf8)).contains("ACK [2@0] {setvol} Integer expected: abc"))
        #expect(try session(Array("command_list_begin\nping\nbogus\ncommand_list_end\n".utf8)).contains("ACK [5@1] {} unknown command \"bogus\""))
        // noidle answers an idle at once; outside idle it gets no reply (as mpd).
        #expect(try session(Array("idle\nnoidle\nnoidle\nping\n".utf8)) == "OK MPD 0.23.5\nOK\nOK\n")
        // A command during idle closes the connection, as mpd does.
        #expect(try session(Array("idle\nstatus\n".utf8)) == "OK MPD 0.23.5\n")
        // 10 MB without a newline: cut off with an ACK.
        let long = try session(Array(repeating: UInt8(ascii: "a"), count: 10 << 20))
        #expect(long.contains("ACK [2@0] {} line too long"), "\(long.prefix(200))")
        // Numbers past any queue: an ACK, never a trap.
        #expect(try session(Array("playlistinfo 9223372036854775807\n".utf8)).contains("ACK [2@0] {playlistinfo} Bad song index"))
        #expect(try session(Array("move 0 9223372036854775807\n".utf8)).contains("ACK [2@0] {move}"))
        #expect(try session(Array("addid \"album/a.mp3\" +9223372036854775807\n".utf8)).contains("ACK [2@0] {addid}"))
        // Ranges as mpd reads them: an open or over-long end is the queue's length; a block
        // moved down keeps its order.
        _ = try session(Array("command_list_begin\nadd album\nadd short\ncommand_list_end\n".utf8))
        let open3 = try session(Array("playlistinfo 3:\n".utf8))
        #expect(open3.components(separatedBy: "file: ").count - 1 == 3 && open3.contains("file: short/1.mp3"), "\(open3)")
        #expect(try session(Array("playlistinfo 4:99\n".utf8)).components(separatedBy: "file: ").count - 1 == 2)
        _ = try session(Array("move 0:2 3\n".utf8))
        let moved = try session(Array("playlistinfo\n".utf8)).split(separator: "\n").filter { $0.hasPrefix("file: ") }
        #expect(moved == ["file: album/c.mp3", "file: short/1.mp3", "file: short/2.mp3", "file: album/a.mp3", "file: album/b.mp3", "file: short/3.mp3"], "\(moved)")
        // A float a 32-bit float cannot hold: refused, not kept (mpd 0.23 keeps `-inf`).
        #expect(try session(Array("mixrampdb -1e308\n".utf8)).contains("ACK [2@0] {mixrampdb} Number too large: -1e308\n"))
        #expect(try session(Array("status\n".utf8)).contains("\nmixrampdb: 0\n"))
        // At a 32-bit float's largest magnitude, held; just past it, refused.
        #expect(try session(Array("mixrampdb -3.4028234e38\n".utf8)) == "OK MPD 0.23.5\nOK\n")
        #expect(try session(Array("mixrampdb -3.5e38\n".utf8)) == "OK MPD 0.23.5\nACK [2@0] {mixrampdb} Number too large: -3.5e38\n")
        #expect(try session(Array("mixrampdb 0\n".utf8)) == "OK MPD 0.23.5\nOK\n")
        // Binary garbage: answered or closed, never a crash.
        _ = try? session((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) } + [10])
        // A line begun and never finished: closed at the request deadline (1 s here) without a
        // word of JSON, as mpd closes a timed-out client.
        let dripper = try ControlClient(socketPath: sock)
        try dripper.sendRaw(Array("stat".utf8))
        #expect(try dripper.readRawLine(timeout: 2) == "OK MPD 0.23.5")
        #expect(throws: (any Error).self) { _ = try dripper.readRawLine(timeout: 3) }
        // A list that never ends holds only its own connection.
        let open = try ControlClient(socketPath: sock)
        try open.sendRaw(Array("command_list_begin\nstatus\n".utf8))
        #expect(try session(Array("status\n".utf8)).contains("playlistlength: 6"))
        let mpc = try Self.mpc(sock, ["status"])
        #expect(mpc.status == 0 || Harness.which("mpc") == nil)
        #expect(try d.request("ping").ok)
        d.expectCleanStop()
    }

    @Test("client-to-client: one python-mpd2 client in idle is woken with `message` by another's sendmessage and reads it; channels lists the subscriptions; a closed client's channel is gone; mpc shuffle reorders the queue and keeps the playing song first; seek while paused stays paused",
          .enabled(if: Harness.has("mpc") && pythonMPD2, "needs mpc and python-mpd2"))
    func clientsAndShuffle() throws {
        let (d, sock) = try Self.daemon(port: Self.port(9))
        let script = """
            import mpd, sys, threading, time
            a, b = mpd.MPDClient(), mpd.MPDClient()
            a.timeout = b.timeout = 20  # a reply that never comes fails with where
            a.connect(sys.argv[1]); b.connect(sys.argv[1])
            out = []
            a.subscribe("scrobble")
            out.append("channels %s" % b.channels())
            # (Each timer is joined before its client, `b`, is used again.)
            t = threading.Timer(0.3, lambda: b.sendmessage("scrobble", "now: Alpha"))
            t.start()
            out.append("idle %s" % a.idle("message"))
            t.join()
            out.append("read %s" % a.readmessages())
            out.append("again %s" % a.readmessages())
            try:
                b.sendmessage("nobody-here", "x")
            except mpd.CommandError as e:
                out.append("error %s" % e)
            t = threading.Timer(0.3, lambda: b.subscribe("other"))
            t.start()
            out.append("idle %s" % a.idle("subscription"))
            t.join()
            a.disconnect()
            time.sleep(0.3)
            out.append("channels %s" % b.channels())
            print("\\n".join(out))
            """
        let lines = try Self.python(d, "messages.py", script, [sock], timeout: 30)
        #expect(lines == [
            "channels ['scrobble']", "idle ['message']", "read [{'channel': 'scrobble', 'message': 'now: Alpha'}]", "again []",
            "error [50@0] {sendmessage} nobody is subscribed to this channel", "idle ['subscription']", "channels ['other']",
        ], "\(lines)")

        // mpc shuffle: 20 items in a new order (the chance of the same one is 1 in 20!), the
        // playing one first, still playing.
        func mpc(_ args: String...) throws -> String {
            let r = try Self.mpc(sock, args)
            #expect(r.status == 0, "mpc \(args.joined(separator: " ")): \(r.stderr)")
            return r.stdoutText
        }
        #expect(try d.request("add", [("paths", .array(Array(repeating: .string("short"), count: 7)))]).ok)
        let before = try mpc("playlist", "-f", "%position% %file%")
        #expect(before.split(separator: "\n").count == 21, "\(before)")
        _ = try mpc("play", "5")
        let playing = try #require(d.request("status")["current"]?["id"]?.int)
        _ = try mpc("shuffle")
        let after = try d.request("list")["items"]?.array ?? []
        #expect(after.count == 21)
        #expect(after.first?["id"]?.int == playing, "the playing item first: \(after.prefix(2))")
        #expect(after.compactMap { $0["id"]?.int } != (try d.request("list"))["items"]?.array?.compactMap { $0["id"]?.int }.sorted(),
                "a new order")
        #expect(try d.request("status")["state"] == "playing")

        // seek while paused stays paused (mpd; AVPlayer's seek never changes the rate).
        _ = try mpc("pause")
        _ = try mpc("seek", "1")
        let status = try d.request("status")
        #expect(status["state"] == "paused" && abs((status["elapsed"]?.number ?? 0) - 1) < 0.3, "\(status.text)")
        // …also to another song: it becomes the current one, paused at the time.
        let raw = try HardeningTests.raw(unix: sock, Array("seek 3 0.5\nstatus\n".utf8), seconds: 2)
        #expect(raw.text.contains("state: pause") && raw.text.contains("song: 3\n"), "\(raw.text)")
        d.expectCleanStop()
    }

    @Test("rangeid: the song plays only its range (status's duration and elapsed are the range's, it ends at the range's end and the next plays); the song playing now cannot be changed")
    func rangeID() throws {
        let (d, _) = try Self.daemon(port: Self.port(10))
        let client = try TCPLineClient.mpd(port: Self.port(10))
        #expect(try client.ask("add long.mp3\n") == "OK\n")
        #expect(try client.ask("addid short/1.mp3\n") == "Id: 2\nOK\n")
        #expect(try client.ask("rangeid 1 10:11.5\n") == "OK\n")
        let song = try client.ask("playlistid 1\n")
        #expect(song.contains("file: long.mp3\nRange: 10.000-11.500\n") && song.contains("duration: 1.500\n"), "\(song)")
        _ = try client.ask("play 0\n")
        #expect(try client.ask("rangeid 1 1:2\n") == "ACK [4@0] {rangeid} Cannot edit the current song\n")
        let status = try client.ask("status\n")
        let elapsed = status.split(separator: "\n").first { $0.hasPrefix("elapsed: ") }.flatMap { Double($0.dropFirst(9)) } ?? -1
        #expect(status.contains("duration: 1.500\n") && (0..<1.5).contains(elapsed), "\(status)")
        // The range's end: the next song plays (the 60 s file's remaining 48.5 s are not played).
        #expect(eventually(timeout: 6) { (try? client.ask("currentsong\n"))?.contains("file: short/1.mp3") == true })
        d.expectCleanStop()
    }
}

extension MPDTests {
    @Test("ReplayGain through every door: mpc replaygain track, python-mpd2's replay_gain_status, JSON replay-gain and status, ctl; saved across a restart; a bad mode is refused",
          .enabled(if: Harness.has("mpc"), "needs mpc"))
    func replayGain() throws {
        let port = Self.port(8)
        let (d, sock) = try Self.daemon(port: port)
        #expect(try d.request("status")["replayGain"]?["mode"] == "off")
        let set = try Self.mpc(sock, ["replaygain", "track"])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try Self.mpc(sock, ["replaygain"]).stdoutText == "replay_gain_mode: track\n")
        let lines = try Self.python(d, "rg.py", """
            import sys, mpd
            c = mpd.MPDClient(); c.connect(sys.argv[1])
            print(c.replay_gain_status())
            c.replay_gain_mode("album")
            print(c.replay_gain_status())
            try:
                c.replay_gain_mode("loud")
            except mpd.CommandError as e:
                print("refused:", e)
            """, [sock])
        #expect(lines == ["track", "album", "refused: [2@0] {replay_gain_mode} Unrecognized replay gain mode"], "\(lines)")
        let json = try d.request("replay-gain", [("mode", "auto"), ("preamp", 2.5)])
        #expect(json["replayGain"]?["mode"] == "auto" && json["replayGain"]?["preamp"] == 2.5, "\(json.text)")
        let ctl = try d.ctl(["replay-gain"])
        #expect(ctl.stdoutText == "replay gain: auto, preamp +2.5 dB, limited\n", "\(ctl.stdoutText) \(ctl.stderr)")
        d.expectCleanStop()
        try d.start(["--mpd-listen", sock])
        #expect(try d.request("status")["replayGain"]?["mode"] == "auto", "saved and restored")
        #expect(try Self.mpc(sock, ["replaygain"]).stdoutText == "replay_gain_mode: auto\n")
    }

    @Test("crossfade through every door: mpc crossfade 3 then status's xfade, python-mpd2, JSON and ctl; saved across a restart; off takes xfade out of status; a bad value is refused",
          .enabled(if: Harness.has("mpc"), "needs mpc"))
    func crossfade() throws {
        let port = Self.port(11)
        let (d, sock) = try Self.daemon(port: port)
        #expect(try d.request("status")["crossfade"] == 0)
        let set = try Self.mpc(sock, ["crossfade", "3"])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try Self.mpc(sock, ["crossfade"]).stdoutText == "crossfade: 3\n")
        let lines = try Self.python(d, "xfade.py", """
            import sys, mpd
            c = mpd.MPDClient(); c.connect(sys.argv[1])
            print(c.status().get("xfade"))
            c.crossfade(5)
            print(c.status().get("xfade"))
            try:
                c.crossfade(-1)
            except mpd.CommandError as e:
                print("refused:", e)
            """, [sock])
        #expect(lines == ["3", "5", "refused: [2@0] {crossfade} Number too large: -1"], "\(lines)")
        #expect(try d.request("status")["crossfade"] == 5)
        let json = try d.request("crossfade", [("seconds", 2.5)])
        #expect(json["crossfade"] == 2.5, "\(json.text)")
        #expect(try d.ctl(["crossfade"]).stdoutText == "crossfade: 2.5 s\n")
        let bad = try d.ctl(["crossfade", "soon"])
        #expect(bad.status != 0 && bad.stderr.contains("expected seconds"), "\(bad.stderr)")
        d.expectCleanStop()
        try d.start(["--mpd-listen", sock])
        #expect(try d.request("status")["crossfade"] == 2.5, "saved and restored")
        #expect(try d.ctl(["crossfade", "off"]).stdoutText == "crossfade: off\n")
        let status = try Self.mpc(sock, ["status"])
        #expect(!status.stdoutText.contains("xfade"), "\(status.stdoutText)")
        #expect(try Self.python(d, "xfade0.py", "import sys, mpd\nc = mpd.MPDClient(); c.connect(sys.argv[1])\nprint('xfade' in c.status())\n", [sock]) == ["False"])
    }
}
