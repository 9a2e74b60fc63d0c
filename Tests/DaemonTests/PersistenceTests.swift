import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import Testing

/// State across restarts: graceful stop, kill -9, a corrupt file.
@Suite("backline daemon: persistence", Harness.audioTools)
struct PersistenceTests {
    static let config = DaemonFixture.foreground

    @Test("SIGTERM mid-play, then kill -9 mid-play: each restart restores the queue, the item and the position (±2 s), paused; left for another item, a long one is kept and played on from there, 5 s back")
    func restart() throws {
        let d = try DaemonFixture.onSharedSink(config: Self.config + "resume-after = 0.5\n")
        try d.start()
        try d.request("mute", [("on", true)])
        #expect(try d.request("add", [("paths", ["album", "long.mp3"])])["items"] == [1, 2, 3, 4])
        try d.request("repeat", [("mode", "all")])
        try d.request("volume", [("volume", 70)])
        #expect(try d.request("play", [("item", 4)]).ok)
        try d.request("seek", [("position", 10)])
        #expect(eventually { (try? d.request("status"))?["elapsed"]?.number ?? 0 > 11 })

        // Graceful: exit 0, state saved at the position it stopped.
        let before = try d.request("status")["elapsed"]?.number ?? 0
        d.expectCleanStop()
        #expect(d.log().contains("shutting down") && d.log().contains("stopped"), "\(d.log())")
        try d.start()
        var s = try d.request("status")
        #expect(s["state"] == "paused", "restored paused: \(s.text)")
        #expect(s["current"]?["id"] == 4 && s["count"] == 4 && s["repeat"] == "all" && s["volume"] == 70 && s["muted"] == true)
        let restored = s["elapsed"]?.number ?? -1
        #expect(abs(restored - before) < 2, "saved \(before), restored \(restored)")
        #expect(try d.request("list")["items"]?.array?.compactMap { $0["id"]?.int } == [1, 2, 3, 4], "ids are kept")
        #expect(try d.request("add", [("path", "album/a.mp3")])["items"] == [5], "new ids continue after the saved ones")

        // kill -9 while playing: at most the last couple of seconds lost.
        #expect(try d.request("play").ok)
        #expect(eventually { (try? d.request("status"))?["elapsed"]?.number ?? 0 > restored + 3 })
        let atKill = try d.request("status")["elapsed"]?.number ?? 0
        try d.kill9()
        try d.start()
        s = try d.request("status")
        let afterKill = s["elapsed"]?.number ?? -1
        #expect(s["state"] == "paused" && s["current"]?["id"] == 4 && s["count"] == 5)
        #expect(afterKill <= atKill + 0.1 && atKill - afterKill < 2, "at kill \(atKill), restored \(afterKill)")
        // The restored item plays on from there.
        #expect(try d.request("play").ok)
        #expect(eventually { (try? d.request("status"))?["elapsed"]?.number ?? 0 > afterKill + 0.5 })

        // Left for another item, the 60 s item (remembered from 30 s here) is kept where it was
        // heard, and played again it goes on from there, 5 s back.
        let leftAt = try d.request("status")["elapsed"]?.number ?? -1
        #expect(try d.request("play", [("item", 1)]).ok)
        let marks = try d.request("bookmarks")["bookmarks"]?.array ?? []
        let kept = marks.first?["position"]?.number ?? -1
        #expect(marks.count == 1 && marks.first?["path"]?.string?.hasSuffix("/long.mp3") == true && kept >= leftAt && kept - leftAt < 0.5,
                "left at \(leftAt): \(marks)")
        #expect(try d.request("play", [("item", 4)]).ok)
        #expect(eventually { (try? d.request("status")).map { $0["current"]?["id"] == 4 && ($0["elapsed"]?.number ?? 0) > 0 } ?? false })
        let resumed = try d.request("status")["elapsed"]?.number ?? -1
        #expect(resumed >= kept - 5 && resumed < kept - 5 + 1, "kept at \(kept), resumed at \(resumed)")
        d.expectCleanStop()
    }

    @Test("kill -9 during a burst of saves never leaves a torn file")
    func killDuringSaves() throws {
        let d = try DaemonFixture.onSharedSink(config: Self.config + "save-interval = 0.2\n")
        for round in 0..<5 {
            try d.start()
            let c = try d.client()
            _ = try c.request("mute", [("on", true)])
            if round == 0 { _ = try c.request("add", [("path", "long.mp3")]) }
            _ = try c.request("play")
            // Saves every 0.2 s while playing, and after changes; kill while they are being written.
            for k in 0..<40 {
                _ = try c.request("add", [("path", "album/a.mp3")])
                _ = try c.request("volume", [("volume", .int(k % 100))])
            }
            usleep(UInt32(600_000 + round * 130_000))
            try d.kill9()
            let data = try #require(FileManager.default.contents(atPath: d.stateFile), "round \(round): no state file")
            let state = try JSON.parse(Array(data))
            #expect(state["format"] == "backline-state", "round \(round)")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: (d.stateFile as NSString).deletingLastPathComponent)
            #expect(!leftovers.contains { $0.contains("corrupt") }, "round \(round): \(leftovers)")
        }
        try d.start()
        #expect((try d.request("status")["count"]?.int ?? 0) == 201, "every change that had 0.6 s to be saved was kept")
        d.expectCleanStop()
    }

    @Test("a corrupt or foreign state file is moved aside with a warning; the daemon starts empty")
    func corrupt() throws {
        for (name, contents) in [("garbage", "{\"queue\": [tr"), ("foreign", "{\"format\":\"mpd\",\"version\":1}"), ("empty", "")] {
            let d = try DaemonFixture(device: "null", config: Self.config)
            try FileManager.default.createDirectory(atPath: (d.stateFile as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try contents.write(toFile: d.stateFile, atomically: true, encoding: .utf8)
            try d.start()
            #expect(try d.request("status")["count"] == 0, "\(name)")
            #expect(d.log().contains("state file unusable, moved aside"), "\(name): \(d.log())")
            let dir = (d.stateFile as NSString).deletingLastPathComponent
            let aside = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("state.json.corrupt-") }
            #expect(aside.count == 1, "\(name): \(aside)")
            if let a = aside.first {
                #expect(try String(contentsOfFile: dir + "/" + a, encoding: .utf8) == contents, "kept for inspection")
            }
            d.expectCleanStop()
        }
    }
}
