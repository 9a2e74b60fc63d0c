import BacklineTestSupport
import Control
import Daemon
import Foundation
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
        #expect(try ctl("mute", "on").contains("muted: true"))
        #expect(try ctl("add", "album", "long.mp3") == "added 4 items: ids 1, 2, 3, 4\n")
        #expect(try ctl("add", "--at", "0", "album/c.mp3") == "added 1 item: ids 5\n")
        #expect(try ctl("insert", "1", "album/a.mp3") == "added 1 item: ids 6\n")
        #expect(try ctl("list") == """
             1. [5] c.mp3 (0:05.000)
             2. [6] a.mp3 (0:03.000)
             3. [1] a.mp3 (0:03.000)
             4. [2] b.mp3 (0:04.000)
             5. [3] c.mp3 (0:05.000)
             6. [4] long.mp3 (1:00.000)

            """)
        #expect(try ctl("remove", "5", "6") == "count: 4\n")
        #expect(try ctl("move", "4", "0") == "index: 0\n")
        #expect(try ctl("play", "2").contains("state: playing"))
        #expect(eventually { ((try? d.request("status"))?["elapsed"]?.number ?? 0) > 0.2 })
        let status = try ctl("status")
        #expect(status.hasPrefix("▶ playing  b.mp3 (0:04.000)  [3/4, id 2]\n  ["), "\(status)")
        #expect(status.contains(" / 0:04.000\n  volume 100% (muted) · repeat off · shuffle off · single off\n"), "\(status)")
        #expect(status.contains("session playback · app active · device pulse · underruns 0"), "\(status)")
        let list = try ctl("queue")
        #expect(list.contains(">3. [2] b.mp3 (0:04.000)"), "\(list)")
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
        #expect(try ctl("shuffle", "on") == "shuffle: true\n")
        #expect(try ctl("shuffle", "off") == "shuffle: false\n")
        #expect(try ctl("single", "on") == "stopAfterCurrent: true\n")
        #expect(try ctl("single", "off") == "stopAfterCurrent: false\n")
        #expect(try ctl("rate", "1").contains("rate: 1"))
        #expect(try ctl("rate", "0").contains("rate: 0"))
        #expect(try ctl("volume", "80").contains("volume: 80"))
        #expect(try ctl("volume", "-5").contains("volume: 75"))
        #expect(try ctl("volume", "+10").contains("volume: 85"))
        #expect(try ctl("mute").contains("muted: false"))
        #expect(try ctl("mute", "on").contains("muted: true"))
        #expect(try ctl("session", "--silent-switch", "on").contains("silentSwitch: true"))
        #expect(try ctl("session", "--silent-switch", "off", "--screen-lock", "on").contains("screenLocked: true"))
        #expect(try ctl("session", "--screen-lock", "off").contains("screenLocked: false"))
        let cat = try ctl("session", "--category", "ambient", "--options", "mixWithOthers")
        #expect(cat.contains("category: ambient") && cat.contains("options: [\"mixWithOthers\"]"), "\(cat)")
        #expect(try ctl("session", "--category", "playback").contains("category: playback"))
        #expect(try ctl("lifecycle", "background") == "app: background\n")
        #expect(try ctl("lifecycle", "foreground") == "app: active\n")
        let sleep = try ctl("sleep", "30", "--fade", "10")
        let remaining = sleep.split(separator: "\n").first { $0.hasPrefix("remaining: ") }
            .flatMap { Double($0.dropFirst("remaining: ".count)) }
        #expect(remaining.map { $0 > 1795 && $0 <= 1800 } == true, "30 minutes from now: \(sleep)")
        #expect(try ctl("status").contains("sleep in 29:5"))
        #expect(try ctl("sleep", "--cancel") == "sleep: -\n")
        #expect(try ctl("sleep", "--end-of-item").contains("endOfItem: true"))
        #expect(try ctl("sleep", "--cancel") == "sleep: -\n")
        let np = try ctl("now-playing")
        #expect(np.contains("title: b.mp3\n") && np.contains("playbackDuration: 4\n") && np.contains("playbackQueueCount: 4\n"), "\(np)")
        #expect(try ctl("ping") == "pong\n")
        #expect(try ctl("version").hasPrefix("backline 0."))
        let help = try ctl("help")
        for c in CommandTable.all { #expect(help.contains("\n\(c.name)") || help.hasPrefix(c.name), "help lacks \(c.name)") }
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
        #expect(try ctl("repeat", "sometimes", status: 1).contains("repeat: mode is off, one or all (bad-argument)"))
        #expect(try ctl("frobnicate", status: 1).contains("unknown command \"frobnicate\""))
        #expect(try ctl("seek", "soon", status: 1).contains("expected a number"))
        #expect(try d.stop() == 0)
    }

    @Test("ctl watch prints events as they come")
    func watch() throws {
        let d = try DaemonFixture.onSharedSink(config: DaemonFixture.foreground)
        try d.start()
        let w = try SpawnedProcess(backline, ["ctl", "--socket", d.socket, "watch", "volume", "queue"], environment: d.environment)
        defer { w.signal(SIGKILL); _ = try? w.wait(timeout: 5) }
        // Subscribed once a change shows (the process may take a while to start on a loaded machine).
        var probe = 0
        #expect(eventually {
            probe += 1  // 28, 29, 28, …: every request is a change, so each one posts an event
            _ = try? d.request("volume", [("volume", .number(Double(28 + probe % 2)))])
            return w.stdout.contains("volume volume=2")
        }, "watch never printed an event: \(w.stdout)")
        try d.request("volume", [("volume", 30)])
        try d.request("add", [("path", "album/a.mp3")])
        try d.request("mute", [("on", true)])
        // The volume events in order; the play queue's event comes through the queue's own observer,
        // so it may follow later commands' events (docs/PROTOCOL.md, Events).
        #expect(eventually {
            w.stdout.contains("volume volume=30 muted=false\n") && w.stdout.contains("queue version=1 count=1\n")
                && w.stdout.contains("volume volume=30 muted=true\n")
        }, "\(w.stdout)")
        let lines = w.stdout.split(separator: "\n")
        if let unmuted = lines.firstIndex(of: "volume volume=30 muted=false"),
           let muted = lines.firstIndex(of: "volume volume=30 muted=true") {
            #expect(unmuted < muted, "volume events in the order of their commands")
        }
        #expect(try d.stop() == 0)
        #expect(try w.wait(timeout: 10) == 0, "watch ends when the daemon goes away")
    }
}
