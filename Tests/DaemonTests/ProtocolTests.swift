import BacklineTestSupport
import BacklineWire
import Control
import Daemon
import Foundation
import MediaCore
import Testing

/// Every command over a raw connection to a real daemon playing (muted) into the shared
/// PulseAudio null sink; a second connection subscribed to the events.
@Suite("backline daemon: protocol", Harness.audioTools)
struct ProtocolTests {
    @Test("client-to-client channels across protocols: a JSON client subscribed to `message` events gets an MPD client's sendmessage at once; an MPD client reads a JSON client's channel-send; channel-read empties the queue; errors as mpd's; ctl channels and channel-send")
    func channels() throws {
        let d = try DaemonFixture(device: "null", config: DaemonFixture.foreground)
        let port = HardeningTests.port()
        try d.start(["--mpd-listen", "127.0.0.1:\(port)"])
        let json = try d.client()
        let sub = try json.request("channel-subscribe", [("channel", "lyrics")])
        #expect(sub.ok && sub["channels"] == .array([.string("lyrics")]), "\(sub.text)")
        #expect(try json.request("subscribe", [("events", ["message"])]).ok)
        let mpd = try TCPLineClient.mpd(port: port)
        defer { mpd.close() }
        #expect(try mpd.ask("channels") == "channel: lyrics\nOK\n")
        #expect(try mpd.ask("sendmessage lyrics \"la la\"") == "OK\n")
        let event = try json.nextEvent(timeout: 5)
        #expect(event?["event"] == "message" && event?["channel"] == "lyrics" && event?["message"] == "la la", "\(event?.text ?? "none")")

        // The other way: the MPD client subscribes, a JSON client (ctl) sends, the MPD client reads.
        #expect(try mpd.ask("subscribe scrobble") == "OK\n")
        let sent = try d.ctl(["channel-send", "scrobble", "played", "Alpha"])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(try mpd.ask("readmessages") == "channel: scrobble\nmessage: played Alpha\nOK\n")
        #expect(try d.ctl(["channels"]).stdoutText.contains("lyrics") )

        // Without the event subscription, messages wait for channel-read (and are read once).
        let quiet = try d.client()
        #expect(try quiet.request("channel-subscribe", [("channel", "scrobble")]).ok)
        #expect(try mpd.ask("sendmessage scrobble one") == "OK\n")
        let read = try quiet.request("channel-read")
        #expect(read["messages"] == .array([.object([("channel", .string("scrobble")), ("message", .string("one"))])]), "\(read.text)")
        #expect(try quiet.request("channel-read")["messages"] == .array([]))

        let bad = try json.request("channel-subscribe", [("channel", "no spaces")])
        #expect(bad["error"]?["code"] == "bad-argument" && bad["error"]?["message"] == "invalid channel name", "\(bad.text)")
        let again = try json.request("channel-subscribe", [("channel", "lyrics")])
        #expect(again["error"]?["code"] == "exists", "\(again.text)")
        let nobody = try json.request("channel-send", [("channel", "nobody"), ("message", "x")])
        #expect(nobody["error"]?["code"] == "not-found" && nobody["error"]?["message"] == "nobody is subscribed to this channel")
        json.closeWrite()  // (the daemon closes it once answered)
        // A closed connection's channels are gone.
        #expect(eventually(timeout: 5) { (try? mpd.ask("channels")) == "channel: scrobble\nOK\n" })
        d.expectCleanStop()
    }

