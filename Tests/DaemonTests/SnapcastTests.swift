import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import Testing

/// Backline as a Snapcast source: `backline daemon --device pipe:FIFO` feeding a real
/// `snapserver` (Debian's 0.26, a private config on loopback), heard through a real `snapclient`
/// writing what it plays to a file.
@Suite("Backline as a Snapcast source: daemon → FIFO → snapserver → snapclient", .serialized,
       .enabled(if: Harness.has("snapserver", "snapclient"), "needs snapserver and snapclient"))
struct SnapcastTests {
    /// A private snapserver whose streams each read a FIFO it makes (`mode=create`): `default`
    /// reads ``fifo``, any other stream `snapfifo-NAME`.
    final class SnapServer {
        let dir: URL
        let fifo: String
        let streamPort: Int, controlPort: Int, httpPort: Int
        let process: SpawnedProcess

        /// `controlScripts`: each stream's plugin, by stream (snapserver runs it; `meta_mpd.py`
        /// through a wrapper that points it at our MPD listener, ``metaMPD(_:port:name:)``).
        init(in dir: URL, streams: [String] = ["default"], controlScripts: [String: String] = [:]) throws {
            self.dir = dir
            fifo = dir.appendingPathComponent("snapfifo").path
            let ports = HardeningTests.ports(3)
            (streamPort, controlPort, httpPort) = (ports[0], ports[1], ports[2])
            let conf = dir.appendingPathComponent("snapserver.conf")
            try """
                [server]
                datadir = \(dir.path)/data
                [http]
                enabled = true
                bind_to_address = 127.0.0.1
                port = \(httpPort)
                doc_root =
                [tcp]
                enabled = true
                bind_to_address = 127.0.0.1
                port = \(controlPort)
                [stream]
                bind_to_address = 127.0.0.1
                port = \(streamPort)
                \(streams.map { "source = pipe://\(Self.fifo(dir, $0))?name=\($0)&mode=create" + (controlScripts[$0].map { "&controlscript=" + $0 } ?? "") }
                    .joined(separator: "\n"))
                [logging]
                """.write(to: conf, atomically: true, encoding: .utf8)
            try FileManager.default.createDirectory(at: dir.appendingPathComponent("data"), withIntermediateDirectories: true)
            process = try SpawnedProcess("snapserver", ["-c", conf.path])
            guard eventually(timeout: 10, { streams.allSatisfy { FileManager.default.fileExists(atPath: Self.fifo(dir, $0)) } }) else {
                throw HarnessError("snapserver did not make its FIFO: \(process.stderr) \(process.stdout)")
            }
        }

        /// The FIFO stream `stream` reads.
        static func fifo(_ dir: URL, _ stream: String) -> String {
            dir.appendingPathComponent(stream == "default" ? "snapfifo" : "snapfifo-\(stream)").path
        }

        /// Puts the client `host` (its group) on stream `stream` (what a room hears: Snapweb's choice).
        func setStream(host: String, _ stream: String) throws {
            let groups = try call("Server.GetStatus")["result"]?["server"]?["groups"]?.array ?? []
            let group = try #require(groups.first { g in (g["clients"]?.array ?? []).contains { $0["host"]?["name"]?.string == host || $0["id"]?.string == host } },
                                     "\(host)'s group")
            let id = try #require(group["id"]?.string)
            let r = try call("Group.SetStream", "{\"id\":\"\(id)\",\"stream_id\":\"\(stream)\"}")
            guard r["error"] == nil else { throw HarnessError("Group.SetStream: \(r.text)") }
        }

        /// A client that writes what it plays (16-bit stereo at 48 kHz, in real time) to `file`.
        func client(_ name: String, file: String) throws -> SpawnedProcess {
            try SpawnedProcess("snapclient", ["-h", "127.0.0.1", "-p", String(streamPort), "--hostID", name,
                                              "--player", "file:filename=\(file)"])
        }

        func stop() {
            process.signal(SIGTERM)
            _ = try? process.wait(timeout: 10)
        }

        /// One JSON-RPC call on the control port (notifications in between skipped).
        func call(_ method: String, _ params: String = "{}", id: Int = 1) throws -> JSON {
            let c = try TCPLineClient(port: controlPort)
            defer { c.close() }
            var reply = try c.send("{\"id\":\(id),\"jsonrpc\":\"2.0\",\"method\":\"\(method)\",\"params\":\(params)}")
            while reply["id"]?.int != id {
                guard let next = c.nextLine(within: 10) else { throw HarnessError("no reply to \(method)") }
                reply = next
            }
            return reply
        }

