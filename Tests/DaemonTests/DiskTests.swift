import BacklineTestSupport
import BacklineWire
import Foundation
import Testing

/// The disk under the daemon's state fails: the state directory on a small tmpfs of
/// its own that fills up, then turns read-only, while the daemon plays. It keeps playing, says
/// why it cannot save once (not at every save), saves again when it can; the state file and
/// the library database are never left half-written; a kill at the worst moment loses nothing
/// that was saved.
@Suite("a full disk and a read-only state directory under the daemon", .serialized)
struct DiskTests {
    /// A tmpfs of `kilobytes` at `path` (root's: CI runs as root). Nil where mounting is not
    /// allowed outside CI (a developer's unprivileged shell).
    static func mountTmpfs(_ path: String, kilobytes: Int) throws -> Bool {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let r = try runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k,mode=700", "tmpfs", path])
        if r.status != 0 {
            if ProcessInfo.processInfo.environment["CI"] != nil { throw HarnessError("cannot mount a tmpfs: \(r.stderr)") }
            return false
        }
        return true
    }

    static func umount(_ path: String) {
        _ = try? runProcess("/bin/umount", ["-l", path])
    }

    /// Fills the file system holding `dir` (a file of its own, removed to free it).
    static func fill(_ dir: String) -> String {
        let filler = dir + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var block = [UInt8](repeating: 0x55, count: 4096)
        while block.withUnsafeMutableBytes({ write(fd, $0.baseAddress!, $0.count) }) > 0 {}
        close(fd)
        return filler
    }

    /// The lines of the daemon's log that contain `text`.
    static func said(_ d: DaemonFixture, _ text: String) -> [String] {
        d.log().components(separatedBy: "\n").filter { $0.contains(text) }
    }

    /// The state file as it is on disk now, if it parses.
    static func saved(_ d: DaemonFixture) -> JSON? {
        FileManager.default.contents(atPath: d.stateFile).flatMap { try? JSON.parse(Array($0)) }
    }

    /// The state file parses, is Backline's, and nothing half-written lies beside it.
    static func expectWhole(_ d: DaemonFixture, sourceLocation: SourceLocation = #_sourceLocation) throws -> JSON {
        let data = try #require(FileManager.default.contents(atPath: d.stateFile), sourceLocation: sourceLocation)
        let state = try JSON.parse(Array(data))
        #expect(state["format"] == "backline-state", sourceLocation: sourceLocation)
        let dir = (d.stateFile as NSString).deletingLastPathComponent
        let beside = try FileManager.default.contentsOfDirectory(atPath: dir)
        #expect(!beside.contains { $0.contains(".tmp-") || $0.contains("corrupt") }, "\(beside)", sourceLocation: sourceLocation)
        return state
    }

