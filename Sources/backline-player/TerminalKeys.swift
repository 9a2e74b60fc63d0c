import AudioEngine
import CTerminal
import Dispatch
import FoundationEssentials
import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// The terminal's mode while `backline play` reads keys (a thin wrapper over `CTerminal`, whose
/// C storage the crash handler reads). Raw mode: no echo, no waiting for Enter; Ctrl-C and
/// Ctrl-Z still raise their signals, output is left as it was. The settings to restore are read
/// when raw mode starts (in the foreground, so they are the ones the user's shell left), and
/// every way out puts them back: return, `q`, the queue's end, Ctrl-C, SIGTERM, Ctrl-Z (before
/// the process stops), a crash signal, `exit`.
///
/// Only a process in the terminal's foreground group touches the settings: one in the
/// background (after `bg`, or stopped and continued there) leaves them to the shell.
enum KeyTerminal {
    private static let lock = Lock(false)  // whether the handlers are installed

    /// Whether standard input is a terminal.
    static var available: Bool { isatty(STDIN_FILENO) == 1 }

    /// Whether this process group is the terminal's foreground one (may set modes and read).
    static var inForeground: Bool { tcgetpgrp(STDIN_FILENO) == getpgrp() }

    /// Installs the handlers that restore the terminal on a crash and at `exit`, and makes
    /// reading or setting modes from the background fail (EIO) instead of stopping the process.
    static func prepare() {
        lock.withLock { ready in
            guard !ready else { return }
            ready = true
            backline_term_install_crash_handlers()
            atexit { KeyTerminal.leave() }
            signal(SIGTTIN, SIG_IGN)
            signal(SIGTTOU, SIG_IGN)
        }
    }

    /// Raw mode, when in the foreground (again, if it was on: after a stop the shell has put its
    /// own settings back).
    static func enter() {
        lock.withLock { _ in
            guard inForeground else { return }
            _ = backline_term_enter_raw(STDIN_FILENO)
        }
    }

    /// The settings found back, and what was typed but not read dropped, so nothing typed for
    /// the player reaches the shell. In the background only the flag clears.
    static func leave() {
        lock.withLock { _ in
            let foreground = inForeground
            _ = backline_term_leave_raw(STDIN_FILENO, foreground ? 1 : 0, foreground ? 1 : 0)
        }
    }
}

/// A key `backline play` understands.
enum Key: Equatable, Sendable {
    case character(Character)
    case up, down, left, right
    /// Page Up and Page Down (`ESC [ 5 ~`, `ESC [ 6 ~`).
    case pageUp, pageDown
    /// Backspace (DEL, or ^H).
    case backspace

    /// The keys in `bytes` (what one read returned): printable characters and the arrow keys'
    /// escape sequences (`ESC [ A` and `ESC O A` forms), Page Up and Down, backspace; anything else is dropped.
    static func parse(_ bytes: [UInt8]) -> [Key] {
        var keys: [Key] = []
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == 0x1B {
                // CSI (`ESC [`) and SS3 (`ESC O`): parameter bytes, then one final byte, all
                // consumed; only the plain arrows mean something here.
                guard i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "[") || bytes[i + 1] == UInt8(ascii: "O") else {
                    i += 1  // Escape on its own
                    continue
                }
                var j = i + 2
                while j < bytes.count, (0x20...0x3F).contains(bytes[j]) { j += 1 }
                if j < bytes.count, j == i + 2 {
                    switch bytes[j] {
                    case UInt8(ascii: "A"): keys.append(.up)
                    case UInt8(ascii: "B"): keys.append(.down)
                    case UInt8(ascii: "C"): keys.append(.right)
                    case UInt8(ascii: "D"): keys.append(.left)
                    default: break
                    }
                } else if j < bytes.count, j == i + 3, bytes[j] == UInt8(ascii: "~") {
                    if bytes[i + 2] == UInt8(ascii: "5") { keys.append(.pageUp) }
                    if bytes[i + 2] == UInt8(ascii: "6") { keys.append(.pageDown) }
                }
                i = j + 1
                continue
            }
            if b >= 0x20, b < 0x7F { keys.append(.character(Character(UnicodeScalar(b)))) }
            if b == 0x7F || b == 0x08 { keys.append(.backspace) }
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
        // Waited for with a timeout (`finished`), never joined.
        PlatformThread.start(name: "bl-keys") { [self] in
            loop(handler)
            finished.signal()
        }.detach()
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
        // The pipe is closed only once the thread is gone (else it could poll a reused descriptor).
        if finished.wait(timeout: .now() + .milliseconds(300)) == .success {
            close(wake.read)
            close(wake.write)
        }
    }
}