        /// Waits until snapserver answers on its control port (and `clients` clients are connected).
        func waitUntilServing(clients: Int = 0) -> Bool {
            eventually(timeout: 15) {
                guard let groups = (try? self.call("Server.GetStatus"))?["result"]?["server"]?["groups"]?.array else { return false }
                let connected = groups.flatMap { $0["clients"]?.array ?? [] }.filter { $0["connected"] == true }.count
                return connected >= clients
            }
        }

        /// A stream's properties (the first stream's: the default), as snapserver reports them.
        func streamProperties(_ id: String? = nil) throws -> JSON? {
            let streams = try call("Server.GetStatus")["result"]?["server"]?["streams"]?.array ?? []
            return (id.map { id in streams.first { $0["id"]?.string == id } } ?? streams.first)??["properties"]
        }

        /// A wrapper running snapserver's `meta_mpd.py` on our MPD listener at `port` (snapserver
        /// 0.26 starts the plugin with only --stream and --snapcast-port; its own default is 6600).
        static func metaMPD(_ dir: URL, port: Int, name: String) throws -> String {
            let wrapper = dir.appendingPathComponent("meta_\(name).sh")
            try "#!/bin/sh\nexec /usr/bin/python3 /usr/share/snapserver/plug-ins/meta_mpd.py --mpd-host=127.0.0.1 --mpd-port=\(port) \"$@\"\n"
                .write(to: wrapper, atomically: true, encoding: .utf8)
            chmod(wrapper.path, 0o755)
            return wrapper.path
        }
    }

    /// A WAV's samples, as sox reads them.
    static func samples(_ wav: URL) throws -> [Int16] {
        let r = try runProcess("sox", [wav.path, "-t", "s16", "-"])
        guard r.status == 0 else { throw HarnessError("sox: \(r.stderr)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// Where `needle` (interleaved samples) starts in `haystack`, searched from `from`.
    static func find(_ needle: ArraySlice<Int16>, in haystack: [Int16], from: Int = 0) -> Int? {
        guard let first = needle.first, needle.count <= haystack.count else { return nil }
        var i = from - from % 2
        while i + needle.count <= haystack.count {
            if haystack[i] == first, haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 2
        }
        return nil
    }

    @Test("a room hears the daemon's queue sample for sample: two 48 kHz items, each exact and the second straight after the first (gapless through snapserver's FLAC stream), then silence; the daemon's status follows")
    func exact() throws {
        let dir = try Harness.makeTemporaryDirectory("snapcast")
        let server = try SnapServer(in: dir)
        defer { server.stop() }
        let room = dir.appendingPathComponent("room1.raw").path
        let client = try server.client("room1", file: room)
        defer { client.signal(SIGTERM); _ = try? client.wait(timeout: 10) }
        #expect(server.waitUntilServing(clients: 1), "the room is connected before anything plays")

        let d = try DaemonFixture(device: "pipe:\(server.fifo)?format=48000:16:2", config: DaemonFixture.foreground,
                                  musicDirectory: dir.appendingPathComponent("music").path)
        try FileManager.default.createDirectory(atPath: d.music, withIntermediateDirectories: true)
        let noise = try Fixtures.wav("snap-noise", rate: 48000, seconds: 3, synth: ["whitenoise"], effects: ["gain", "-10"])
        let tone = try Fixtures.wav("snap-tone", rate: 48000, seconds: 2, synth: ["sine", "660"], effects: ["gain", "-6"])
        try FileManager.default.copyItem(atPath: noise.path, toPath: d.music + "/1-noise.wav")
        try FileManager.default.copyItem(atPath: tone.path, toPath: d.music + "/2-tone.wav")
        try d.start(["--library", "off"])
        #expect(try d.request("add", [("paths", ["1-noise.wav", "2-tone.wav"])]).ok)
        #expect(try d.request("play").ok)
        #expect(eventually(timeout: 20) { (try? d.request("status"))?["state"] == "stopped" }, "the queue played to its end")
        // What snapserver buffers (1 s) reaches the room: wait until the room has heard the whole
        // queue (5 s at 48 kHz, 4 bytes a frame) and half a second more.
        _ = eventually(timeout: 15) {
            let size = (try? FileManager.default.attributesOfItem(atPath: room)[.size] as? Int) ?? 0
            guard let heard = try? PCM.readS16(URL(fileURLWithPath: room)), size > 0 else { return false }
            guard let start = heard.firstIndex(where: { $0 != 0 }) else { return false }
            return heard.count - start > (5 * 48000 + 24000) * 2
        }
        client.signal(SIGTERM)
        _ = try? client.wait(timeout: 10)

        let heard = try PCM.readS16(URL(fileURLWithPath: room))
        let first = try Self.samples(noise)[...], second = try Self.samples(tone)[...]
        let start = try #require(Self.find(first.prefix(512), in: heard), "the first item's start is in the room's recording")
        let a = heard.dropFirst(start).prefix(first.count)
        #expect(a.elementsEqual(first), "the first item, sample for sample")
        let b = heard.dropFirst(start + first.count).prefix(second.count)
        #expect(b.elementsEqual(second), "the second straight after it, sample for sample (\(zip(b, second).filter { $0 != $1 }.count) differ)")
        #expect(heard.dropFirst(start + first.count + second.count).prefix(4800).allSatisfy { $0 == 0 }, "then silence")
        d.expectCleanStop()
    }

    @Test("snapserver's stream plugin (meta_mpd.py, through our MPD listener): snapserver reports the daemon's title and album, and the next title after its Stream.Control next; its pause, play, setPosition and seek reach the daemon")
    func control() throws {
        let dir = try Harness.makeTemporaryDirectory("snapcast")
        let mpdPort = HardeningTests.port()
        let server = try SnapServer(in: dir, controlScripts: ["default": try SnapServer.metaMPD(dir, port: mpdPort, name: "backline")])
        defer { server.stop() }
        let d = try DaemonFixture(device: "pipe:\(server.fifo)?format=48000:16:2", config: DaemonFixture.foreground,
                                  musicDirectory: dir.appendingPathComponent("music").path)
        try FileManager.default.createDirectory(atPath: d.music, withIntermediateDirectories: true)
        for (k, title) in ["Kitchen Radio", "Living Room Album"].enumerated() {
            let wav = try Fixtures.wav("snap-control-\(k)", rate: 48000, seconds: 30, synth: ["sine", "\(440 + 220 * k)"], effects: ["gain", "-12"])
            // (No ARTIST: with one, meta_mpd.py looks the album up on MusicBrainz, and offline its
            // NetworkError, which it does not catch, stops its updates for good.)
            let r = try runProcess("flac", ["-s", "-f", "-T", "TITLE=\(title)", "-T", "ALBUM=The Rooms", "-o", d.music + "/\(k).flac", wav.path])
            try #require(r.status == 0, "\(r.stderr)")
        }
        try d.start(["--library", "off", "--mpd-listen", "127.0.0.1:\(mpdPort)"])
        #expect(try d.request("add", [("paths", ["0.flac", "1.flac"])]).ok)
        #expect(try d.request("play").ok)

        #expect(eventually(timeout: 20) { (try? server.streamProperties())?["metadata"]?["title"] == "Kitchen Radio" },
                "snapserver shows the title: \((try? server.streamProperties())?.text ?? "none")")
        let metadata = try server.streamProperties()?["metadata"]
        #expect(metadata?["album"] == "The Rooms", "\(metadata?.text ?? "")")

        _ = try server.call("Stream.Control", "{\"id\":\"default\",\"command\":\"next\"}")
        #expect(eventually(timeout: 10) { (try? d.request("status"))?["current"]?["title"] == "Living Room Album" }, "next reached the daemon")
        #expect(eventually(timeout: 10) { (try? server.streamProperties())?["metadata"]?["title"] == "Living Room Album" })
        _ = try server.call("Stream.Control", "{\"id\":\"default\",\"command\":\"pause\"}")
        #expect(eventually(timeout: 10) { (try? d.request("status"))?["state"] == "paused" }, "pause reached the daemon")
        _ = try server.call("Stream.Control", "{\"id\":\"default\",\"command\":\"play\"}")
        #expect(eventually(timeout: 10) { (try? d.request("status"))?["state"] == "playing" }, "play reached the daemon")
        func elapsed() -> Double { (try? d.request("status"))?["elapsed"]?.number ?? -1 }
        _ = try server.call("Stream.Control", "{\"id\":\"default\",\"command\":\"setPosition\",\"params\":{\"position\":20}}")
        #expect(eventually(timeout: 10) { (20..<25).contains(elapsed()) }, "setPosition reached the daemon: \(elapsed())")
        _ = try server.call("Stream.Control", "{\"id\":\"default\",\"command\":\"seek\",\"params\":{\"offset\":-10}}")
        #expect(eventually(timeout: 10) { (10..<15).contains(elapsed()) }, "seek reached the daemon: \(elapsed())")
        d.expectCleanStop()
    }

    @Test("snapserver killed mid-play: the daemon pauses as for a lost device, where the audio stopped; once snapserver is back, play goes on from there")
    func serverKilled() throws {
        let dir = try Harness.makeTemporaryDirectory("snapcast")
        var server = try SnapServer(in: dir)
        defer { server.stop() }
        let d = try DaemonFixture(device: "pipe:\(server.fifo)?format=48000:16:2", config: DaemonFixture.foreground,
                                  musicDirectory: dir.appendingPathComponent("music").path)
        try FileManager.default.createDirectory(atPath: d.music, withIntermediateDirectories: true)
        let wav = try Fixtures.wav("snap-long", rate: 48000, seconds: 30, synth: ["sine", "440"], effects: ["gain", "-12"])
        try FileManager.default.copyItem(atPath: wav.path, toPath: d.music + "/long.wav")
        try d.start(["--library", "off"])
        #expect(try d.request("add", [("paths", ["long.wav"])]).ok)
        #expect(try d.request("play").ok)
        #expect(eventually(timeout: 10) { ((try? d.request("status"))?["elapsed"]?.number ?? 0) > 1.5 })
        server.process.signal(SIGKILL)
        _ = try? server.process.wait(timeout: 10)
        #expect(eventually(timeout: 10) { (try? d.request("status"))?["state"] == "paused" }, "paused for the lost device")
        let stoppedAt = try #require(try d.request("status")["elapsed"]?.number)
        server = try SnapServer(in: dir)  // (the same FIFO)
        #expect(server.waitUntilServing(), "snapserver is back")
        #expect(try d.request("play").ok)
        #expect(eventually(timeout: 10) { ((try? d.request("status"))?["elapsed"]?.number ?? 0) > stoppedAt + 1 },
                "playing on from \(stoppedAt) s")
        let resumed = try d.request("status")
        #expect(resumed["state"] == "playing", "\(resumed.text)")
        d.expectCleanStop()
    }

    /// What a room has recorded so far (interleaved 16-bit stereo).
    static func heard(_ room: String) -> [Int16] { (try? PCM.readS16(URL(fileURLWithPath: room))) ?? [] }

    /// Waits until `room` has heard `needle` (after sample `from`); where it starts.
    static func waitToHear(_ room: String, _ needle: ArraySlice<Int16>, from: Int = 0, timeout: Double = 20) -> Int? {
        var found: Int?
        _ = eventually(timeout: timeout) {
            found = find(needle, in: heard(room), from: from)
            return found != nil
        }
        return found
    }

    @Test("two partitions, each feeding its own snapserver stream: each room hears its partition's queue sample for sample; next in the kitchen changes only the kitchen; a room moved to the other stream (Group.SetStream) hears the other partition; after a restart both partitions are back and the kitchen plays on where it was")
    func partitions() throws {
        let dir = try Harness.makeTemporaryDirectory("snapcast")
        // Each stream's plugin on the MPD listener of its partition.
        let (mpdLiving, mpdKitchen) = (HardeningTests.port(), HardeningTests.port())
        let server = try SnapServer(in: dir, streams: ["default", "kitchen"], controlScripts: [
            "default": try SnapServer.metaMPD(dir, port: mpdLiving, name: "living"),
            "kitchen": try SnapServer.metaMPD(dir, port: mpdKitchen, name: "kitchen"),
        ])
        defer { server.stop() }
        let (living, kitchen) = (dir.appendingPathComponent("living.raw").path, dir.appendingPathComponent("kitchen.raw").path)
        let room1 = try server.client("living", file: living)
        defer { room1.signal(SIGTERM); _ = try? room1.wait(timeout: 10) }
        let room2 = try server.client("kitchen", file: kitchen)
        defer { room2.signal(SIGTERM); _ = try? room2.wait(timeout: 10) }
        #expect(server.waitUntilServing(clients: 2), "both rooms are connected")
        try server.setStream(host: "kitchen", "kitchen")

        let pipe = "?format=48000:16:2"
        let d = try DaemonFixture(device: "pipe:\(server.fifo)\(pipe)", config: DaemonFixture.foreground,
                                  musicDirectory: dir.appendingPathComponent("music").path)
        try FileManager.default.createDirectory(atPath: d.music, withIntermediateDirectories: true)
        var items: [String: [Int16]] = [:]
        for (name, synth, title) in [("album", "whitenoise", "The Album"), ("radio-1", "pinknoise", "Radio One"),
                                     ("radio-2", "brownnoise", "Radio Two")] {
            let wav = try Fixtures.wav("snap-zone-\(name)", rate: 48000, seconds: 20, synth: [synth], effects: ["gain", "-8"])
            // (No ARTIST: with one, meta_mpd.py looks the album up on MusicBrainz and, offline, stops.)
            let r = try runProcess("flac", ["-s", "-f", "-T", "TITLE=\(title)", "-T", "ALBUM=Rooms", "-o", d.music + "/\(name).flac", wav.path])
            try #require(r.status == 0, "\(r.stderr)")
            items[name] = try Self.samples(wav)
        }
        let album = items["album"]![...], radio1 = items["radio-1"]![...], radio2 = items["radio-2"]![...]
        let options = ["--library", "off", "--output", "kitchen=pipe:\(SnapServer.fifo(dir, "kitchen"))\(pipe)",
                       "--mpd-listen", "127.0.0.1:\(mpdLiving)", "--mpd-listen", "127.0.0.1:\(mpdKitchen) kitchen"]
        try d.start(options)

        // The kitchen partition is there (its MPD listener's), on the output of its name.
        let made = try d.request("listpartitions")
        #expect(made["partitions"]?.array?.last?["output"] == "kitchen", "the partition takes the output of its name: \(made.text)")
        // The kitchen's own connection: its partition from `partition` on.
        let k = try d.client()
        #expect(try k.request("partition", [("name", "kitchen")])["current"] == "kitchen")
        #expect(try k.request("add", [("paths", ["radio-1.flac", "radio-2.flac"])]).ok)
        #expect(try k.request("play").ok)
        #expect(try d.request("add", [("paths", ["album.flac"])]).ok)
        #expect(try d.request("play").ok)

        let inLiving = try #require(Self.waitToHear(living, album.prefix(512)), "the living room hears the album")
        let inKitchen = try #require(Self.waitToHear(kitchen, radio1.prefix(512)), "the kitchen hears its radio")
        _ = Self.waitToHear(living, album.dropFirst(96_000).prefix(512), from: inLiving)
        _ = Self.waitToHear(kitchen, radio1.dropFirst(96_000).prefix(512), from: inKitchen)
        let (l, kk) = (Self.heard(living), Self.heard(kitchen))
        #expect(l.dropFirst(inLiving).prefix(96_000).elementsEqual(album.prefix(96_000)), "the album's first second, sample for sample")
        #expect(kk.dropFirst(inKitchen).prefix(96_000).elementsEqual(radio1.prefix(96_000)), "the radio's first second, sample for sample")
        #expect(Self.find(radio1.prefix(512), in: l) == nil && Self.find(album.prefix(512), in: kk) == nil, "each room hears only its own")

        // `next` in the kitchen: only the kitchen changes.
        let albumAt = try d.request("status")["current"]?["id"]
        #expect(try k.request("next").ok)
        #expect(try k.request("status")["current"]?["title"] == "Radio Two")
        let main = try d.request("status")
        #expect(main["current"]?["id"] == albumAt && main["state"] == "playing", "the living room plays on: \(main.text)")
        #expect(Self.waitToHear(kitchen, radio2.prefix(512), from: inKitchen) != nil, "the kitchen hears the next item")
        #expect(Self.find(radio2.prefix(512), in: Self.heard(living)) == nil, "the living room does not")

        // Each stream shows its partition's item (meta_mpd.py on the partition's MPD listener).
        #expect(eventually(timeout: 20) { (try? server.streamProperties("kitchen"))?["metadata"]?["title"] == "Radio Two" },
                "the kitchen stream: \((try? server.streamProperties("kitchen"))?.text ?? "none")")
        #expect(eventually(timeout: 20) { (try? server.streamProperties("default"))?["metadata"]?["title"] == "The Album" },
                "the default stream: \((try? server.streamProperties("default"))?.text ?? "none")")

        // The kitchen's room joins the living room's stream: it hears the default partition.
        try server.setStream(host: "kitchen", "default")
        let switched = Self.heard(kitchen).count
        #expect(eventually(timeout: 15) {
            let h = Self.heard(kitchen)
            guard h.count > switched + 96_000 + 1024 else { return false }
            let chunk = h[(switched + 96_000 - switched % 2)...].prefix(1024)
            return Self.find(chunk, in: items["album"]!) != nil
        }, "after Group.SetStream the kitchen's room hears the album")

        // Restart: both partitions are back, each with its queue and place.
        try server.setStream(host: "kitchen", "kitchen")
        // Snapcast's own pause for the kitchen stream: the kitchen pauses, the living room plays on.
        _ = try server.call("Stream.Control", "{\"id\":\"kitchen\",\"command\":\"pause\"}")
        #expect(eventually(timeout: 10) { (try? k.request("status"))?["state"] == "paused" }, "the kitchen paused")
        #expect(try d.request("status")["state"] == "playing", "the living room plays on")
        let before = try k.request("status")

        d.expectCleanStop()
        try d.start(options)
        let list = try d.request("listpartitions")["partitions"]?.array ?? []
        #expect(list.map { $0["name"]?.string ?? "" } == ["default", "kitchen"], "\(list)")
        #expect(list.last?["output"] == "kitchen" && list.last?["count"] == 2)
        let k2 = try d.client()
        _ = try k2.request("partition", [("name", "kitchen")])
        let after = try k2.request("status")
        #expect(after["current"]?["id"] == before["current"]?["id"] && after["state"] == "paused", "\(after.text)")
        let mark = Self.heard(kitchen).count
        #expect(try k2.request("play").ok)
        #expect(eventually(timeout: 15) {
            let h = Self.heard(kitchen)
            guard let start = h[mark...].firstIndex(where: { $0 != 0 }), h.count > start + 48_000 + 1024 else { return false }
            let chunk = h[(start + 48_000 - start % 2)...].prefix(1024)
            return Self.find(chunk, in: items["radio-2"]!) != nil
        }, "the kitchen plays its item on after the restart")

        d.expectCleanStop()
    }

    /// One channel of interleaved stereo.
    static func channel(_ s: [Int16], _ c: Int) -> [Int16] { stride(from: c, to: s.count - 1, by: 2).map { s[$0] } }

    /// Where `needle` starts in the mono `haystack`, from `from`, each sample within `tolerance`
    /// (PulseAudio's float mixing in a remap sink rounds a sample one step either way).
    static func findMono(_ needle: ArraySlice<Int16>, in haystack: [Int16], from: Int = 0, tolerance: Int = 1) -> Int? {
        guard let first = needle.first, needle.count <= haystack.count else { return nil }
        func near(_ a: Int16, _ b: Int16) -> Bool { abs(Int(a) - Int(b)) <= tolerance }
        var i = max(0, from)
        while i + needle.count <= haystack.count {
            if near(haystack[i], first), zip(haystack[i..<(i + needle.count)], needle).allSatisfy(near) { return i }
            i += 1
        }
        return nil
    }

    @Test("two rooms through PulseAudio (a room a channel of one recorded sink): each carries the queue (within PulseAudio's rounding) and they are within 1 ms of each other (the median over the run); pause silences both; a seek is heard at its target in both, next likewise; a room whose snapclient is killed and started again rejoins in sync")
    func rooms() throws {
        // Each room's sink is one channel of the recorded sink: the left is room 1, the right room 2.
        let pulse = try PulseNullSink(sampleRate: 48000, modules: [
            "load-module module-remap-sink sink_name=room1 master=backline_null channels=1 master_channel_map=front-left channel_map=mono remix=no",
            "load-module module-remap-sink sink_name=room2 master=backline_null channels=1 master_channel_map=front-right channel_map=mono remix=no",
        ])
        defer { pulse.stop() }
        let dir = try Harness.makeTemporaryDirectory("snapcast")
        let server = try SnapServer(in: dir)
        defer { server.stop() }
        func room(_ n: Int) throws -> SpawnedProcess {
            try SpawnedProcess("snapclient", ["-h", "127.0.0.1", "-p", String(server.streamPort), "--hostID", "room\(n)",
                                              "--player", "pulse:buffer_time=50", "-s", "room\(n)"], environment: pulse.environment)
        }
        let room1 = try room(1)
        defer { room1.signal(SIGTERM); _ = try? room1.wait(timeout: 10) }
        var room2 = try room(2)
        defer { room2.signal(SIGTERM); _ = try? room2.wait(timeout: 10) }
        #expect(server.waitUntilServing(clients: 2), "both rooms are connected")

        let d = try DaemonFixture(device: "pipe:\(server.fifo)?format=48000:16:2&latency=1000", config: DaemonFixture.foreground,
                                  musicDirectory: dir.appendingPathComponent("music").path)
        try FileManager.default.createDirectory(atPath: d.music, withIntermediateDirectories: true)
        // The same in both channels: a mono room hears exactly it.
        let a = try Fixtures.wav("snap-rooms-a", rate: 48000, seconds: 14, synth: ["whitenoise"], effects: ["remix", "1", "1", "gain", "-8"])
        let b = try Fixtures.wav("snap-rooms-b", rate: 48000, seconds: 12, synth: ["pinknoise"], effects: ["remix", "1", "1", "gain", "-6"])
        try FileManager.default.copyItem(atPath: a.path, toPath: d.music + "/a.wav")
        try FileManager.default.copyItem(atPath: b.path, toPath: d.music + "/b.wav")
        let itemA = Self.channel(try Self.samples(a), 0), itemB = Self.channel(try Self.samples(b), 0)
        try d.start(["--library", "off"])

        let recording = try pulse.startRecording()
        // Read as it grows (only what is new), at most ten times a second: the test's own CPU
        // stays out of the rooms' timing.
        final class Rooms {
            let file: URL
            var left: [Int16] = [], right: [Int16] = []
            var read: UInt64 = 0
            init(_ file: URL) { self.file = file }
            func update() {
                guard let h = try? FileHandle(forReadingFrom: file) else { return }
                defer { try? h.close() }
                try? h.seek(toOffset: read)
                var data = (try? h.readToEnd()) ?? Data()
                data.count -= data.count % 4
                read += UInt64(data.count)
                data.withUnsafeBytes { raw in
                    let s = raw.bindMemory(to: Int16.self)
                    for i in stride(from: 0, to: s.count - 1, by: 2) {
                        left.append(s[i])
                        right.append(s[i + 1])
                    }
                }
            }
        }
        let heard = Rooms(recording.file)
        func rooms() -> ([Int16], [Int16]) {
            heard.update()
            return (heard.left, heard.right)
        }
        func waitFor(_ timeout: Double, _ condition: () -> Bool) -> Bool { eventually(timeout: timeout, every: 0.1, condition) }
        // snapclient keeps a room in sync by now and then playing a sample twice or leaving one out:
        // the item is looked for as short needles (10 ms), any of several.
        func needles(_ item: [Int16], at start: Int) -> [(offset: Int, needle: ArraySlice<Int16>)] {
            (0..<8).map { k in (k * 960, item[(start + k * 960)...].prefix(480)) }
        }
        /// Waits until both rooms have heard `item` from `start` on, after `from`; where each
        /// heard `start` (found through the first needle both rooms heard).
        func bothHear(_ item: [Int16], at start: Int, after from: Int, _ what: String,
                      sourceLocation: SourceLocation = #_sourceLocation) -> (left: Int, right: Int)? {
            var found: (Int, Int)?
            var scanned = from  // each poll looks at what is new (and a needle's length before it)
            _ = waitFor(20) {
                let (l, r) = rooms()
                defer { scanned = max(from, min(l.count, r.count) - 480) }
                for (offset, needle) in needles(item, at: start) {
                    guard let x = Self.findMono(needle, in: l, from: scanned), let y = Self.findMono(needle, in: r, from: max(0, scanned - 4800))
                    else { continue }
                    found = (x - offset, y - offset)
                    return true
                }
                return false
            }
            guard let (x, y) = found else {
                Issue.record("\(what): not heard in both rooms", sourceLocation: sourceLocation)
                return nil
            }
            // (each jump at the same moment in both rooms; how close, over the whole run, below)
            #expect(abs(x - y) <= 480, "\(what): the rooms \(abs(x - y)) samples apart (at most 480: 10 ms)", sourceLocation: sourceLocation)
            return (x, y)
        }

        #expect(try d.request("add", [("paths", ["a.wav", "b.wav"])]).ok)
        #expect(try d.request("play").ok)
        guard let started = bothHear(itemA, at: 0, after: 0, "the first item's start") else { return }
        #expect(waitFor(10) { let (l, r) = rooms(); return min(l.count, r.count) > max(started.left, started.right) + 96_000 })
        let (l1, r1) = rooms()
        for (n, (heard, at)) in [(l1, started.left), (r1, started.right)].enumerated() {
            // Every 0.1 s of the first two seconds, 10 ms of the item where it belongs (give or
            // take snapclient's corrections), each sample within one step of the decode.
            let there = (0..<20).filter { k in
                let needle = itemA[(k * 4800)...].prefix(480)
                let near = Array(heard[max(0, at + k * 4800 - 48)...].prefix(480 + 96))
                return Self.findMono(needle, in: near) != nil
            }.count
            #expect(there >= 18, "room \(n + 1) carries the item: \(there) of 20 places")
        }

        // Pause: both rooms fall silent (after what snapserver had buffered), and stay so.
        #expect(try d.request("pause").ok)
        let pausedAt = rooms().0.count
        #expect(waitFor(10) {
            let (l, r) = rooms()
            guard l.count > pausedAt + 48_000 * 3 else { return false }
            return l.suffix(24_000).allSatisfy { $0 == 0 } && r.suffix(24_000).allSatisfy { $0 == 0 }
        }, "both rooms silent after the pause")
        let silent = rooms().0.count

        // A seek to 8 s (while paused), then play: both rooms hear the item from 8 s.
        #expect(try d.request("seek", [("position", 8)]).ok)
        #expect(try d.request("play").ok)
        let sought = bothHear(itemA, at: 8 * 48000, after: silent - 48_000, "the seek's target")
        if sought != nil {
            // No stale audio: the first sound each room makes after the silence is the target's.
            // (snapserver, its FIFO idle through the pause, may send the first 2 ms a second
            // early and then the rest from 10–15 ms on: its resync, Snapcast's own; still the
            // target.)
            let (l, r) = rooms()
            let target = Array(itemA[(8 * 48000)..<(8 * 48000 + 2400)])
            for (n, heard) in [l, r].enumerated() {
                guard let first = heard[silent...].firstIndex(where: { $0 != 0 }) else { continue }
                let sound = heard[first...].prefix(32)
                #expect(Self.findMono(sound, in: target) != nil, "room \(n + 1)'s first sound after the pause is the seek's target (its first 50 ms)")
            }
        }

        // Next: both rooms hear the second item's start.
        #expect(try d.request("next").ok)
        guard let next = bothHear(itemB, at: 0, after: sought?.left ?? silent, "the next item's start") else { return }

        // Room 2's snapclient killed and started again: it rejoins, in sync.
        room2.signal(SIGKILL)
        _ = try? room2.wait(timeout: 10)
        room2 = try room(2)
        #expect(server.waitUntilServing(clients: 2), "room 2 is back")
        _ = bothHear(itemB, at: 8 * 48000, after: next.left, "room 2, rejoined")
        _ = try recording.stop()

        // How far apart the rooms are, every quarter second both sound (10 ms of room 1 found in
        // room 2, each sample within a step): the median within 1 ms. (snapclient on PulseAudio
        // sometimes starts a few ms off and pulls the rooms together only later: the median, not
        // every moment.)
        let (l, r) = rooms()
        var apart: [Int] = []
        for i in stride(from: 48_000, to: min(l.count, r.count) - 1440, by: 12_000) where l[i..<(i + 480)].contains(where: { $0 != 0 }) {
            if let at = Self.findMono(l[i..<(i + 480)], in: Array(r[(i - 480)..<(i + 960)])) { apart.append(abs(at - 480)) }
        }
        apart.sort()
        #expect(apart.count >= 20, "the rooms compared at \(apart.count) moments")
        let median = apart.isEmpty ? Int.max : apart[apart.count / 2]
        #expect(median <= 48, "the rooms \(median) samples apart (median of \(apart.count), the most \(apart.last ?? -1)): at most 48 (1 ms)")
        d.expectCleanStop()
    }
}
