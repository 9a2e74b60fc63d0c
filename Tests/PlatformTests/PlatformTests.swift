import Glibc
import Platform
import Testing

/// The POSIX helpers that stand in for Foundation in the player and the daemon: each result is
/// the one `NSString`, `String(format:)`, `trimmingCharacters` or `Process` gave for the same input.
@Suite struct PlatformTests {
    @Test(arguments: [
        ("/a/b.mp3", "b.mp3", "/a", "mp3"),
        ("/a/b/", "b", "/a", ""),
        ("a/b.c.MP3", "b.c.MP3", "a", "MP3"),
        ("b.mp3", "b.mp3", "", "mp3"),
        ("/b.mp3", "b.mp3", "/", "mp3"),
        ("/", "/", "/", ""),
        ("", "", "", ""),
        ("music/.hidden", ".hidden", "music", ""),
        ("a//b", "b", "a", ""),
    ])
    func paths(path: String, last: String, parent: String, ext: String) {
        #expect(Path.lastComponent(path) == last)
        #expect(Path.deletingLastComponent(path) == parent)
        #expect(Path.extension(path) == ext)
    }

    @Test func tilde() {
        let home = Path.homeDirectory()
        #expect(!home.isEmpty)
        #expect(Path.expandingTilde("~") == home)
        #expect(Path.expandingTilde("~/Music/a.mp3") == home + "/Music/a.mp3")
        #expect(Path.expandingTilde("/~/a") == "/~/a")
        #expect(Path.expandingTilde("~x") == "~x")
    }

    @Test func trimming() {
        #expect("  a b \t".trimmingBlanks() == "a b")
        #expect(" \t ".trimmingBlanks() == "")
        #expect("\u{00A0}x\u{2003}".trimmingBlanks() == "x")  // no-break and em spaces are blanks
        #expect("\nx\n".trimmingBlanks() == "\nx\n")  // newlines are not
        #expect("//a/b//".trimming("/") == "a/b")
        #expect("///".trimming("/") == "")
    }

    @Test func formatting() {
        #expect(cFormat("%.3f", 1.23456) == "1.235")
        #expect(cFormat("%ld:%02ld", 3, 7) == "3:07")
        #expect(cFormat("%04d-%02d", Int32(2026), Int32(11)) == "2026-11")
        #expect(cFormat("%0300ld!", 5) == String(repeating: "0", count: 299) + "5!")  // longer than the first buffer
    }

    @Test func fileOrder() {
        let names = ["track10.mp3", "Track2.mp3", "track1.mp3", "b.mp3", "A.mp3", "track02.mp3", "a.mp3"]
        #expect(names.sorted { $0.precedesInFileOrder($1) }
            == ["A.mp3", "a.mp3", "b.mp3", "track1.mp3", "Track2.mp3", "track02.mp3", "track10.mp3"])
        #expect(!"x".precedesInFileOrder("x"))
    }

    @Test func threadRunsAndJoins() {
        let box = Box()
        let t = PlatformThread.start(name: "bl-test-thread") {
            box.name = readComm()
        }
        t.join()
        #expect(box.name == "bl-test-thread")
    }

    @Test func childOutputAndStatus() throws {
        let c = try ChildProcess(path: "/bin/sh", arguments: ["-c", "echo one; echo two >&2; printf three; exit 3"],
                                 environment: ["PATH": "/usr/bin:/bin"])
        let deadline = monotonicNanos() + 10_000_000_000
        var lines: [String] = []
        while let l = c.readLine(until: deadline) { lines.append(String(l)) }
        #expect(lines == ["one", "two", "three"])
        #expect(c.wait(until: deadline) == 3)
    }

    @Test func childEnvironmentIsExact() throws {
        let c = try ChildProcess(path: "/bin/sh", arguments: ["-c", "echo \"$A|$HOME\""], environment: ["A": "b c"])
        #expect(c.readLine(until: monotonicNanos() + 10_000_000_000) == "b c|")
    }

    @Test func childHasItsOwnGroupAndDefaultSignals() throws {
        // pgrp is /proc/PID/stat's fifth field; SigBlk and SigIgn are hex masks (SIGPIPE: bit 12),
        // read by the shell itself once exec'd into grep (a shell blocks signals around its forks,
        // so reading its status from a child catches that).
        let c = try ChildProcess(path: "/bin/sh", arguments: ["-c", "cut -d' ' -f5 /proc/$$/stat; exec grep -E '^Sig(Blk|Ign)' /proc/self/status"],
                                 environment: ["PATH": "/usr/bin:/bin"])
        let deadline = monotonicNanos() + 10_000_000_000
        var lines: [String] = []
        while let l = c.readLine(until: deadline) { lines.append(String(l)) }
        #expect(c.wait(until: deadline) == 0)
        #expect(lines.first == "\(c.pid)", "a process group of its own: \(lines)")
        let blocked = lines.first { $0.hasPrefix("SigBlk:") }.map { $0.dropFirst(7).trimmingBlanks() }
        let ignored = lines.first { $0.hasPrefix("SigIgn:") }.flatMap { UInt64($0.dropFirst(7).trimmingBlanks(), radix: 16) }
        #expect(blocked == "0000000000000000", "\(lines)")
        #expect(ignored.map { $0 & (1 << (UInt64(SIGPIPE) - 1)) } == 0, "SIGPIPE at its default: \(lines)")
    }

    @Test func childKilledAtDeadline() throws {
        let c = try ChildProcess(path: "/bin/sh", arguments: ["-c", "exec sleep 30"], environment: [:])
        #expect(c.wait(until: monotonicNanos() + 100_000_000) == nil)
        c.kill()
        #expect(c.wait(until: .max) == 128 + SIGKILL)
    }

    @Test func spawnFailureCarriesErrno() {
        #expect(throws: SystemError.self) {
            try ChildProcess(path: "/nonexistent/program", arguments: [], environment: [:])
        }
        do {
            _ = try ChildProcess(path: "/nonexistent/program", arguments: [], environment: [:])
        } catch {
            #expect(error.code == ENOENT)
            #expect(error.description.contains("No such file or directory"))
        }
    }
}

private final class Box: @unchecked Sendable { var name = "" }

private func readComm() -> String {
    let fd = open("/proc/thread-self/comm", O_RDONLY)
    defer { close(fd) }
    var buf = [UInt8](repeating: 0, count: 32)
    let n = read(fd, &buf, buf.count)
    return String(decoding: buf[..<max(0, n)], as: UTF8.self).trimmingBlanks().split(separator: "\n").first.map(String.init) ?? ""
}
