import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import PlayQueue
import Testing

/// Breaks a hostile client or a damaged state file once caused, each against a real daemon
/// process (each test failed before its fix): MPD connections that leaked until
/// everyone was refused, a web page running MPD commands, one listener's clients locking out the
/// others, alarms in the state file crashing every start, links swapped in after a check,
/// an MPD socket others could rename, sizes nobody bounded.
@Suite("backline daemon: hostile clients, pages, links and state files", Harness.audioTools)
struct HardeningTests {
    static let config = DaemonFixture.foreground

    /// A loopback port free now (the kernel's choice: a random one in 20,000–40,000 was once
    /// taken, by a connection's ephemeral port, when the daemon bound it).
    static func port() -> Int { (try? Harness.freePort()) ?? Int.random(in: 20_000...32_000) }

    /// `n` distinct such ports.
    static func ports(_ n: Int) -> [Int] {
        var out: [Int] = []
        while out.count < n {
            let p = port()
            if !out.contains(p) { out.append(p) }
        }
        return out
    }

    /// Open descriptors and threads of `pid`.
    static func descriptors(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    static func threads(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? -1
    }

    /// Connects to `port` on loopback, sends `bytes`, reads until the daemon closes (or
    /// `seconds` pass); what it sent, and whether it closed.
    static func raw(port: Int? = nil, unix: String? = nil, _ bytes: [UInt8], seconds: Double = 5) throws -> (text: String, closed: Bool) {
        let r = try rawBytes(port: port, unix: unix, bytes, seconds: seconds)
        return (String(decoding: r.bytes, as: UTF8.self), r.closed)
    }

    /// ``raw(port:unix:_:seconds:)``, what was sent back as bytes.
    static func rawBytes(port: Int? = nil, unix: String? = nil, _ bytes: [UInt8], seconds: Double = 5) throws -> (bytes: [UInt8], closed: Bool) {
        let fd = try LoopbackSocket.connect(port: port, unix: unix)
        defer { close(fd) }
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var got: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return (got, true) }
            got += chunk[..<n]
        }
        return (got, false)
    }

    @Test("300 `mpc status` runs over MPD TCP (mpc closes first): every one answers, the daemon's descriptors return to where they were, and the JSON socket still answers",
          .enabled(if: Harness.has("mpc"), "needs mpc"))
    func mpcStatusLoop() throws {
        let port = Self.port()
        let d = try DaemonFixture(device: "null", config: Self.config)
        try d.start(["--mpd-listen", "127.0.0.1:\(port)"])
        let pid = try #require(d.process?.pid)
        usleep(300_000)
        let baseline = Self.descriptors(pid)
        var failed: [String] = []
        for run in 1...300 {
            let r = try MPDTests.mpc("127.0.0.1", port: port, ["status"])
            if r.status != 0 { failed.append("run \(run): \(r.stderr)") }
        }
        #expect(failed.isEmpty, "\(failed.count) runs failed, the first: \(failed.first ?? "")")
        #expect(eventually(timeout: 10) { Self.descriptors(pid) <= baseline + 2 },
                "descriptors: \(baseline) before, \(Self.descriptors(pid)) after 300 runs (CLOSE-WAIT connections kept)")
        #expect(try d.ctl(["status"]).status == 0)
        #expect(try d.request("ping").ok)
        d.expectCleanStop()
    }

    @Test("an HTTP request on each line listener (MPD TCP and Unix, JSON TCP and Unix) is closed before anything runs: the queue and the volume are as they were, logged once per listener")
    func rawHTTPRequest() throws {
        let ps = Self.ports(2)
        let (mpdPort, jsonPort) = (ps[0], ps[1])
        let d = try DaemonFixture(device: "null", config: Self.config + "tcp = 127.0.0.1:\(jsonPort)\ntoken = s3cret-token-0123456789\n")
        let mpdSocket = d.dir.path + "/mpd.sock"
        try d.start(["--mpd-listen", "127.0.0.1:\(mpdPort)", "--mpd-listen", mpdSocket])
        #expect(try d.request("add", [("paths", ["album"])]).ok)
        #expect(try d.request("volume", [("volume", 40)]).ok)
        func post(_ body: String) -> [UInt8] {
            Array(("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain;charset=UTF-8\r\n"
                + "Origin: http://evil.example\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body).utf8)
        }
        let mpdBody = "clear\nsetvol 5\n", jsonBody = "{\"command\":\"clear\"}\n{\"command\":\"volume\",\"level\":5}\n"
        let mpdTCP = try Self.raw(port: mpdPort, post(mpdBody))
        #expect(mpdTCP.closed && mpdTCP.text == "OK MPD 0.23.5\n", "MPD TCP answered: \(mpdTCP.text)")
        let mpdUnix = try Self.raw(unix: mpdSocket, post(mpdBody))
        #expect(mpdUnix.closed && mpdUnix.text == "OK MPD 0.23.5\n", "MPD Unix answered: \(mpdUnix.text)")
        let jsonTCP = try Self.raw(port: jsonPort, post(jsonBody))
        #expect(jsonTCP.closed && jsonTCP.text.isEmpty, "JSON TCP answered: \(jsonTCP.text)")
        let jsonUnix = try Self.raw(unix: d.socket, post(jsonBody))
        #expect(jsonUnix.closed && jsonUnix.text.isEmpty, "JSON Unix answered: \(jsonUnix.text)")
        // A GET, and header lines without a request line, the same.
        let get = try Self.raw(port: mpdPort, Array("GET /status HTTP/1.0\r\n\r\n".utf8))
        #expect(get.closed && get.text == "OK MPD 0.23.5\n", "\(get.text)")
        let headers = try Self.raw(unix: mpdSocket, Array("Host: 127.0.0.1\r\nclear\n".utf8))
        #expect(headers.closed && headers.text == "OK MPD 0.23.5\n", "\(headers.text)")
        let status = try d.request("status")
        #expect(status["count"] == 3 && status["volume"] == 40, "nothing ran: \(status.text)")
        let lines = d.log().components(separatedBy: "\n").filter { $0.contains("HTTP request on a command socket") }
        #expect(lines.count == 4, "once per listener (MPD TCP, MPD Unix, JSON TCP, JSON Unix): \(lines)")
        // Real clients are not taken for HTTP.
        #expect(try MPDTests.mpc(mpdSocket, ["status"]).status == 0 || Harness.which("mpc") == nil)
        #expect(try d.request("ping").ok)
        d.expectCleanStop()
    }

    @Test("a web page in a real browser (headless Chromium) posts `clear` and `setvol 5` to the MPD port and `clear` to the JSON port: the browser's requests reach the daemon, and nothing runs",
          .enabled(if: Harness.has("chromium"), "needs chromium"))
    func browserPost() throws {
        let chromium = Harness.which("chromium") ?? "/usr/bin/chromium"
        let ps = Self.ports(3)
        let (mpdPort, jsonPort, httpPort) = (ps[0], ps[1], ps[2])
        let d = try DaemonFixture(device: "null", config: Self.config + "tcp = 127.0.0.1:\(jsonPort)\ntoken = s3cret-token-0123456789\n")
        try d.start(["--mpd-listen", "127.0.0.1:\(mpdPort)"])
        #expect(try d.request("add", [("paths", ["album"])]).ok)
        #expect(try d.request("volume", [("volume", 40)]).ok)

        // The attacker's page, served from a local web server on another port.
        let site = try Harness.makeTemporaryDirectory("evil-site")
        let page = """
            <!doctype html><title>cats</title><body>loading
            <script>
            const post = (port, body) => fetch("http://127.0.0.1:" + port + "/", {method: "POST", mode: "no-cors", body}).catch(() => {});
            post(\(mpdPort), "clear\\nsetvol 5\\n")
              .then(() => post(\(jsonPort), '{"command":"clear"}\\n'))
              .finally(() => { document.body.textContent = "posted"; });
            </script>
            """
        try page.write(to: site.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
        let web = try SpawnedProcess("/usr/bin/python3", ["-m", "http.server", "--bind", "127.0.0.1", "--directory", site.path, String(httpPort)])
        defer { web.signal(SIGKILL); _ = try? web.wait(timeout: 5) }
        #expect(eventually(timeout: 10) { (try? Self.raw(port: httpPort, Array("HEAD / HTTP/1.0\r\n\r\n".utf8), seconds: 1))?.closed == true })
        let profile = try Harness.makeTemporaryDirectory("chromium-profile")
        let browser = try runProcess(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                                "--user-data-dir=" + profile.path, "--virtual-time-budget=10000",
                                                "--dump-dom", "http://127.0.0.1:\(httpPort)/"],
                                     environment: ["HOME": profile.path], timeout: 120)
        #expect(browser.stdoutText.contains("posted"), "the page ran: \(browser.stdoutText.prefix(300)) \(browser.stderr.suffix(500))")
        let refused = d.log().components(separatedBy: "\n").filter { $0.contains("HTTP request on a command socket") }
        #expect(refused.contains { $0.contains("MPD 127.0.0.1:\(mpdPort)") } && refused.contains { $0.contains("TCP 127.0.0.1:\(jsonPort)") },
                "the browser's requests reached both listeners and were refused: \(refused)")
        let status = try d.request("status")
        #expect(status["count"] == 3 && status["volume"] == 40, "nothing ran: \(status.text)")
        d.expectCleanStop()
    }

    @Test("idle connections on one listener never lock out another: 60 held MPD TCP connections (max-connections 20) leave the JSON and MPD Unix sockets serving; refusals are logged once per 10 s with a count; 16 held unauthenticated JSON TCP connections do not keep out a client with the token")
    func noLockout() throws {
        let ps = Self.ports(2)
        let (mpdPort, jsonPort) = (ps[0], ps[1])
        let token = "s3cret-token-0123456789"
        let d = try DaemonFixture(device: "null", config: Self.config + "max-connections = 20\ntcp = 127.0.0.1:\(jsonPort)\ntoken = \(token)\nauth-timeout = 30\n")
        let mpdSocket = d.dir.path + "/mpd.sock"
        try d.start(["--mpd-listen", "127.0.0.1:\(mpdPort)", "--mpd-listen", mpdSocket])
        usleep(300_000)
        let held = try (0..<60).map { _ in try TCPLineClient(port: mpdPort) }
        usleep(500_000)
        #expect(try d.request("ping").ok, "the JSON Unix socket serves")
        #expect(try d.ctl(["status"]).status == 0)
        let mpdUnix = try Self.raw(unix: mpdSocket, Array("ping\nclose\n".utf8))
        #expect(mpdUnix.text == "OK MPD 0.23.5\nOK\n", "the MPD Unix socket serves: \(mpdUnix.text)")
        let refusals = d.log().components(separatedBy: "\n").filter { $0.contains("connection refused") }
        #expect((1...2).contains(refusals.count), "40 refusals, rate-limited: \(refusals)")
        // JSON TCP: 16 held without a token; a client with the token still gets in.
        let waiting = try (0..<16).map { _ in try TCPLineClient(port: jsonPort) }
        usleep(200_000)
        let owner = try TCPLineClient(port: jsonPort)
        #expect(try owner.send("{\"command\":\"auth\",\"token\":\"\(token)\"}").ok)
        #expect(try owner.send("{\"command\":\"status\"}").ok)
        #expect(waiting[0].nextLine(within: 5)?.errorCode == "too-many-connections", "the oldest waiting made room")
        // The rest of the refusals are counted in one line when the 10 s are over.
        #expect(eventually(timeout: 15) {
            d.log().components(separatedBy: "\n").contains { $0.contains("connection refused") && $0.contains("attempts=39") }
        }, "\(d.log().components(separatedBy: "\n").filter { $0.contains("connection refused") })")
        _ = held
        d.expectCleanStop()
    }

    @Test("alarms in the state file that crashed every start (next 1e19; daily with hour 1e12 and a past next; fade 1e308): the daemon starts, names the field and moves the file aside; the 101st alarm is refused")
    func alarms() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        try FileManager.default.createDirectory(atPath: (d.stateFile as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let past = Date().addingTimeInterval(-3600).timeIntervalSinceReferenceDate
        let soon = Date().addingTimeInterval(2).timeIntervalSinceReferenceDate
        let cases = [(#""next":1e19"#, "alarms[0].next"), (#""daily":true,"hour":1000000000000,"next":\#(past)"#, "alarms[0].hour"),
                     (#""fade":1e308,"next":\#(soon)"#, "alarms[0].fade")]
        for (fields, named) in cases {
            let text = try StateFileTests.json(setting: "alarms", to: StateFileTests.alarm(fields))
            try text.write(toFile: d.stateFile, atomically: true, encoding: .utf8)
            try d.start()
            usleep(2_500_000)  // past the moment the fade alarm would have fired
            #expect(try d.request("ping").ok, "\(fields): \(d.log())")
            #expect(d.log().contains(named) && d.log().contains("moved aside"), "\(fields): \(d.log())")
            d.expectCleanStop()
        }
        try d.start()
        for k in 0..<100 {
            let r = try d.request("alarm", [("time", .string(String(format: "%02d:%02d", k / 60, k % 60)))])
            try #require(r.ok, "alarm \(k): \(r.text)")
        }
        let refused = try d.request("alarm", [("time", "23:59")])
        #expect(refused.errorCode == "too-large" && refused["error"]?["message"]?.string?.contains("at most 100") == true, "\(refused.text)")
        #expect(try d.request("alarm")["alarms"]?.array?.count == 100)
        d.expectCleanStop()
        try d.start()  // saved and restored: all 100 are valid
        #expect(try d.request("alarm")["alarms"]?.array?.count == 100, "\(d.log())")
        d.expectCleanStop()
    }

    @Test("a link swapped in after `add` (mv -T link-to-outside.mp3 a.mp3) is not played: the item fails with the reason and the queue goes on; a direct add of it is refused")
    func swappedLink() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        let outside = try Harness.makeTemporaryDirectory("outside").path + "/secret.mp3"
        try FileManager.default.copyItem(atPath: d.music + "/long.mp3", toPath: outside)
        try d.start()
        let c = try d.client()
        _ = try c.request("subscribe", [("events", ["failed", "current"])])
        // a.mp3 is queued after a long item, so nothing has opened it yet when it is swapped.
        let added = try d.request("add", [("paths", ["long.mp3", "album/a.mp3", "album/b.mp3"])])
        let ids = (added["items"]?.array ?? []).compactMap(\.int)
        try #require(ids.count == 3, "\(added.text)")
        // The swap: a link to the outside file renamed over the queued one.
        try FileManager.default.createSymbolicLink(atPath: d.music + "/album/link.mp3", withDestinationPath: outside)
        #expect(rename(d.music + "/album/link.mp3", d.music + "/album/a.mp3") == 0)
        #expect(try d.request("play", [("item", .int(ids[1]))]).ok)
        var failure: JSON?
        var next: JSON?
        let deadline = Date().addingTimeInterval(10)
        // (Both, in either order: under load the next item can be announced before the failure.)
        var seen: [String] = []
        while next == nil || failure == nil, Date() < deadline {
            guard let e = try c.nextEvent(timeout: 0.5) else { continue }
            seen.append(e.text)
            if e["event"] == "failed" { failure = e }
            if e["event"] == "current", e["item"]?["id"]?.int == ids[2] { next = e }
        }
        let reason = failure?["reason"]?.string ?? ""
        #expect(failure?["item"]?.int == ids[1] && reason.contains("leads outside"), "\(failure?.text ?? "no failed event")")
        let status = try d.request("status")
        #expect(next != nil, "the queue goes on with the item after it: \(seen), status \(status.text)")
        let direct = try d.request("add", [("path", "album/a.mp3")])
        #expect(direct.errorCode == "forbidden", "\(direct.text)")
        d.expectCleanStop()
    }

    @Test("a link in the playlist directory is not read through: not listed, and `playlist`, `load` and MPD's `listplaylist` say so without a word of its target")
    func playlistLink() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        let mpdSocket = d.dir.path + "/mpd.sock"
        try d.start(["--mpd-listen", mpdSocket])
        let secret = try Harness.makeTemporaryDirectory("secret").path + "/shadow"
        try "root:SECRET-HASH:19000:0:99999:7:::\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let dir = (d.stateFile as NSString).deletingLastPathComponent + "/playlists"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir + "/x.m3u", withDestinationPath: secret)
        let listed = try d.request("playlists")
        #expect(!listed.text.contains("\"x\""), "\(listed.text)")
        for r in [try d.request("playlist", [("name", "x")]), try d.request("load", [("name", "x")])] {
            #expect(!r.ok && !r.text.contains("SECRET"), "\(r.text)")
        }
        let mpd = try Self.raw(unix: mpdSocket, Array("listplaylist x\nclose\n".utf8))
        #expect(mpd.text.contains("ACK") && !mpd.text.contains("SECRET"), "\(mpd.text)")
        d.expectCleanStop()
    }

    @Test("an MPD socket in a directory others may rename in (0777) is refused at start, naming the directory; a sticky one (1777) and a private one are taken")
    func mpdSocketDirectory() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        let open = try Harness.makeTemporaryDirectory("mpd-open").path
        chmod(open, 0o777)
        let r = try runProcess(backline, ["daemon", "--music-dir", d.music, "--device", "null", "--config", d.configFile,
                                          "--mpd-listen", open + "/mpd.sock"], environment: d.environment, timeout: 30)
        #expect(r.status == 1 && r.stderr.contains("refusing the MPD socket") && r.stderr.contains("mode 777"), "\(r.stderr)")
        let sticky = try Harness.makeTemporaryDirectory("mpd-sticky").path
        chmod(sticky, 0o1777)
        try d.start(["--mpd-listen", sticky + "/mpd.sock"])
        let served = try Self.raw(unix: sticky + "/mpd.sock", Array("ping\nclose\n".utf8))
        #expect(served.text == "OK MPD 0.23.5\nOK\n", "\(served.text)")
        d.expectCleanStop()
    }

    @Test("MPRIS GetTracksMetadata for every track of a 40,000-item queue answers within a second per 1,000 tracks; PlaybackStatus answers after it and SIGTERM stops the daemon at once",
          .enabled(if: Harness.has("busctl"), "needs busctl"))
    func tracksMetadata() throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let d = try DaemonFixture(device: "null", config: Self.config, bus: bus.address)
        try FileManager.default.createDirectory(atPath: (d.stateFile as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let n = 40_000
        let entries = (1...n).map { PlayQueueEntry(id: $0, path: d.music + "/album/" + ["a", "b", "c"][$0 % 3] + ".mp3") }
        let state = SavedState(queue: PlayQueueSnapshot(entries: entries, nextID: n + 1, current: 1, state: .paused), volume: 1, muted: true)
        try JSONEncoder().encode(state).write(to: URL(fileURLWithPath: d.stateFile))
        try d.start()
        #expect(try d.request("status")["count"]?.int == n)
        #expect(eventually(timeout: 20) {
            (try? runProcess("/usr/bin/busctl", ["--user", "get-property", "org.mpris.MediaPlayer2.backline", "/org/mpris/MediaPlayer2",
                                                  "org.mpris.MediaPlayer2.Player", "PlaybackStatus"], environment: bus.environment, timeout: 10))?.status == 0
        })
        for part in 0..<4 {  // 10,000 ids a call (argv stays well under its limit)
            let paths = ((part * 10_000 + 1)...((part + 1) * 10_000)).map { "/org/mpris/MediaPlayer2/Track/\($0)" }
            let t0 = Date()
            let r = try runProcess("/usr/bin/busctl", ["--user", "--timeout=120", "call", "org.mpris.MediaPlayer2.backline", "/org/mpris/MediaPlayer2",
                                                       "org.mpris.MediaPlayer2.TrackList", "GetTracksMetadata", "ao", "10000"] + paths,
                                   environment: bus.environment, timeout: 180)
            let seconds = Date().timeIntervalSince(t0)
            #expect(r.status == 0 && r.stdoutText.hasPrefix("aa{sv} 10000 "), "\(r.stderr) \(r.stdoutText.prefix(100))")
            #expect(seconds < 10, "10,000 tracks took \(seconds) s")
        }
        let status = try runProcess("/usr/bin/busctl", ["--user", "get-property", "org.mpris.MediaPlayer2.backline", "/org/mpris/MediaPlayer2",
                                                        "org.mpris.MediaPlayer2.Player", "PlaybackStatus"], environment: bus.environment, timeout: 10)
        #expect(status.stdoutText.contains("Paused"), "\(status.stdoutText) \(status.stderr)")
        let t0 = Date()
        d.expectCleanStop()
        #expect(Date().timeIntervalSince(t0) < 3)
    }

    @Test("a 15 MiB stored playlist (1.31 M entries) is refused at once by `load` and `playlist`, the queue and memory as they were; `add` of such an M3U is refused too")
    func hugePlaylist() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        try d.start()
        let pid = try #require(d.process?.pid)
        #expect(try d.request("add", [("paths", ["album"])]).ok)
        let dir = (d.stateFile as NSString).deletingLastPathComponent + "/playlists"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let line = "album/a.mp3\n"
        let text = String(repeating: line, count: 1_310_000)
        try text.write(toFile: dir + "/big.m3u", atomically: true, encoding: .utf8)
        try text.write(toFile: d.music + "/big.m3u", atomically: true, encoding: .utf8)
        for r in [try d.request("load", [("name", "big")]), try d.request("playlist", [("name", "big")]),
                  try d.request("add", [("path", "big.m3u")])] {
            #expect(r.errorCode == "too-large" && r.text.contains("100000"), "\(r.text.prefix(300))")
        }
        #expect(try d.request("status")["count"] == 3)
        let rss = SoakTests.rss(pid) ?? 0
        if Harness.sanitizer == nil { #expect(rss < 200 * 1024, "resident \(rss) KiB after refusing it") }
        d.expectCleanStop()
        #expect((try? Data(contentsOf: URL(fileURLWithPath: d.stateFile)).count) ?? 0 < 100_000)
    }

    @Test("nextID 2147483647 and one more `add`: the id wraps below 2³¹ (the lowest free), and the next start restores the queue instead of moving the file aside")
    func idWrap() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        try FileManager.default.createDirectory(atPath: (d.stateFile as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let state = SavedState(queue: PlayQueueSnapshot(entries: [PlayQueueEntry(id: 1, path: d.music + "/album/a.mp3"),
                                                                  PlayQueueEntry(id: 2147483646, path: d.music + "/album/b.mp3")],
                                                        nextID: 2147483647), volume: 1, muted: false)
        try JSONEncoder().encode(state).write(to: URL(fileURLWithPath: d.stateFile))
        try d.start()
        let added = try d.request("add", [("paths", ["album/c.mp3", "long.mp3"])])
        #expect(added["items"]?.array?.compactMap(\.int) == [2, 3], "\(added.text)")
        d.expectCleanStop()
        try d.start()
        let list = try d.request("list")
        #expect(list["items"]?.array?.compactMap { $0["id"]?.int } == [1, 2147483646, 2, 3], "\(list.text.prefix(300)) \(d.log())")
        #expect(!d.log().contains("moved aside"), "\(d.log())")
        d.expectCleanStop()
    }

    @Test("a seek in a file deleted while it plays seeks within it (the open file), as mpd does; an unwritable state directory is logged once, not at every save")
    func deletedFileAndUnwritableState() throws {
        let d = try DaemonFixture(device: "null", config: Self.config + "save-interval = 0.2\n")
        let stateDir = (d.stateFile as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: stateDir, withIntermediateDirectories: true)
        try d.start()
        #expect(try d.request("add", [("paths", ["long.mp3"])]).ok)
        #expect(try d.request("play").ok)
        #expect(try d.request("pause").ok)
        try FileManager.default.removeItem(atPath: d.music + "/long.mp3")
        let seek = try d.request("seek", [("position", 30.0)])
        #expect(seek.ok, "\(seek.text)")
        let status = try d.request("status")
        #expect(status["state"] == "paused" && abs((status["elapsed"]?.number ?? 0) - 30) < 0.5 && status["current"]?["error"] == nil,
                "\(status.text)")
        // The state directory replaced by a file: every save fails; said once.
        try FileManager.default.moveItem(atPath: stateDir, toPath: stateDir + ".away")
        try "not a directory".write(toFile: stateDir, atomically: true, encoding: .utf8)
        for v in 0..<10 {
            #expect(try d.request("volume", [("volume", .int(50 + v))]).ok)
            usleep(300_000)
        }
        let said = d.log().components(separatedBy: "\n").filter { $0.contains("cannot save state") }
        #expect(said.count == 1, "\(said)")
        try FileManager.default.removeItem(atPath: stateDir)
        try FileManager.default.moveItem(atPath: stateDir + ".away", toPath: stateDir)
        #expect(try d.request("volume", [("volume", 20)]).ok)
        #expect(eventually { d.log().contains("state saved again") }, "\(d.log().suffix(500))")
        d.expectCleanStop()
    }
    /// A field in KiB of /proc/PID/status (`VmRSS`, `VmLck`).
    static func statusKiB(_ pid: pid_t, _ field: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }

    @Test("400 rounds of newpartition, moveoutput, delpartition: the daemon's resident memory stays within 10 MB of where it was after the first, no more of it is locked (each player's ring is locked in RAM), and its threads are where they were")
    func partitionChurn() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        let port = Self.port()
        try d.start(["--library", "off", "--mpd-listen", "127.0.0.1:\(port)", "--output", "kitchen=null", "--output", "bath=null"])
        defer { d.expectCleanStop() }
        let pid = try #require(d.process?.pid)
        let c = try TCPLineClient.mpd(port: port)
        defer { c.close() }
        func round(_ n: Int) throws {
            #expect(try c.ask("newpartition p\(n)") == "OK\n")
            #expect(try c.ask("partition p\(n)") == "OK\n")
            #expect(try c.ask("moveoutput \(n % 2 == 0 ? "kitchen" : "bath")") == "OK\n")
            #expect(try c.ask("partition default") == "OK\n")
            #expect(try c.ask("delpartition p\(n)") == "OK\n")
        }
        let deadline = Date().addingTimeInterval(300)
        try round(0)
        usleep(2_000_000)  // (the deleted partition's threads end; the worker pool has started)
        let (rss, locked, threads) = (Self.statusKiB(pid, "VmRSS"), Self.statusKiB(pid, "VmLck"), Self.threads(pid))
        for n in 1..<400 where Date() < deadline { try round(n) }
        #expect(Date() < deadline, "400 rounds within 5 minutes")
        let (rssAfter, lockedAfter) = (Self.statusKiB(pid, "VmRSS"), Self.statusKiB(pid, "VmLck"))
        let threadsBack = eventually(timeout: 15) { Self.threads(pid) <= threads }
        // Each round's player kept its locked ring resident before (+20 MB over 400 rounds, and
        // VmLck grew); 10 MB leaves room for malloc's arenas on a machine loaded by the parallel
        // pass (+4.5 MB seen there), and VmLck, below, is held exactly.
        #expect(rss > 0 && rssAfter - rss <= 10 * 1024, "VmRSS \(rss) KiB after one round, \(rssAfter) KiB after 400")
        // Root, or a memlock limit above the rings, can lock them: VmLck must then show them (else
        // the bound below could not fail). Otherwise each ring's mlock is refused, and VmLck stays 0.
        let limits = (try? String(contentsOfFile: "/proc/self/limits", encoding: .utf8)) ?? ""
        let unlimited = limits.split(separator: "\n").contains { $0.hasPrefix("Max locked memory") && $0.contains("unlimited") }
        if geteuid() == 0 || unlimited {
            #expect(locked > 0, "VmLck \(locked) KiB: the players' rings are not locked")
        }
        #expect(locked >= 0 && lockedAfter <= locked, "VmLck \(locked) KiB after one round, \(lockedAfter) KiB after 400")
        #expect(threadsBack, "threads \(threads) after one round, \(Self.threads(pid)) after 400")
    }
}