    @Test("the state disk fills while playing: the daemon plays on, says `cannot save state` once, the last whole state stays on disk; freed, it saves again; read-only, the same; a kill after loses nothing saved")
    func stateOnAFullThenReadOnlyDisk() throws {
        let d = try DaemonFixture(device: "null", config: DaemonFixture.foreground + "save-interval = 0.2\nlibrary = off\n")
        let stateRoot = d.dir.path + "/state"
        guard try Self.mountTmpfs(stateRoot, kilobytes: 256) else { return }
        defer { Self.umount(stateRoot) }
        try d.start()
        #expect(try d.request("add", [("paths", ["long.mp3"])]).ok)
        #expect(try d.request("repeat", [("mode", "one")]).ok)
        #expect(try d.request("play").ok)
        #expect(try d.request("volume", [("volume", 30)]).ok)
        #expect(eventually { Self.saved(d)?["volume"]?.number == 0.3 })

        // Full: each change tries to save; it cannot; said once.
        let filler = Self.fill(stateRoot)
        for v in 0..<8 {
            #expect(try d.request("volume", [("volume", .int(40 + v))]).ok)
            usleep(250_000)
        }
        #expect(Self.said(d, "cannot save state").count == 1, "\(Self.said(d, "cannot save state"))")
        let status = try d.request("status")
        #expect(status["state"] == "playing" && status["volume"] == 47, "\(status.text)")
        #expect(try Self.expectWhole(d)["volume"]?.number == 0.3, "the last whole save stays")

        // Freed: saved again, with what is current.
        try FileManager.default.removeItem(atPath: filler)
        #expect(try d.request("volume", [("volume", 60)]).ok)
        #expect(eventually { Self.said(d, "state saved again").count == 1 }, "\(d.log().suffix(800))")
        #expect(eventually { Self.saved(d)?["volume"]?.number == 0.6 })

        // Read-only: the same, once for this new reason.
        let ro = try runProcess("/bin/mount", ["-o", "remount,ro", stateRoot])
        #expect(ro.status == 0, "\(ro.stderr)")
        for v in 0..<8 {
            #expect(try d.request("volume", [("volume", .int(70 + v))]).ok)
            usleep(250_000)
        }
        let failures = Self.said(d, "cannot save state")
        #expect(failures.count == 2, "\(failures)")
        #expect(try d.request("status")["state"] == "playing")
        #expect(try Self.expectWhole(d)["volume"]?.number == 0.6)
        #expect(try runProcess("/bin/mount", ["-o", "remount,rw", stateRoot]).status == 0)
        #expect(try d.request("volume", [("volume", 80)]).ok)
        #expect(eventually { Self.said(d, "state saved again").count == 2 }, "\(d.log().suffix(800))")
        #expect(eventually { Self.saved(d)?["volume"]?.number == 0.8 })

        // Killed now: it comes back with what it saved, nothing moved aside.
        try d.kill9()
        try d.start()
        #expect(try d.request("status")["volume"] == 80)
        #expect(!d.log().contains("moved aside"), "\(d.log())")
        d.expectCleanStop()
    }

    @Test("the library's database on a full disk: an update fails with the reason and the daemon answers and plays on; the database opens whole after a kill; freed, the next update adds the songs")
    func libraryOnAFullDisk() throws {
        let d = try DaemonFixture(device: "null", config: DaemonFixture.foreground + "save-interval = 0.2\nauto-update = no\n")
        let stateRoot = d.dir.path + "/state"
        guard try Self.mountTmpfs(stateRoot, kilobytes: 512) else { return }
        defer { Self.umount(stateRoot) }
        try d.start()
        #expect(eventually(timeout: 60) { (try? d.ctl(["stats"]))?.stdoutText.hasPrefix("7 songs") == true },
                "\((try? d.ctl(["stats"]))?.stdoutText ?? "")")
        #expect(try d.request("add", [("paths", ["long.mp3"])]).ok)
        #expect(try d.request("repeat", [("mode", "one")]).ok)
        #expect(try d.request("play").ok)
        // 200 more songs (copies) while the disk is full.
        let more = d.music + "/more"
        try FileManager.default.createDirectory(atPath: more, withIntermediateDirectories: true)
        for i in 0..<200 { try FileManager.default.copyItem(atPath: d.music + "/short/1.mp3", toPath: more + "/\(i).mp3") }
        let filler = Self.fill(stateRoot)
        let update = try d.ctl(["update", "--wait"])
        #expect(update.status != 0 && (update.stdoutText + update.stderr).contains("disk is full"), "\(update.stdoutText) \(update.stderr)")
        #expect(eventually { Self.said(d, "library update failed").count == 1 }, "\(d.log().suffix(1500))")
        #expect(Self.said(d, "library update failed").first?.contains("full") == true, "\(Self.said(d, "library update failed"))")
        #expect(try d.request("status")["state"] == "playing")
        #expect(try d.ctl(["stats"]).stdoutText.hasPrefix("7 songs"), "the library as it was")

        // Killed on a full disk: the database opens whole (not moved aside, not rebuilt).
        try d.kill9()
        try FileManager.default.removeItem(atPath: filler)
        try d.start()
        #expect(!d.log().contains("damaged"), "\(d.log())")
        #expect(eventually(timeout: 30) { (try? d.ctl(["stats"]))?.stdoutText.hasPrefix("7 songs") == true },
                "\((try? d.ctl(["stats"]))?.stdoutText ?? "")")
        let again = try d.ctl(["update", "--wait"])
        #expect(again.status == 0 && again.stdoutText.contains("200 added"), "\(again.stdoutText) \(again.stderr)")
        #expect(try d.ctl(["stats"]).stdoutText.hasPrefix("207 songs"))
        d.expectCleanStop()
    }
}
