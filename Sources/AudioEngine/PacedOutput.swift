import CALSA  // (where the importer puts `pollfd` and `timespec`: ALSA's headers include theirs)
import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// The clock of a device that plays only when told: an output opened as `paced:NAME` hears
/// nothing until the clock named NAME is advanced, as NIOEmbedded's `EmbeddedEventLoop` runs
/// only when told. Tests that read player state after a command use it: the state cannot move
/// on between the command and the read, however loaded the machine is.
///
/// The device holds at most its buffer (the engine's `bufferMillis`); ``advance(frames:)``
/// hears up to that many of the frames it holds (none while paused) and wakes the output to
/// write more. What is heard is counted, not kept: what the listener hears is checked with
/// real ALSA and PulseAudio devices.
public final class PacedClock: Sendable {
    /// The device name this clock paces (`paced:NAME`).
    public let device: String
    private let heldFrames = Atomic<Int>(0)
    private let heard = Atomic<Int>(0)
    private let paused = Atomic<Bool>(false)
    private let rateValue = Atomic<Int>(0)
    private let bufferValue = Atomic<Int>(0)
    /// Written (one byte) when frames are heard; the output polls it.
    let notifyRead: Int32
    private let notifyWrite: Int32

    /// The clocks in use, by name: held by their tests and devices, not here (a clock nobody
    /// holds is freed, its pipe closed).
    private static let clocks = Lock<[String: Weak]>([:])
    private struct Weak { weak var clock: PacedClock? }

    /// The clock for `paced:NAME` (made on first use, while someone holds it). Use a fresh name per engine.
    public static func named(_ name: String) -> PacedClock {
        clocks.withLock { all in
            if let c = all[name]?.clock { return c }
            all = all.filter { $0.value.clock != nil }
            let c = PacedClock(name: name)
            all[name] = Weak(clock: c)
            return c
        }
    }

    deinit {
        close(notifyRead)
        close(notifyWrite)
    }

    private init(name: String) {
        device = "paced:\(name)"
        var fds: [Int32] = [-1, -1]
        precondition(pipe(&fds) == 0, "pipe failed")
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        (notifyRead, notifyWrite) = (fds[0], fds[1])
    }

    /// Frames the device holds (written, not yet heard).
    public var held: Int { heldFrames.load(ordering: .acquiring) }
    /// Frames heard since the clock was made.
    public var heardFrames: Int { heard.load(ordering: .acquiring) }
    /// The rate the device was last opened at (0: never opened).
    public var rate: Int { rateValue.load(ordering: .acquiring) }
    /// The device's buffer, frames.
    public var bufferFrames: Int { bufferValue.load(ordering: .acquiring) }

    /// Hears up to `frames` of what the device holds (nothing while it is paused); returns
    /// the frames heard.
    @discardableResult
    public func advance(frames: Int) -> Int {
        guard frames > 0, !paused.load(ordering: .acquiring) else { return 0 }
        var taken = 0
        var held = heldFrames.load(ordering: .acquiring)
        while true {
            taken = min(held, frames)
            let (done, now) = heldFrames.compareExchange(expected: held, desired: held - taken, ordering: .acquiringAndReleasing)
            if done { break }
            held = now
        }
        if taken > 0 {
            heard.add(taken, ordering: .releasing)
            notify()
        }
        return taken
    }

    /// Hears up to `seconds` of what the device holds, at its rate.
    @discardableResult
    public func advance(seconds: Double) -> Int { advance(frames: Int((seconds * Double(max(rate, 1))).rounded())) }

    /// Waits (up to `timeout` seconds of real time) until the device holds at least `frames`
    /// or `condition` holds: the output thread has written what the test is about to hear.
    @discardableResult
    public func waitUntilHolding(_ frames: Int, timeout: Double = 10) -> Bool {
        let deadline = monotonicNanos() + Int(timeout * 1e9)
        while held < frames {
            if monotonicNanos() > deadline { return false }
            var ts = timespec(tv_sec: 0, tv_nsec: 200_000)
            nanosleep(&ts, nil)
        }
        return true
    }

    /// Hears exactly `seconds` of audio (at the device's rate), as the output writes it: the
    /// steps of a test that must land at a known point (the middle of the third item, say).
    /// False when the output stops writing (the end of the queue, a pause) for `timeout`
    /// seconds of real time before that much was heard.
    @discardableResult
    public func hear(seconds: Double, timeout: Double = 10) -> Bool {
        var deadline = monotonicNanos() + Int(timeout * 1e9)
        while rate == 0 {
            if monotonicNanos() > deadline { return false }
            var ts = timespec(tv_sec: 0, tv_nsec: 200_000)
            nanosleep(&ts, nil)
        }
        var left = Int((seconds * Double(rate)).rounded())
        while left > 0 {
            let n = advance(frames: min(left, held))
            if n > 0 {
                left -= n
                deadline = monotonicNanos() + Int(timeout * 1e9)
                continue
            }
            if monotonicNanos() > deadline { return false }
            var ts = timespec(tv_sec: 0, tv_nsec: 200_000)
            nanosleep(&ts, nil)
        }
        return true
    }

