import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import Testing

/// Debian's stock ncmpcpp (a curses MPD client) against a real daemon's MPD socket: run in a
/// detached tmux of its own (fixed 120×40 pane), driven with keys (`send-keys`) and read off the
/// screen (`capture-pane`); what the keys did is checked on the daemon's JSON status as well.
/// The daemon plays through the shared PulseAudio null sink (real-time pacing).
@Suite("backline daemon speaks MPD: stock ncmpcpp in tmux", Harness.audioTools)
struct NcmpcppTests {
    /// The elapsed time ncmpcpp's footer shows for the 1-minute item, `[M:SS/1:00]`, in seconds.
    static func shownElapsed(_ screen: String) -> Int? {
        guard let end = screen.range(of: "/1:00]", options: .backwards),
              let open = screen[..<end.lowerBound].range(of: "[", options: .backwards)
        else { return nil }
        let parts = screen[open.upperBound..<end.lowerBound].split(separator: ":")
        guard parts.count == 2, let m = Int(parts[0]), let s = Int(parts[1]) else { return nil }
        return m * 60 + s
    }

    /// Whether a row of `screen` begins with each of `starts` (a list entry, not the footer's
    /// `Playing: …`).
    static func rows(_ screen: String, startWith starts: [String]) -> Bool {
        let rows = screen.split(separator: "\n")
        return starts.allSatisfy { start in rows.contains { $0.hasPrefix(start) } }
    }

    /// ncmpcpp in tmux with a config of its own (the playlist screen, the classic interface, and
    /// `config`) and a private home: the user's files are never read.
    static func start(_ d: DaemonFixture, _ sock: String, session: String, config: String) throws -> TmuxTerminal {
        let home = d.dir.appendingPathComponent("ncmpcpp-\(session)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let file = home.appendingPathComponent("config")
        try ("mpd_host = \(sock)\nstartup_screen = playlist\nuser_interface = classic\n" + config)
            .write(to: file, atomically: true, encoding: .utf8)
        let term = TmuxTerminal(socket: d.dir.path + "/tmux-\(session).sock", session: session)
        try term.start(["/usr/bin/env", "HOME=\(home.path)", "XDG_CONFIG_HOME=\(home.path)/.config", "LANG=C.UTF-8",
                        "/usr/bin/ncmpcpp", "-c", file.path])
        return term
    }

    @Test("ncmpcpp connects and shows the queue; Enter plays the selected item, f seeks it forward, p pauses and resumes; 2 browses the music directory and Enter opens a folder; q quits and the daemon plays on",
          .enabled(if: Harness.has("ncmpcpp", "tmux"), "needs ncmpcpp and tmux"))
    func ncmpcpp() throws {
        let d = try DaemonFixture.onSharedSink(config: DaemonFixture.foreground)
        let sock = d.dir.path + "/mpd.sock"
        try d.start(["--mpd-listen", sock])
        let queued = try d.request("add", [("paths", ["long.mp3", "album/a.mp3", "album/b.mp3"])])
        #expect(queued.ok, "\(queued.text)")

        let term = try Self.start(d, sock, session: "ncm", config: "seek_time = 10\nmessage_delay_time = 1\n")
        defer { term.kill() }

        // Connected: the queue's three items, by title (the file name: the fixtures carry no tags).
        var (ok, screen) = term.waitForScreen {
            $0.contains("Playlist (3 items") && ["long.mp3", "a.mp3", "b.mp3"].allSatisfy($0.contains)
        }
        #expect(ok, "the queue on screen:\n\(screen)")
        #expect(try d.request("status")["state"] == "stopped")

        // Enter on the first row plays it.
        try term.keys("Enter")
        let playing = eventually {
            let s = try? d.request("status")
            return s?["state"] == "playing" && s?["current"]?["path"]?.string?.hasSuffix("/long.mp3") == true
        }
        #expect(playing, "playing long.mp3: \((try? d.request("status"))?.text ?? "")")
        (ok, screen) = term.waitForScreen { $0.contains("Playing: long.mp3") }
        #expect(ok, "the footer says playing:\n\(screen)")

        // f three times: one seek, 3 × seek_time (10 s) ahead of where ncmpcpp last saw it.
        let before = try #require(d.request("status")["elapsed"]?.number)
        #expect(before < 10, "\(before)")
        try term.keys("f", "f", "f")
        var after = before
        let sought = eventually {
            after = (try? d.request("status"))?["elapsed"]?.number ?? after
            return after >= before + 20
        }
        #expect(sought, "elapsed \(before) → \(after) after f f f")
        #expect(after < 60, "still in long.mp3: \(after)")
        #expect(try d.request("status")["current"]?["path"]?.string?.hasSuffix("/long.mp3") == true)
        (ok, screen) = term.waitForScreen { (Self.shownElapsed($0) ?? 0) >= Int(before) + 20 }
        #expect(ok, "the footer shows the new position:\n\(screen)")

        // p pauses, p again resumes (MPD's toggling `pause`).
        try term.keys("p")
        #expect(eventually { (try? d.request("status"))?["state"] == "paused" }, "paused")
        (ok, screen) = term.waitForScreen { $0.contains("Paused: long.mp3") }
        #expect(ok, "the footer says paused:\n\(screen)")
        try term.keys("p")
        #expect(eventually { (try? d.request("status"))?["state"] == "playing" }, "playing again")

        // 2: the browser at the music directory's top: its folders (ncmpcpp lists them first,
        // in brackets) and its file.
        try term.keys("2")
        (ok, screen) = term.waitForScreen {
            $0.hasPrefix("Browse: /") && Self.rows($0, startWith: ["[album]", "[broken]", "[short]", "long.mp3"])
        }
        #expect(ok, "the browser at the top:\n\(screen)")
        // Home, Enter: into the first folder (album), whose three files are listed.
        try term.keys("Home", "Enter")
        (ok, screen) = term.waitForScreen {
            $0.hasPrefix("Browse: album") && Self.rows($0, startWith: ["[..]", "a.mp3", "b.mp3", "c.mp3"])
        }
        #expect(ok, "the album folder:\n\(screen)")
        #expect(!Self.rows(screen, startWith: ["[short]"]) && !Self.rows(screen, startWith: ["long.mp3"]),
                "only the folder's files:\n\(screen)")

        // q: ncmpcpp exits (its session closes); the daemon answers and plays on.
        try term.keys("q")
        #expect(eventually { !term.isRunning }, "ncmpcpp quit:\n\(term.screen())")
        #expect(try d.request("ping").ok)
        #expect(try d.request("status")["state"] == "playing")
        d.expectCleanStop()
    }

