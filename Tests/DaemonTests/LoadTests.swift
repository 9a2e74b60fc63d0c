import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import Synchronization
import Testing
import Locking

@Suite("backline daemon: many clients while playing", Harness.audioTools)
struct LoadTests {
    @Test("200 connections issuing commands at once while playing: every request answered, no underrun, the recording has no gap")
    func twoHundredClients() throws {
        try PulseNullSink.exclusive { sink in
            let d = try DaemonFixture(device: sink.alsaDevice, sinkEnvironment: sink.environment,
                                      config: "background-grace = 60\nstart-state = foreground\nposition-interval = 0.1\n")
            try d.start()
            let c = try d.client()
            _ = try c.request("add", [("paths", ["long.mp3", "album"])])
            _ = try c.request("play")
            #expect(eventually { (try? c.request("status"))?["elapsed"]?.number ?? 0 > 0.5 })
            let answered = Atomic<Int>(0)
            let failures = Lock<[String]>([])
            let (_, recording) = try sink.record {
                usleep(500_000)
                DispatchQueue.concurrentPerform(iterations: 200) { k in
                    do {
                        let client = try d.client()
                        if k % 4 == 0 { _ = try client.request("subscribe") }
                        for n in 0..<20 {
                            let command = ["status", "ping", "list", "now-playing"][(k + n) % 4]
                            let r = try client.request(command)
                            if r.ok { answered.add(1, ordering: .relaxed) } else { failures.withLock { $0.append(r.text) } }
                        }
                    } catch {
                        failures.withLock { $0.append("client \(k): \(error)") }
                    }
                }
                usleep(500_000)
            }
            #expect(answered.load(ordering: .relaxed) == 200 * 20, "\(failures.withLock { $0.prefix(5) })")
            let s = try c.request("status")
            #expect(s["state"] == "playing" && s["current"]?["id"] == 1)
            #expect(s["underruns"] == 0, "underruns: \(s.text)")
            // The 330 Hz tone never drops out: every 10 ms window between the first and the last
            // sound carries it.
            let mono = stride(from: 0, to: recording.count - 1, by: 2).map { recording[$0] }
            let first = try #require(mono.firstIndex { abs(Int($0)) > 1000 })
            let last = try #require(mono.lastIndex { abs(Int($0)) > 1000 })
            #expect(Double(last - first) / 44100 > 1.5, "recorded \(Double(last - first) / 44100) s of tone")
            var quiet: [Int] = []
            for w in stride(from: first, to: last - 441, by: 441) where PCM.rms(mono[w..<w + 441]) < 0.05 { quiet.append(w) }  // the tone: 0.35
            #expect(quiet.isEmpty, "silent windows at \(quiet.prefix(5).map { Double($0 - first) / 44100 }) s")
            d.expectCleanStop()
        }
    }
}
