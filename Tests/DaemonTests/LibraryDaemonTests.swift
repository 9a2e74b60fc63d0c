import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import MediaCore
import Testing

/// The library in a real daemon: `ctl` (update with its events, search piped into add,
/// findadd, list with groups, count, ls, stats), the JSON protocol's `update` events, inotify
/// picking changes up while the daemon runs, a kill -9 in the middle of a scan, a newer
/// database refused at start, and no library at all (`library = off`: `browse` still works).
@Suite("The library in the daemon: ctl, events, inotify, kill -9, refusals", Harness.audioTools)
struct LibraryDaemonTests {
    @Test("ctl: update --wait says what changed; search piped into add - queues what it found; findadd; list --group; count; ls; stats; update events over JSON")
    func ctl() throws {
        let tree = try MusicTree.fresh(songs: 120)
        let (d, _) = try LibraryMPDTests.daemon(tree)
        defer { d.expectCleanStop() }
        func ctl(_ args: String...) throws -> String {
            let r = try d.ctl(args)
            #expect(r.status == 0, "ctl \(args.joined(separator: " ")): \(r.stderr)")
            return r.stdoutText
        }
        // Events of a scan, as a JSON client sees them: its start, its end with the counts.
        let w = try d.client()
        #expect(try w.request("subscribe", [("events", ["update"])]).ok)
        try FileManager.default.copyItem(at: tree.appendingPathComponent("Sigur Rós"), to: tree.appendingPathComponent("Copied"))
        let waited = try ctl("update", "--wait")
        #expect(waited.hasPrefix("update ") && waited.contains("done: 130 files; 10 added"), "\(waited)")
        var events: [JSON] = []
        while let e = try w.nextEvent(timeout: 2) {
            events.append(e)
            if e["done"] == true { break }
        }
        #expect(events.first?["done"] == false && events.first?["scanned"]?.int == 0, "\(events.map(\.text))")
        let end = try #require(events.last)
        #expect(end["done"] == true && end["added"]?.int == 10 && end["scanned"]?.int == 130 && end["removed"]?.int == 0, "\(end.text)")

        // search, one path a line when piped, into `add -`.
        let found = try ctl("search", "title", "LOVE").split(separator: "\n").map(String.init)
        let paths = try d.request("search", [("terms", ["title", "love"])])["songs"]?.array?.compactMap { $0["path"]?.string } ?? []
        #expect(paths.count > 3 && found == paths)
        let piped = try runProcess("/bin/sh", ["-c", "\"$0\" ctl --socket \"$1\" search title love | \"$0\" ctl --socket \"$1\" add -",
                                                backline, d.socket], environment: d.environment)
        #expect(piped.status == 0 && piped.stdoutText.contains("added \(paths.count) items"), "\(piped.stdoutText) \(piped.stderr)")
        let queued = try d.request("list")["items"]?.array?.compactMap { $0["path"]?.string } ?? []
        #expect(queued == paths.map { tree.path + "/" + $0 })

        // findadd at a position; list with a group; count; ls; stats.
        let albumSongs = try d.request("find", [("terms", ["artist", "Motörhead"])])["songs"]?.array ?? []
        let album = try #require(albumSongs.first?["album"]?.string)
        let added = try ctl("findadd", "album", album, "--at", "1")
        #expect(added.hasPrefix("added \(albumSongs.count) items"), "\(added)")
        #expect(try d.request("list")["items"]?.array?.first?["album"]?.string == album)
        let grouped = try ctl("list", "album", "--group", "albumartist")
        #expect(grouped.contains("Motörhead\n  \(album)\n"), "\(grouped)")
        #expect(try ctl("count", "artist", "Motörhead").hasPrefix("\(albumSongs.count) songs, "))
        let listed = try ctl("ls", "Motörhead")
        #expect(listed == "Motörhead/\(album)/\n", "\(listed)")
        let stats = try ctl("stats")
        #expect(stats.hasPrefix("130 songs, "), "\(stats)")
        // Errors: a bad filter is the daemon's message and exit 1.
        let bad = try d.ctl(["find", "(Artist == x)"])
        #expect(bad.status == 1 && bad.stderr.contains("Quoted string expected"), "\(bad.stderr)")
    }

