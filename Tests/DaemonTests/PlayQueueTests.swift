import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import MediaCore
import Testing

/// Play-queue semantics, observed through a real daemon's events while it plays (muted) in real time.
@Suite("backline daemon: play queue, sleep timer, suspension hooks", Harness.audioTools)
struct PlayQueueTests {
    static let config = DaemonFixture.foreground

    /// A muted daemon on the shared sink, with a subscribed watcher.
    func daemon(_ extra: String = "") throws -> (DaemonFixture, ControlClient, ControlClient) {
        let d = try DaemonFixture.onSharedSink(config: Self.config + extra)
        try d.start()
        let c = try d.client()
        let w = try d.client()
        #expect(try w.request("subscribe", [("events", ["state", "current", "modes", "failed", "sleep", "lifecycle", "hook"])]).ok)
        #expect(try c.request("mute", [("on", true)]).ok)
        return (d, c, w)
    }

    /// Events until `done` says so (or the timeout).
    func collect(_ w: ControlClient, timeout: Double = 15, until done: ([JSON]) -> Bool) throws -> [JSON] {
        var events: [JSON] = []
        let deadline = Date().addingTimeInterval(timeout)
        while !done(events), Date() < deadline {
            if let e = try w.nextEvent(timeout: 0.2) { events.append(e) }
        }
        return events
    }

    func currents(_ events: [JSON]) -> [Int?] {
        events.filter { $0["event"] == "current" }.map { $0["item"]?["id"]?.int }
    }

    @Test("advance: each item becomes current in order, then the queue ends stopped; a broken item fails with its file and reason and playback goes on")
    func advanceAndFailure() throws {
        let (d, c, w) = try daemon()
        _ = try c.request("add", [("paths", ["short/1.mp3", "broken/bad.mp3", "short/2.mp3", "short/3.mp3"])])
        _ = try c.request("play")
        let events = try collect(w) { $0.contains { $0["event"] == "state" && $0["state"] == "stopped" } }
        #expect(currents(events) == [1, 3, 4, nil], "\(events.map(\.text))")
        let failed = try #require(events.first { $0["event"] == "failed" })
        #expect(failed["item"] == 2 && failed["path"]?.string?.hasSuffix("broken/bad.mp3") == true)
        #expect(failed["reason"]?.string?.isEmpty == false)
        let list = try c.request("list")
        #expect(list["items"]?.array?[1]["error"]?.string == failed["reason"]?.string, "the queue shows why")
        let s = try c.request("status")
        #expect(s["state"] == "stopped" && s["current"] == .null && s["underruns"] == 0)
        d.expectCleanStop()
    }

    @Test("a broken item between two plays no gap: the queue feeds past it as soon as the decoder fails it, long before the listener reaches it (heard on the sink's monitor)")
    func gaplessPastFailure() throws {
        try PulseNullSink.exclusive { sink in
            let d = try DaemonFixture(device: sink.alsaDevice, sinkEnvironment: sink.environment, config: Self.config)
            try d.start()
            let c = try d.client()
            let w = try d.client()
            #expect(try w.request("subscribe", [("events", ["state", "failed"])]).ok)
            _ = try c.request("add", [("paths", ["short/1.mp3", "broken/bad.mp3", "broken/bad.mp3", "short/2.mp3"])])
            let (events, rec) = try sink.record { () throws -> [JSON] in
                _ = try c.request("play")
                return try collect(w) { $0.contains { $0["event"] == "state" && $0["state"] == "stopped" } }
            }
            #expect(events.filter { $0["event"] == "failed" }.map { $0["item"]?.int } == [2, 3], "\(events.map(\.text))")
            let heard = HeardTimeline(recording: rec, rate: PulseNullSink.rate)
            let first = try #require(heard.firstSound())
            var last = heard.frameCount - 1
            while last > first, abs(Int(rec[2 * last])) <= HeardTimeline.silenceThreshold { last -= 1 }
            // Two 1 s tones, back to back: 2 s of sound, and no silent run beyond a zero crossing.
            #expect(abs(Double(last - first) / Double(PulseNullSink.rate) - 2) < 0.05, "\(Double(last - first) / Double(PulseNullSink.rate)) s")
            #expect(heard.longestSilence(from: first, to: last) < 0.005, "\(heard.longestSilence(from: first, to: last)) s of silence")
            d.expectCleanStop()
        }
    }

