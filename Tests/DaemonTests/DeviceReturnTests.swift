import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import Testing

/// The sound server dies mid-play and comes back: `backline daemon` pauses where the listener
/// stopped hearing, refuses to "play" while there is nothing to play on, and once the server is
/// back goes on with the same item from that point, checked against recordings of the sink's
/// monitor before the crash and after the return.
@Suite("The sound server dies and returns: nothing is skipped (PulseAudio null sink)", .serialized, Harness.audioTools)
struct DeviceReturnTests {
    /// The daemon's output period: its default 200 ms buffer / 4.
    static let period = 0.05

    @Test("PulseAudio killed mid-play: paused, no item skipped or failed; `play` while it is down is an error (still paused); after it restarts, `play` continues the same item from where the recording stopped (± one period) and elapsed says so")
    func serverKilledAndRestarted() throws {
        let server = try PulseNullSink()  // a private server: this test kills it
        defer { server.stop() }
        let d = try DaemonFixture(device: server.alsaDevice, sinkEnvironment: server.environment,
                                  config: DaemonFixture.foreground)
        let files = try (0..<2).map { try Fixtures.noise("return-noise-\($0)", seconds: 12) }
        let refs = try files.map { try ReferenceDecoder.decodeS16($0) }
        for (k, f) in files.enumerated() {
            try FileManager.default.copyItem(atPath: f.path, toPath: d.music + "/return-\(k).mp3")
        }
        try d.start()
        let c = try d.client()
        let added = try c.request("add", [("paths", ["return-0.mp3", "return-1.mp3"])])
        let ids = (added["items"]?.array ?? []).compactMap(\.int)
        try #require(ids.count == 2, "\(added.text)")
        let subscriber = try d.client()
        _ = try subscriber.request("subscribe", [("events", ["current", "failed", "session", "state"])])
        let events = DaemonJumpTests.EventLog(subscriber, start: Date())

        // Before the crash: 2.5 s of the first item, recorded.
        let before = try server.startRecording()
        #expect(try c.request("play").ok)
        Thread.sleep(forTimeInterval: 2.5)
        server.kill()
        let paused = eventually(timeout: 5) { (try? c.request("status"))?["state"] == "paused" }
        let heardBefore = try before.stop()
        #expect(paused, "the daemon pauses when the server dies: \((try? c.request("status").text) ?? "")")

        // While the server is down: `play` is refused with the reason, and nothing moves.
        let refused = try c.request("play")
        #expect(refused.errorCode == "output-unavailable", "\(refused.text)")
        #expect(refused["error"]?["message"]?.string?.contains("paused where it stopped") == true, "\(refused.text)")
        let other = try c.request("play", [("item", .int(ids[1]))])
        #expect(other.errorCode == "output-unavailable", "\(other.text)")
        Thread.sleep(forTimeInterval: 0.7)
        let down = try c.request("status")
        #expect(down["state"] == "paused" && down["current"]?["id"]?.int == ids[0], "a refused play changes nothing: \(down.text)")
        let pausedAt = try #require(down["elapsed"]?.number)

        // The server comes back; `play` goes on with the same item.
        try server.restart()
        let after = try server.startRecording()
        let resumed = try c.request("play")
        #expect(resumed.ok && resumed["state"] == "playing", "\(resumed.text)")
        Thread.sleep(forTimeInterval: 2.5)
        let playing = try c.request("status")
        let heardAfter = try after.stop()
        let seen = events.stop()
        #expect(playing["state"] == "playing" && playing["current"]?["id"]?.int == ids[0], "\(playing.text)")
        #expect(!seen.contains { $0.name == "failed" }, "no failure: \(seen.map(\.name))")
        #expect(!seen.contains { $0.name == "current" && $0.event["item"]?["id"]?.int != ids[0] },
                "the current item never changes: \(seen.map(\.event.text))")
        #expect(seen.contains { $0.event["kind"] == "routeChanged" && $0.event["reason"] == "oldDeviceUnavailable" },
                "\(seen.map(\.event.text))")

        // What the recordings say: where the first item stopped sounding, and where it went on.
        let rate = Double(PulseNullSink.rate)
        let one = HeardTimeline(recording: heardBefore, rate: PulseNullSink.rate)
        let two = HeardTimeline(recording: heardAfter, rate: PulseNullSink.rate)
        let reference = HeardTimeline(recording: refs[0], rate: PulseNullSink.rate)
        let whole = refs[0].count / 2
        var lastSound = one.frameCount - 1
        func silent(_ f: Int) -> Bool {
            abs(Int(heardBefore[2 * f])) <= HeardTimeline.silenceThreshold && abs(Int(heardBefore[2 * f + 1])) <= HeardTimeline.silenceThreshold
        }
        while lastSound > 0, silent(lastSound) { lastSound -= 1 }
        try #require(lastSound > 5_000, "the first recording is silent")
        // 512 frames ending 1,000 frames before the end of the sound, located in the decode.
        let tail = lastSound - 1_000 - 512
        let tailHit = try #require(reference.locate(heardBefore, frame: tail, near: whole / 2, radius: whole),
                                   "the first recording's end is not the first item")
        let stoppedAt = Double(tailHit.frame + lastSound + 1 - tail) / rate
        let firstSound = try #require(two.firstSound(), "nothing was heard after the return")
        let head = firstSound + 2_048
        let headHit = try #require(reference.locate(heardAfter, frame: head, near: whole / 2, radius: whole),
                                   "what plays after the return is not the first item")
        let resumedAt = Double(headHit.frame - 2_048) / rate
        #expect(abs(resumedAt - stoppedAt) <= Self.period,
                "heard up to \(stoppedAt) s before the crash, went on at \(resumedAt) s")
        #expect(abs(pausedAt - stoppedAt) <= Self.period, "status said \(pausedAt) s while paused; heard up to \(stoppedAt) s")
        #expect(stoppedAt > 2, "the first item played ~2.5 s before the crash: \(stoppedAt)")
    }

    @Test("PulseAudio killed while paused: the loss is reported while paused and nothing moves; after it restarts, one `play` answers playing, status says playing with elapsed following the sound, and the recording goes on from the paused position (± one period)")
    func serverKilledWhilePausedAndRestarted() throws {
        let server = try PulseNullSink()  // a private server: this test kills it
        defer { server.stop() }
        let d = try DaemonFixture(device: server.alsaDevice, sinkEnvironment: server.environment,
                                  config: DaemonFixture.foreground)
        let file = try Fixtures.noise("return-paused-noise", seconds: 12)
        let ref = try ReferenceDecoder.decodeS16(file)
        try FileManager.default.copyItem(atPath: file.path, toPath: d.music + "/paused.mp3")
        try d.start()
        let c = try d.client()
        let added = try c.request("add", [("paths", ["paused.mp3"])])
        let ids = (added["items"]?.array ?? []).compactMap(\.int)
        let id = try #require(ids.first, "\(added.text)")
        let subscriber = try d.client()
        _ = try subscriber.request("subscribe", [("events", ["current", "failed", "session", "state"])])
        let start = Date()
        let events = DaemonJumpTests.EventLog(subscriber, start: start)

        // 2 s of the item, then paused; recorded.
        let before = try server.startRecording()
        #expect(try c.request("play").ok)
        Thread.sleep(forTimeInterval: 2)
        #expect(try c.request("pause")["state"] == "paused")
        Thread.sleep(forTimeInterval: 0.3)
        let heardBefore = try before.stop()
        let status = try c.request("status")
        let pausedAt = try #require(status["elapsed"]?.number)

        // Killed while paused (the stream corked): still paused, at the same place.
        server.kill()
        Thread.sleep(forTimeInterval: 1)
        let down = try c.request("status")
        #expect(down["state"] == "paused" && abs((down["elapsed"]?.number ?? -1) - pausedAt) <= Self.period,
                "the loss holds the paused position: \(down.text)")
        let restartedAt = Date().timeIntervalSince(start)
        try server.restart()

        // One `play` plays: its reply, the status a second later, the events, the recording.
        let after = try server.startRecording()
        let resumed = try c.request("play")
        #expect(resumed.ok && resumed["state"] == "playing", "the first play after the return: \(resumed.text)")
        Thread.sleep(forTimeInterval: 1)
        let playing = try c.request("status")
        #expect(playing["state"] == "playing" && playing["current"]?["id"]?.int == id, "\(playing.text)")
        let elapsed = playing["elapsed"]?.number ?? 0
        #expect(elapsed > pausedAt + 0.5 && elapsed < pausedAt + 1.5,
                "1 s after resuming at \(pausedAt) s, elapsed says \(elapsed) s")
        Thread.sleep(forTimeInterval: 1.5)
        let heardAfter = try after.stop()
        let seen = events.stop()
        #expect(!seen.contains { $0.name == "failed" }, "no failure: \(seen.map(\.name))")
        #expect(seen.contains { $0.event["kind"] == "routeChanged" && $0.event["reason"] == "oldDeviceUnavailable" && $0.wall < restartedAt },
                "the loss is reported while paused, before the server returns: \(seen.map { "\($0.wall) \($0.event.text)" })")
        let states = seen.filter { $0.wall > restartedAt && $0.name.hasPrefix("state:") }.map(\.name)
        #expect(states == ["state:playing"], "one play, playing, and no pause after it: \(states)")

        // What the recordings say: where the item stopped sounding at the pause, and where it went on.
        let rate = Double(PulseNullSink.rate)
        let one = HeardTimeline(recording: heardBefore, rate: PulseNullSink.rate)
        let two = HeardTimeline(recording: heardAfter, rate: PulseNullSink.rate)
        let reference = HeardTimeline(recording: ref, rate: PulseNullSink.rate)
        let whole = ref.count / 2
        var lastSound = one.frameCount - 1
        func silent(_ f: Int) -> Bool {
            abs(Int(heardBefore[2 * f])) <= HeardTimeline.silenceThreshold && abs(Int(heardBefore[2 * f + 1])) <= HeardTimeline.silenceThreshold
        }
        while lastSound > 0, silent(lastSound) { lastSound -= 1 }
        try #require(lastSound > 5_000, "the first recording is silent")
        let tail = lastSound - 1_000 - 512
        let tailHit = try #require(reference.locate(heardBefore, frame: tail, near: whole / 2, radius: whole),
                                   "the first recording's end is not the item")
        let stoppedAt = Double(tailHit.frame + lastSound + 1 - tail) / rate
        let firstSound = try #require(two.firstSound(), "nothing was heard after the return")
        let head = firstSound + 2_048
        let headHit = try #require(reference.locate(heardAfter, frame: head, near: whole / 2, radius: whole),
                                   "what plays after the return is not the item")
        let resumedAt = Double(headHit.frame - 2_048) / rate
        #expect(abs(resumedAt - stoppedAt) <= Self.period, "paused at \(stoppedAt) s, went on at \(resumedAt) s")
        #expect(abs(pausedAt - stoppedAt) <= Self.period, "status said \(pausedAt) s while paused; heard up to \(stoppedAt) s")
    }
}
