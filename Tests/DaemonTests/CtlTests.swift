import BacklineTestSupport
import BacklineWire
import Control
import Daemon
import Foundation
import PlayQueue
import Testing

/// `backline ctl`: every command from the shell, human output, exit codes.
@Suite("backline ctl", Harness.audioTools)
struct CtlTests {
    @Test("every command through ctl: human output by default, --json on request, exit 1 with the daemon's message, 3 without a daemon")
    func everyCommand() throws {
        let d = try DaemonFixture.onSharedSink(config: DaemonFixture.foreground)
        let none = try d.ctl(["status"])
        #expect(none.status == 3 && none.stderr.contains("no daemon is running on \(d.socket)"), "\(none.stderr)")
        try d.start()
        func ctl(_ args: String..., status: Int32 = 0, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
            let r = try d.ctl(args)
            #expect(r.status == status, "ctl \(args.joined(separator: " ")): \(r.status) \(r.stdoutText) \(r.stderr)", sourceLocation: sourceLocation)
            return status == 0 ? r.stdoutText : r.stderr
        }
        #expect(try ctl("mute", "on") == "volume: 100% (muted)\n")
        // Positions count from 1 (`--at`, `insert`, `list`, `move`'s target); ids name items.
        #expect(try ctl("add", "album", "long.mp3") == "added 4 items (ids 1–4)\n")
        #expect(try ctl("add", "--at", "1", "album/c.mp3") == "added 1 item (id 5)\n")
        #expect(try ctl("insert", "2", "album/a.mp3") == "added 1 item (id 6)\n")
        #expect(try ctl("list") == """
             1. [id 5] c.mp3 (0:05.000)
             2. [id 6] a.mp3 (0:03.000)
             3. [id 1] a.mp3 (0:03.000)
             4. [id 2] b.mp3 (0:04.000)
             5. [id 3] c.mp3 (0:05.000)
             6. [id 4] long.mp3 (1:00.000)

            """)
        #expect(try ctl("remove", "5", "6") == "removed 2, 4 left\n")
        #expect(try ctl("move", "4", "1") == "moved id 4 to position 1\n")
        #expect(try ctl("play", "2") == "state: playing\n")
        #expect(eventually { ((try? d.request("status"))?["elapsed"]?.number ?? 0) > 0.2 })
        let status = try ctl("status")
        #expect(status.hasPrefix("▶ playing  b.mp3 (0:04.000)  [3/4, id 2]\n  ["), "\(status)")
        #expect(status.contains(" / 0:04.000\n  volume 100% (muted) · repeat off · shuffle off · single off\n"), "\(status)")
        #expect(status.contains("single off\n  keeps playing in the background · pauses for other players\n"
                                + "  daemon in the foreground · device \(d.device) · underruns 0 · sleep off\n"), "\(status)")
        let verbose = try ctl("status", "--verbose")
        #expect(verbose.contains("  audio MPEG audio, float, 44100 Hz, stereo") && verbose.contains("\n  output float32, 44100 Hz, 2 channels, buffer "),
                "\(verbose)")
        let list = try ctl("queue")
        #expect(list.contains(">3. [id 2] b.mp3 (0:04.000)"), "\(list)")
        #expect(try ctl("pause").contains("state: paused"))
        #expect(try ctl("toggle").contains("state: playing"))
        #expect(try ctl("toggle").contains("state: paused"))
        #expect(try ctl("seek", "0:02.5") == "position: 2.5\n")
        #expect(try ctl("seek", "-1") == "position: 1.5\n")
        #expect(try ctl("seek", "+0.25") == "position: 1.75\n")
        #expect(try ctl("skip", "-1").hasPrefix("position: "))
        #expect(try ctl("skip").hasPrefix("position: "))
        #expect(try ctl("next").contains("current: c.mp3"))
        #expect(try ctl("previous").contains("current: b.mp3"))
        #expect(try ctl("repeat", "all") == "repeat: all\n")
        #expect(try ctl("shuffle", "on") == "shuffle: on\n")
        #expect(try ctl("shuffle", "off") == "shuffle: off\n")
        #expect(try ctl("single", "on") == "single: on\n")
        #expect(try ctl("single", "off") == "single: off\n")
        #expect(try ctl("consume") == "consume: off\n")
        #expect(try ctl("rate", "1").contains("rate: 1"))
        #expect(try ctl("rate", "0").contains("rate: 0"))
        #expect(try ctl("volume", "80") == "volume: 80% (muted)\n")
        #expect(try ctl("volume", "-5") == "volume: 75% (muted)\n")
        #expect(try ctl("volume", "+10") == "volume: 85% (muted)\n")
        #expect(try ctl("mute") == "volume: 85%\n")
        #expect(try ctl("mute", "on") == "volume: 85% (muted)\n")
        #expect(try ctl("session", "--silent-switch", "on") == """
            playback: keeps playing in the background · pauses for other players
            silent switch on · screen lock off · media keys control it

            """)
        #expect(try ctl("session", "--silent-switch", "off", "--screen-lock", "on").contains("silent switch off · screen lock on"))
        #expect(try ctl("session", "--screen-lock", "off").contains("silent switch off · screen lock off"))
        let cat = try ctl("session", "--category", "ambient", "--options", "mixWithOthers")
        #expect(cat.hasPrefix("ambient (mixWithOthers): stops in the background · plays along with other players · the silent switch mutes it\n"
                              + "silent switch off · screen lock off · media keys "), "\(cat)")
        #expect(try ctl("session", "--category", "playback").hasPrefix("playback: keeps playing in the background · pauses for other players\n"))
        #expect(try ctl("lifecycle", "background") == "daemon: in the background\n")
        #expect(try ctl("lifecycle", "foreground") == "daemon: in the foreground\n")
        let sleep = try ctl("sleep", "30", "--fade", "10")
        #expect(["sleep: in 30:00, fading out over 10 s\n", "sleep: in 29:59, fading out over 10 s\n"].contains(sleep), "30 minutes from now: \(sleep)")
        let sleeping = try ctl("status")
        #expect(sleeping.contains(" · sleep in 30:00, fading out over 10 s\n") || sleeping.contains(" · sleep in 29:5"), "\(sleeping)")
        #expect(try ctl("sleep", "--cancel") == "sleep: off\n")
        #expect(try ctl("sleep", "--end-of-item") == "sleep: at the end of the item\n")
        #expect(try ctl("sleep", "0") == "sleep: off\n", "sleep 0 turns it off")
        #expect(try ctl("sleep") == "sleep: off\n")
        let np = try ctl("now-playing")
        #expect(np.contains("title: b.mp3\n") && np.contains("duration: 0:04.000\n") && np.contains("position: 3 of 4\nid: 2\n"), "\(np)")
        for apple in ["albumTitle", "playbackQueueIndex", "defaultPlaybackRate", "playbackDuration"] { #expect(!np.contains(apple), "\(np)") }
        #expect(try ctl("ping") == "pong\n")
        #expect(try ctl("version").hasPrefix("backline 0."))
        let json = try ctl("status", "--json")
        let parsed = try JSON.parse(Array(json.utf8))
        #expect(parsed.ok && parsed["current"]?["id"] == 2)
        #expect(try ctl("send", "{\"id\":\"x\",\"command\":\"ping\"}").contains("pong: true"))
        #expect(try ctl("stop").contains("state: stopped"))
        #expect(try ctl("clear") == "ok\n")
        #expect(try ctl("list") == "(the queue is empty)\n")

        // Refusals: the daemon's message, exit 1.
        #expect(try ctl("play", "42", status: 1) == "backline ctl: no item with id 42 in the queue (no-such-item)\n")
        #expect(try ctl("add", "/etc/passwd", status: 1).contains("outside the music directory"))
        #expect(try ctl("repeat", "sometimes", status: 1) == "backline ctl repeat: expected off, one, all, got 'sometimes'\nusage: backline ctl repeat [off|one|all]\n")
        #expect(try ctl("frobnicate", status: 1) == "backline ctl: unknown command \"frobnicate\" (backline ctl help lists them)\n")
        #expect(try ctl("seek", "soon", status: 1) == "backline ctl seek: expected SECONDS, +SECONDS, -SECONDS or M:SS, got 'soon'\nusage: backline ctl seek SECONDS|+SECONDS|-SECONDS|M:SS\n")
        d.expectCleanStop()
    }

    @Test("ctl watch prints every event in one human form, position only when asked for; --json for scripts")
    func watch() throws {
        let d = try DaemonFixture.onSharedSink(config: DaemonFixture.foreground)
        try d.start()
        let w = try SpawnedProcess(backline, ["ctl", "--socket", d.socket, "watch"], environment: d.environment)
        defer { w.signal(SIGKILL); _ = try? w.wait(timeout: 5) }
        // Subscribed once a change shows (the process may take a while to start on a loaded machine).
        var probe = 0
        #expect(eventually {
            probe += 1  // 28, 29, 28, …: every request is a change, so each one posts an event
            _ = try? d.request("volume", [("volume", .number(Double(28 + probe % 2)))])
            return w.stdout.contains("volume: 2")
        }, "watch never printed an event: \(w.stdout)")
        try d.request("volume", [("volume", 30)])
        try d.request("add", [("path", "album/a.mp3")])
        try d.request("mute", [("on", true)])
        try d.request("repeat", [("mode", "all")])
        try d.request("add", [("path", "broken/bad.mp3")])
        try d.request("play", [("item", 2)])
        // The volume events in order; the play queue's event comes through the queue's own observer,
        // so it may follow later commands' events (docs/PROTOCOL.md, Events).
        #expect(eventually {
            w.stdout.contains("volume: 30%\n") && w.stdout.contains("queue: 1 item (version 1)\n")
                && w.stdout.contains("volume: 30% (muted)\n") && w.stdout.contains("modes: repeat all · shuffle off · single off · consume off\n")
                && w.stdout.contains("failed: broken/bad.mp3: unsupported format: no MPEG audio frames found (libmpg123) [id 2]\n")
                && w.stdout.contains("current: a.mp3 (0:03.000) [id 1]\n") && w.stdout.contains("state: playing\n")
        }, "\(w.stdout)")
        let lines = w.stdout.split(separator: "\n")
        if let unmuted = lines.firstIndex(of: "volume: 30%"), let muted = lines.firstIndex(of: "volume: 30% (muted)") {
            #expect(unmuted < muted, "volume events in the order of their commands")
        }
        // A second and a half of playing: no position lines, nothing raw.
        #expect(eventually { ((try? d.request("status"))?["elapsed"]?.number ?? 0) > 1.5 })
        #expect(!w.stdout.contains("position") && !w.stdout.contains("{") && !w.stdout.contains("="), "\(w.stdout)")
        // Asked for by name, positions come; --json prints the events as sent.
        let p = try SpawnedProcess(backline, ["ctl", "--socket", d.socket, "watch", "position"], environment: d.environment)
        defer { p.signal(SIGKILL); _ = try? p.wait(timeout: 5) }
        #expect(eventually { p.stdout.contains("position: 0:0") && p.stdout.contains(" / 0:03.000 [id 1]\n") }, "\(p.stdout)")
        let j = try SpawnedProcess(backline, ["ctl", "--socket", d.socket, "watch", "--json", "volume"], environment: d.environment)
        defer { j.signal(SIGKILL); _ = try? j.wait(timeout: 5) }
        #expect(eventually {
            _ = try? d.request("volume", [("volume", .number(Double(40 + probe % 2)))])
            probe += 1
            return j.stdout.contains("{\"event\":\"volume\"")
        }, "\(j.stdout)")
        d.expectCleanStop()
        #expect(try w.wait(timeout: 10) == 0, "watch ends when the daemon goes away")
        #expect(w.stdout.contains("\nthe daemon is stopping\n"), "\(w.stdout)")
    }

    @Test("ctl says exactly what happened: clamps, counts, unknown ids, failed items, paths from a folder of the music directory, --format")
    func findings() throws {
        let d = try DaemonFixture.onSharedSink(config: DaemonFixture.foreground)
        try d.start()
        func run(_ args: [String], in folder: String? = nil) throws -> ProcessResult {
            guard let folder else { return try d.ctl(args) }
            let quoted = ([backline, "ctl", "--socket", d.socket] + args).map { "'" + $0 + "'" }.joined(separator: " ")
            return try runProcess("/bin/sh", ["-c", "cd '\(folder)' && exec \(quoted)"], environment: d.environment, timeout: 30)
        }
        func ctl(_ args: String..., in folder: String? = nil, status: Int32 = 0, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
            let r = try run(args, in: folder)
            #expect(r.status == status, "ctl \(args.joined(separator: " ")): \(r.status) \(r.stdoutText) \(r.stderr)", sourceLocation: sourceLocation)
            return status == 0 ? r.stdoutText : r.stderr
        }
        // `play` with only a failed item: what happened, and why; exit 1.
        #expect(try ctl("add", "broken/bad.mp3") == "added 1 item (id 1)\n")
        let failed = try run(["play"])
        #expect(failed.status == 1 && failed.stdoutText == "state: stopped\n", "\(failed.status) \(failed.stdoutText)")
        #expect(failed.stderr == "backline ctl: nothing plays: broken/bad.mp3: unsupported format: no MPEG audio frames found (libmpg123)\n", "\(failed.stderr)")
        // Relative paths from inside the music directory are relative to where one is; what
        // cannot be added is skipped and said; from elsewhere the error names the music directory.
        let album = d.music + "/album"
        #expect(try ctl("add", "c.mp3", "missing.mp3", "a.mp3", in: album) == """
            added 2 items (ids 2, 3)
            skipped album/missing.mp3: no such file or directory in the music directory \(d.music)

            """)
        #expect(try ctl("add", "../long.mp3", in: album) == "added 1 item (id 4)\n")
        #expect(try ctl("add", "CD1", in: d.dir.path, status: 1)
                == "backline ctl: CD1: no such file or directory in the music directory \(d.music) (not-found)\n")
        // Removing: counts; an unknown id is said, the known ones still go (as mpd's deleteid list).
        #expect(try ctl("remove", "1", "9999", status: 1)
                == "backline ctl: no item with id 9999 in the queue; removed 1 (id 1), 3 left (no-such-item)\n")
        #expect(try ctl("remove", "9998", status: 1) == "backline ctl: no item with id 9998 in the queue; nothing removed (no-such-item)\n")
        // A seek past the end is the end (c.mp3 is 5 s).
        #expect(try ctl("play", "2") == "state: playing\n")
        #expect(try ctl("pause") == "state: paused\n")
        #expect(try ctl("seek", "99:00") == "position: 5\n")
        #expect(try ctl("play", "2") == "state: playing\n")
        #expect(try ctl("pause") == "state: paused\n")
        #expect(try ctl("seek", "2") == "position: 2\n")
        // One line for a status bar: missing tags are empty.
        #expect(try ctl("status", "--format", "%artist%|%title%|%album%|%state%|%id%|%file%|%elapsed%|%duration%|%position%|%nope%")
                == "|c.mp3||paused|2|album/c.mp3|0:02|0:05|1|%nope%\n")
        #expect(try ctl("--format", "%title% (%elapsed%)", "status") == "c.mp3 (0:02)\n")
        #expect(try ctl("list", "--format", "%title%", status: 1)
                == "backline ctl list: --format goes with status\nusage: backline ctl list (or queue) | list TAG [FILTER] [--group TAG]…\n")
        // Argument errors name the command and show its usage.
        #expect(try ctl("seek", "abc", status: 1) == "backline ctl seek: expected SECONDS, +SECONDS, -SECONDS or M:SS, got 'abc'\nusage: backline ctl seek SECONDS|+SECONDS|-SECONDS|M:SS\n")
        #expect(try ctl("remove", "abc", status: 1) == "backline ctl remove: expected an item id (a number list shows as [id N]), got 'abc'\nusage: backline ctl remove ID…\n")
        #expect(try ctl("shuffle", "maybe", status: 1) == "backline ctl shuffle: expected on or off, got 'maybe'\nusage: backline ctl shuffle [on|off]\n")
        #expect(try ctl("volume", "abc", status: 1) == "backline ctl volume: expected N (0–100), +N or -N, got 'abc'\nusage: backline ctl volume [N|+N|-N]\n")
        #expect(try ctl("insert", "0", "album/a.mp3", status: 1) == "backline ctl insert: expected a position (1 is the first), got '0'\nusage: backline ctl insert POS PATH…\n")
        #expect(try ctl("sleep", "-1", status: 1)
                == "backline ctl sleep: MINUTES is from 0 (off) to 1440 (24 hours), got '-1'\nusage: backline ctl sleep [MINUTES [--fade S] | --end-of-item | --end-of-chapter | --cancel]\n")
        #expect(try d.request("sleep", [("minutes", 0)])["error"]?["message"]?.string
                == "sleep: minutes must be more than 0 and at most 1440 (24 hours); to turn the timer off, cancel it")
        // The volume is clamped, as mpc does.
        #expect(try ctl("volume", "150") == "volume: 100%\n")
        #expect(try ctl("volume", "+10") == "volume: 100%\n")
        #expect(try ctl("volume", "-250") == "volume: 0%\n")
        #expect(try d.request("volume", [("volume", 150)])["volume"] == 100)
        // A long confirmation is summed up.
        #expect(try ctl("clear") == "ok\n")
        let many = try run(["add"] + Array(repeating: "short", count: 100))
        #expect(many.stdoutText == "added 300 items (ids 5–304)\n", "\(many.stdoutText) \(many.stderr)")
        // The session's refusal names the option given, without Apple's error number.
        #expect(try ctl("session", "--category", "soloAmbient", "--options", "duckOthers", status: 1)
                == "backline ctl: session: soloAmbient accepts no category options (got duckOthers) (session-error)\n")
        d.expectCleanStop()
    }

    @Test("a file name holding terminal escapes (an OSC that retitles the window, a clear screen, a newline), in a queue saved before such names were refused, is printed escaped by `list`, `status` and `--format`: no control byte reaches the terminal")
    func escapedNames() throws {
        let d = try DaemonFixture(device: "null", config: DaemonFixture.foreground)
        let name = "\u{1B}]0;pwned\u{07}\u{1B}[2Jtitle\nline.mp3"
        try FileManager.default.copyItem(atPath: d.music + "/album/a.mp3", toPath: d.music + "/" + name)
        try d.saveQueue([name])
        try d.start()
        #expect(try d.request("status")["count"] == 1)
        let shown = "\\x1B]0;pwned\\x07\\x1B[2Jtitle\\x0Aline.mp3"
        for args in [["list"], ["status"], ["--format", "%title% %file%", "status"]] {
            let r = try d.ctl(args)
            let controls = r.stdout.filter { $0 < 0x20 && $0 != 0x0A || $0 == 0x7F }
            #expect(r.status == 0 && controls.isEmpty && r.stdoutText.contains(shown), "ctl \(args): \(r.stdoutText.debugDescription)")
            #expect(!r.stdoutText.contains("title\nline"), "ctl \(args): \(r.stdoutText.debugDescription)")
        }
        d.expectCleanStop()
    }

    @Test("ctl help shows ctl's syntax, positions and ids told apart; --help keeps its layout in 80 columns and piped")
    func help() throws {
        let list = try runProcess(backline, ["ctl", "help"])
        #expect(list.status == 0)
        let text = list.stdoutText
        // (What only a connection that stays open can use.)
        let skip: Set = ["subscribe", "unsubscribe", "auth", "help", "channel-subscribe", "channel-unsubscribe", "channel-read"]
        for c in CommandTable.all where !skip.contains(c.name) {
            #expect(text.contains("\n  \(c.name)"), "ctl help lacks \(c.name)")
        }
        #expect(text.contains("  move ID POS\n      Move the item ID to position POS.\n"), "\(text)")
        #expect(!text.contains("[item]") && !text.contains("[position]"), "JSON argument names")
        let one = try runProcess(backline, ["ctl", "help", "move"])
        #expect(one.stdoutText == "usage: backline ctl move ID POS\nMove the item ID to position POS.\n")
        let unknown = try runProcess(backline, ["ctl", "help", "frobnicate"])
        #expect(unknown.status == 1 && unknown.stderr.hasPrefix("backline ctl help: no command \"frobnicate\""), "\(unknown.stderr)")
        // Piped (no COLUMNS: ArgumentParser's 80), 80 columns, and a wide terminal (its option
        // lines may then use the width; the text stays as written).
        for columns in ["", "80", "200"] {
            let h = try runProcess(backline, ["ctl", "--help"], environment: ["COLUMNS": columns])
            let lines = h.stdoutText.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(columns == "200" || lines.allSatisfy { $0.count <= 80 }, "COLUMNS=\(columns): \(h.stdoutText)")
            #expect(h.stdoutText.contains("""
                Positions in the queue count from 1, as `list` numbers them; ids are
                the numbers `list` shows as [id N] and stay with an item wherever it
                moves.
                """), "\(h.stdoutText)")
            #expect(h.stdoutText.contains("""
                The commands and their arguments: backline ctl help
                One command in detail:            backline ctl help COMMAND
                """), "\(h.stdoutText)")
            #expect(h.stdoutText.contains("USAGE: backline ctl [--socket PATH] [--json] [--format F] COMMAND [ARGUMENTS…]\n"))
        }
        for line in text.split(separator: "\n") { #expect(line.count <= 80, "\(line)") }
    }
}