    @Test("inotify: a file copied in, a directory made with songs in it, a file moved, a file deleted: found while the daemon runs, each after the changes go quiet")
    func inotify() throws {
        let tree = try MusicTree.fresh(songs: 40)
        let (d, port) = try LibraryMPDTests.daemon(tree, config: DaemonFixture.foreground + "auto-update-delay = 0.2\n")
        defer { d.expectCleanStop() }
        let fm = FileManager.default
        let first = try #require(try d.request("find", [("terms", ["track", "1"])])["songs"]?.array?.first)
        let src = tree.appendingPathComponent(try #require(first["path"]?.string))
        func has(_ path: String) -> Bool { (try? LibraryMPDTests.count(port, "find file \"\(path)\"")) == 1 }

        try fm.copyItem(at: src, to: tree.appendingPathComponent("Singles copy.\(src.pathExtension)"))
        #expect(eventually(timeout: 20) { has("Singles copy.\(src.pathExtension)") }, "a copied file: \(d.log().suffix(800))")

        let dir = tree.appendingPathComponent("New Album")
        try fm.createDirectory(at: dir, withIntermediateDirectories: false)
        for n in 1...3 { try fm.copyItem(at: src, to: dir.appendingPathComponent("0\(n) song.\(src.pathExtension)")) }
        #expect(eventually(timeout: 20) { (1...3).allSatisfy { has("New Album/0\($0) song.\(src.pathExtension)") } }, "a new directory")
        // The new directory is watched too: a file added to it later is found.
        try fm.copyItem(at: src, to: dir.appendingPathComponent("04 song.\(src.pathExtension)"))
        #expect(eventually(timeout: 20) { has("New Album/04 song.\(src.pathExtension)") }, "a file in the new directory")

        let newFile = "New Album/01 song.\(src.pathExtension)", movedFile = "moved.\(src.pathExtension)"
        let id = try #require(try d.request("find", [("terms", .array([.string("file"), .string(newFile)]))])["songs"]?.array?.first?["songId"]?.int)
        try fm.moveItem(at: dir.appendingPathComponent("01 song.\(src.pathExtension)"), to: tree.appendingPathComponent("moved.\(src.pathExtension)"))
        #expect(eventually(timeout: 20) { has("moved.\(src.pathExtension)") && !has("New Album/01 song.\(src.pathExtension)") }, "a move")
        #expect(try d.request("find", [("terms", .array([.string("file"), .string(movedFile)]))])["songs"]?.array?.first?["songId"]?.int == id,
                "a moved song keeps its id")
        try fm.removeItem(at: src)
        let firstPath = try #require(first["path"]?.string)
        #expect(eventually(timeout: 20) { !has(firstPath) }, "a deletion")
    }