    @Test("ncmpcpp's playlist columns show each song's Date and Genre (and artist, title) from its tags",
          .enabled(if: Harness.has("ncmpcpp", "tmux"), "needs ncmpcpp and tmux"))
    func columns() throws {
        let d = try DaemonFixture.onSharedSink(config: DaemonFixture.foreground)
        try MPDDifferentialTests.makeTree(d.music)
        let sock = d.dir.path + "/mpd.sock"
        try d.start(["--mpd-listen", sock])
        #expect(try d.request("add", [("paths", ["Alpha", "Beta"])]).ok)
        let term = try Self.start(d, sock, session: "ncm-columns", config: """
            playlist_display_mode = columns
            song_columns_list_format = "(14)[]{a} (7)[]{y} (8)[]{g} (12)[]{t}"

            """)
        defer { term.kill() }
        // One row per song: artist, date, genre, title, in the columns asked for.
        func row(_ s: String, _ cells: [String]) -> Bool {
            s.split(separator: "\n").contains { line in
                var rest = Substring(line)
                for c in cells {
                    guard let r = rest.range(of: c) else { return false }
                    rest = rest[r.upperBound...]
                }
                return true
            }
        }
        let (ok, screen) = term.waitForScreen {
            row($0, ["Ann Artist", "2001", "Rock", "First"]) && row($0, ["Ann Artist", "2001", "Jazz", "Second"])
                && row($0, ["Bo Band", "1999", "Pop", "Only"])
        }
        #expect(ok, "Date and Genre columns:\n\(screen)")
        try term.keys("q")
        d.expectCleanStop()
    }
}
