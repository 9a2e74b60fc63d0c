import AudioEngine
import BacklineTestSupport
import Foundation
import MediaCore
import Synchronization
import Testing
import Locking

/// The `pipe:` output (snapserver's kind of input): what a reader of the FIFO gets, against the
/// reference decode; its pace; a FIFO that is not there.
@Suite("the pipe output: PCM into a FIFO at real-time pace")
struct PipeOutputTests {
    /// Reads a FIFO the way snapserver holds one open (read and write, so the test's reader
    /// never sees an end of file between writers), until stopped; stamps the first and last bytes.
    final class FIFOReader: @unchecked Sendable {
        let path: String
        private let fd: Int32
        private let state = Lock<(bytes: [UInt8], first: Double?, last: Double?, stop: Bool)>(([], nil, nil, false))
        private let done = DispatchSemaphore(value: 0)

        init(in dir: URL) throws {
            path = dir.appendingPathComponent("snapfifo").path
            guard mkfifo(path, 0o600) == 0 else { throw HarnessError("mkfifo: errno \(errno)") }
            fd = open(path, O_RDWR | O_NONBLOCK)
            guard fd >= 0 else { throw HarnessError("open fifo: errno \(errno)") }
            Thread { [self] in
                var chunk = [UInt8](repeating: 0, count: 65536)
                while !state.withLock({ $0.stop }) {
                    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&p, 1, 20) > 0 else { continue }
                    let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    guard n > 0 else { continue }
                    let now = ProcessInfo.processInfo.systemUptime
                    state.withLock { s in
                        s.bytes += chunk[..<n]
                        if s.first == nil { s.first = now }
                        s.last = now
                    }
                }
                done.signal()
            }.start()
        }

