import ArgumentParser
import AudioEngine
import CMalloc
import Control
import CtlCore
import Dispatch
import FoundationEssentials
import Glibc
import Lifecycle
import Logging
import MPRIS
import NowPlaying
import Platform
import PlayQueue
import Player
import Session
import Synchronization
import Locking

/// `backline play FILE…`: a terminal music player over the same play queue and typed commands
/// as the daemon (keys, the desktop's media controls and the daemon's clients all run
/// `ControlCommand`s through one `CommandDispatcher`).
struct Play: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",  // (given: deriving it reflects on the type, a conformance scan at start-up)
        abstract: "Play audio files, folders, playlists and streams, gaplessly, with keys on a terminal.",
        discussion: """
            Items play in the order given. A folder plays its audio files (recursively, in \
            natural order); an .m3u, .m3u8 or .pls playlist plays its entries (relative ones \
            against the playlist's folder); a URL plays as a file or a live stream (radio, with \
            its titles); `-` reads paths or a playlist from standard input.

            Keys (when standard input is a terminal; --no-keys turns them off): space or p \
            pause/resume, n or > next, b or < previous (restarts the item when more than 3 s \
            in), left/right seek 5 s, down/up seek 30 s, 9/0 or -/+ volume, m mute, r repeat \
            (off, all, one), s shuffle, i about the item, ? the keys, q quit.

            On a terminal a status line shows the item, its place in the queue, the time, the \
            volume and the modes (in colour unless NO_COLOR is set); otherwise one line per item.

            Job control: Ctrl-Z stops the player and gives the terminal back; `bg` lets it play on \
            in the background (category playback), `fg` brings the keys back. In the background, \
            soloAmbient and ambient pause, and once nothing plays the process stops itself \
            (SIGSTOP) until `fg`.

            Exit status: 0 every item played (or q); 2 some items failed (each reported on stderr \
            with the file and the reason); 1 nothing was playable, the device failed, or a usage \
            error. Ctrl-C, SIGTERM and a closed pipe end it by that signal, after closing the \
            device and restoring the terminal (a shell shows 130, 143, 141).
            """)

    @Option(name: .long, help: ArgumentHelp(HelpText.deviceOption))
    var device = PlayOptions.defaults.device

    @Option(name: .customLong("buffer-ms"), help: "Device buffer length in milliseconds (period = a half).")
    var bufferMs = PlayOptions.defaults.bufferMs

    @Option(name: .long, help: "Device sample format to try first: float32 or s16.")
    var format = PlayOptions.defaults.format

    @Flag(name: .long, help: "Play the items in a random order.")
    var shuffle = PlayOptions.defaults.shuffle

    @Option(name: .long, help: "Repeat: all (the queue) or one (the item); off by default.")
    var `repeat`: String?

    @Option(name: .long, help: "The most channels to send the device, 2–8 (default 8: what the device takes); files with more are down-mixed to stereo (ITU-R BS.775).")
    var channels = PlayOptions.defaults.channels

    @Option(name: .customLong("replay-gain"), help: "ReplayGain: off, track, album or auto (album unless --shuffle): even loudness from the files' values.")
    var replayGain = PlayOptions.defaults.replayGain

    @Option(name: .long, help: "ReplayGain preamp in dB, added to files with values (-60…60).")
    var preamp = PlayOptions.defaults.preamp

    @Option(name: .long, help: "Crossfade: seconds each item's end overlaps the next one's start, equal power (0: off; consecutive tracks of one album stay gapless).")
    var crossfade = PlayOptions.defaults.crossfade

    @Option(name: .long, help: "Volume in percent, 0–100.")
    var volume: Int?

    @Option(name: .long, help: "Start the first item at this time (seconds, M:SS or H:MM:SS).")
    var start: String?

    @Flag(name: .customLong("no-keys"), help: "Do not read keys from the terminal.")
    var noKeys = PlayOptions.defaults.noKeys

    @Option(name: .long, help: "How it treats other players: playback (keeps playing in the background), soloAmbient (pauses in the background and stops other players) or ambient (pauses in the background, plays along with others).")
    var category = PlayOptions.defaults.category

    @Option(name: .customLong("background-grace"),
            help: "Seconds in the background with nothing playing before the process stops itself.")
    var backgroundGrace = PlayOptions.defaults.backgroundGrace

    @Flag(name: .long, help: "Print the device's settings (format, rate, channels, buffer and period), each item's format (and whether it is down-mixed), real-time scheduling and underruns to stderr.")
    var verbose = PlayOptions.defaults.verbose

    @Flag(name: .long, help: "Post a desktop notification when an item starts (replacing the previous one).")
    var notify = PlayOptions.defaults.notify

    @Flag(name: .customLong("no-mpris"), help: "Do not publish the player on the session bus (MPRIS2: desktop media controls, media keys, playerctl).")
    var noMPRIS = PlayOptions.defaults.noMPRIS

    @Argument(help: ArgumentHelp(HelpText.items))
    var files: [String]

    /// The options as parsed, for ``PlayOptions/run()``.
    var options: PlayOptions {
        PlayOptions(device: device, bufferMs: bufferMs, format: format, channels: channels, replayGain: replayGain, preamp: preamp,
                    crossfade: crossfade, shuffle: shuffle, repeat: self.repeat,
                    volume: volume, start: start, noKeys: noKeys, category: category,
                    backgroundGrace: backgroundGrace, verbose: verbose, notify: notify, noMPRIS: noMPRIS,
                    files: files)
    }

    func validate() throws { try options.validate() }

    func run() throws { try options.run() }
}

