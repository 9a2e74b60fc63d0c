import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import MediaCore
import Synchronization
import Testing
import Locking

/// Jumps through `backline daemon` on the PulseAudio null sink (`norewinds=1`), as a client
/// gives them (`seek`, `previous` both ways, `next`, `play ID`, `remove` of the current item,
/// pause early then play), checked against the recording of the sink's monitor like the
/// library's (``JumpTests``): silence, the `elapsed` that `status` reports, the events.
@Suite("Jumps through the daemon are heard at once and reported as heard (PulseAudio null sink)", .serialized, Harness.audioTools)
struct DaemonJumpTests {
    /// The daemon's output period: its default 200 ms buffer / 4.
    static let period = 0.05

    /// Events read off a subscribed connection as they arrive, stamped on the test's clock.
    final class EventLog: @unchecked Sendable {
        // @unchecked: `client` is used by the reader thread only, after `init`.
        private let client: ControlClient
        private let start: Date
        private let stopped = Atomic<Bool>(false)
        private let seen = Lock<[(name: String, wall: Double, event: JSON)]>([])
        private let done = DispatchSemaphore(value: 0)

        init(_ client: ControlClient, start: Date) {
            self.client = client
            self.start = start
            Thread { [self] in
                while !stopped.load(ordering: .relaxed) {
                    guard let e = try? self.client.nextEvent(timeout: 0.1) else { continue }
                    let w = Date().timeIntervalSince(start)
                    var name = e["event"]?.string ?? "?"
                    if name == "state" { name += ":" + (e["state"]?.string ?? "?") }
                    seen.withLock { $0.append((name, w, e)) }
                }
                done.signal()
            }.start()
        }

        func stop() -> [(name: String, wall: Double, event: JSON)] {
            stopped.store(true, ordering: .relaxed)
            done.wait()
            return seen.withLock { $0 }
        }
    }

    @Test("seek, previous (restart and back), next, play ID, remove the current item, pause early then play: ≤ 20 ms of silence (median of 5), elapsed within a period of the recording and monotonic, events when heard, one server stream; a seek past the end plays the next item and elapsed follows it")
    func jumps() throws {
        try PulseNullSink.exclusive { sink in
            let d = try DaemonFixture(device: sink.alsaDevice, sinkEnvironment: sink.environment,
                                      config: DaemonFixture.foreground)
            let files = try (0..<3).map { try Fixtures.noise("jump-noise-\($0)", seconds: 12) }
            let refs = try files.map { try ReferenceDecoder.decodeS16($0) }
            for (k, f) in files.enumerated() {
                try FileManager.default.copyItem(atPath: f.path, toPath: d.music + "/noise-\(k).mp3")
            }
            try d.start()
            let c = try d.client()
            let added = try c.request("add", [("paths", .array((0..<30).map { .string("noise-\($0 % 3).mp3") }))])
            var order = (added["items"]?.array ?? []).compactMap { $0.int }
            try #require(order.count == 30, "\(added.text)")
            let fileOf = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($0.element, $0.offset % 3) })

            let start = Date()
            func now() -> Double { Date().timeIntervalSince(start) }
            let subscriber = try d.client()
            _ = try subscriber.request("subscribe", [("events", ["seeked", "current", "state"])])
            let events = EventLog(subscriber, start: start)

