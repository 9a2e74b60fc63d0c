import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import MediaCore
import Testing

/// Nothing the daemon opens by name can block it: a FIFO, a socket or a device named like music,
/// a playlist or a config file is refused with its kind named, at once.
@Suite("backline daemon: FIFOs, sockets and devices are refused, never waited on", Harness.audioTools)
struct SpecialFileTests {
    static let config = DaemonFixture.foreground

    @Test("a FIFO named x.mp3, a FIFO playlist, a socket: add refuses them by kind, a directory skips them, list and play go on; a file replaced by a FIFO after add fails as an item")
    func musicDirectory() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        try FileManager.default.createDirectory(atPath: d.music + "/odd", withIntermediateDirectories: true)
        #expect(mkfifo(d.music + "/x.mp3", 0o600) == 0)
        #expect(mkfifo(d.music + "/list.m3u", 0o600) == 0)
        #expect(mkfifo(d.music + "/odd/fifo.mp3", 0o600) == 0)
        try FileManager.default.copyItem(atPath: d.music + "/album/a.mp3", toPath: d.music + "/odd/a.mp3")
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let sockPath = d.music + "/odd/sock.mp3"
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            let b = Array(sockPath.utf8)
            raw.copyBytes(from: b)
            raw[b.count] = 0
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        try d.start()
        let c = try d.client()
        let started = Date()
        for (path, kind) in [("x.mp3", "a FIFO"), ("list.m3u", "a FIFO"), ("odd/sock.mp3", "a socket")] {
            let r = try c.request("add", [("path", .string(path))])
            #expect(r["error"]?["code"] == "unsupported" && (r["error"]?["message"]?.string ?? "").contains("not a regular file (\(kind))"),
                    "\(path): \(r.text)")
        }
        let dir = try c.request("add", [("path", "odd")])
        #expect(dir["items"]?.array?.count == 1, "only the regular file: \(dir.text)")
        let skipped = dir["skipped"]?.array ?? []
        #expect(skipped.count == 2 && skipped.allSatisfy { ($0["reason"]?.string ?? "").contains("not a regular file") }, "\(dir.text)")
        #expect(try c.request("list")["items"]?.array?.count == 1)
        #expect(Date().timeIntervalSince(started) < 5, "nothing waited on a FIFO")

        // Added as a regular file, replaced by a FIFO before it plays: that item fails with the
        // reason, and the queue goes on to the next one.
        try FileManager.default.copyItem(atPath: d.music + "/album/b.mp3", toPath: d.music + "/odd/later.mp3")
        let w = try d.client()
        _ = try w.request("subscribe", [("events", ["failed", "current"])])
        let later = try #require(try c.request("add", [("path", "odd/later.mp3")])["items"]?.array?.first?.int)
        let next = try #require(try c.request("add", [("path", "album/c.mp3")])["items"]?.array?.first?.int)
        try FileManager.default.removeItem(atPath: d.music + "/odd/later.mp3")
        #expect(mkfifo(d.music + "/odd/later.mp3", 0o600) == 0)
        #expect(try c.request("play", [("item", .number(Double(later)))]).ok)
        var failed: JSON?
        var current: [Int] = []
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, failed == nil || !current.contains(next) {
            guard let e = try w.nextEvent(timeout: 1) else { continue }
            if e["event"] == "failed" { failed = e }
            if e["event"] == "current", let id = e["item"]?["id"]?.int { current.append(id) }
        }
        #expect(failed?["item"]?.int == later && (failed?["reason"]?.string ?? "").contains("FIFO"), "\(failed?.text ?? "no failed event")")
        // (`null` plays far faster than real time: the next item is seen through its event.)
        #expect(current.contains(next), "the queue went on to the next item: \(current)")
        d.expectCleanStop()
    }

    @Test("a directory holding a file whose name is not valid UTF-8: that file is skipped saying so (its bytes shown as \\xNN), the others are added in order")
    func nonUTF8Name() throws {
        let d = try DaemonFixture(device: "null", config: Self.config)
        let dir = d.music + "/latin1"
        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: true)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: d.music + "/album/a.mp3"))
        // "café.mp3" in ISO-8859-1: the byte E9 alone is not UTF-8.
        let name = Array((dir + "/caf").utf8) + [0xE9] + Array(".mp3".utf8) + [0]
        let fd = name.withUnsafeBufferPointer { p in
            p.baseAddress!.withMemoryRebound(to: CChar.self, capacity: name.count) { open($0, O_WRONLY | O_CREAT | O_EXCL, 0o644) }
        }
        try #require(fd >= 0)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        try FileManager.default.copyItem(atPath: d.music + "/album/b.mp3", toPath: dir + "/sub/b.mp3")
        try FileManager.default.copyItem(atPath: d.music + "/album/c.mp3", toPath: dir + "/a.mp3")
        try d.start()
        let r = try d.request("add", [("path", "latin1")])
        #expect(r["items"]?.array?.count == 2, "\(r.text)")
        let skipped = r["skipped"]?.array ?? []
        #expect(skipped.count == 1 && skipped.first?["reason"] == "the file name is not valid UTF-8"
                && skipped.first?["path"]?.string?.hasSuffix("/latin1/caf\\xE9.mp3") == true, "\(r.text)")
        let paths = (try d.request("list")["items"]?.array ?? []).compactMap { $0["path"]?.string }
        #expect(paths.map { ($0 as NSString).lastPathComponent } == ["a.mp3", "b.mp3"], "\(paths)")
        d.expectCleanStop()
    }

    @Test("a config file that is a FIFO or a link to /dev/zero: the daemon refuses it at once, naming the kind")
    func configFile() throws {
        for kind in ["FIFO", "character device"] {
            let d = try DaemonFixture(device: "null")
            try FileManager.default.removeItem(atPath: d.configFile)
            if kind == "FIFO" { #expect(mkfifo(d.configFile, 0o600) == 0) } else {
                try FileManager.default.createSymbolicLink(atPath: d.configFile, withDestinationPath: "/dev/zero")
            }
            let started = Date()
            let r = try runProcess(backline, ["daemon", "--music-dir", d.music, "--device", "null", "--config", d.configFile],
                                   environment: d.environment, timeout: 20)
            #expect(r.status == 1 && r.stderr.contains("not a regular file (a \(kind))"), "\(kind): \(r.status) \(r.stderr)")
            #expect(Date().timeIntervalSince(started) < 5)
        }
    }
}

