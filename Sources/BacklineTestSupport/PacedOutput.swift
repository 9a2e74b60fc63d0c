import AudioEngine
import MediaCore
import Locking
import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Devices a test paces: `paced:NAME` plays only when the ``AudioEngine/PacedClock`` named NAME
/// is advanced, so a test reads player state with a clock it controls.
public enum PacedDevice {
    /// The clock of `paced:NAME`, with its driver registered in the engine's output registry.
    public static func clock(_ name: String) -> PacedClock {
        registerDriver()
        return PacedClock.named(name)
    }

    /// What `paced:NAME` lets the listener hear, kept from now on: the float32 frames its
    /// clock has heard, in order (a device opened with another sample format keeps nothing).
    public static func recording(_ name: String) -> PacedRecording {
        registerDriver()
        return recordings.withLock { all in
            if let r = all[name] { return r }
            let r = PacedRecording()
            all[name] = r
            return r
        }
    }

    static let recordings = Lock<[String: PacedRecording]>([:])

    /// Registers the `paced:NAME` driver (idempotent).
    public static func registerDriver() {
        OutputRegistry.register(PacedOutput.self, kind: OutputDeviceKind(
            name: "paced", forms: ["paced:NAME"], summary: "a device a test paces (never heard)", forTests: true, plugin: "null"))
    }
}

/// The `paced:NAME` driver: a device that plays only when its ``PacedClock`` is advanced.
public struct PacedOutput: AudioOutput {
    let clock: PacedClock
    public let configuration: DeviceConfiguration

    public static func handles(_ device: String) -> Bool { device.hasPrefix("paced:") }
    public static var channelOrder: ChannelOrder { .wave }
    public static var playsInRealTime: Bool { false }

    public static func open(device: String, rate: Int, channels: Int, preferred: DeviceSampleFormat,
                     bufferMicros: Int, periodMicros: Int, mmap: Bool) throws(MediaError) -> PacedOutput {
        let clock = PacedClock.named(String(device.dropFirst(6)))
        let buffer = max(64, bufferMicros * rate / 1_000_000), period = max(16, periodMicros * rate / 1_000_000)
        clock.opened(rate: rate, bufferFrames: buffer)
        return PacedOutput(clock: clock, configuration: DeviceConfiguration(
            rate: rate, channels: channels, sampleFormat: preferred, bufferFrames: buffer, periodFrames: min(period, buffer / 2),
            canPause: true, maxChannels: 8))
    }

    /// A paced device takes up to 8 channels.
    public static func channelLimit(device: String) -> Int? { 8 }

    public static func probe(device: String) -> (available: Bool, soundServer: Bool) {
        (true, false)
    }

    public func state() -> OutputState { clock.isPaused ? .paused : .running }
    public var isLost: Bool { false }
    public func delay() -> Int? { clock.held }
    public func avail() -> Int { max(0, configuration.bufferFrames - clock.held) }

    public func waitForRoom(timeoutMillis: Int32, wake: Int32) -> Int32 {
        if avail() >= configuration.periodFrames { return 1 }
        return withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 2) { fds -> Int32 in
            fds[0] = pollfd(fd: clock.notifyRead, events: Int16(POLLIN), revents: 0)
            fds[1] = pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
            let r = poll(fds.baseAddress, 2, timeoutMillis)
            if r < 0 { return errno == EINTR ? 0 : -errno }
            if fds[0].revents != 0 { clock.drainNotifications() }
            return fds[1].revents & Int16(POLLIN) != 0 ? 0 : 1
        }
    }

    /// Paused, the clock hears nothing: only `wake` is watched (a paced device is never lost).
    public func waitWhilePaused(wake: Int32) -> Bool {
        withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 1) { fds in
            fds[0] = pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
            _ = poll(fds.baseAddress, 1, -1)
        }
        return false
    }

    public func beginDirectWrite(frames: Int) -> DirectWrite { .unsupported }
    public func commitDirectWrite(offset: Int, frames: Int) -> Int { -Int(EINVAL) }

    public func write(_ buffer: UnsafeRawPointer, frames: Int) -> Int {
        let n = min(frames, max(0, configuration.bufferFrames - clock.held))
        if let recording, configuration.sampleFormat == .float32 {
            // (Counted as held under the recording's lock: a reader never sees frames written
            // but not yet held, which it would take for heard.)
            recording.append(UnsafeBufferPointer(start: buffer.assumingMemoryBound(to: Float.self), count: n * configuration.channels),
                             channels: configuration.channels) { clock.wrote(n) }
        } else {
            clock.wrote(n)
        }
        return n
    }

    /// The recording of this device, when a test asked for one.
    private var recording: PacedRecording? { PacedDevice.recordings.withLock { $0[String(clock.device.dropFirst(6))] } }

    public func discard() {
        dropHeld()
        clock.setPaused(false)
    }

    public func stop() { dropHeld() }

    /// Drops what the device holds (and its recording, with it).
    private func dropHeld() {
        if let recording { recording.dropUnheard(clock.held) { clock.dropAll() } } else { clock.dropAll() }
    }
    public func prepare() -> Int32 { 0 }
    public func resume() -> Int32 { 0 }

    public func pause(_ on: Bool) -> Bool {
        clock.setPaused(on)
        return true
    }

    public func startIfWaiting() {}

    /// Returns once the clock has heard everything held (or after 30 s
    /// of real time with no one advancing it, so a test that stopped pacing cannot hang the
    /// engine's shutdown).
    public func drain() {
        let deadline = monotonicNanos() + 30_000_000_000
        while clock.held > 0, monotonicNanos() < deadline {
            withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 1) { fds in
                fds[0] = pollfd(fd: clock.notifyRead, events: Int16(POLLIN), revents: 0)
                _ = poll(fds.baseAddress, 1, 100)
            }
            clock.drainNotifications()
        }
    }

    public func close() {}
}

/// What a paced device wrote and has not dropped, in order: its first `written − held` frames
/// are what the listener has heard (see ``PacedDevice/recording(_:)``).
public final class PacedRecording: Sendable {
    private let samples = Lock<(data: [Float], channels: Int)>(([], 2))

    func append(_ frames: UnsafeBufferPointer<Float>, channels: Int, then held: () -> Void) {
        samples.withLock { s in
            s.channels = channels
            s.data.append(contentsOf: frames)
            held()
        }
    }

    /// Forgets the last `frames`: dropped by the device before they were heard.
    func dropUnheard(_ frames: Int, then dropped: () -> Void) {
        samples.withLock { s in
            s.data.removeLast(min(s.data.count, frames * s.channels))
            dropped()
        }
    }

    /// The frames heard so far through `clock` (written and not held), interleaved, and the
    /// channel count.
    public func heard(_ clock: PacedClock) -> (samples: [Float], channels: Int) {
        samples.withLock { s in (Array(s.data.prefix(max(0, s.data.count - clock.held * s.channels))), s.channels) }
    }
}
