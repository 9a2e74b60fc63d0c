import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import Synchronization
import Testing

/// Memory, threads and descriptors under sustained traffic (JSON clients beside reconnecting MPD
/// TCP clients and `mpc status`) and after a pipelined burst, read from the daemon's own
/// `/proc/PID` (resident set, tasks, descriptors), while it plays through a PulseAudio null sink.
@Suite("backline daemon: memory stays flat under traffic and is given back after a burst", Harness.audioTools)
struct SoakTests {
    /// Resident set size of `pid`, in KiB.
    static func rss(_ pid: pid_t) -> Int? {
        let kib = HardeningTests.statusKiB(pid, "VmRSS")
        return kib < 0 ? nil : kib
    }

    /// Threads and open descriptors of `pid`.
    static func threads(_ pid: pid_t) -> Int { HardeningTests.threads(pid) }
    /// Threads of `pid` that are not libdispatch's workers: those the daemon and its libraries
    /// start (the event loop, the request pool, the decoder and output threads, libpulse's).
    /// libdispatch adds workers while its queues wait on a busy machine and ends them after
    /// they idle, on its own (4 more were seen under the parallel test pass, none on a quiet
    /// machine); everything else must stay as it was.
    static func ownThreads(_ pid: pid_t) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.filter { t in
            let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/comm", encoding: .utf8)) ?? ""
            return !name.contains("qos") && !name.contains("dispatch")
        }.count
    }
    static func descriptors(_ pid: pid_t) -> Int { HardeningTests.descriptors(pid) }

    /// MPD traffic on TCP until `stop` is set, from its own thread: one connection asking
    /// `currentsong`, `status` and `playlistinfo` in turn (~300 a second), a new connection every
    /// 20th request that asks two things and closes first (as `mpc` does), and a real `mpc
    /// status` every 200th. Failures (a refused connection, an ACK, a non-zero exit) are counted.
    final class MPDTraffic: @unchecked Sendable {
        // @unchecked: `stop` and the counters are read after `done` is signalled.
        let port: Int
        private let stopFlag = Atomic<Bool>(false)
        private let done = DispatchSemaphore(value: 0)
        private(set) var requests = 0, reconnects = 0, mpcRuns = 0
        private(set) var failures: [String] = []

        init(port: Int) { self.port = port }

        func start() {
            Thread { [self] in
                defer { done.signal() }
                var held: TCPLineClient?
                while !stopFlag.load(ordering: .relaxed) {
                    requests += 1
                    do {
                        if held == nil { held = try TCPLineClient.mpd(port: port) }
                        let command = ["currentsong", "status", "playlistinfo 0:5"][requests % 3]
                        let reply = try held!.ask(command)
                        if !reply.hasSuffix("OK\n") { failures.append("\(command): \(reply.suffix(120))") }
                        if requests % 20 == 0 {
                            reconnects += 1
                            let c = try TCPLineClient.mpd(port: port)
                            let r = try c.ask("status") + c.ask("currentsong")
                            if !r.hasSuffix("OK\n") { failures.append("new connection: \(r.suffix(120))") }
                            c.close()  // the client closes first
                        }
                        if requests % 200 == 0 {
                            mpcRuns += 1
                            let r = try MPDTests.mpc("127.0.0.1", port: port, ["status"])
                            if r.status != 0 { failures.append("mpc status: exit \(r.status): \(r.stderr)") }
                        }
                    } catch {
                        failures.append("\(error)")
                        held?.close()
                        held = nil
                    }
                    usleep(3_000)
                }
                held?.close()
            }.start()
        }

        /// Stops the traffic and waits for its last request.
        func stop() {
            stopFlag.store(true, ordering: .relaxed)
            done.wait()
        }
    }

    @Test("2 minutes of JSON status/list/now-playing/seek/next traffic and reconnects beside MPD TCP clients (currentsong/status/playlistinfo, reconnecting, `mpc status`) while playing a 300-item queue: resident memory after warm-up moves by at most 1 MiB, threads (libdispatch's workers aside) not at all, descriptors return to their baseline; 10,000 pipelined requests (every 50th a 300-item list): within 1 MiB of before, 6 s after the client leaves")
    func soak() throws {
        let server = try PulseNullSink()
        defer { server.stop() }
        let d = try DaemonFixture(device: server.alsaDevice, sinkEnvironment: server.environment,
                                  config: DaemonFixture.foreground)
        let port = HardeningTests.port()
        try d.start(["--mpd-listen", "127.0.0.1:\(port)"])
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
        usleep(500_000)
        let baselineDescriptors = Self.descriptors(pid)
        let mpd = MPDTraffic(port: port)
        mpd.start()
        try traffic(seconds: 30)  // warm-up: caches, arenas, the sound server's memory pool, pool threads
        let warm = try #require(Self.rss(pid))
        let warmThreads = Self.threads(pid), warmOwn = Self.ownThreads(pid)
        var highest = warm, mostThreads = warmThreads, mostOwn = warmOwn
        for _ in 0..<8 {
            try traffic(seconds: 15)
            highest = max(highest, Self.rss(pid) ?? 0)
            mostThreads = max(mostThreads, Self.threads(pid))
            mostOwn = max(mostOwn, Self.ownThreads(pid))
        }
        let after = try #require(Self.rss(pid))
        mpd.stop()
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(mpd.failures.isEmpty, "\(mpd.failures.count) MPD failures: \(mpd.failures.prefix(3))")
        #expect(mpd.requests > 5_000 && mpd.mpcRuns > 20, "MPD: \(mpd.requests) requests, \(mpd.reconnects) new connections, \(mpd.mpcRuns) mpc runs")
        #expect(after - warm <= 1024 && highest - warm <= 1024,
                "resident after warm-up \(warm) KiB, after 2 min \(after) KiB (highest \(highest) KiB), \(requests) JSON and \(mpd.requests) MPD requests")
        #expect(mostOwn == warmOwn, "threads (libdispatch's workers aside) after warm-up \(warmOwn), at most \(mostOwn) later; all threads \(warmThreads), at most \(mostThreads)")
        // Every MPD connection, closed by its client, is closed by the daemon too (none left in CLOSE-WAIT).
        #expect(eventually(timeout: 15) { Self.descriptors(pid) <= baselineDescriptors },
                "descriptors: \(baselineDescriptors) before the traffic, \(Self.descriptors(pid)) after it")
        print("soak: threads \(warmThreads) after warm-up (\(warmOwn) not libdispatch's), at most \(mostThreads) (\(mostOwn)); MPD \(mpd.requests) requests, \(mpd.reconnects) reconnects, \(mpd.mpcRuns) mpc runs")

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
        d.expectCleanStop()
    }
}