            var samples: [[PositionSample]] = [[]]
            var current = -1, elapsed = 0.0
            /// `status` every ~15 ms: the item and `elapsed`, stamped mid-request.
            func sample(for seconds: Double) throws {
                let end = now() + seconds
                repeat {
                    let t0 = now()
                    let s = try c.request("status")
                    let w = (t0 + now()) / 2
                    if let id = s["current"]?["id"]?.int, let e = s["elapsed"]?.number, s["state"] == "playing", let f = fileOf[id] {
                        (current, elapsed) = (id, e)
                        samples[samples.count - 1].append(PositionSample(wall: w, file: f, time: e))
                    }
                    usleep(15_000)
                } while now() < end
            }
            func after(_ id: Int) -> Int { order[(order.firstIndex(of: id) ?? 0) + 1] }
            var jumps: [JumpRecord] = []
            func jump(_ kind: String, to id: Int, at time: Double, events: [String] = [], optional: [String] = [],
                      _ command: String, _ args: [(String, JSON)] = []) throws {
                samples.append([])
                jumps.append(JumpRecord(kind: kind, wall: now(), file: fileOf[id] ?? -1, time: time, events: events, optionalEvents: optional))
                let r = try c.request(command, args)
                #expect(r.ok, "\(kind): \(r.text)")
                try sample(for: 0.6)
            }

            var streams: [[String]] = []
            let daemonPID = try #require(d.process?.pid)
            let (_, rec) = try sink.record { () throws -> Void in
                _ = try c.request("play")
                try sample(for: 2.0)
                streams.append(sinkInputs(ofProcess: daemonPID, environment: sink.environment))
                for _ in 0..<5 {
                    let target = (elapsed + 3).rounded()
                    try jump("seek", to: current, at: target, events: ["seeked"], "seek", [("position", .number(target))])
                    try jump("previous (restart)", to: current, at: 0, "previous")
                    let back = current
                    try jump("next", to: after(current), at: 0, events: ["current"], "next")
                    try jump("previous (back)", to: back, at: 0, events: ["current"], "previous")
                    let two = after(after(current))
                    try jump("play ID", to: two, at: 0, events: ["current"], "play", [("item", .number(Double(two)))])
                    let removed = current, next = after(current)
                    try jump("remove current", to: next, at: 0, events: ["current"], "remove", [("item", .number(Double(removed)))])
                    order.removeAll { $0 == removed }
                    // Next, pause 0.1 s into it, then play: it goes on from where it paused.
                    try jump("next", to: after(current), at: 0, events: ["current"], "next")
                    usleep(100_000)
                    _ = try c.request("pause")
                    usleep(300_000)
                            let paused = try c.request("status")["elapsed"]?.number ?? -1
                    try jump("early pause, play", to: current, at: paused, optional: ["state:playing"], "play")
                }
                streams.append(sinkInputs(ofProcess: daemonPID, environment: sink.environment))
            }
            // A seek past the end is a seek to the end: the item ends, the next one plays from its
            // start, and `elapsed` follows it (it once stuck at the old item's end).
            let before = try #require(try c.request("status")["current"]?["id"]?.int)
            let reply = try c.request("seek", [("position", 5940)])
            #expect(abs((reply["position"]?.number ?? 0) - 12) < 0.05, "clamped to the item's 12 s: \(reply.text)")
            #expect(eventually(timeout: 5) { (try? c.request("status"))?["current"]?["id"]?.int == after(before) })
            usleep(700_000)
            let a = try c.request("status")
            usleep(300_000)
            let b = try c.request("status")
            let (ea, eb) = (a["elapsed"]?.number ?? -1, b["elapsed"]?.number ?? -1)
            #expect(a["current"]?["id"]?.int == after(before) && ea > 0.4 && ea < 2 && eb - ea > 0.2,
                    "after seeking past the end: \(a.text) then \(b.text)")
            let seen = events.stop()
            let status = try c.request("status")
            #expect(status["underruns"]?.int == 0, "a jump is not an underrun: \(status.text)")
            // One sound-server stream throughout: every jump flushed it in place.
            #expect(streams.count == 2 && streams[0] == streams[1] && !streams[0].isEmpty,
                    "the daemon's sink inputs before and after the jumps: \(streams)")
            try checkJumps(recording: rec, rate: PulseNullSink.rate, references: refs, jumps: jumps, samples: samples,
                           events: seen.map { ($0.name, $0.wall) }, period: Self.period)

            d.expectCleanStop()
        }
    }
}
