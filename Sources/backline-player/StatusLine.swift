import FoundationEssentials
import Platform
import PlayQueue
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// `m:ss` (or `h:mm:ss`).
func formatTime(_ seconds: Double) -> String {
    let t = Int(seconds.isFinite ? max(0, seconds) : 0)
    return t >= 3600 ? cFormat("%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60)
        : cFormat("%ld:%02ld", t / 60, t % 60)
}

/// What `backline play`'s status line shows.
struct PlayStatus {
    var state: PlaybackState
    /// `Title — Artist`, or the file name.
    var name: String
    /// 1-based position in the queue, and the queue's length.
    var position: (index: Int, count: Int)?
    var elapsed: Double
    var duration: Double?
    /// Percent.
    var volume: Int
    var muted: Bool
    var repeatMode: RepeatMode
    var shuffle: Bool

    /// One line at most `width` columns wide (the name is shortened first, then the bar goes):
    /// `▶ Title — Artist  2/5  0:03 / 0:08 ━━━━━━──────  vol 80%  repeat all  shuffle`.
    /// With `color`, ANSI colours (the width counts only what is visible).
    func render(width: Int, color: Bool) -> String {
        func paint(_ s: String, _ code: String) -> String { color && !s.isEmpty ? "\u{1B}[\(code)m\(s)\u{1B}[0m" : s }
        let symbol = state == .playing ? "▶" : state == .paused ? "⏸" : "■"
        var tail: [String] = []  // visible text after the name
        if let position { tail.append("\(position.index)/\(position.count)") }
        let time = "\(formatTime(elapsed)) / \(duration.map(formatTime) ?? "-:--")"
        var extras = [muted ? "muted" : "vol \(volume)%"]
        if repeatMode != .off { extras.append("repeat \(repeatMode.rawValue)") }
        if shuffle { extras.append("shuffle") }
        let extrasText = extras.joined(separator: "  ")
        let limit = max(10, width - 1)  // never the last column: no wrap on any terminal
        let fixed = 2 + tail.map { $0.count + 2 }.reduce(0, +) + time.count + 2 + extrasText.count
        // The bar takes up to a quarter of the width, when the name keeps at least 16 columns.
        var bar = min(30, (limit - fixed - 16 - 1) / 2)
        if bar < 8 { bar = 0 }
        let nameRoom = limit - fixed - (bar > 0 ? bar + 1 : 0) - 2
        var shownName = name
        if shownName.count > max(0, nameRoom) {
            shownName = nameRoom > 1 ? String(name.prefix(nameRoom - 1)) + "…" : ""
        }
        var barText = ""
        if bar > 0 {
            let fraction = duration.map { $0 > 0 ? min(1, max(0, elapsed / $0)) : 0 } ?? 0
            let filled = Int((Double(bar) * fraction).rounded(.down))
            barText = " " + paint(String(repeating: "━", count: filled), "36") + paint(String(repeating: "─", count: bar - filled), "2")
        }
        let symbolColor = state == .playing ? "32" : state == .paused ? "33" : "2"
        var line = paint(symbol, symbolColor) + " " + paint(shownName, "1")
        for t in tail { line += "  " + t }
        line += "  " + time + barText + "  " + paint(extrasText, "2")
        // (a very narrow terminal: whatever fits)
        if !color, line.count > limit { line = String(line.prefix(limit)) }
        return line
    }
}

/// Writes to the terminal without mixing the live status line into other output: a line
/// written while the status line shows goes above it, and the status line is drawn again.
enum Terminal {
    private struct State {
        var showing = false
        var last = ""
    }

    private static let lock = Lock(State())
    private static let brokenPipe = Lock<(@Sendable () -> Void)?>(nil)

    /// Calls `handler` (once) when standard output's reader is gone (EPIPE; SIGPIPE is ignored).
    static func onBrokenPipe(_ handler: @escaping @Sendable () -> Void) { brokenPipe.withLock { $0 = handler } }

    static func line(_ s: String, tty: Bool) { write(STDOUT_FILENO, s, tty: tty) }
    static func error(_ s: String, tty: Bool) { write(STDERR_FILENO, s, tty: tty) }

    /// Draws `s` as the status line, in place.
    static func progress(_ s: String) {
        lock.withLock { state in
            emit(STDOUT_FILENO, "\r\u{1B}[2K" + s)
            state.showing = true
            state.last = s
        }
    }

    /// Clears the status line (it is drawn again by the next ``progress(_:)``).
    static func finish(tty: Bool) {
        lock.withLock { state in
            if state.showing { emit(STDOUT_FILENO, "\r\u{1B}[2K") }
            state.showing = false
            state.last = ""
        }
    }

    private static func write(_ fd: Int32, _ s: String, tty: Bool) {
        lock.withLock { state in
            let redraw = state.showing && tty
            if redraw { emit(STDOUT_FILENO, "\r\u{1B}[2K") }
            emit(fd, s + "\n")
            if redraw { emit(STDOUT_FILENO, state.last) }
        }
    }

    private static func emit(_ fd: Int32, _ s: String) {
        var s = s
        let n = s.withUTF8 { buf in Glibc.write(fd, buf.baseAddress, buf.count) }
        if n < 0, errno == EPIPE, fd == STDOUT_FILENO, let h = brokenPipe.withLock({ h in defer { h = nil }; return h }) { h() }
    }

    /// The terminal's width in columns (80 when it does not say).
    static var width: Int {
        var ws = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0 else { return 80 }
        return Int(ws.ws_col)
    }
}
