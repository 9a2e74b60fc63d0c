import BacklineTestSupport
import Daemon
import Foundation
import Testing

/// Nobody takes the daemon's place: its socket directory must be the user's own (mode 700, not a
/// link), and `ctl` checks that directory and who answers before it sends anything. The other
/// user is a real one (`nobody`, uid 65534), through `setpriv`.
@Suite("backline daemon: no socket takeover by another user", .serialized, Harness.audioTools)
struct TakeoverTests {
    @Test("the daemon refuses a socket directory another user owns (0777), one with mode 755, and a symbolic link: exit 1, the reason, no socket")
    func daemonRefuses() throws {
        for kind in ["another user's, 0777", "mode 755", "a symbolic link"] {
            let d = try DaemonFixture(device: "null")
            let rt = d.dir.path + "/run/backline"
            try FileManager.default.createDirectory(atPath: d.dir.path + "/run", withIntermediateDirectories: true)
            switch kind {
            case "mode 755":
                #expect(mkdir(rt, 0o755) == 0 && chmod(rt, 0o755) == 0)
            case "a symbolic link":
                try FileManager.default.createDirectory(atPath: d.dir.path + "/elsewhere", withIntermediateDirectories: true)
                chmod(d.dir.path + "/elsewhere", 0o700)
                try FileManager.default.createSymbolicLink(atPath: rt, withDestinationPath: d.dir.path + "/elsewhere")
            default:
                #expect(mkdir(rt, 0o777) == 0 && chmod(rt, 0o777) == 0 && chown(rt, 65534, 65534) == 0)
            }
            let r = try runProcess(backline, ["daemon", "--music-dir", d.music, "--device", "null", "--config", d.configFile],
                                   environment: d.environment, timeout: 20)
            let expected = ["another user's, 0777": "owned by uid 65534", "mode 755": "has mode 755", "a symbolic link": "is a symbolic link"][kind]!
            #expect(r.status == 1 && r.stderr.contains("refusing the socket directory") && r.stderr.contains(expected), "\(kind): \(r.status) \(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: d.socket), "\(kind): no socket")
        }
    }

    @Test("ctl refuses a socket in another user's directory, and a socket moved into its own directory that another user's server answers")
    func ctlRefuses() throws {
        // The other user's server: a real daemon run as nobody, in a directory of its own.
        let (p, dir, theirs) = try daemonOfAnotherUser(socket: "nobody/control.sock")
        defer { p.signal(SIGKILL); _ = try? p.wait(timeout: 5) }

        let inTheirs = try runProcess(backline, ["ctl", "--socket", theirs, "status"], timeout: 20)
        #expect(inTheirs.status == 3 && inTheirs.stderr.contains("owned by uid 65534"), "\(inTheirs.status) \(inTheirs.stderr)")

        // The attack: the socket moved into a directory that passes the check (ours, 0700).
        let mine = dir + "/mine"
        #expect(mkdir(mine, 0o700) == 0)
        #expect(rename(theirs, mine + "/control.sock") == 0)
        let moved = try runProcess(backline, ["ctl", "--socket", mine + "/control.sock", "status"], timeout: 20)
        #expect(moved.status == 3 && moved.stderr.contains("answered by uid 65534"), "\(moved.status) \(moved.stderr)")
        #expect(!moved.stdoutText.contains("state"), "nothing of the other server's reply is shown")
    }
}
