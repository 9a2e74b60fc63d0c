import BacklineTestSupport
import Daemon
import Foundation
import Testing

/// Memory under sustained traffic and after a pipelined burst, read from the daemon's own
/// `/proc/PID/status` (resident set), while it plays through a PulseAudio null sink.
@Suite("backline daemon: memory stays flat under traffic and is given back after a burst", Harness.audioTools)
struct SoakTests {
    /// Resident set size of `pid`, in KiB.
    static func rss(_ pid: pid_t) -> Int? {
        guard let s = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = s.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    @Test("2 minutes of status/list/now-playing/seek/next traffic and reconnects while playing a 300-item queue: resident memory after warm-up moves by at most 1 MiB; 10,000 pipelined requests (every 50th a 300-item list): within 1 MiB of before, 6 s after the client leaves")
    func soak() throws {
        let server = try PulseNullSink()
        defer { server.stop() }
        let d = try DaemonFixture(device: server.alsaDevice, sinkEnvironment: server.environment,
                                  config: DaemonFixture.foreground)
        try d.start()
        let pid = try #require(d.process?.pid)
        var c = try d.client()
        let added = try c.request("add", [("paths", .array(Array(repeating: .string("album"), count: 100)))])
        try #require((added["items"]?.array?.count ?? 0) >= 300, "\(added.text.prefix(200))")
        #expect(try c.request("repeat", [("mode", "all")]).ok)
        #expect(try c.request("play").ok)

        var failures: [String] = []
        var requests = 0
        func traffic(seconds: Double) throws {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                requests += 1
                let command = ["status", "list", "status", "now-playing"][requests % 4]
                var r = try c.request(command)
                if requests % 50 == 0 { r = try c.request("seek", [("position", 1.0)]) }
                if requests % 200 == 0 { r = try c.request("next") }
                if requests % 100 == 0 { c = try d.client() }  // a new connection (the old one closes)
                if !r.ok { failures.append(r.text) }
                usleep(5_000)
            }
        }
        try traffic(seconds: 30)  // warm-up: caches, arenas, the sound server's memory pool
        let warm = try #require(Self.rss(pid))
        var highest = warm
        for _ in 0..<8 {
            try traffic(seconds: 15)
            highest = max(highest, Self.rss(pid) ?? 0)
        }
        let after = try #require(Self.rss(pid))
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(after - warm <= 1024 && highest - warm <= 1024,
                "resident after warm-up \(warm) KiB, after 2 min \(after) KiB (highest \(highest) KiB), \(requests) requests")

        // A burst: 10,000 requests sent without waiting (every 50th a `list` of the whole queue,
        // ~60 KB), read back as they come.
        let before = try #require(Self.rss(pid))
        do {
            // (Written from a second thread: the daemon stops reading a client that does not
            // read its replies, so one thread doing both would wait on itself.)
            nonisolated(unsafe) let burst = try d.client()
            let commands = ["status", "now-playing", "ping", "status", "list"]
            let lines = Array(((0..<10_000).map { k in
                #"{"id":\#(k),"command":"\#(k % 50 == 49 ? "list" : commands[k % 4])"}"#
            }.joined(separator: "\n") + "\n").utf8)
            Thread { try? burst.sendRaw(lines) }.start()
            var answered = 0
            while answered < 10_000, (try? burst.nextReply(timeout: 20))?.ok == true { answered += 1 }
            #expect(answered == 10_000)
        }  // closed here
        let peak = Self.rss(pid) ?? 0
        Thread.sleep(forTimeInterval: 6)
        let settled = try #require(Self.rss(pid))
        print("soak: resident after warm-up \(warm) KiB, after 2 min \(after) KiB (highest \(highest)); burst: before \(before), end \(peak), 6 s later \(settled) KiB")
        #expect(settled - before <= 1024, "before the burst \(before) KiB, at its end \(peak) KiB, 6 s later \(settled) KiB")
        #expect(try c.request("status")["state"] == "playing")
        #expect(try d.stop() == 0)
    }
}