    @Test("repeat all wraps to the first item; repeat one replays the item; stop-after-current stops once, on the next item; stop-after-each at every item")
    func repeatModes() throws {
        let (d, c, w) = try daemon()
        _ = try c.request("add", [("path", "short")])
        _ = try c.request("repeat", [("mode", "all")])
        _ = try c.request("play")
        var events = try collect(w) { currents($0).count >= 5 }
        #expect(Array(currents(events).prefix(5)) == [1, 2, 3, 1, 2], "\(currents(events))")
        _ = try c.request("repeat", [("mode", "one")])
        let now = try c.request("status")["current"]?["id"]?.int
        events = try collect(w) { currents($0).count >= 2 }
        #expect(currents(events).prefix(2).allSatisfy { $0 == now }, "repeat one: \(currents(events)), was \(String(describing: now))")
        _ = try c.request("repeat", [("mode", "off")])
        _ = try c.request("single", [("on", true)])
        events = try collect(w) { $0.contains { $0["event"] == "state" && $0["state"] == "stopped" } }
        let s = try c.request("status")
        #expect(s["state"] == "stopped" && s["stopAfterCurrent"] == false)
        let expectedNext = now.map { $0 % 3 + 1 }
        #expect(s["current"]?["id"]?.int == expectedNext, "the next item is selected, stopped: \(s.text)")
        #expect(events.contains { $0["event"] == "modes" && $0["stopAfterCurrent"] == false })

        // Stop after each (MPD's `single 1` without repeat): stops at the end of every item and stays on.
        let each = try c.request("single", [("on", true), ("each", true)])
        #expect(each["stopAfterCurrent"] == true && each["stopAfterEach"] == true, "\(each.text)")
        _ = try c.request("play", [("item", 1)])
        _ = try collect(w) { currents($0).contains(1) }
        for before in 1...2 {
            if before > 1 { _ = try c.request("play") }
            events = try collect(w) { $0.contains { $0["event"] == "state" && $0["state"] == "stopped" } }
            let after = try c.request("status")
            #expect(after["state"] == "stopped" && after["stopAfterEach"] == true && after["stopAfterCurrent"] == true, "\(after.text)")
            #expect(after["current"]?["id"]?.int == before + 1, "stopped on the next item: \(after.text)")
            #expect(currents(events).filter { $0 != before }.count <= 1, "one item played: \(currents(events))")
        }
        d.expectCleanStop()
    }

    @Test("shuffle plays every item once, the current one first; previous goes back through the history")
    func shuffleAndHistory() throws {
        let (d, c, w) = try daemon()
        _ = try c.request("add", [("paths", ["short", "album/a.mp3"])])
        _ = try c.request("play", [("item", 2)])
        _ = try c.request("shuffle", [("on", true)])
        let events = try collect(w, timeout: 20) { $0.contains { $0["event"] == "state" && $0["state"] == "stopped" } }
        let played = currents(events).compactMap { $0 }
        #expect(played.first == 2 && Set(played) == [1, 2, 3, 4] && played.count == 4, "\(played)")
        // History: play 1, next, next, then previous twice.
        _ = try c.request("shuffle", [("on", false)])
        _ = try c.request("play", [("item", 1)])
        _ = try c.request("next")
        _ = try c.request("next")
        #expect(try c.request("status")["current"]?["id"] == 3)
        #expect(try c.request("previous")["current"]?["id"] == 2)
        #expect(try c.request("previous")["current"]?["id"] == 1)
        _ = try c.request("pause")
        _ = try c.request("seek", [("position", 0.5)])
        d.expectCleanStop()
    }

