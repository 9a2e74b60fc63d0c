import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The terminal's mode while `backline play` reads keys: the settings found at start are kept,
/// and every way out puts them back (return, `q`, the queue's end, Ctrl-C, SIGTERM, Ctrl-Z, a
/// crash signal, `exit`). Keys are read without echo and without waiting for Enter; Ctrl-C and
/// Ctrl-Z still raise their signals (`ISIG` stays on), and output is left as it was.
///
/// Raw mode is only ever set while this process group is the terminal's foreground: a job in
/// the background never touches the settings the shell uses.
enum KeyTerminal {
    /// The settings to restore; written once before any handler can read them.
    nonisolated(unsafe) private static var saved = termios()
    /// Whether raw mode is on now (read by the crash handler: a plain word, async-signal-safe).
    nonisolated(unsafe) private static var raw: sig_atomic_t = 0
    private static let lock = Mutex(false)  // whether `saved` holds the terminal's settings
    /// The handlers found for the crash signals (by signal number), chained to after restoring.
    nonisolated(unsafe) private static var previous: [sigaction] = Array(repeating: sigaction(), count: 32)
    private static let crashSignals = [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGQUIT, SIGTRAP]

    /// Whether standard input is a terminal whose settings can be read.
    static var available: Bool { isatty(STDIN_FILENO) == 1 }

    /// Whether this process group is the terminal's foreground one (may set modes and read).
    static var inForeground: Bool { tcgetpgrp(STDIN_FILENO) == getpgrp() }

    /// Remembers the terminal's settings and installs the handlers that restore them on a crash
    /// and at `exit`. Call once, before ``enter()``.
    static func prepare() {
        lock.withLock { ready in
            guard !ready, tcgetattr(STDIN_FILENO, &saved) == 0 else { return }
            ready = true
            // A crash restores the terminal first, then goes on as it would have: to the handler
            // installed before (Swift's backtracer, which may want the terminal), then dies of
            // the same signal (core dump and exit status intact).
            for sig in crashSignals {
                var action = sigaction()
                action.__sigaction_handler.sa_sigaction = { sig, info, context in
                    if KeyTerminal.raw != 0 { tcsetattr(STDIN_FILENO, TCSANOW, &KeyTerminal.saved) }
                    KeyTerminal.raw = 0
                    if sig >= 0, sig < 32 {
                        let previous = KeyTerminal.previous[Int(sig)]
                        if previous.sa_flags & Int32(SA_SIGINFO) != 0, let chained = previous.__sigaction_handler.sa_sigaction {
                            chained(sig, info, context)
                        }
                    }
                    signal(sig, SIG_DFL)
                    raise(sig)
                }
                action.sa_flags = Int32(SA_SIGINFO)
                sigaction(sig, &action, &previous[Int(sig)])
            }
            atexit { KeyTerminal.leave() }
            // Reading or setting modes from the background is refused (EIO) instead of stopping
            // the process: the checks below decide, never the kernel's job-control stop.
            signal(SIGTTIN, SIG_IGN)
            signal(SIGTTOU, SIG_IGN)
        }
    }

    /// Raw mode (no echo, no line editing), when in the foreground.
    static func enter() {
        lock.withLock { ready in
            guard ready, raw == 0, inForeground else { return }
            var t = saved
            t.c_lflag &= ~tcflag_t(ICANON | ECHO | ECHONL | IEXTEN)
            withUnsafeMutableBytes(of: &t.c_cc) { cc in
                cc[Int(VMIN)] = 1
                cc[Int(VTIME)] = 0
            }
            if tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0 { raw = 1 }
        }
    }

    /// Puts the saved settings back, and drops what was typed but not read, so nothing typed
    /// for the player reaches the shell after it.
    static func leave() {
        lock.withLock { ready in
            guard ready, raw != 0 else { return }
            raw = 0
            tcflush(STDIN_FILENO, TCIFLUSH)
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
        }
    }
}

/// A key `backline play` understands.
enum Key: Equatable, Sendable {
    case character(Character)
    case up, down, left, right

    /// The keys in `bytes` (what one read returned): printable characters and the arrow keys'
    /// escape sequences (`ESC [ A` and `ESC O A` forms); anything else is dropped.
    static func parse(_ bytes: [UInt8]) -> [Key] {
        var keys: [Key] = []
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == 0x1B {
                if i + 2 < bytes.count, bytes[i + 1] == UInt8(ascii: "[") || bytes[i + 1] == UInt8(ascii: "O") {
                    switch bytes[i + 2] {
                    case UInt8(ascii: "A"): keys.append(.up)
                    case UInt8(ascii: "B"): keys.append(.down)
                    case UInt8(ascii: "C"): keys.append(.right)
                    case UInt8(ascii: "D"): keys.append(.left)
                    default: break
                    }
                    i += 3
                    // (longer sequences, e.g. `ESC [ 1 ; 5 C`: skip to their final letter)
                    while i < bytes.count, bytes[i - 1] >= 0x30, bytes[i - 1] <= 0x3F, !(0x40...0x7E).contains(bytes[i]) { i += 1 }
                } else {
                    i += 1  // Escape on its own (or a sequence cut short)
                }
                continue
            }
            if b >= 0x20, b < 0x7F { keys.append(.character(Character(UnicodeScalar(b)))) }
            i += 1
        }
        return keys
    }
}

/// Reads keys from standard input on its own thread while this process is in the terminal's
/// foreground, and hands them to `handler` (on that thread). In the background it only waits:
/// typing then belongs to the shell.
final class KeyReader: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let wake: (read: Int32, write: Int32)
    private let finished = DispatchSemaphore(value: 0)

    init(_ handler: @escaping @Sendable (Key) -> Void) {
        var fds: [Int32] = [-1, -1]
        _ = pipe(&fds)
        wake = (fds[0], fds[1])
        let thread = Thread { [self] in
            loop(handler)
            finished.signal()
        }
        thread.name = "backline.keys"
        thread.start()
    }

    private func loop(_ handler: @Sendable (Key) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 64)
        while !stopped.load(ordering: .relaxed) {
            guard KeyTerminal.inForeground else {
                usleep(200_000)
                continue
            }
            var fds = [pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 2, 250) > 0, !stopped.load(ordering: .relaxed) else { continue }
            guard fds[0].revents != 0 else { continue }
            let n = read(STDIN_FILENO, &buffer, buffer.count)
            if n == 0 { return }  // end of input: no more keys
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                usleep(100_000)  // EIO: moved to the background between the check and the read
                continue
            }
            for key in Key.parse(Array(buffer[0..<n])) { handler(key) }
        }
    }

    /// Stops reading (waits for the thread, at most a quarter of a second).
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        _ = finished.wait(timeout: .now() + .milliseconds(300))
    }
}