/// `play`'s options as plain values, and the player itself. `Play` fills them through
/// swift-argument-parser; ``init(fastParsing:)`` fills them directly for a command line made of
/// nothing but well-formed known options and files (the usual case), so `backline play FILE`
/// does not pay the parser's reflection at start-up (15 M instructions, a third of a short
/// play's). Help, errors and anything unusual go through `Play`, which prints them.
struct PlayOptions: Equatable {
    var device = "default"
    var bufferMs = 500
    var format = "float32"
    var channels = 8
    var replayGain = "off"
    var preamp = 0.0
    var crossfade = 0.0
    var shuffle = false
    var `repeat`: String?
    var volume: Int?
    var start: String?
    var noKeys = false
    var category = "playback"
    var backgroundGrace = 5.0
    var verbose = false
    var notify = false
    var noMPRIS = false
    var files: [String] = []

    /// Every option's default (`Play`'s declarations take theirs from here).
    static let defaults = PlayOptions()

    func validate() throws {
        guard (20...5000).contains(bufferMs) else { throw ValidationError("--buffer-ms must be 20…5000") }
        guard ["float32", "s16"].contains(format) else { throw ValidationError("--format must be float32 or s16") }
        guard (2...8).contains(channels) else { throw ValidationError("--channels must be 2…8") }
        guard ReplayGainMode(rawValue: replayGain) != nil else { throw ValidationError("--replay-gain must be off, track, album or auto") }
        guard preamp.isFinite, (-60...60).contains(preamp) else { throw ValidationError("--preamp must be -60…60 dB") }
        guard crossfade.isFinite, (0...3600).contains(crossfade) else { throw ValidationError("--crossfade must be 0…3600 seconds") }
        guard backgroundGrace >= 0 else { throw ValidationError("--background-grace must be ≥ 0") }
        guard SessionCategory(rawValue: category) != nil else {
            throw ValidationError("--category must be playback, soloAmbient or ambient")
        }
        if let r = self.repeat, RepeatMode(rawValue: r) == nil { throw ValidationError("--repeat must be all, one or off (got '\(r)')") }
        if let v = volume, !(0...100).contains(v) { throw ValidationError("--volume must be 0…100 (got \(v))") }
        if let s = start, parseTime(s) == nil { throw ValidationError("--start must be seconds, M:SS or H:MM:SS (got '\(s)')") }
        guard !files.isEmpty else { throw ValidationError("give at least one file, folder or playlist") }
    }