@Suite("backline daemon: a file deleted under the player", Harness.audioTools)
struct DeletedFileTests {
    @Test("seeking in an item whose file was deleted while it plays seeks within it (the file is open), as mpd does: no failure, elapsed from the seek target, then the next item plays and elapsed follows it")
    func seekDeleted() throws {
        let d = try DaemonFixture.onSharedSink(config: SpecialFileTests.config)
        try d.start()
        let c = try d.client()
        let ids = (try c.request("add", [("paths", ["album/c.mp3", "long.mp3"])])["items"]?.array ?? []).compactMap(\.int)
        try #require(ids.count == 2)
        let w = try d.client()
        _ = try w.request("subscribe", [("events", ["failed", "current"])])
        #expect(try c.request("play", [("item", .number(Double(ids[0])))]).ok)
        #expect(eventually(timeout: 5) { (try? c.request("status"))?["elapsed"]?.number ?? 0 > 0.3 })
        try FileManager.default.removeItem(atPath: d.music + "/album/c.mp3")
        let seek = try c.request("seek", [("position", 3)])
        #expect(seek.ok, "\(seek.text)")
        usleep(300_000)
        let after = try c.request("status")
        let at = after["elapsed"]?.number ?? -1
        #expect(after["current"]?["id"]?.int == ids[0] && at >= 3 && at < 4, "\(after.text)")
        var events: [JSON] = []
        let deadline = Date().addingTimeInterval(6)
        while Date() < deadline, !events.contains(where: { $0["event"] == "current" && $0["item"]?["id"]?.int == ids[1] }) {
            if let e = try w.nextEvent(timeout: 0.5) { events.append(e) }
        }
        #expect(!events.contains { $0["event"] == "failed" }, "\(events.map(\.text))")
        #expect(events.contains { $0["event"] == "current" && $0["item"]?["id"]?.int == ids[1] }, "the next item follows: \(events.map(\.text))")
        usleep(500_000)
        let a = try c.request("status")["elapsed"]?.number ?? -1
        usleep(500_000)
        let b = try c.request("status")["elapsed"]?.number ?? -1
        #expect(a >= 0 && a < 3 && b - a > 0.3, "elapsed follows the next item: \(a) then \(b)")
        d.expectCleanStop()
    }
}