    @Test("every command over the socket answers as documented; subscribers get the events in order")
    func everyCommand() throws {
        let d = try DaemonFixture.onSharedSink(config: "position-interval = 0.2\nbackground-grace = 60\nstart-state = foreground\n")
        try d.start()
        let c = try d.client()
        let watcher = try d.client()
        func ok(_ command: String, _ args: [(String, JSON)] = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> JSON {
            let r = try c.request(command, args)
            #expect(r.ok, "\(command): \(r.text)", sourceLocation: sourceLocation)
            return r
        }
        func refused(_ command: String, _ args: [(String, JSON)] = [], _ code: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let r = try c.request(command, args)
            #expect(!r.ok && r.errorCode == code, "\(command): \(r.text)", sourceLocation: sourceLocation)
            #expect(r["error"]?["message"]?.string?.isEmpty == false, sourceLocation: sourceLocation)
        }
        func status() throws -> JSON { try ok("status") }
        func elapsed() throws -> Double { try status()["elapsed"]?.number ?? -1 }

        let sub = try watcher.request("subscribe")
        #expect(sub.ok && sub["events"]?.array?.count == ControlEvent.kinds.count)
        #expect(try ok("mute", [("on", true)])["muted"] == true)  // the shared sink hears nothing from us

        // Queue.
        let added = try ok("add", [("paths", ["album"])])
        #expect(added["items"] == [1, 2, 3] && added["skipped"] == [])
        #expect(try ok("add", [("path", "long.mp3"), ("position", 0)])["items"] == [4])
        var list = try ok("list")
        #expect(list["items"]?.array?.compactMap { $0["id"]?.int } == [4, 1, 2, 3])
        #expect(list["items"]?.array?.compactMap { $0["title"]?.string } == ["long.mp3", "a.mp3", "b.mp3", "c.mp3"])
        #expect(list["items"]?.array?.compactMap { $0["duration"]?.number } == [60, 3, 4, 5])
        #expect(list["current"] == .null)
        try refused("remove", [("item", 99)], "no-such-item")
        try refused("play", [("item", 99)], "no-such-item")
        try refused("next", [], "not-playing")
        try refused("seek", [("position", 1)], "not-playing")

        // Transport.
        #expect(try ok("play", [("item", 1)])["state"] == "playing")
        #expect(eventually { (try? elapsed()) ?? 0 > 0.3 })
        let s = try status()
        #expect(s["state"] == "playing" && s["current"]?["id"] == 1 && s["index"] == 1 && s["count"] == 4 && s["duration"] == 3)
        #expect(try ok("pause")["state"] == "paused")
        let pausedAt = try elapsed()
        usleep(300_000)
        #expect(abs(try elapsed() - pausedAt) < 0.001, "paused: the position stands still")
        #expect(try ok("seek", [("position", 1.0)])["position"] == 1)
        #expect(eventually { abs(((try? elapsed()) ?? 0) - 1.0) < 0.01 })
        _ = try ok("seek", [("offset", 0.5)])
        #expect(eventually { abs(((try? elapsed()) ?? 0) - 1.5) < 0.01 })
        try refused("seek", [("position", 1), ("offset", 1)], "bad-argument")
        try refused("seek", [("position", "x")], "bad-argument")
        _ = try ok("skip", [("seconds", 1)])
        #expect(eventually { abs(((try? elapsed()) ?? 0) - 2.5) < 0.01 })
        _ = try ok("skip", [("seconds", -2)])
        #expect(eventually { abs(((try? elapsed()) ?? 0) - 0.5) < 0.01 })
        #expect(try ok("toggle")["state"] == "playing")
        #expect(try ok("toggle")["state"] == "paused")
        #expect(try ok("next")["current"]?["id"] == 2)
        #expect(try ok("previous")["current"]?["id"] == 1, "back to the item played before (under 3 s in)")
        #expect(try ok("next")["current"]?["id"] == 2)
        #expect(try ok("play")["state"] == "playing")
        #expect(try ok("rate", [("rate", 2)])["rate"] == 2)
        #expect(try ok("status")["speed"] == 2, "rate sets the speed")
        #expect(try ok("rate", [("rate", 1)])["rate"] == 1)
        try refused("rate", [("rate", 4)], "bad-argument")
        try refused("rate", [("rate", 0.25)], "bad-argument")

        // Modes.
        #expect(try ok("repeat", [("mode", "one")])["repeat"] == "one")
        #expect(try ok("repeat")["repeat"] == "one")
        try refused("repeat", [("mode", "twice")], "bad-argument")
        #expect(try ok("repeat", [("mode", "off")])["repeat"] == "off")
        #expect(try ok("shuffle", [("on", true)])["shuffle"] == true)
        #expect(try ok("shuffle", [("on", false)])["shuffle"] == false)
        #expect(try ok("single", [("on", true)])["stopAfterCurrent"] == true)
        #expect(try ok("single")["stopAfterCurrent"] == false)
        _ = try ok("pause")

        // Volume and mute (paused: nothing reaches the shared sink).
        #expect(try ok("volume", [("volume", 50)])["volume"] == 50)
        #expect(try ok("volume", [("change", -10)])["volume"] == 40)
        #expect(try ok("volume")["volume"] == 40)
        #expect(try ok("volume", [("volume", 150)])["volume"] == 100, "clamped, as mpc does")
        #expect(try ok("volume", [("volume", 40)])["volume"] == 40)
        #expect(try ok("mute")["muted"] == false)
        #expect(try ok("mute")["muted"] == true)

        // Session and life cycle.
        let ses = try ok("session", [("category", "ambient"), ("options", ["mixWithOthers"])])
        #expect(ses["category"] == "ambient" && ses["options"] == ["mixWithOthers"])
        try refused("session", [("category", "soloAmbient"), ("options", ["duckOthers"])], "session-error")
        #expect(try ok("session", [("silentSwitch", true)])["silenced"] == true)
        #expect(try ok("session", [("silentSwitch", false), ("screenLocked", true)])["silenced"] == true)
        #expect(try ok("session", [("screenLocked", false), ("category", "playback")])["silenced"] == false)
        #expect(try status()["session"]?["category"] == "playback")
        #expect(try ok("lifecycle", [("state", "background")])["app"] == "background")
        #expect(try ok("lifecycle", [("state", "foreground")])["app"] == "active")
        try refused("lifecycle", [("state", "sideways")], "bad-argument")

        // Sleep timer.
        let sl = try ok("sleep", [("minutes", 10), ("fade", 5)])
        #expect((sl["sleep"]?["remaining"]?.number ?? 0) > 590)
        #expect(try status()["sleep"]?["fade"] == 5)
        #expect(try ok("sleep", [("cancel", true)])["sleep"] == .null)
        try refused("sleep", [("minutes", -1)], "bad-argument")

        // Now playing.
        let np = try ok("now-playing")
        #expect(np["item"] == 2 && np["info"]?["title"] == "b.mp3" && np["info"]?["playbackDuration"] == 4)
        #expect(np["info"]?["playbackQueueIndex"] == 2 && np["info"]?["playbackQueueCount"] == 4)
        #expect(np["info"]?["mediaType"] == "audio")

        // Editing.
        #expect(try ok("move", [("item", 4), ("position", 3)])["index"] == 3)
        #expect(try ok("insert", [("paths", ["album/c.mp3"]), ("position", 1)])["items"] == [5])
        try refused("insert", [("paths", ["album/c.mp3"])], "bad-argument")
        #expect(try ok("remove", [("items", [3, 5])])["count"] == 3)
        list = try ok("list")
        #expect(list["items"]?.array?.compactMap { $0["id"]?.int } == [1, 2, 4])
        #expect(list["current"] == 2 && list["items"]?.array?[1]["current"] == true)
        #expect(try ok("stop")["state"] == "stopped")
        #expect(try status()["current"]?["id"] == 2, "stop keeps the current item selected")
        _ = try ok("clear")
        #expect(try ok("list")["items"] == [])

        // The rest.
        #expect(try ok("ping")["pong"] == true)
        #expect(try ok("version")["protocol"] == 1)
        let names = try ok("help")["commands"]?.array?.compactMap { $0["name"]?.string } ?? []
        #expect(names == CommandTable.all.map(\.name))
        try refused("frobnicate", [], "unknown-command")
        try refused("status", [("verbose", true)], "bad-argument")
        #expect(try ok("unsubscribe").ok)

        // The watcher saw every kind of change, numbered in order.
        var events: [JSON] = []
        while let e = try watcher.nextEvent(timeout: 0.5) { events.append(e) }
        let seqs = events.compactMap { $0["seq"]?.int }
        #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count)
        let kinds = Set(events.compactMap { $0["event"]?.string })
        for k in ["state", "current", "queue", "modes", "seeked", "position", "volume", "session", "lifecycle", "sleep"] {
            #expect(kinds.contains(k), "no \(k) event among \(kinds.sorted())")
        }
        let states = events.filter { $0["event"] == "state" }.compactMap { $0["state"]?.string }
        #expect(states.first == "playing" && states.last == "stopped", "\(states)")
        d.expectCleanStop()
    }
}
