import ArgumentParser
import AudioEngine
import Dispatch
import Foundation
import Logging
import Synchronization

/// `backline play FILE…`: plays files in order, gaplessly.
struct Play: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play MP3 files in order, gaplessly.",
        discussion: """
            Prints one line per item (title and artist, or the file name, and duration) and, on a \
            terminal, a live elapsed/total line. Ctrl-C stops at once and closes the device.

            Exit status: 0 every item played; 2 some items failed (each reported on stderr with \
            the file and the reason); 1 nothing was playable, or a usage error; 130 interrupted.
            """)

    @Option(name: .long, help: "ALSA PCM device name.")
    var device = "default"

    @Option(name: .customLong("buffer-ms"), help: "Device buffer length in milliseconds (period = a quarter).")
    var bufferMs = 500

    @Option(name: .long, help: "Device sample format to try first: float32 or s16.")
    var format = "float32"

    @Flag(name: .long, help: "Print the device's negotiated settings and position checks to stderr.")
    var verbose = false

    @Argument(help: "MP3 files to play.")
    var files: [String]

    func validate() throws {
        guard (20...5000).contains(bufferMs) else { throw ValidationError("--buffer-ms must be 20…5000") }
        guard ["float32", "s16"].contains(format) else { throw ValidationError("--format must be float32 or s16") }
        guard !files.isEmpty else { throw ValidationError("give at least one file") }
    }

    func run() throws {
        var logger = Logger(label: "backline")
        logger.logLevel = verbose ? .debug : .warning
        let engine = PlaybackEngine(configuration: EngineConfiguration(
            output: OutputSettings(device: device, bufferMillis: bufferMs,
                                   preferredFormat: format == "s16" ? .s16 : .float32),
            logger: logger))
        let tty = isatty(STDOUT_FILENO) == 1
        let status = Mutex((failed: 0, played: 0, finished: false, deviceFailed: false))
        let done = DispatchSemaphore(value: 0)
        let current = Mutex<ItemInfo?>(nil)

        engine.onEvent { event in
            switch event {
            case .itemStarted(let info, let fromSeek):
                guard !fromSeek else { return }
                current.withLock { $0 = info }
                let m = info.metadata
                let name = m.title.map { t in m.artist.map { "\(t) — \($0)" } ?? t }
                    ?? (info.path as NSString).lastPathComponent
                Terminal.line("▶ \(name)  [\(formatTime(info.duration))]", tty: tty)
            case .itemEnded:
                status.withLock { $0.played += 1 }
            case .itemFailed(_, let path, let error):
                status.withLock { $0.failed += 1 }
                Terminal.error("backline: cannot play \(path): \(error.message)", tty: tty)
            case .underrun(let n):
                if verbose { Terminal.error("backline: underrun (\(n))", tty: tty) }
            case .deviceError(let e):
                status.withLock { $0.deviceFailed = true }
                Terminal.error("backline: audio device \(device): \(e.message) (ALSA code \(e.code))", tty: tty)
                done.signal()
            case .endOfInput:
                status.withLock { $0.finished = true }
                done.signal()
            case .itemLoaded:
                break
            }
        }

        // Ctrl-C / SIGTERM: stop at once, close the device, restore the terminal line.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let interrupted = Atomic<Bool>(false)
        var sources: [any DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            let src = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            src.setEventHandler {
                interrupted.store(true, ordering: .relaxed)
                done.signal()
            }
            src.resume()
            sources.append(src)
        }

        engine.enqueue(files.map { ($0 as NSString).expandingTildeInPath })

        // Progress: a live line on a terminal, nothing extra otherwise.
        while done.wait(timeout: .now() + .milliseconds(tty ? 250 : 1000)) == .timedOut {
            if tty, let pos = engine.position, let info = current.withLock({ $0 }), info.id == pos.item {
                Terminal.progress("  \(formatTime(pos.seconds)) / \(formatTime(info.duration))")
            }
        }
        engine.stop()
        engine.shutdown()
        Terminal.finish(tty: tty)
        for s in sources { s.cancel() }

        if interrupted.load(ordering: .relaxed) { throw ExitCode(130) }
        let s = status.withLock { $0 }
        if s.deviceFailed || s.played == 0 { throw ExitCode(1) }
        if s.failed > 0 { throw ExitCode(2) }
    }
}

/// `m:ss` (or `h:mm:ss`).
func formatTime(_ seconds: Double) -> String {
    let t = Int(seconds.isFinite ? max(0, seconds) : 0)
    return t >= 3600 ? String(format: "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60)
        : String(format: "%d:%02d", t / 60, t % 60)
}

/// Writes to the terminal without mixing the live progress line into other output.
enum Terminal {
    private static let lock = Mutex(false)  // whether a progress line is showing

    static func line(_ s: String, tty: Bool) { write(STDOUT_FILENO, s, tty: tty) }
    static func error(_ s: String, tty: Bool) { write(STDERR_FILENO, s, tty: tty) }

    static func progress(_ s: String) {
        lock.withLock { showing in
            emit(STDOUT_FILENO, "\r\u{1B}[2K" + s)
            showing = true
        }
    }

    static func finish(tty: Bool) {
        lock.withLock { showing in
            if showing { emit(STDOUT_FILENO, "\r\u{1B}[2K") }
            showing = false
        }
    }

    private static func write(_ fd: Int32, _ s: String, tty: Bool) {
        lock.withLock { showing in
            if showing && tty { emit(STDOUT_FILENO, "\r\u{1B}[2K") }
            showing = false
            emit(fd, s + "\n")
        }
    }

    private static func emit(_ fd: Int32, _ s: String) {
        var s = s
        s.withUTF8 { buf in _ = Foundation.write(fd, buf.baseAddress, buf.count) }
    }
}
