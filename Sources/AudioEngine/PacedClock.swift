import CALSA  // (where the importer puts `pollfd` and `timespec`: ALSA's headers include theirs)
import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// The clock of a device that plays only when told: an output opened as `paced:NAME` (the
/// driver is BacklineTestSupport's `PacedOutput`, registered by `PacedDevice.clock(_:)`) hears
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
    package let notifyRead: Int32
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

    package func drainNotifications() {
        var scratch: (UInt64, UInt64) = (0, 0)
        while withUnsafeMutableBytes(of: &scratch, { read(notifyRead, $0.baseAddress, 16) }) > 0 {}
    }

    package func opened(rate: Int, bufferFrames: Int) {
        heldFrames.store(0, ordering: .releasing)
        paused.store(false, ordering: .releasing)
        rateValue.store(rate, ordering: .releasing)
        bufferValue.store(bufferFrames, ordering: .releasing)
    }

    package func wrote(_ frames: Int) { heldFrames.add(frames, ordering: .releasing) }
    package func dropAll() { heldFrames.store(0, ordering: .releasing) }
    package func setPaused(_ on: Bool) { paused.store(on, ordering: .releasing) }
    package var isPaused: Bool { paused.load(ordering: .acquiring) }
}
