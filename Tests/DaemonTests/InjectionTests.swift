import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import PlayQueue
import Testing

/// Names that carry a protocol's syntax (a newline and `OK` in a file name, a tag, a URL)
/// against a real daemon: no MPD reply can be split by a value, and nothing with a control
/// character in its name or URL reaches the queue from any entry point.
@Suite("values cannot forge protocol lines", Harness.audioTools)
struct InjectionTests {
    /// A song tagged with `title` (lame, ID3v2 only).
    static func song(_ path: String, title: String) throws {
        let src = try Fixtures.tone("injection-tone", seconds: 1, frequency: 440)
        let wav = try Harness.makeTemporaryDirectory("injection-wav").path + "/t.wav"
        var r = try runProcess("lame", ["--quiet", "--decode", src.path, wav])
        guard r.status == 0 else { throw HarnessError("lame --decode: \(r.stderr)") }
        r = try runProcess("lame", ["--quiet", "-b", "128", "--id3v2-only", "--tt", title, "--ta", "Mallory", wav, path])
        guard r.status == 0 else { throw HarnessError("lame: \(r.stderr)") }
    }

    /// Asks `command`, then `ping`: the reply must be `key: value` lines and one `OK` (or an
    /// `ACK`), and `ping`'s reply `OK` alone (a forged `OK` would have left lines behind).
    static func ask(_ c: TCPLineClient, _ command: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let reply = try c.ask(command)
        let lines = reply.split(separator: "\n", omittingEmptySubsequences: false).dropLast()  // (the last newline)
        let body = lines.dropLast()
        #expect(lines.last == "OK" || lines.last?.hasPrefix("ACK [") == true, "\(command): \(reply)", sourceLocation: sourceLocation)
        #expect(body.allSatisfy { $0.range(of: "^([0-9]+:)?[A-Za-z_-]+: ", options: .regularExpression) != nil },
                "\(command): a line that is no `key: value`: \(reply)", sourceLocation: sourceLocation)
        #expect(try c.ask("ping") == "OK\n", "after \(command): lines were left over", sourceLocation: sourceLocation)
        return reply
    }

    @Test("a file named `evil\\nOK\\nfile: injected.mp3.mp3` is skipped by the library (logged escaped) and browse; a tag holding the same is one line in every reply; JSON, MPD, playlist and WebSocket `add` refuse a URL holding a control character")
    func mpdLines() throws {
        let tree = try Harness.makeTemporaryDirectory("injection-tree")
        try Self.song(tree.path + "/plain.mp3", title: "T\nOK\nfile: forged-by-tag")
        try FileManager.default.copyItem(atPath: tree.path + "/plain.mp3", toPath: tree.path + "/evil\nOK\nfile: injected.mp3.mp3")
        try "plain.mp3\nhttp://127.0.0.1:9/a\u{1B}]0;x\u{07}b.mp3\n".write(toFile: tree.path + "/list.m3u", atomically: true, encoding: .utf8)
        let httpPort = HardeningTests.port()
        let (d, port) = try LibraryMPDTests.daemon(tree, config: DaemonFixture.foreground + "http-listen = 127.0.0.1:\(httpPort)\n")
        defer { d.expectCleanStop() }
        let c = try TCPLineClient.mpd(port: port)
        defer { c.close() }
        for command in ["listall", "lsinfo", "listallinfo", "find artist Mallory", "search file mp3", "listfiles"] {
            let reply = try Self.ask(c, command)
            #expect(!reply.contains("injected"), "\(command): \(reply)")
        }
        #expect(try Self.ask(c, "find artist Mallory").contains("Title: T OK file: forged-by-tag\n"))
        #expect(try Self.ask(c, "add plain.mp3") == "OK\n")
        let queue = try Self.ask(c, "playlistinfo")
        #expect(queue.contains("Title: T OK file: forged-by-tag\n") && !queue.contains("\nfile: forged"), "\(queue)")
        // A URL: refused at each entry point, with the reason; the queue keeps its one song.
        let mpdAdd = try Self.ask(c, "add \"http://127.0.0.1:9/x\rOK\"")
        #expect(mpdAdd.hasPrefix("ACK [50@0] {add} http://127.0.0.1:9/x\\x0DOK: holds a control character"), "\(mpdAdd)")
        #expect(try Self.ask(c, "addid \"http://127.0.0.1:9/x\rOK\"").hasPrefix("ACK [50@0] {addid}"))
        let json = try d.request("add", [("path", "http://127.0.0.1:9/x\nOK\nfile: url-injected")])
        #expect(json["ok"] == false && json["error"]?["code"] == "unsupported"
                && json["error"]?["message"] == "http://127.0.0.1:9/x\\x0AOK\\x0Afile: url-injected: holds a control character", "\(json)")
        let list = try d.request("add", [("path", "list.m3u")])
        #expect(list["ok"] == true && list["skipped"]?.array?.first?["reason"] == "holds a control character", "\(list)")
        let request = Array(#"{"command":"add","path":"http://127.0.0.1:9/x\nOK\nfile: ws-injected"}"#.utf8)
        let ws = try HardeningTests.raw(port: httpPort, WebRemoteTests.upgrade(httpPort) + WebRemoteTests.frame(1, request), seconds: 2)
        #expect(ws.text.hasPrefix("HTTP/1.1 101") && ws.text.contains("x\\\\x0AOK\\\\x0Afile: ws-injected: holds a control character"), "\(ws.text)")
        #expect(try d.request("status")["count"]?.int == 2)  // plain.mp3 twice, no URL
    }

    @Test("a queue saved before such names were refused (`evil\\nOK\\nfile: injected.mp3` in the state file): every MPD reply naming it keeps it on one line, its newlines as spaces")
    func savedName() throws {
        let d = try DaemonFixture(device: "null", config: DaemonFixture.foreground)
        let name = "evil\nOK\nfile: injected.mp3"
        try FileManager.default.copyItem(atPath: d.music + "/album/a.mp3", toPath: d.music + "/" + name)
        try d.saveQueue([name, "long.mp3"])
        let port = HardeningTests.port()
        try d.start(["--mpd-listen", "127.0.0.1:\(port)"])
        let c = try TCPLineClient.mpd(port: port)
        defer { c.close() }
        for command in ["playlistinfo", "currentsong", "playlistid 1", "plchanges 0", "playlistsearch file evil", "playlist"] {
            let reply = try Self.ask(c, command)
            #expect(reply.contains("evil OK file: injected.mp3\n"), "\(command): \(reply)")
        }
        d.expectCleanStop()
    }
}