        /// Stops reading; what was read, and the seconds between its first and last bytes.
        func stop() -> (samples: [Int16], seconds: Double) {
            state.withLock { $0.stop = true }
            done.wait()
            close(fd)
            let s = state.withLock { $0 }
            let samples = s.bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self).prefix(s.bytes.count / 2)) }
            return (samples, (s.last ?? 0) - (s.first ?? 0))
        }
    }

    @Test("at the item's rate: the reader gets the decode as 16 bits (within 1 LSB, every sample, nothing more), no faster than real time")
    func sameRate() throws {
        let dir = try Harness.makeTemporaryDirectory("pipe")
        let reader = try FIFOReader(in: dir)
        let tone = try Fixtures.tone("pipe-tone", seconds: 3)
        let reference = try ReferenceDecoder.decodeS16(tone)
        let engine = makeEngine(device: "pipe:\(reader.path)?format=44100:16:2", format: .s16)
        let log = EventLog(engine)
        engine.enqueue([tone.path])
        #expect(log.waitForEnd(), "\(log.all)")
        engine.shutdown()
        let (got, seconds) = reader.stop()
        // The decode, then a tenth of a second of silence (which carries a chunked reader's last
        // partial chunk through).
        #expect(got.count == reference.count + 2 * 4410, "\(got.count) samples read, the decode has \(reference.count)")
        #expect(got.dropFirst(reference.count).allSatisfy { $0 == 0 })
        let worst = zip(got, reference).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
        let underruns = log.all.filter { if case .underrun = $0 { true } else { false } }.count
        #expect(worst <= 1, "largest difference \(worst) (underruns: \(underruns))")
        // Real-time pace: 3 s of audio cannot have arrived in less than 3 s less the lead
        // (a period and 20 ms) the FIFO is kept ahead by.
        #expect(seconds > 2.6, "3 s of audio arrived over \(seconds) s")
        if case .deviceOpened(let c)? = log.all.first(where: { if case .deviceOpened = $0 { true } else { false } }) {
            #expect(c.rate == 44100 && c.sampleFormat == .s16)
        }
    }

    @Test("at another rate: resampled with libsoxr to the pipe's (44.1 → 48 kHz: the same length in time, the same tone, the same loudness); a mono item on both channels")
    func resampled() throws {
        let dir = try Harness.makeTemporaryDirectory("pipe")
        let reader = try FIFOReader(in: dir)
        let tone = try Fixtures.tone("pipe-tone-mono", seconds: 2, frequency: 1000, channels: 1)
        let engine = makeEngine(device: "pipe:\(reader.path)?format=48000:16:2")
        let log = EventLog(engine)
        engine.enqueue([tone.path])
        #expect(log.waitForEnd(), "\(log.all)")
        engine.shutdown()
        let (got, _) = reader.stop()
        let frames = got.count / 2
        #expect(abs(frames - 96000 - 4800) <= 48, "2 s at 48 kHz and 0.1 s of silence: \(frames) frames")
        let left = stride(from: 0, to: got.count, by: 2).map { got[$0] }, right = stride(from: 1, to: got.count, by: 2).map { got[$0] }
        #expect(left == right, "a mono item, the same on both channels")
        // 1 kHz for 2 s: 2,000 cycles (rising zero crossings), in the middle of the signal.
        let middle = Array(left[4800..<(frames - 9600)])
        let crossings = zip(middle, middle.dropFirst()).filter { $0.0 < 0 && $0.1 >= 0 }.count
        let expected = Double(middle.count) / 48000 * 1000
        #expect(abs(Double(crossings) - expected) <= 2, "\(crossings) cycles, \(expected) expected")
        let reference = try ReferenceDecoder.decodeS16(tone)
        let ratio = PCM.rms(middle[...]) / PCM.rms(reference[4410..<(reference.count - 4410)])
        #expect(abs(ratio - 1) < 0.01, "the same loudness: \(ratio)")
    }

    @Test("with latency=1000 the queue still ends (the reader's latency plays down once all is out, and the end is reported after it); a paused item sought plays on when resumed; a mono pipe format is refused")
    func latencyAndSeekWhilePaused() throws {
        let dir = try Harness.makeTemporaryDirectory("pipe")
        let reader = try FIFOReader(in: dir)
        let engine = makeEngine(device: "pipe:\(reader.path)?format=44100:16:2&latency=1000", format: .s16)
        let log = EventLog(engine)
        engine.enqueue([try Fixtures.tone("pipe-tone", seconds: 3).path])
        #expect(log.wait(timeout: 10) { if case .itemStarted = $0 { true } else { false } } != nil)
        engine.pause()
        Thread.sleep(forTimeInterval: 0.3)
        #expect(engine.seek(to: 1))
        engine.resume()
        #expect(log.waitForEnd(timeout: 20), "the end came, latency and all: \(log.all.suffix(3))")
        engine.shutdown()
        let (got, _) = reader.stop()
        #expect(got.count > 2 * 44100, "the rest after the seek was sent: \(got.count / 2) frames")

        let mono = makeEngine(device: "pipe:\(reader.path)?format=48000:16:1")
        defer { mono.shutdown() }
        let monoLog = EventLog(mono)
        mono.enqueue([try Fixtures.tone("pipe-tone", seconds: 3).path])
        #expect(monoLog.wait(timeout: 10) { if case .deviceError(let e) = $0 { e.message.contains("RATE:16:2") } else { false } } != nil,
                "\(monoLog.all.suffix(2))")
    }

    @Test("a reader that stops taking the audio (snapserver killed; the FIFO stays) is a lost device within a couple of seconds")
    func readerGone() throws {
        let dir = try Harness.makeTemporaryDirectory("pipe")
        let path = dir.appendingPathComponent("snapfifo").path
        #expect(mkfifo(path, 0o600) == 0)
        let engine = makeEngine(device: "pipe:\(path)")
        defer { engine.shutdown() }
        let log = EventLog(engine)
        engine.enqueue([try Fixtures.tone("pipe-tone-long", seconds: 20).path])
        #expect(log.wait(timeout: 10) { if case .itemStarted = $0 { true } else { false } } != nil, "\(log.all)")
        let lost = log.wait(timeout: 10) { if case .deviceError = $0 { true } else { false } }
        #expect(lost != nil, "nobody reads: \(log.all.suffix(3))")
    }

    @Test("a FIFO that is not there (its reader not started): the device error names it, and nothing is created in its place")
    func missing() throws {
        let dir = try Harness.makeTemporaryDirectory("pipe")
        let path = dir.appendingPathComponent("snapfifo").path
        let engine = makeEngine(device: "pipe:\(path)")
        defer { engine.shutdown() }
        let log = EventLog(engine)
        engine.enqueue([try Fixtures.tone("pipe-tone", seconds: 3).path])
        let failed = log.wait(timeout: 10) { if case .deviceError(let e) = $0 { e.message.contains(path) && e.message.contains("no such FIFO") } else { false } }
        #expect(failed != nil, "\(log.all)")
        #expect(!FileManager.default.fileExists(atPath: path), "no FIFO of ours left for a reader to find")
        #expect(engine.probeDevice().available == false)
    }
}
