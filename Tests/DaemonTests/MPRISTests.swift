import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import MPRIS
import Testing

/// The daemon on a private D-Bus session bus as an MPRIS2 player, driven by Debian's own
/// `playerctl`, `busctl` and watched with `dbus-monitor`; its own status checked each time.
@Suite("backline daemon on D-Bus: MPRIS2 with playerctl", Harness.audioTools,
       .enabled(if: Harness.has("playerctl"), "needs playerctl"))
struct MPRISTests {
    /// A daemon on `bus`, muted, with the demo track (tags, artwork), `long.mp3` and `album/a.mp3` queued.
    static func daemon(_ bus: PrivateBus, extra: [String] = []) throws -> DaemonFixture {
        let d = try DaemonFixture.onSharedSink(config: DaemonFixture.foreground, bus: bus.address)
        try FileManager.default.createDirectory(atPath: d.music + "/demo", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try #require(Fixtures.demoTracks.first).path, toPath: d.music + "/demo/sunrise.mp3")
        try d.start(extra)
        #expect(try d.request("mute", [("on", true)]).ok)
        #expect(try d.request("add", [("paths", ["demo/sunrise.mp3", "long.mp3", "album/a.mp3"])]).ok)
        return d
    }

    static func playerctl(_ bus: PrivateBus, _ args: String...) throws -> String {
        let r = try runProcess("/usr/bin/playerctl", args, environment: bus.environment, timeout: 20)
        #expect(r.status == 0, "playerctl \(args.joined(separator: " ")): \(r.stderr)")
        return r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func busctl(_ bus: PrivateBus, _ args: [String]) throws -> ProcessResult {
        try runProcess("/usr/bin/busctl", ["--user", "call", "org.mpris.MediaPlayer2.backline", "/org/mpris/MediaPlayer2",
                                           "org.mpris.MediaPlayer2.Player"] + args,
                       environment: bus.environment, timeout: 20)
    }

    @Test("playerctl: -l lists the daemon; status and every metadata key; play-pause, next, previous, position 30 and 5+, volume, loop, shuffle; the daemon's own status agrees each time")
    func playerctl() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let d = try Self.daemon(bus)
        func pc(_ args: String...) throws -> String {
            let r = try runProcess("/usr/bin/playerctl", ["-p", "backline"] + args, environment: bus.environment, timeout: 20)
            #expect(r.status == 0, "playerctl \(args.joined(separator: " ")): \(r.stderr)")
            return r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func status() throws -> JSON { try d.request("status") }

        #expect(try Self.playerctl(bus, "-l").split(separator: "\n").contains("backline"))
        #expect(try pc("status") == "Stopped")
        #expect(try d.request("play").ok)
        #expect(eventually { (try? pc("status")) == "Playing" })

        // Metadata: the demo track's tags, its exact length, the stable id, the file, the artwork.
        let meta = try pc("metadata", "--format",
                          "{{mpris:trackid}}|{{mpris:length}}|{{xesam:title}}|{{xesam:artist}}|{{xesam:album}}|{{xesam:trackNumber}}|{{xesam:url}}|{{mpris:artUrl}}")
        let f = meta.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        #expect(f.count == 8, "\(meta)")
        guard f.count == 8 else { return }
        let id = try #require(try status()["current"]?["id"]?.int)
        #expect(f[0] == "'/org/mpris/MediaPlayer2/Track/\(id)'", "an object path, which playerctl quotes")
        #expect(f[1] == "8000000", "mpris:length, µs: \(f[1])")
        #expect(f[2] == "Sunrise Chord" && f[3] == "Backline" && f[4] == "Backline Demo" && f[5] == "1", "\(f)")
        #expect(f[6] == "file://" + d.music + "/demo/sunrise.mp3")
        #expect(f[7].hasPrefix("file://" + d.dir.path + "/cache/backline/art/") && f[7].hasSuffix(".png"), "\(f[7])")
        let art = try Data(contentsOf: URL(fileURLWithPath: String(f[7].dropFirst(7))))
        #expect(Array(art.prefix(4)) == [0x89, 0x50, 0x4E, 0x47], "the embedded PNG, written once to the cache")

        // Transport.
        _ = try pc("play-pause")
        #expect(eventually { (try? status()["state"]) == "paused" })
        #expect(try pc("status") == "Paused")
        _ = try pc("play-pause")
        #expect(eventually { (try? status()["state"]) == "playing" })
        _ = try pc("next")
        #expect(eventually { (try? status()["current"]?["path"]?.string)?.hasSuffix("/long.mp3") == true })
        #expect(eventually { (try? pc("metadata", "xesam:title")) == "long.mp3" }, "untagged: the file name")
        _ = try pc("position", "30")
        #expect(eventually { ((try? status()["elapsed"]?.number) ?? 0) >= 30 })
        let at30 = try #require(try status()["elapsed"]?.number)
        #expect(at30 < 31.5, "\(at30)")
        _ = try pc("position", "5+")
        #expect(eventually { ((try? status()["elapsed"]?.number) ?? 0) >= 35 })
        let position = Double(try pc("position")) ?? 0
        #expect(position >= 35 && position < 37, "playerctl's position is the heard one: \(position)")
        _ = try pc("previous")  // more than 3 s in: back to the start of the item
        #expect(eventually { ((try? status()["elapsed"]?.number) ?? 99) < 2 })
        _ = try pc("previous")
        #expect(eventually { (try? status()["current"]?["id"]?.int) == id })

        // Volume, loop, shuffle: properties set through the same commands.
        _ = try pc("volume", "0.5")
        #expect(eventually { (try? status()["volume"]?.number) == 50 })
        #expect(try pc("volume").hasPrefix("0.5"))
        _ = try pc("loop", "Track")
        #expect(eventually { (try? status()["repeat"]) == "one" })
        #expect(try pc("loop") == "Track")
        _ = try pc("loop", "Playlist")
        #expect(eventually { (try? status()["repeat"]) == "all" })
        _ = try pc("shuffle", "On")
        #expect(eventually { (try? status()["shuffle"]) == true })
        #expect(try pc("shuffle") == "On")
        // And the other way round: a change over the JSON protocol shows on the bus.
        #expect(try d.request("repeat", [("mode", "off")]).ok)
        #expect(eventually { (try? pc("loop")) == "None" })
        d.expectCleanStop()
    }

    @Test("speed through every door: JSON `speed` and `status`, ctl, MPRIS Rate (read and set; MinimumRate 0.5, MaximumRate 3; out of range an error), `rate 2` plays at 2; saved across a restart; out of range refused")
    func speed() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let d = try Self.daemon(bus)
        func property(_ name: String) throws -> String {
            let r = try runProcess("/usr/bin/busctl", ["--user", "get-property", "org.mpris.MediaPlayer2.backline", "/org/mpris/MediaPlayer2",
                                                       "org.mpris.MediaPlayer2.Player", name], environment: bus.environment, timeout: 20)
            #expect(r.status == 0, "\(r.stderr)")
            return r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func setRate(_ value: String) throws -> ProcessResult {
            try runProcess("/usr/bin/busctl", ["--user", "set-property", "org.mpris.MediaPlayer2.backline", "/org/mpris/MediaPlayer2",
                                               "org.mpris.MediaPlayer2.Player", "Rate", "d", value], environment: bus.environment, timeout: 20)
        }
        #expect(try d.request("status")["speed"] == 1)
        #expect(try property("MinimumRate") == "d 0.5" && (try property("MaximumRate")) == "d 3", "the rates offered")
        let set = try d.request("speed", [("speed", 1.5)])
        #expect(set["speed"] == 1.5, "\(set.text)")
        #expect(try d.request("status")["state"] == "stopped", "a speed does not play")
        #expect(try d.request("play").ok)
        #expect(eventually { (try? property("Rate")) == "d 1.5" }, "MPRIS's Rate is the rate playing")
        #expect(try setRate("2").status == 0)
        #expect(eventually { (try? d.request("status")["speed"]) == 2 }, "set through MPRIS")
        #expect(try d.request("status")["rate"] == 2)
        let refused = try setRate("4")
        #expect(refused.status != 0 && refused.stderr.contains("Rate is 0.5 to 3"), "\(refused.stderr)")
        #expect(try d.ctl(["speed"]).stdoutText == "speed: 2×\n")
        #expect(try d.ctl(["speed", "0.75"]).stdoutText == "speed: 0.75×\n")
        let bad = try d.ctl(["speed", "5"])
        #expect(bad.status != 0 && bad.stderr.contains("expected a rate from 0.5 to 3"), "\(bad.stderr)")
        #expect(try d.request("speed", [("speed", 0.2)]).errorCode == "bad-argument")
        #expect(try d.request("pause").ok)
        let rate = try d.request("rate", [("rate", 1.25)])
        #expect(rate["rate"] == 1.25, "\(rate.text)")
        #expect(try d.request("status")["state"] == "playing", "rate plays at that rate")
        #expect(try d.request("status")["speed"] == 1.25)
        d.expectCleanStop()
        try d.start([])
        #expect(try d.request("status")["speed"] == 1.25, "saved and restored")
        d.expectCleanStop()
    }

    @Test("the full tag set reaches every surface: MPRIS xesam:genre (both genres), xesam:contentCreated, xesam:composer; the JSON list's and now-playing's tags; ctl now-playing's genre and date lines")
    func tags() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let d = try Self.daemon(bus)
        try MPDDifferentialTests.makeTree(d.music)
        // A second genre: ID3v2.3 `(17)(8)` is Rock and Jazz (as mpd's libid3tag reads it).
        let src = try Fixtures.tone("tags-two-genres", seconds: 3, frequency: 500)
        let r = try runProcess("lame", ["--quiet", "--decode", src.path, d.dir.path + "/t.wav"])
        #expect(r.status == 0)
        let e = try runProcess("lame", ["--quiet", "--id3v2-only", "--tt", "Two", "--ta", "Duo", "--ty", "2004", "--tv", "TCON=(17)(8)",
                                        "--tv", "TCOM=Carl Composer", d.dir.path + "/t.wav", d.music + "/Beta/two.mp3"])
        #expect(e.status == 0, "\(e.stderr)")
        #expect(try d.request("clear").ok)
        #expect(try d.request("add", [("paths", ["Beta/two.mp3", "Alpha"])]).ok)
        let list = try d.request("list")
        let first = list["items"]?.array?.first?["tags"]
        #expect(first?["genre"] == .array([.string("Rock"), .string("Jazz")]), "\(list.text.prefix(400))")
        #expect(first?["date"] == .array([.string("2004")]) && first?["composer"] == .array([.string("Carl Composer")]))
        #expect(try d.request("play").ok)
        #expect(eventually { (try? Self.playerctl(bus, "-p", "backline", "status")) == "Playing" })
        let meta = try Self.playerctl(bus, "-p", "backline", "metadata", "--format",
                                      "{{xesam:title}}|{{xesam:genre}}|{{xesam:contentCreated}}|{{xesam:composer}}")
        #expect(meta == "Two|Rock, Jazz|2004|Carl Composer", "\(meta)")
        let now = try d.request("now-playing")
        #expect(now["info"]?["tags"]?["genre"] == .array([.string("Rock"), .string("Jazz")]), "\(now.text.prefix(400))")
        let ctl = try d.ctl(["now-playing"]).stdoutText
        #expect(ctl.contains("genre: Rock, Jazz\n") && ctl.contains("date: 2004\n") && ctl.contains("composer: Carl Composer\n"), "\(ctl)")
        d.expectCleanStop()
    }

    @Test("busctl: SetPosition with a stale track id is ignored; Seek past the end is Next; OpenUri with a bad URI and calls with wrong argument types are D-Bus errors; the daemon lives; OpenUri with a file, and with an http stream, plays it")
    func edgeCases() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let d = try Self.daemon(bus)
        #expect(try d.request("play", [("item", 2)]).ok)  // long.mp3
        #expect(try d.request("seek", [("position", 10)]).ok)
        #expect(eventually { (try? Self.playerctl(bus, "-p", "backline", "status")) == "Playing" })

        let stale = try Self.busctl(bus, ["SetPosition", "ox", "/org/mpris/MediaPlayer2/Track/1", "50000000"])
        #expect(stale.status == 0, "ignored, not an error: \(stale.stderr)")
        Thread.sleep(forTimeInterval: 0.3)
        let elapsed = try #require(try d.request("status")["elapsed"]?.number)
        #expect(elapsed > 9 && elapsed < 13, "a stale track id moved nothing: \(elapsed)")
        #expect(try Self.busctl(bus, ["SetPosition", "ox", "/org/mpris/MediaPlayer2/Track/2", "40000000"]).status == 0)
        #expect(eventually { ((try? d.request("status")["elapsed"]?.number) ?? 0) >= 40 })

        #expect(try Self.busctl(bus, ["Seek", "x", "100000000"]).status == 0)
        #expect(eventually { (try? d.request("status")["current"]?["id"]?.int) == 3 }, "past the end: the next item")

        let bad = try Self.busctl(bus, ["OpenUri", "s", "ftp://example.invalid/x.mp3"])
        #expect(bad.status != 0 && bad.stderr.contains("only file://, http://, https:// URIs can be opened"), "\(bad.stderr)")
        let missing = try Self.busctl(bus, ["OpenUri", "s", "file://" + d.music + "/nothing.mp3"])
        #expect(missing.status != 0 && missing.stderr.contains("no such file"), "\(missing.stderr)")
        let wrong = try Self.busctl(bus, ["Seek", "s", "soon"])
        #expect(wrong.status != 0 && wrong.stderr.contains("Seek takes (x)"), "\(wrong.stderr)")
        let wrongSet = try runProcess("/usr/bin/busctl", ["--user", "set-property", "org.mpris.MediaPlayer2.backline", "/org/mpris/MediaPlayer2",
                                                          "org.mpris.MediaPlayer2.Player", "LoopStatus", "s", "Sometimes"],
                                      environment: bus.environment, timeout: 20)
        #expect(wrongSet.status != 0 && wrongSet.stderr.contains("LoopStatus is None, Track or Playlist"), "\(wrongSet.stderr)")
        #expect(try d.request("list")["items"]?.array?.count == 3, "nothing was added")

        let open = try Self.busctl(bus, ["OpenUri", "s", "file://" + d.music + "/album/b.mp3"])
        #expect(open.status == 0, "\(open.stderr)")
        #expect(eventually { (try? d.request("status")["current"]?["path"]?.string)?.hasSuffix("/album/b.mp3") == true })
        // A stream: http and https are supported schemes, and OpenUri plays one.
        let schemes = try runProcess("/usr/bin/busctl", ["--user", "get-property", "org.mpris.MediaPlayer2.backline", "/org/mpris/MediaPlayer2",
                                                         "org.mpris.MediaPlayer2", "SupportedUriSchemes"], environment: bus.environment, timeout: 20)
        #expect(schemes.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "as 3 \"file\" \"http\" \"https\"", "\(schemes.stdoutText)")
        let dir = try Harness.makeTemporaryDirectory("mpris-stream")
        try FileManager.default.copyItem(at: try Fixtures.tone("mpris-stream", seconds: 2, frequency: 500), to: dir.appendingPathComponent("s.mp3"))
        let server = try HTTPTestServer(directory: dir)
        let stream = try Self.busctl(bus, ["OpenUri", "s", server.url("files/s.mp3")])
        #expect(stream.status == 0, "\(stream.stderr)")
        #expect(eventually { (try? d.request("status")["current"]?["path"]?.string) == server.url("files/s.mp3") })
        #expect(try d.request("ping").ok)
        d.expectCleanStop()
    }

