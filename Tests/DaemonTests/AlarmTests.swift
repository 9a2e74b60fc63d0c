import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import MediaCore
import Testing

/// Alarms, the sleep timer's twin: set through `ctl`, kept across a restart, fired at the time
/// of day by a real daemon (waking it from suspension), fading in.
@Suite("backline daemon: alarms", Harness.audioTools)
struct AlarmTests {
    /// `HH:MM:SS`, local time, `seconds` from now.
    static func timeOfDay(in seconds: Double) -> String {
        let c = Calendar.current.dateComponents([.hour, .minute, .second], from: Date().addingTimeInterval(seconds))
        return String(format: "%02d:%02d:%02d", c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
    }

    @Test("an alarm set before a restart fires at its time after it: the suspended daemon wakes, plays the item asked for, fades in to the volume set; a one-time alarm is then gone; ctl lists and cancels, bad times are refused")
    func firesAcrossARestart() throws {
        let d = try DaemonFixture.onSharedSink(config: "background-grace = 0.5\n")  // starts in the background
        try d.start()
        #expect(try d.request("mute", [("on", true)]).ok)
        #expect(try d.request("volume", [("volume", 80)]).ok)
        #expect(try d.request("add", [("paths", ["album/a.mp3", "long.mp3"])]).ok)

        // ctl: wrong input, a daily one listed and cancelled.
        let bad = try d.ctl(["alarm", "25:00"])
        #expect(bad.status != 0 && bad.stderr.contains("time is HH:MM or HH:MM:SS"), "\(bad.stderr)")
        let noItem = try d.ctl(["alarm", "07:30", "--play", "999"])
        #expect(noItem.status != 0 && noItem.stderr.contains("no item with id 999"), "\(noItem.stderr)")
        let daily = try d.ctl(["alarm", "07:30", "--daily", "--fade", "30"])
        #expect(daily.status == 0 && daily.stdoutText.hasPrefix("1. 07:30:00 daily, fading in over 30 s (next "), "\(daily.stdoutText)")
        #expect(try d.ctl(["alarm", "--cancel", "1"]).stdoutText == "(no alarms)\n")
        #expect(try d.ctl(["alarm", "--cancel", "1"]).status != 0, "already gone")

        // One that fires in ~10 s, playing item 2 and fading in over 2 s; then a restart.
        let time = Self.timeOfDay(in: 10)
        let set = try d.ctl(["alarm", time, "--play", "2", "--fade", "2"])
        #expect(set.status == 0 && set.stdoutText.contains(time + ", fading in over 2 s, plays item 2"), "\(set.stdoutText)")
        d.expectCleanStop()
        try d.start()
        #expect(try d.ctl(["alarm"]).stdoutText.contains(time), "kept across the restart")
        let w = try d.client()
        #expect(try w.request("subscribe", [("events", ["alarm", "lifecycle", "volume"])]).ok)

        // Nothing plays in the background: suspended (watched through events: a command would wake it).
        var events: [JSON] = []
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline, !events.contains(where: { $0["event"] == "lifecycle" && $0["state"] == "suspended" }) {
            if let e = try w.nextEvent(timeout: 0.2) { events.append(e) }
        }
        #expect(events.contains { $0["event"] == "lifecycle" && $0["state"] == "suspended" }, "\(events.map(\.text))")

        // The alarm: playing item 2, awake, fading in from silence to 80 %.
        while Date() < deadline, !events.contains(where: { $0["event"] == "alarm" && $0["kind"] == "fired" }) {
            if let e = try w.nextEvent(timeout: 0.2) { events.append(e) }
        }
        let fired = try #require(events.first { $0["event"] == "alarm" && $0["kind"] == "fired" }, "\(events.map(\.text))")
        #expect(fired["alarm"]?["time"]?.string == time)
        let status = try d.request("status")
        #expect(status["state"] == "playing" && status["current"]?["id"] == 2, "\(status.text)")
        #expect(status["app"] != "suspended")
        let early = try #require(status["volume"]?.number)
        #expect(early < 60, "fading in: \(early)")
        #expect(eventually(timeout: 5) { (try? d.request("status")["volume"]?.number) == 80 }, "the volume set, reached")
        #expect(try d.ctl(["alarm"]).stdoutText == "(no alarms)\n", "a one-time alarm is gone once fired")
        d.expectCleanStop()
    }
}