    @Test("sleep timer: fades out and pauses at the deadline, the volume comes back; at the end of the item it stops")
    func sleepTimer() throws {
        let (d, c, w) = try daemon()
        _ = try c.request("add", [("paths", ["long.mp3", "short"])])
        _ = try c.request("volume", [("volume", 80)])
        _ = try c.request("play")
        let t0 = Date()
        #expect(try c.request("sleep", [("minutes", 0.03), ("fade", 0.5)]).ok)  // 1.8 s
        let events = try collect(w) {
            $0.contains { $0["event"] == "sleep" && $0["kind"] == "fired" } && $0.contains { $0["event"] == "state" && $0["state"] == "paused" }
        }
        let took = Date().timeIntervalSince(t0)
        #expect(took > 1.6 && took < 6, "fired after \(took) s (not before its deadline)")
        let s = try c.request("status")
        #expect(s["state"] == "paused" && s["volume"] == 80 && s["sleep"] == .null, "\(s.text)")
        #expect(events.contains { $0["event"] == "state" && $0["state"] == "paused" })
        // End of item.
        _ = try c.request("play", [("item", 2)])
        #expect(try c.request("sleep", [("endOfItem", true)]).ok)
        let ended = try collect(w) { $0.contains { $0["event"] == "state" && $0["state"] == "stopped" } }
        let e = try c.request("status")
        #expect(e["state"] == "stopped" && e["current"]?["id"] == 3 && e["sleep"] == .null, "\(e.text) after \(ended.map(\.text))")
        d.expectCleanStop()
    }

    @Test("in the background with nothing playing the daemon is suspended: on-suspend runs with the state, the device is released; a command wakes it and on-resume runs")
    func suspensionHooks() throws {
        let sink = try PulseNullSink.shared()
        let d0 = try DaemonFixture(device: sink.alsaDevice, sinkEnvironment: sink.unheardEnvironment)
        let out = d0.dir.path + "/hooks.txt"
        let hooks = """
            background-grace = 0.5
            start-state = foreground
            on-suspend = "env | grep ^BACKLINE_ | sort >> \(out); echo suspended-hook-ran"
            on-resume = "echo BACKLINE_EVENT=$BACKLINE_EVENT >> \(out)"
            hook-timeout = 5

            """
        try hooks.write(toFile: d0.configFile, atomically: true, encoding: .utf8)
        try d0.start()
        let c = try d0.client()
        let w = try d0.client()
        _ = try w.request("subscribe", [("events", ["lifecycle", "hook"])])
        _ = try c.request("mute", [("on", true)])
        _ = try c.request("add", [("paths", ["long.mp3"])])
        _ = try c.request("play")
        _ = try c.request("lifecycle", [("state", "background")])
        usleep(1_200_000)
        #expect(try c.request("status")["app"] == "background", "playing in playback keeps it running")
        _ = try c.request("seek", [("position", 7.25)])
        _ = try c.request("pause")
        var events = try collect(w) { $0.contains { $0["event"] == "hook" && $0["hook"] == "on-suspend" } }
        #expect(events.contains { $0["kind"] == "didSuspend" && $0["state"] == "suspended" }, "\(events.map(\.text))")
        #expect(events.contains { $0["event"] == "hook" && $0["status"] == 0 })
        let written = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        #expect(written.contains("BACKLINE_EVENT=suspend\n") && written.contains("BACKLINE_STATE=paused\n"), "\(written)")
        // Paused just after the seek: at 7.25 s, or a few ms on when the seek was heard first.
        let position = written.split(separator: "\n").first { $0.hasPrefix("BACKLINE_POSITION=") }
            .flatMap { Double($0.dropFirst("BACKLINE_POSITION=".count)) } ?? -1
        #expect(position >= 7.25 && position < 7.5, "\(written)")
        #expect(written.contains("BACKLINE_ITEM_PATH=\(d0.music)/long.mp3\n"), "\(written)")
        #expect(written.contains("BACKLINE_QUEUE_LENGTH=1\n") && written.contains("BACKLINE_TITLE=long.mp3\n"), "\(written)")
        #expect(d0.log().contains("suspended-hook-ran"), "hook output is logged")
        // Released: no stream of ours in the sound server.
        let inputs = try runProcess("pactl", ["list", "sink-inputs"], environment: sink.environment)
        #expect(!inputs.stdoutText.contains("process.id = \"\(d0.process?.pid ?? -1)\""), "\(inputs.stdoutText)")
        #expect(try c.request("ping").ok)
        #expect(try c.request("status")["app"] == "background", "status wakes it")
        events = try collect(w) { $0.contains { $0["event"] == "hook" && $0["hook"] == "on-resume" } }
        #expect(events.contains { $0["kind"] == "didResume" })
        #expect(((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").hasSuffix("BACKLINE_EVENT=resume\n"))
        // It plays on from where it was.
        _ = try c.request("play")
        #expect(eventually { (try? c.request("status"))?["elapsed"]?.number ?? 0 > 7.5 })
        d0.expectCleanStop()
    }
}