    func run() throws {
        // Two malloc arenas, as the daemon keeps (each of the dozen threads would get its own,
        // with the free memory each holds on to); before any thread starts.
        _ = mallopt(M_ARENA_MAX, 2)
        let verbose = self.verbose
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = verbose ? .info : .warning
            return h
        }
        let tty = isatty(STDOUT_FILENO) == 1
        let color = tty && (ProcessInfo.processInfo.environment["NO_COLOR"] ?? "").isEmpty

        // What to play.
        let inputs = PlayInputs.expand(files) {
            String(decoding: readToEnd(STDIN_FILENO), as: UTF8.self)
        }
        for note in inputs.notes { Terminal.error("backline: \(note)", tty: false) }
        guard !inputs.files.isEmpty else {
            Terminal.error("backline: nothing to play", tty: false)
            throw ExitCode(1)
        }

        var configuration = PlaybackConfiguration(
            device: device, bufferMilliseconds: bufferMs, category: SessionCategory(rawValue: category) ?? .playback,
            backgroundGrace: backgroundGrace, musicDirectory: FileManager.default.currentDirectoryPath, allowAbsolutePaths: true)
        configuration.preferredFormat = format == "s16" ? .s16 : .float32
        configuration.maxChannels = channels
        // The whole queue is fed ahead (as a plain list player does), so a device that takes
        // audio faster than real time (ALSA's null or file plugins) still hears every item.
        configuration.lookahead = .max
        let playback: Playback
        do {
            playback = try Playback(configuration: configuration)
        } catch {
            throw ValidationError(error.message)
        }
        playback.replayGain = ReplayGainSettings(mode: ReplayGainMode(rawValue: replayGain) ?? .off, preamp: preamp)
        playback.crossfade = crossfade
        let dispatcher = CommandDispatcher(playback: playback, version: Backline.version)
        let player = playback.player, queue = playback.queue, app = playback.application
        @discardableResult
        func run(_ command: any ControlCommand) -> Result<Reply, CommandError> { dispatcher.execute(command) }

        queue.add(inputs.files)
        if let r = self.repeat, let mode = RepeatMode(rawValue: r) { run(RepeatCommand(mode: mode)) }
        if shuffle { run(ShuffleCommand(on: true)) }
        if let v = volume { run(VolumeCommand(change: .set(Double(v)))) }

        // Items failed, items heard (their start); whether the queue started; the device failed.
        let status = Lock((failed: 0, heard: 0, started: false, deviceFailed: false))
        // The main loop below wakes on `tick` (the end, a key, a resize) or every 250 ms.
        let tick = DispatchSemaphore(value: 0)
        let ending = Atomic<Bool>(false)
        let done = { @Sendable in
            ending.store(true, ordering: .relaxed)
            tick.signal()
        }
        let quit = Atomic<Bool>(false)
        let events = DispatchQueue(label: "backline.play.events")

        // The desktop's media controls and media keys, on the session bus as
        // org.mpris.MediaPlayer2.backline.instance<PID>; they run the same commands as the keys.
        var mpris: MPRISService?
        if !noMPRIS {
            var options = MPRISOptions(identity: "Backline", desktopEntry: "backline")
            options.volume = { Double(player.volume) }
            options.setVolume = { v in _ = dispatcher.execute(VolumeCommand(change: .set(v * 100))) }
            options.quit = {  // (desktop controls' "close"): an ordinary end
                quit.store(true, ordering: .relaxed)
                done()
            }
            do {
                mpris = try playback.nowPlaying.publish(on: .sessionBus(name: "backline.instance\(getpid())"),
                                                        commands: playback.remote, options: options)
            } catch {
                if verbose { Terminal.error("backline: not on the session bus: \(error)", tty: tty) }
            }
        }
        let notifications: LocalNotificationCenter? = notify ? try? LocalNotificationCenter(appName: "Backline") : nil
        let artDirectory = MPRISOptions(identity: "").artDirectory
        if notify, notifications == nil, verbose { Terminal.error("backline: no notifications: no session bus", tty: tty) }

