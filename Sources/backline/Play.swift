import ArgumentParser
import AudioEngine
import Dispatch
import Foundation
import Lifecycle
import Logging
import MPRIS
import NowPlaying
import Player
import Session
import Synchronization

/// `backline play FILE…`: plays files in order, gaplessly.
struct Play: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play MP3 files in order, gaplessly.",
        discussion: """
            Prints one line per item (title and artist, or the file name, and duration) and, on a \
            terminal, a live elapsed/total line. Ctrl-C stops at once and closes the device.

            Job control: in the terminal's background (Ctrl-Z then `bg`, or started with `&`) the \
            `playback` category keeps playing; `soloAmbient` and `ambient` stop, and once nothing \
            plays in the background the process stops itself (SIGSTOP) until `fg`, which makes it \
            active and resumes what the background paused.

            Exit status: 0 every item played; 2 some items failed (each reported on stderr with \
            the file and the reason); 1 nothing was playable, or a usage error; 130 interrupted.
            """)

    @Option(name: .long, help: "ALSA PCM device name.")
    var device = "default"

    @Option(name: .customLong("buffer-ms"), help: "Device buffer length in milliseconds (period = a half).")
    var bufferMs = 500

    @Option(name: .long, help: "Device sample format to try first: float32 or s16.")
    var format = "float32"

    @Option(name: .long, help: "Audio session category: playback (keeps playing in the background), soloAmbient or ambient.")
    var category = "playback"

    @Option(name: .customLong("background-grace"),
            help: "Seconds in the background with nothing playing before the process suspends itself.")
    var backgroundGrace = 5.0

    @Flag(name: .long, help: "Print the device's negotiated settings and position checks to stderr.")
    var verbose = false

    @Flag(name: .long, help: "Post a desktop notification when an item starts (replacing the previous one).")
    var notify = false

    @Flag(name: .customLong("no-mpris"), help: "Do not publish the player on the session bus (MPRIS2: desktop media controls, media keys, playerctl).")
    var noMPRIS = false

    @Argument(help: "MP3 files to play.")
    var files: [String]

    func validate() throws {
        guard (20...5000).contains(bufferMs) else { throw ValidationError("--buffer-ms must be 20…5000") }
        guard ["float32", "s16"].contains(format) else { throw ValidationError("--format must be float32 or s16") }
        guard backgroundGrace >= 0 else { throw ValidationError("--background-grace must be ≥ 0") }
        guard SessionCategory(rawValue: category) != nil else {
            throw ValidationError("--category must be playback, soloAmbient or ambient")
        }
        guard !files.isEmpty else { throw ValidationError("give at least one file") }
    }

    func run() throws {
        var logger = Logger(label: "backline")
        logger.logLevel = verbose ? .debug : .warning
        let session = AudioSession.shared
        do {
            try session.setCategory(SessionCategory(rawValue: category) ?? .playback)
        } catch {
            throw ValidationError("\(error)")
        }
        let app = Application(configuration: ApplicationConfiguration(suspensionGracePeriod: backgroundGrace))
        let items = files.map { PlayerItem(path: ($0 as NSString).expandingTildeInPath) }
        let player = QueuePlayer(
            items: items,
            configuration: EngineConfiguration(
                output: OutputSettings(device: device, bufferMillis: bufferMs,
                                       preferredFormat: format == "s16" ? .s16 : .float32),
                logger: logger),
            session: session, application: app)
        let tty = isatty(STDOUT_FILENO) == 1
        let status = Mutex((failed: 0, played: 0, finished: false, deviceFailed: false))
        let done = DispatchSemaphore(value: 0)
        let interrupted = Atomic<Bool>(false)
        let quit = Atomic<Bool>(false)

        // The system surface: the now-playing info and the remote commands, on the session bus
        // as org.mpris.MediaPlayer2.backline.instance<PID> (desktop controls, media keys, playerctl).
        let nowPlaying = NowPlayingInfoCenter()
        let nowPlayingBinding = NowPlayingBinding(player: player, center: nowPlaying)
        let remote = RemoteCommandCenter()
        let remoteBinding = RemoteCommandBinding(player: player, center: remote)
        var mpris: MPRISService?
        if !noMPRIS {
            var options = MPRISOptions(identity: "Backline", desktopEntry: "backline")
            options.volume = { Double(player.volume) }
            options.setVolume = { player.volume = Float($0) }
            options.quit = {  // (desktop controls' "close"): an ordinary end
                quit.store(true, ordering: .relaxed)
                done.signal()
            }
            do {
                mpris = try nowPlaying.publish(on: .sessionBus(name: "backline.instance\(getpid())"), commands: remote, options: options)
            } catch {
                logger.debug("no MPRIS: \(error)")
            }
        }
        let foreground = Atomic<Bool>(true)

        let notifications: LocalNotificationCenter? = notify ? try? LocalNotificationCenter(appName: "Backline") : nil
        let artDirectory = MPRISOptions(identity: "").artDirectory
        if notify, notifications == nil { logger.debug("no notifications: no session bus") }
        // One line per item when its first sample is heard (the engine's own event, so even
        // items shorter than the event delivery are announced, in order).
        player.engine.onEvent { event in
            guard case .itemStarted(let info, fromSeek: false) = event else { return }
            let m = info.metadata
            let name = m.title.map { t in m.artist.map { "\(t) — \($0)" } ?? t } ?? (info.path as NSString).lastPathComponent
            Terminal.line("▶ \(name)  [\(formatTime(info.duration))]", tty: tty)
            if let notifications {
                let icon = m.artwork.flatMap { MPRISService.artworkFile($0, directory: artDirectory) } ?? "audio-x-generic"
                notifications.present(LocalNotification(
                    alertTitle: m.title ?? (info.path as NSString).lastPathComponent,
                    alertBody: [m.artist, m.album].compactMap { $0 }.joined(separator: " — "), icon: icon, replacesPrevious: true))
            }
        }
        let events = DispatchQueue(label: "backline.play.events")
        player.addObserver(queue: events) { [player] event in
            switch event {
            case .currentItemChanged(nil):
                status.withLock { $0.finished = true }
                done.signal()
            case .itemDidPlayToEnd:
                status.withLock { $0.played += 1 }
            case .itemFailedToPlayToEnd(let item, let error):
                status.withLock { $0.failed += 1 }
                Terminal.error("backline: cannot play \(item.path): \(error.message)", tty: tty)
            case .playbackStalled:
                if verbose { Terminal.error("backline: underrun (\(player.engine.underrunCount))", tty: tty) }
            case .outputFailed(let e):
                status.withLock { $0.deviceFailed = true }
                Terminal.error("backline: audio device \(device): \(e.message) (ALSA code \(e.code))", tty: tty)
                done.signal()
            default:
                break
            }
        }

        // Job control: in the terminal's foreground process group the app is active; put in the
        // background (Ctrl-Z then `bg`, or started with `&`) it is in the background. Once
        // nothing keeps it running there, the suspension hook stops the process (SIGSTOP);
        // `fg` continues it and makes it active again.
        app.addSuspensionHook { _ in
            Terminal.error("backline: suspended: nothing is playing in the background (category \(session.category.rawValue)); `fg` resumes", tty: false)
        }
        // Stop only once the suspension is complete (hooks run, device released), on the queue
        // that also handles SIGCONT, so continuing never races the suspension.
        app.addObserver(queue: events) { event in
            if case .didSuspend = event { kill(getpid(), SIGSTOP) }
        }
        let terminal = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        let pausedByBackground = Atomic<Bool>(false)
        player.addObserver(queue: events) { event in
            if case .rateChanged(0, .appBackgrounded) = event { pausedByBackground.store(true, ordering: .relaxed) }
        }
        func followTerminal() {
            guard terminal >= 0 else { return }
            let isForeground = tcgetpgrp(terminal) == getpgrp()
            guard isForeground != foreground.load(ordering: .relaxed) else { return }
            foreground.store(isForeground, ordering: .relaxed)
            if isForeground {
                app.enterForeground()
                if pausedByBackground.exchange(false, ordering: .relaxed) { player.play() }
            } else {
                Terminal.finish(tty: tty)
                app.enterBackground()
            }
        }
        followTerminal()
        // The foreground changes only around a stop: Ctrl-Z then `bg`, or `fg`, both end with
        // SIGCONT. Look then (and at start), instead of polling the terminal.
        signal(SIGCONT, SIG_DFL)
        let continued = DispatchSource.makeSignalSource(signal: SIGCONT, queue: events)
        continued.setEventHandler { followTerminal() }
        continued.resume()

        // Ctrl-C / SIGTERM: stop at once, close the device, restore the terminal line.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
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

        // In the background only `playback` may start playing; the others start on `fg`.
        if foreground.load(ordering: .relaxed) || session.category == .playback {
            player.play()
        } else {
            pausedByBackground.store(true, ordering: .relaxed)
        }

        // Progress: a live line on a terminal (in the foreground); otherwise just wait.
        while done.wait(timeout: tty ? .now() + .milliseconds(250) : .distantFuture) == .timedOut {
            followTerminal()
            if tty, foreground.load(ordering: .relaxed), player.timeControlStatus == .playing,
               let item = player.currentItem {
                Terminal.progress("  \(formatTime(player.currentTime())) / \(formatTime(item.duration ?? 0))")
            }
        }
        mpris?.stop()
        remoteBinding.unbind()
        nowPlayingBinding.unbind()
        player.removeAllItems()
        player.engine.shutdown()
        Terminal.finish(tty: tty)
        for s in sources { s.cancel() }
        continued.cancel()
        if terminal >= 0 { close(terminal) }

        if interrupted.load(ordering: .relaxed) { throw ExitCode(130) }
        if quit.load(ordering: .relaxed) { return }
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