    @Test("busctl: OpenUri of a playlist URL is answered at once, its fetch off the bus's thread: one that answers is queued and played, one that drips is answered without waiting for it (its failure logged once its 10 s are up)")
    func openPlaylistURL() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let d = try Self.daemon(bus)
        let dir = try Harness.makeTemporaryDirectory("mpris-playlist")
        try FileManager.default.copyItem(at: try Fixtures.tone("mpris-playlist", seconds: 2, frequency: 500), to: dir.appendingPathComponent("s.mp3"))
        try "s.mp3\n".write(to: dir.appendingPathComponent("radio.m3u"), atomically: true, encoding: .utf8)
        let server = try HTTPTestServer(directory: dir)
        let good = try Self.busctl(bus, ["OpenUri", "s", server.url("files/radio.m3u")])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(eventually { (try? d.request("status")["current"]?["path"]?.string) == server.url("files/s.mp3") })
        let slow = try Self.busctl(bus, ["OpenUri", "s", server.url("drip/radio.m3u")])
        #expect(slow.status == 0, "answered with an error, after the fetch: \(slow.stderr)")
        #expect(try Self.playerctl(bus, "-p", "backline", "status") == "Playing")
        #expect(eventually(timeout: 20) { d.log().contains("did not send all of it in time") }, "\(d.log().suffix(1000))")
        #expect(try d.request("list")["items"]?.array?.count == 4)
        d.expectCleanStop()
    }

    @Test("changes are signalled, not polled: one PropertiesChanged per transition, Seeked after a seek, playerctl -F follows; --no-mpris and no bus at all leave the daemon working")
    func signalsAndNoBus() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let d = try Self.daemon(bus)
        #expect(try d.request("play").ok)
        #expect(eventually { (try? Self.playerctl(bus, "-p", "backline", "status")) == "Playing" })
        let monitor = try SpawnedProcess("/usr/bin/dbus-monitor", ["--session", "type='signal',path='/org/mpris/MediaPlayer2'"],
                                         environment: bus.environment)
        let follow = try SpawnedProcess("/usr/bin/playerctl", ["-p", "backline", "-F", "status"], environment: bus.environment)
        defer {
            monitor.signal(SIGTERM)
            follow.signal(SIGTERM)
        }
        Thread.sleep(forTimeInterval: 1)
        func signals() -> (changed: Int, seeked: Int) {
            let text = monitor.stdout
            return (text.components(separatedBy: "member=PropertiesChanged").count - 1, text.components(separatedBy: "member=Seeked").count - 1)
        }
        let before = signals()
        #expect(before == (0, 0), "nothing while nothing changes (no Position stream): \(before)")
        #expect(try d.request("pause").ok)
        Thread.sleep(forTimeInterval: 0.6)
        #expect(signals() == (1, 0), "one PropertiesChanged for a pause: \(signals())")
        #expect(try d.request("play").ok)
        Thread.sleep(forTimeInterval: 0.6)
        #expect(signals() == (2, 0))
        #expect(try d.request("seek", [("position", 5)]).ok)
        Thread.sleep(forTimeInterval: 0.6)
        #expect(signals().seeked == 1, "\(signals())")
        #expect(monitor.stdout.contains("int64 50"), "Seeked carries the position (µs): \(monitor.stdout.suffix(300))")
        Thread.sleep(forTimeInterval: 1.5)
        #expect(signals().changed == 2, "playing on: no more signals")
        #expect(follow.stdout.split(separator: "\n") == ["Playing", "Paused", "Playing"], "\(follow.stdout)")
        d.expectCleanStop()

        // --no-mpris: nothing on the bus.
        try d.start(["--no-mpris"])
        let none = try runProcess("/usr/bin/playerctl", ["-l"], environment: bus.environment, timeout: 20)
        #expect(!none.stdoutText.contains("backline"), "\(none.stdoutText)")
        d.expectCleanStop()

        // No bus at all: the daemon works, and says so once, at debug level.
        let lone = try DaemonFixture.onSharedSink(config: DaemonFixture.foreground)
        try lone.start()
        #expect(try lone.request("add", [("path", "album/a.mp3")]).ok)
        #expect(try lone.request("ping").ok)
        lone.expectCleanStop()
        #expect(lone.log().components(separatedBy: "no MPRIS").count - 1 == 1, "\(lone.log())")
    }

    @Test("backline play is org.mpris.MediaPlayer2.backline.instance<PID>: listed beside the daemon, its metadata, pause and play from playerctl heard as its state, Quit ends it with status 0")
    func playInstance() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let sink = try PulseNullSink()  // its own sink: `play` is not muted
        defer { sink.stop() }
        let d = try Self.daemon(bus)
        let file = d.music + "/long.mp3"
        let p = try SpawnedProcess(backline, ["play", "--device", sink.alsaDevice, file],
                                   environment: sink.environment.merging(bus.environment) { $1 })
        defer { if p.isRunning { p.signal(SIGKILL) } }
        let name = "backline.instance\(p.pid)"
        #expect(eventually { (try? Self.playerctl(bus, "-l").split(separator: "\n").map(String.init)).map { Set($0).isSuperset(of: ["backline", name]) } == true })
        #expect(eventually { (try? Self.playerctl(bus, "-p", name, "status")) == "Playing" })
        #expect(try Self.playerctl(bus, "-p", name, "metadata", "--format", "{{xesam:title}}|{{mpris:length}}|{{xesam:url}}")
                == "long.mp3|60000000|file://" + file)
        _ = try Self.playerctl(bus, "-p", name, "pause")
        #expect(eventually { (try? Self.playerctl(bus, "-p", name, "status")) == "Paused" })
        let paused = Double(try Self.playerctl(bus, "-p", name, "position")) ?? -1
        Thread.sleep(forTimeInterval: 0.5)
        #expect(Double(try Self.playerctl(bus, "-p", name, "position")) == paused, "paused: the position holds")
        _ = try Self.playerctl(bus, "-p", name, "play")
        #expect(eventually { (try? Self.playerctl(bus, "-p", name, "status")) == "Playing" })
        #expect(try Self.playerctl(bus, "-p", "backline", "status") == "Stopped", "the daemon is another player")
        let quit = try runProcess("/usr/bin/busctl", ["--user", "call", "org.mpris.MediaPlayer2." + name, "/org/mpris/MediaPlayer2",
                                                      "org.mpris.MediaPlayer2", "Quit"], environment: bus.environment, timeout: 20)
        #expect(quit.status == 0, "\(quit.stderr)")
        #expect(try p.wait(timeout: 10) == 0)
        #expect(!(try Self.playerctl(bus, "-l")).contains(name), "gone from the bus")
        d.expectCleanStop()
    }

    @Test("notifications: the daemon with --notify posts each new current item through org.freedesktop.Notifications (seen on the bus); the library delivers a scheduled one when due and refuses the 129th pending")
    func notifications() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let monitor = try SpawnedProcess("/usr/bin/dbus-monitor", ["--session", "type='method_call',interface='org.freedesktop.Notifications'"],
                                         environment: bus.environment)
        defer { monitor.signal(SIGTERM) }
        // Listening once it has its name (a fixed half second missed the first call on a loaded machine).
        #expect(eventually(timeout: 20) { monitor.stdout.contains("NameAcquired") }, "dbus-monitor started: \(monitor.stdout.suffix(300))")
        Thread.sleep(forTimeInterval: 0.2)
        func calls() -> [String] {
            // Each Notify call: the summary is its 4th string argument.
            monitor.stdout.components(separatedBy: "member=Notify").dropFirst().map { call in
                let strings = call.split(separator: "\n").filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("string \"") }
                return strings.count > 2 ? String(strings[2].trimmingCharacters(in: .whitespaces).dropFirst(8).dropLast()) : "?"
            }
        }
        let d = try Self.daemon(bus, extra: ["--notify"])
        #expect(try d.request("play").ok)
        #expect(eventually { calls().contains("Sunrise Chord") }, "\(monitor.stdout.suffix(600))")
        #expect(try d.request("next").ok)
        #expect(eventually { calls().contains("long.mp3") }, "\(calls())")
        #expect(monitor.stdout.contains("string \"Backline\""), "the app name")
        d.expectCleanStop()

        // The library: one scheduled a second ahead is delivered then; 128 pending at most.
        let center = try LocalNotificationCenter(appName: "test", address: bus.address)
        let soon = try center.schedule(LocalNotification(fireDate: Date().addingTimeInterval(1), alertTitle: "Alarm", alertBody: "07:30"))
        #expect(center.scheduled.map(\.id) == [soon])
        #expect(!calls().contains("Alarm"))
        #expect(eventually(timeout: 5) { calls().contains("Alarm") })
        #expect(eventually { center.scheduled.isEmpty }, "delivered, no longer pending")
        var ids: [UInt64] = []
        for k in 0..<LocalNotificationCenter.limit {
            ids.append(try center.schedule(LocalNotification(fireDate: Date().addingTimeInterval(3600), alertTitle: "later \(k)")))
        }
        #expect(throws: LocalNotificationError.self) {
            try center.schedule(LocalNotification(fireDate: Date().addingTimeInterval(3600), alertTitle: "one too many"))
        }
        center.cancel(ids[0])
        #expect(center.scheduled.count == LocalNotificationCenter.limit - 1)
        _ = try center.schedule(LocalNotification(fireDate: Date().addingTimeInterval(3600), alertTitle: "fits again"))
        center.cancelAll()
        #expect(center.scheduled.isEmpty)
    }

    @Test("TrackList: Tracks are the queue's stable ids; GetTracksMetadata, GoTo, RemoveTrack, AddTrack run the same commands; a queue change is one TrackListReplaced")
    func trackList() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let d = try Self.daemon(bus)
        func busctl(_ args: [String]) throws -> String {
            let r = try runProcess("/usr/bin/busctl", ["--user"] + args, environment: bus.environment, timeout: 20)
            #expect(r.status == 0, "busctl \(args.joined(separator: " ")): \(r.stderr)")
            return r.stdoutText
        }
        let object = ["org.mpris.MediaPlayer2.backline", "/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.TrackList"]
        let track = { (id: Int) in "/org/mpris/MediaPlayer2/Track/\(id)" }
        #expect(try busctl(["get-property"] + object.prefix(2) + ["org.mpris.MediaPlayer2", "HasTrackList"]) == "b true\n")
        #expect(try busctl(["get-property"] + object + ["Tracks"]) == "ao 3 \"\(track(1))\" \"\(track(2))\" \"\(track(3))\"\n")
        let meta = try busctl(["call"] + object + ["GetTracksMetadata", "ao", "2", track(1), track(3)])
        #expect(meta.hasPrefix("aa{sv} 2 ") && meta.contains("\"Sunrise Chord\"") && meta.contains("\"a.mp3\"") && !meta.contains("long.mp3"), "\(meta)")

        let monitor = try SpawnedProcess("/usr/bin/dbus-monitor", ["--session", "type='signal',member='TrackListReplaced'"], environment: bus.environment)
        defer { monitor.signal(SIGTERM) }
        #expect(eventually(timeout: 20) { monitor.stdout.contains("NameAcquired") }, "dbus-monitor started")
        Thread.sleep(forTimeInterval: 0.2)
        _ = try busctl(["call"] + object + ["GoTo", "o", track(3)])
        #expect(eventually { (try? d.request("status")["current"]?["id"]?.int) == 3 })
        _ = try busctl(["call"] + object + ["RemoveTrack", "o", track(2)])
        #expect(eventually { (try? d.request("list")["items"]?.array?.map { $0["id"]?.int }) == [1, 3] })
        _ = try busctl(["call"] + object + ["AddTrack", "sob", "file://" + d.music + "/album/b.mp3", track(1), "true"])
        #expect(eventually { (try? d.request("status")["current"]?["path"]?.string)?.hasSuffix("/album/b.mp3") == true })
        let ids = try #require(try d.request("list")["items"]?.array?.compactMap { $0["id"]?.int })
        #expect(ids.count == 3 && ids[0] == 1 && ids[2] == 3, "added after track 1: \(ids)")
        #expect(try d.request("add", [("path", "album/c.mp3")]).ok)
        #expect(eventually { monitor.stdout.components(separatedBy: "member=TrackListReplaced").count - 1 >= 3 }, "\(monitor.stdout.suffix(400))")
        let bad = try runProcess("/usr/bin/busctl", ["--user", "call"] + object + ["AddTrack", "sob", "http://example.invalid/x", track(1), "false"],
                                 environment: bus.environment, timeout: 20)
        #expect(bad.status != 0 && bad.stderr.contains("only file:// URIs"), "\(bad.stderr)")
        d.expectCleanStop()
    }
}