        let ui = PlayKeys(playback: playback, dispatcher: dispatcher, device: device, tty: tty,
                          redraw: { tick.signal() }) {
            quit.store(true, ordering: .relaxed)
            done()
        }

        // One line per item when its first sample is heard (the engine's own event, so even
        // items shorter than the event delivery are announced, in order).
        player.engine.onEvent { [device] event in
            if verbose, case .deviceOpened(let c) = event {
                let rt = player.engine.isRealtime.map { $0 ? "real-time (SCHED_FIFO)" : "normal priority (no SCHED_FIFO)" } ?? "priority unknown"
                Terminal.error("backline: device \(device): \(c); output thread at \(rt)", tty: tty)
            }
            // A chained stream's next link: its title, as it is heard.
            if case .metadataChanged(let info) = event, ui.current.withLock({ c in
                guard c?.id == info.id else { return false }
                c = info
                return true
            }) {
                Terminal.line("♪ \(Self.name(info))", tty: tty)
                return
            }
            // An item's start (also from `--start`, a seek into a new item), not a seek within it.
            guard case .itemStarted(let info, _) = event,
                  ui.current.withLock({ c in defer { c = info }; return c?.id != info.id }) else { return }
            status.withLock { $0.heard += 1 }
            Terminal.line("▶ \(Self.name(info))  [\(formatTime(info.duration))]", tty: tty)
            if verbose, let audio = info.audio {
                let gain = info.replayGainScale == 1 ? "" : ", ReplayGain \(Self.decibels(info.replayGainScale))"
                Terminal.error("backline: \(Path.lastComponent(info.path)): \(audio)\(gain)", tty: tty)
            }
            if let notifications {
                let m = info.metadata
                let icon = m.artwork.flatMap { MPRISService.artworkFile($0, directory: artDirectory) } ?? "audio-x-generic"
                notifications.present(LocalNotification(
                    alertTitle: m.title ?? Path.lastComponent(info.path),
                    alertBody: [m.artist, m.album].compactMap { $0 }.joined(separator: " — "), icon: icon, replacesPrevious: true))
            }
        }
        _ = queue.addObserver(queue: events) { event in
            switch event {
            case .failed(let entry, let reason):
                status.withLock { $0.failed += 1 }
                Terminal.error("backline: cannot play \(entry.path): \(reason)", tty: tty)
            case .state(.stopped):
                // The queue's end (or a stop from the desktop's controls): the player's end.
                if status.withLock({ $0.started }) { done() }
            default:
                break
            }
        }
        player.addObserver(queue: events) { event in
            switch event {
            case .playbackStalled:
                if verbose { Terminal.error("backline: underrun (\(player.engine.underrunCount))", tty: tty) }
            case .outputFailed(let e):
                status.withLock { $0.deviceFailed = true }
                Terminal.error("backline: audio device \(device): \(e.message) (\(e.library ?? "ALSA") code \(e.code))", tty: tty)
                done()
            default:
                break
            }
        }

