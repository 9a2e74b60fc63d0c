import AudioEngine
import MediaCore
import Platform

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
        clock.wrote(n)
        return n
    }

    public func discard() {
        clock.dropAll()
        clock.setPaused(false)
    }

    public func stop() { clock.dropAll() }
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