    @Test("kill -9 in the middle of the first scan: the database opens again (not damaged), what was committed is there, and the restarted daemon resumes the scan by itself until it completes")
    func killMidScan() throws {
        let tree = try MusicTree.shared(songs: 2000)
        let d = try DaemonFixture(device: "null", config: DaemonFixture.foreground, musicDirectory: tree.path)
        let port = HardeningTests.port()
        try d.start(["--mpd-listen", "127.0.0.1:\(port)"])
        let c = try TCPLineClient.mpd(port: port)
        // Killed once the scan has committed something and is still going (status answers at once meanwhile).
        var sawBoth = false
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let status = try c.ask("status"), stats = try c.ask("stats")
            let songs = stats.split(separator: "\n").first { $0.hasPrefix("songs: ") }.flatMap { Int($0.dropFirst(7)) } ?? 0
            if status.contains("updating_db: "), songs > 0 { sawBoth = true; break }
            if !status.contains("updating_db: "), songs > 0 { break }
            usleep(2000)
        }
        c.close()
        #expect(sawBoth, "the scan was seen running with songs committed")
        try d.kill9()
        try d.start(["--mpd-listen", "127.0.0.1:\(port)"])
        defer { d.expectCleanStop() }
        #expect(!d.log().contains("damaged"), "\(d.log())")
        let after = try d.request("stats")
        #expect(after.ok && (after["songs"]?.int ?? 0) > 0, "\(after.text)")
        // No `update`: the scan that did not complete runs again at start, and records its end.
        #expect(eventually(timeout: 120) {
            guard let s = try? d.request("stats") else { return false }
            return s["songs"]?.int == 2001 && s["updating"] == .null && s["updated"] != .null
        }, "\((try? d.request("stats"))?.text ?? "")")
        #expect(d.log().contains("resuming library scans that did not complete"), "\(d.log())")
        // Completed: the next start does not scan again.
        #expect(try d.stop() == 0)
        try d.start(["--mpd-listen", "127.0.0.1:\(port)"])
        #expect(try d.request("stats")["songs"]?.int == 2001)
        #expect(!d.log().contains("resuming library scans"), "\(d.log())")
    }

    @Test("a library whose songs table was dropped: the daemon moves it aside, says why, and rebuilds it by a scan of its own; updates work again")
    func droppedTable() throws {
        let tree = try MusicTree.fresh(songs: 12)
        let d = try DaemonFixture(device: "null", config: DaemonFixture.foreground, musicDirectory: tree.path)
        try d.start()
        #expect(eventually(timeout: 120) { (try? d.request("stats"))?["songs"]?.int == 12 && (try? d.request("stats"))?["updating"] == .null })
        #expect(try d.stop() == 0)
        let path = (d.stateFile as NSString).deletingLastPathComponent + "/library.sqlite"
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(try runProcess("/usr/bin/python3", ["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('DROP TABLE songs'); c.commit()", path]).status == 0)
        try d.start()
        defer { d.expectCleanStop() }
        #expect(d.log().contains("the library database was damaged: moved aside and rebuilt") && d.log().contains("table songs ON songs"), "\(d.log())")
        #expect(FileManager.default.fileExists(atPath: path + ".corrupt-1"))
        #expect(eventually(timeout: 120) { (try? d.request("stats"))?["songs"]?.int == 12 && (try? d.request("stats"))?["updating"] == .null })
        #expect(try d.request("update").ok)
        #expect(eventually(timeout: 60) { (try? d.request("stats"))?["updating"] == .null })
        #expect(!d.log().contains("library update failed"), "\(d.log())")
    }

    @Test("a library from a newer Backline: the daemon refuses to start, says why, and leaves the file alone; library = off: no database, browse still lists")
    func refusalsAndOff() throws {
        let tree = try MusicTree.fresh(songs: 10)
        let d = try DaemonFixture(device: "null", config: DaemonFixture.foreground, musicDirectory: tree.path)
        let db = d.dir.path + "/newer.sqlite"
        #expect(try runProcess("/usr/bin/python3", ["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version = 7'); c.commit()", db]).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: db))
        let r = try runProcess(backline, ["daemon", "--music-dir", tree.path, "--device", "null", "--config", d.configFile, "--library", db],
                               environment: d.environment, timeout: 30)
        #expect(r.status == 1 && r.stderr.contains("newer Backline (schema 7"), "\(r.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == before)

        let port = HardeningTests.port()
        try d.start(["--library", "off", "--mpd-listen", "127.0.0.1:\(port)"])
        defer { d.expectCleanStop() }
        #expect(try d.request("stats")["error"]?["code"]?.string == "unsupported")
        #expect(try d.request("browse")["entries"]?.array?.isEmpty == false)
        let c = try TCPLineClient.mpd(port: port)
        defer { c.close() }
        #expect(try c.ask("find artist x") == "ACK [50@0] {find} No database\n")
        #expect(try c.ask("lsinfo").contains("directory: "))
        #expect(!(try c.ask("commands")).contains("command: find\n"))
        #expect(!FileManager.default.fileExists(atPath: d.dir.path + "/state/backline/library.sqlite"))
    }
}