        // Job control: in the terminal's foreground process group the app is active; put in the
        // background (Ctrl-Z then `bg`, or started with `&`) it is in the background. Once
        // nothing keeps it running there, the suspension hook stops the process (SIGSTOP);
        // `fg` continues it and makes it active again.
        let keys = !noKeys && !files.contains("-") && KeyTerminal.available
        let session = playback.session
        app.addSuspensionHook { _ in
            Terminal.error("backline: stopped: nothing is playing in the background (\(session.category.rawValue) pauses there); `fg` resumes", tty: false)
        }
        /// While stopping (Ctrl-Z, or the suspension), the status line stays cleared.
        let stopping = Atomic<Bool>(false)
        @Sendable func stopSelf() {
            stopping.store(true, ordering: .relaxed)
            Terminal.finish(tty: tty)
            KeyTerminal.leave()
            kill(getpid(), SIGSTOP)
        }
        // Stop only once the suspension is complete (hooks run, device released), on the queue
        // that also handles SIGCONT, so continuing never races the suspension.
        app.addObserver(queue: events) { event in
            if case .didSuspend = event { stopSelf() }
        }
        let terminal = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        let foreground = Atomic<Bool>(true)
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
                if keys { KeyTerminal.enter() }
                app.enterForeground()
                if pausedByBackground.exchange(false, ordering: .relaxed) { _ = dispatcher.execute(PlayCommand(item: nil)) }
            } else {
                Terminal.finish(tty: tty)
                if keys { KeyTerminal.leave() }  // (in the background: only forgets raw mode)
                app.enterBackground()
            }
        }
        // Every signal is handled before raw mode starts. The foreground changes only around a
        // stop (Ctrl-Z then `bg`, `fg`, `kill -STOP`/`-CONT`), which ends with SIGCONT: look then
        // (and at start), instead of polling the terminal; back in the foreground, raw mode again
        // (the shell put its own settings back meanwhile).
        signal(SIGCONT, SIG_DFL)
        let continued = DispatchSource.makeSignalSource(signal: SIGCONT, queue: events)
        continued.setEventHandler {
            stopping.store(false, ordering: .relaxed)
            if keys, KeyTerminal.inForeground { KeyTerminal.enter() }
            followTerminal()
            tick.signal()
        }
        continued.resume()
        // Ctrl-Z: the status line cleared and the terminal's settings back before stopping.
        signal(SIGTSTP, SIG_IGN)
        let stop = DispatchSource.makeSignalSource(signal: SIGTSTP, queue: events)
        stop.setEventHandler { stopSelf() }
        stop.resume()
        // Ctrl-C / SIGTERM: stop at once, close the device, restore the terminal, then die of
        // the signal (a shell loop around the player stops at Ctrl-C, as for any program).
        // A reader of stdout gone (`| head`): the same, of SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        let fatal = Atomic<Int32>(0)
        Terminal.onBrokenPipe {
            fatal.store(SIGPIPE, ordering: .relaxed)
            done()
        }
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        var sources: [any DispatchSourceSignal] = [continued, stop]
        for sig in [SIGINT, SIGTERM] {
            let src = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            src.setEventHandler {
                fatal.store(sig, ordering: .relaxed)
                done()
            }
            src.resume()
            sources.append(src)
        }
        // A resize redraws the status line at once.
        signal(SIGWINCH, SIG_IGN)
        let resized = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: .global())
        resized.setEventHandler { tick.signal() }
        resized.resume()
        sources.append(resized)

        // Keys, when standard input is a terminal (and not a list being read from it).
        var reader: KeyReader?
        if keys {
            KeyTerminal.prepare()
            reader = KeyReader { key in ui.handle(key) }
        }
        followTerminal()
        if keys, foreground.load(ordering: .relaxed) { KeyTerminal.enter() }

        // In the background only `playback` may start playing; the others start on `fg`.
        let startAt = start.flatMap(parseTime) ?? 0
        status.withLock { $0.started = true }  // (from here a stopped queue is the end)
        if foreground.load(ordering: .relaxed) || session.category == .playback {
            if startAt > 0 {
                // The first item from `--start`: the queue starts there, nothing before it is heard.
                var snap = queue.snapshot()
                snap.current = queue.playOrder.first
                snap.position = startAt
                snap.state = .playing
                queue.restore(snap, play: true)
            } else {
                run(PlayCommand(item: nil))
            }
        } else {
            pausedByBackground.store(true, ordering: .relaxed)
        }
        if queue.playbackState == .stopped, !pausedByBackground.load(ordering: .relaxed) { done() }

        // The status line on a terminal (in the foreground), redrawn four times a second and at
        // once after a key or a resize. Without one nothing is drawn, so the loop sleeps until
        // woken (job control is followed on SIGCONT).
        while !ending.load(ordering: .relaxed) {
            _ = tick.wait(timeout: tty ? .now() + .milliseconds(250) : .distantFuture)
            if ending.load(ordering: .relaxed) { break }
            followTerminal()
            if tty, foreground.load(ordering: .relaxed), !stopping.load(ordering: .relaxed) {
                Terminal.progress(ui.status().render(width: Terminal.width, color: color))
            }
        }
        reader?.stop()
        mpris?.stop()
        player.removeAllItems()
        player.engine.shutdown()
        Terminal.finish(tty: tty)
        KeyTerminal.leave()
        for s in sources { s.cancel() }
        if terminal >= 0 { close(terminal) }

        let sig = fatal.load(ordering: .relaxed)
        if sig != 0 { Self.die(of: sig) }
        let s = status.withLock { $0 }
        if s.deviceFailed { throw ExitCode(1) }
        if quit.load(ordering: .relaxed) { throw ExitCode(s.failed > 0 ? 2 : 0) }
        if s.heard == 0 { throw ExitCode(1) }
        if s.failed > 0 { throw ExitCode(2) }
    }

    /// Ends the process by `sig`'s default action (its exit status is 128 + `sig` to a shell).
    static func die(of sig: Int32) -> Never {
        signal(sig, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, sig)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        raise(sig)
        Glibc.exit(128 + sig)
    }

    /// `Title — Artist`, the title alone, or the file name.
    /// A scale in dB with one decimal: `-6.0 dB`.
    static func decibels(_ scale: Float) -> String {
        guard scale > 0, scale.isFinite else { return "-inf dB" }
        let t = Int((200 * log10(Double(scale))).rounded())
        return "\(t < 0 ? "-" : "+")\(t.magnitude / 10).\(t.magnitude % 10) dB"
    }

    static func name(_ info: ItemInfo) -> String {
        let m = info.metadata
        return m.title.map { t in m.artist.map { "\(t) — \($0)" } ?? t } ?? Path.lastComponent(info.path)
    }
}