    /// Hears everything the output writes until `done` holds or `timeout` seconds of real
    /// time pass (a period at a time): the clock run freely, for the steps of a test where
    /// nothing is read until the end. True when `done` held.
    @discardableResult
    public func run(timeout: Double = 20, until done: () -> Bool) -> Bool {
        let deadline = monotonicNanos() + Int(timeout * 1e9)
        while !done() {
            if monotonicNanos() > deadline { return false }
            advance(frames: max(1, bufferFrames / 4))
            var ts = timespec(tv_sec: 0, tv_nsec: 500_000)
            nanosleep(&ts, nil)
        }
        return true
    }

    private func notify() {
        var b: UInt8 = 1
        _ = write(notifyWrite, &b, 1)
    }

    fileprivate func drainNotifications() {
        var scratch: (UInt64, UInt64) = (0, 0)
        while withUnsafeMutableBytes(of: &scratch, { read(notifyRead, $0.baseAddress, 16) }) > 0 {}
    }

    fileprivate func opened(rate: Int, bufferFrames: Int) {
        heldFrames.store(0, ordering: .releasing)
        paused.store(false, ordering: .releasing)
        rateValue.store(rate, ordering: .releasing)
        bufferValue.store(bufferFrames, ordering: .releasing)
    }

    fileprivate func wrote(_ frames: Int) { heldFrames.add(frames, ordering: .releasing) }
    fileprivate func dropAll() { heldFrames.store(0, ordering: .releasing) }
    fileprivate func setPaused(_ on: Bool) { paused.store(on, ordering: .releasing) }
    fileprivate var isPaused: Bool { paused.load(ordering: .acquiring) }
}

/// The `paced:NAME` driver: a device that plays only when its ``PacedClock`` is advanced.
struct PacedOutput: AudioOutput {
    let clock: PacedClock
    let configuration: DeviceConfiguration

    static func handles(_ device: String) -> Bool { device.hasPrefix("paced:") }
    static var channelOrder: ChannelOrder { .wave }
    static var playsInRealTime: Bool { false }

    static func open(device: String, rate: Int, channels: Int, preferred: DeviceSampleFormat,
                     bufferMicros: Int, periodMicros: Int, mmap: Bool) throws(MediaError) -> PacedOutput {
        let clock = PacedClock.named(String(device.dropFirst(6)))
        let buffer = max(64, bufferMicros * rate / 1_000_000), period = max(16, periodMicros * rate / 1_000_000)
        clock.opened(rate: rate, bufferFrames: buffer)
        return PacedOutput(clock: clock, configuration: DeviceConfiguration(
            rate: rate, channels: channels, sampleFormat: preferred, bufferFrames: buffer, periodFrames: min(period, buffer / 2),
            canPause: true, maxChannels: 8))
    }

    /// A paced device takes up to 8 channels.
    static func channelLimit(device: String) -> Int? { 8 }

    static func probe(device: String) -> (available: Bool, soundServer: Bool) {
        (true, false)
    }

    func state() -> OutputState { clock.isPaused ? .paused : .running }
    var isLost: Bool { false }
    func delay() -> Int? { clock.held }
    func avail() -> Int { max(0, configuration.bufferFrames - clock.held) }

    func waitForRoom(timeoutMillis: Int32, wake: Int32) -> Int32 {
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
    func waitWhilePaused(wake: Int32) -> Bool {
        waitForWake(wake)
        return false
    }

    func beginDirectWrite(frames: Int) -> DirectWrite { .unsupported }
    func commitDirectWrite(offset: Int, frames: Int) -> Int { -Int(EINVAL) }

    func write(_ buffer: UnsafeRawPointer, frames: Int) -> Int {
        let n = min(frames, max(0, configuration.bufferFrames - clock.held))
        clock.wrote(n)
        return n
    }

    func discard() {
        clock.dropAll()
        clock.setPaused(false)
    }

    func stop() { clock.dropAll() }
    func prepare() -> Int32 { 0 }
    func resume() -> Int32 { 0 }

    func pause(_ on: Bool) -> Bool {
        clock.setPaused(on)
        return true
    }

    func startIfWaiting() {}

    /// Returns once the clock has heard everything held (or after 30 s
    /// of real time with no one advancing it, so a test that stopped pacing cannot hang the
    /// engine's shutdown).
    func drain() {
        let deadline = monotonicNanos() + 30_000_000_000
        while clock.held > 0, monotonicNanos() < deadline {
            withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 1) { fds in
                fds[0] = pollfd(fd: clock.notifyRead, events: Int16(POLLIN), revents: 0)
                _ = poll(fds.baseAddress, 1, 100)
            }
            clock.drainNotifications()
        }
    }

    func close() {}
}
