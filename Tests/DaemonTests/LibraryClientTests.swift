import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import Testing

/// Debian's own MPD clients on the library: ncmpcpp's media library and search screens in
/// tmux, stock mpc, python-mpd2 (filters, window, sort, count group, findadd).
@Suite("The library from real MPD clients: ncmpcpp, mpc, python-mpd2", Harness.audioTools)
struct LibraryClientTests {
    static var clients: Bool { Harness.has("ncmpcpp", "tmux", "mpc") }

    @Test("ncmpcpp: the media library screen lists artists, then an artist's albums and songs, and Enter plays one; the search screen finds songs by part of a title",
          .enabled(if: clients, "needs ncmpcpp, tmux and mpc"))
    func ncmpcpp() throws {
        let tree = try MusicTree.shared(songs: 2000)
        let (d, port) = try LibraryMPDTests.daemon(tree, realTime: true)
        defer { d.expectCleanStop() }
        let home = d.dir.appendingPathComponent("ncmpcpp")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let config = home.appendingPathComponent("config")
        try "mpd_host = 127.0.0.1\nmpd_port = \(port)\nstartup_screen = playlist\nuser_interface = classic\n"
            .write(to: config, atomically: true, encoding: .utf8)
        let term = TmuxTerminal(socket: d.dir.path + "/tmux-lib.sock", session: "lib")
        try term.start(["/usr/bin/env", "HOME=\(home.path)", "XDG_CONFIG_HOME=\(home.path)/.config", "LANG=C.UTF-8",
                        "/usr/bin/ncmpcpp", "-c", config.path])
        defer { term.kill() }
        var (ok, screen) = term.waitForScreen { $0.contains("Playlist") }
        #expect(ok, "connected:\n\(screen)")

        // 4: the media library: every artist (mpd's `list Artist`), an artist's albums, its songs.
        try term.keys("4")
        (ok, screen) = term.waitForScreen { s in ["Artists", "Albums", "Songs", "Air", "Björk", "Miles Davis"].allSatisfy(s.contains) }
        #expect(ok, "artists listed:\n\(screen)")
        // Björk is the seventh row (after <empty>, Air, Antonín Dvořák, Aphex Twin, Astor Piazzolla, Beyoncé).
        try term.keys("Down", "Down", "Down", "Down", "Down", "Down")
        (ok, screen) = term.waitForScreen { s in ["Café Blue 100", "Été Kind 50", "Light Song 150"].allSatisfy(s.contains) }
        #expect(ok, "Björk's albums:\n\(screen)")
        // Its albums by date: (1983) Naïve Love 143, (1990) Light Song 150, (1999) Fire Dream 99, (2000) Café Blue 100…
        try term.keys("Right")
        (ok, screen) = term.waitForScreen { $0.contains("(2000) Café Blue 100") }
        try term.keys("Down", "Down", "Down")
        try term.keys("Right")
        (ok, screen) = term.waitForScreen { $0.contains("01 - Blue été 1130") && $0.contains("02 - Night love 1131") }
        #expect(ok, "the album's songs:\n\(screen)")
        try term.keys("Enter")
        #expect(eventually(timeout: 10) {
            guard let s = try? d.request("status") else { return false }
            // (ncmpcpp queues the album and plays from the song: 0.2–0.5 s each.)
            return s["state"]?.string == "playing" && s["current"]?["path"]?.string?.contains("Björk/Café Blue 100/") == true
        }, "Enter plays the song: \((try? d.request("status"))?.text ?? "")")
        let queue = try d.request("list")["items"]?.array?.compactMap { $0["path"]?.string } ?? []
        #expect(queue.first?.hasSuffix("Björk/Café Blue 100/01 - Blue été 1130.flac") == true, "\(queue)")

        // 3: the search engine: Title contains "glove 1" (the form's fourth row), then Search.
        try term.keys("3")
        (ok, screen) = term.waitForScreen { $0.contains("Search engine") && $0.contains("Title        :") }
        #expect(ok, "the search screen:\n\(screen)")
        try term.keys("Home")
        try term.keys("Down", "Down", "Down")
        try term.keys("Enter")
        (ok, screen) = term.waitForScreen { $0.contains("Title:") }
        #expect(ok, "the title prompt:\n\(screen)")
        try term.line("glove 1")
        (ok, screen) = term.waitForScreen { $0.contains("Title        : glove 1") }
        #expect(ok, "the title field:\n\(screen)")
        try term.keys("End")
        try term.keys("Up")
        try term.keys("Enter")
        let expected = try LibraryMPDTests.count(port, "search title \"glove 1\"")
        #expect(expected > 10)
        (ok, screen) = term.waitForScreen { $0.contains("Found \(expected) songs") && $0.contains("Love glove 1138") }
        #expect(ok, "the results (\(expected)):\n\(screen)")
    }

    @Test("stock mpc: search, list album artist X, findadd, update --wait, stats",
          .enabled(if: clients, "needs ncmpcpp, tmux and mpc"))
    func mpc() throws {
        let tree = try MusicTree.fresh(songs: 200)
        let (d, port) = try LibraryMPDTests.daemon(tree)
        defer { d.expectCleanStop() }
        func mpc(_ args: String...) throws -> String {
            let r = try MPDTests.mpc("127.0.0.1", port: port, args)
            #expect(r.status == 0, "mpc \(args.joined(separator: " ")): \(r.stderr)")
            return r.stdoutText
        }
        let found = try mpc("search", "title", "love").split(separator: "\n")
        #expect(found.count == (try LibraryMPDTests.count(port, "search title love")) && found.count > 5)
        #expect(found.allSatisfy { $0.contains("/") })
        let albums = try mpc("list", "album", "artist", "Motörhead").split(separator: "\n").map(String.init)
        #expect(albums == (try LibraryMPDTests.values(port, "list album \"(Artist == \\\"Motörhead\\\")\"", "Album")))
        let album = try #require(albums.first)
        _ = try mpc("findadd", "album", album)
        let queued = try mpc("playlist").split(separator: "\n")
        #expect(queued.count == (try LibraryMPDTests.count(port, "find album \"\(album)\"")) && queued.count > 0)

        // update --wait returns once the new file is in the library.
        let src = tree.appendingPathComponent(found[0].split(separator: "/").joined(separator: "/"))
        let copy = tree.appendingPathComponent("Singles/copy of a song.\(src.pathExtension)")
        try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: src, to: copy)
        _ = try mpc("update", "--wait", "Singles")
        #expect(try mpc("listall", "Singles").contains("Singles/copy of a song."))
        let stats = try mpc("stats")
        #expect(stats.split(separator: "\n").contains { $0.hasPrefix("Songs:") && $0.hasSuffix(" 201") }, "\(stats)")
    }

    @Test("python-mpd2: filter expressions, sort and window, count with group, findadd at a position, searchaddpl, idle database/update",
          .enabled(if: clients, "needs ncmpcpp, tmux and mpc"))
    func pythonMPD() throws {
        let tree = try MusicTree.fresh(songs: 300)
        let (d, port) = try LibraryMPDTests.daemon(tree)
        defer { d.expectCleanStop() }
        let out = try MPDTests.python(d, "library.py", """
            import sys, mpd
            c = mpd.MPDClient(); c.timeout = 20; c.connect("127.0.0.1", int(sys.argv[1]))
            jazz = c.find("(Genre == 'Jazz')")
            print("jazz", len(jazz))
            sorted_titles = [s["title"] for s in c.find("(Genre == 'Jazz')", "sort", "Title")]
            print("sorted", sorted_titles == sorted(sorted_titles, key=lambda t: t.encode()))
            page = c.find("(Genre == 'Jazz')", "sort", "Title", "window", "2:5")
            print("window", [s["title"] for s in page] == sorted_titles[2:5])
            desc = [s["title"] for s in c.find("(Genre == 'Jazz')", "sort", "-Title")]
            print("descending", desc == sorted_titles[::-1])
            g = c.count("group", "genre")  # (python-mpd2 folds the groups into one object of lists)
            groups = dict(zip(g["genre"], (int(n) for n in g["songs"])))
            print("groups", sum(groups.values()) == sum(1 for x in c.listall() if "file" in x))
            print("group-jazz", groups.get("Jazz") == len(jazz))
            both = c.find("((Genre == 'Jazz') AND (!(Track == '1')))")
            print("and-not", len(both) == len(jazz) - sum(1 for s in jazz if s.get("track") == "1"))
            c.add(jazz[0]["file"]); c.add(jazz[1]["file"])
            c.findadd("(Title == '%s')" % jazz[2]["title"], "position", "1")
            print("position", [s["file"] for s in c.playlistinfo()] == [jazz[0]["file"], jazz[2]["file"], jazz[1]["file"]])
            c.searchaddpl("fromsearch", "(Title contains 'LOVE')")
            print("searchaddpl", len(c.listplaylist("fromsearch")) == len(c.search("title", "love")))
            import threading
            c2 = mpd.MPDClient(); c2.connect("127.0.0.1", int(sys.argv[1]))
            threading.Timer(0.5, c2.update).start()  # (once this client waits in idle)
            print("idle", c.idle("database", "update"))
            try:
                c.find("(Genre == Jazz)")
            except mpd.CommandError as e:
                print("error", e)
            """, [String(port)])
        #expect(out.contains { $0.hasPrefix("jazz ") && Int($0.dropFirst(5))! > 10 }, "\(out)")
        for key in ["sorted", "window", "descending", "groups", "group-jazz", "and-not", "position", "searchaddpl"] {
            #expect(out.contains("\(key) True"), "\(key): \(out)")
        }
        // A scan that changes nothing is `update` only (at its start); one that changes the library is `database` too.
        #expect(out.contains("idle ['update']"), "\(out)")
        #expect(out.contains("error [2@0] {find} Quoted string expected"), "\(out)")
    }
}