extension PlayOptions {
    /// `play`'s arguments (after `play`), or nil when they hold anything but the options below
    /// in `--name VALUE`/`--name=VALUE` form with values of the right type, files, `-` and `--`:
    /// the caller then hands the command line to swift-argument-parser, whose errors and help
    /// are the ones users see.
    init?(fastParsing arguments: ArraySlice<String>) {
        var i = arguments.startIndex
        var positionalOnly = false
        // An option's value: inline, or the next argument unless that looks like an option
        // (the parser's rules for those differ by case: it decides).
        func value(_ inline: String?) -> String? {
            let v = inline ?? (i < arguments.endIndex ? arguments[i] : nil)
            if inline == nil { i += 1 }
            guard let v, !v.hasPrefix("-") else { return nil }
            return v
        }
        while i < arguments.endIndex {
            let a = arguments[i]
            i += 1
            if positionalOnly || a == "-" || !a.hasPrefix("-") {
                files.append(a)
                continue
            }
            if a == "--" { positionalOnly = true; continue }
            guard a.hasPrefix("--") else { return nil }  // (short options: -h)
            let body = a.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            let inline = body.contains("=") ? String(body.drop { $0 != "=" }.dropFirst()) : nil
            switch name {
            case "shuffle", "no-keys", "verbose", "notify", "no-mpris":
                guard inline == nil else { return nil }
                switch name {
                case "shuffle": shuffle = true
                case "no-keys": noKeys = true
                case "verbose": verbose = true
                case "notify": notify = true
                default: noMPRIS = true
                }
            case "device", "format", "repeat", "start", "category", "replay-gain":
                guard let v = value(inline) else { return nil }
                switch name {
                case "replay-gain": replayGain = v
                case "device": device = v
                case "format": format = v
                case "repeat": self.repeat = v
                case "start": start = v
                default: category = v
                }
            case "buffer-ms", "volume", "channels":
                guard let v = value(inline).flatMap({ Int($0) }) else { return nil }
                switch name {
                case "volume": volume = v
                case "channels": channels = v
                default: bufferMs = v
                }
            case "background-grace", "preamp", "crossfade":
                guard let v = value(inline).flatMap({ Double($0) }) else { return nil }
                switch name {
                case "preamp": preamp = v
                case "crossfade": crossfade = v
                default: backgroundGrace = v
                }
            default:
                return nil  // --help, --version, an unknown option
            }
        }
    }
}