extension LibraryMPDTests {
    /// How many songs an MPD `command` answers with.
    static func count(_ port: Int, _ command: String) throws -> Int {
        let c = try TCPLineClient.mpd(port: port)
        defer { c.close() }
        return try c.ask(command).components(separatedBy: "\nfile: ").count - 1 + (try c.ask(command).hasPrefix("file: ") ? 1 : 0)
    }

    /// The values of `key` lines an MPD `command` answers with.
    static func values(_ port: Int, _ command: String, _ key: String) throws -> [String] {
        let c = try TCPLineClient.mpd(port: port)
        defer { c.close() }
        return try c.ask(command).split(separator: "\n").filter { $0.hasPrefix(key + ": ") }.map { String($0.dropFirst(key.count + 2)) }
    }
}

extension LibraryClientTests {
    @Test("Cantata (Debian's Qt client) under Xvfb: connects, lists the whole library, plays a song from its Library page; its screenshot is kept (.build/test-artifacts/cantata-library.png)",
          .enabled(if: Harness.has("cantata", "Xvfb", "xdotool", "sqlite3", "pnmtopng"), "needs cantata, Xvfb, xdotool, sqlite3 and pnmtopng"))
    func cantata() throws {
        let tree = try MusicTree.shared(songs: 2000)
        let (d, port) = try LibraryMPDTests.daemon(tree, realTime: true)
        defer { d.expectCleanStop() }
        let artifacts = Harness.packageRoot.appendingPathComponent(".build/test-artifacts")
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        let shot = artifacts.appendingPathComponent("cantata-library.png")
        try? FileManager.default.removeItem(at: shot)
        // A display of this process's own (the pid keeps parallel runs apart).
        let display = 100 + Int(getpid() % 400)
        let r = try runProcess("/bin/bash", [Harness.packageRoot.appendingPathComponent("scripts/lib/cantata.sh").path, String(port), tree.path,
                                             d.dir.appendingPathComponent("cantata").path, String(display), shot.path], timeout: 240)
        #expect(r.status == 0, "\(r.stdoutText)\n\(r.stderr)")
        #expect(r.stdoutText.contains("library: 2001 songs"), "\(r.stdoutText)")
        #expect(r.stdoutText.contains("playing: "), "\(r.stdoutText)")
        let size = (try? FileManager.default.attributesOfItem(atPath: shot.path)[.size] as? Int) ?? 0
        #expect(size > 30_000, "the screenshot (\(shot.path)): \(size) bytes")
        print("Cantata's library view: \(shot.path)")
    }
}
