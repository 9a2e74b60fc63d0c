// `backline play` once its queue is made: the desktop's controls, the announcements, job
// control, the signals, the keys, the status line, the shutdown and the exit status, each a
// step `PlayOptions.run()` takes in turn (`PlayRun`), and the terminal's foreground followed
// (`JobControl`).

import ArgumentParser
import AudioEngine
import Control
import CtlCore
import Dispatch
import Glibc
import Lifecycle
import MPRIS
import MediaCore
import NowPlaying
import Platform
import PlayQueue
import Player
import Session
import Synchronization
import Locking

/// What the steps of one `play` run share: the counts that decide its exit status, and what its
/// observers, signal handlers and key reader set for the main loop, which wakes on `tick`.
final class PlayRun: Sendable {
    let options: PlayOptions
    let playback: Playback
    let dispatcher: CommandDispatcher
    /// Whether standard output is a terminal.
    let tty: Bool
    /// Whether the status line is in colour.
    let color: Bool
    /// Items failed, items heard (their start); whether the queue started; the device failed.
    let status = Lock((failed: 0, heard: 0, started: false, deviceFailed: false))
    /// The main loop wakes on it (the end, a key, a resize) or every 250 ms.
    let tick = DispatchSemaphore(value: 0)
    /// The run is ending: the main loop stops.
    let ending = Atomic<Bool>(false)
    /// The end was asked for (q, or the desktop's "close").
    let quit = Atomic<Bool>(false)
    /// The queue the observers and the job-control signals run on.
    let events = DispatchQueue(label: "backline.play.events")
    /// While stopping (Ctrl-Z, or the suspension), the status line stays cleared.
    let stopping = Atomic<Bool>(false)
    /// The signal the run dies of once shut down (0: none).
    let fatal = Atomic<Int32>(0)

    init(options: PlayOptions, playback: Playback, dispatcher: CommandDispatcher, tty: Bool, color: Bool) {
        self.options = options
        self.playback = playback
        self.dispatcher = dispatcher
        self.tty = tty
        self.color = color
    }

    /// Ends the main loop.
    func end() {
        ending.store(true, ordering: .relaxed)
        tick.signal()
    }

    /// An ordinary end, asked for (q, the desktop's "close").
    func quitNow() {
        quit.store(true, ordering: .relaxed)
        end()
    }

    /// What the desktop shows of the run.
    struct Desktop {
        /// The player on the session bus (nil: `--no-mpris`, or no bus).
        var mpris: MPRISService?
        /// Where item notifications go (`--notify`, with a bus).
        var notifications: LocalNotificationCenter?
        /// Where embedded artwork is written for the notifications' icons.
        var artDirectory: String
    }

    /// The desktop's media controls and media keys, on the session bus as
    /// org.mpris.MediaPlayer2.backline.instance<PID>; they run the same commands as the keys.
    /// With `--notify`, the notification center too.
    func publishOnDesktop() -> Desktop {
        let player = playback.player, dispatcher = self.dispatcher
        var mpris: MPRISService?
        if !options.noMPRIS {
            var mprisOptions = MPRISOptions(identity: "Backline", desktopEntry: "backline")
            mprisOptions.volume = { Double(player.volume) }
            mprisOptions.setVolume = { v in _ = dispatcher.execute(VolumeCommand(change: .set(v * 100))) }
            mprisOptions.quit = { [self] in quitNow() }  // (desktop controls' "close"): an ordinary end
            do {
                mpris = try playback.nowPlaying.publish(on: .sessionBus(name: "backline.instance\(getpid())"),
                                                        commands: playback.remote, options: mprisOptions)
            } catch {
                if options.verbose { Terminal.error("backline: not on the session bus: \(error)", tty: tty) }
            }
        }
        let notifications: LocalNotificationCenter? = options.notify ? try? LocalNotificationCenter(appName: "Backline") : nil
        let artDirectory = MPRISOptions(identity: "").artDirectory
        if options.notify, notifications == nil, options.verbose { Terminal.error("backline: no notifications: no session bus", tty: tty) }
        return Desktop(mpris: mpris, notifications: notifications, artDirectory: artDirectory)
    }

    /// What the keys do (typed commands through the dispatcher); a key that redraws wakes the
    /// main loop, q ends the run.
    func makeKeys() -> PlayKeys {
        PlayKeys(playback: playback, dispatcher: dispatcher, device: options.device, tty: tty,
                 redraw: { [self] in tick.signal() }) { [self] in
            quitNow()
        }
    }

    /// One line per item when its first sample is heard (the engine's own event, so even
    /// items shorter than the event delivery are announced, in order), and a notification.
    func announceItems(_ ui: PlayKeys, _ desktop: Desktop) {
        let player = playback.player, verbose = options.verbose, device = options.device, tty = tty
        let notifications = desktop.notifications, artDirectory = desktop.artDirectory
        player.engine.onEvent { [self] event in
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
                Terminal.line("♪ \(PlayOptions.name(info))", tty: tty)
                return
            }
            // An item's start (also from `--start`, a seek into a new item), not a seek within it.
            guard case .itemStarted(let info, _) = event,
                  ui.current.withLock({ c in defer { c = info }; return c?.id != info.id }) else { return }
            status.withLock { $0.heard += 1 }
            Terminal.line("▶ \(PlayOptions.name(info))  [\(formatTime(info.duration))]", tty: tty)
            if verbose, let audio = info.audio {
                let gain = info.replayGainScale == 1 ? "" : ", ReplayGain \(PlayOptions.decibels(info.replayGainScale))"
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
    }

    /// Each item that fails, on stderr (counted for the exit status); the end of the run: the
    /// queue stopped once started, or the device failed; underruns with `--verbose`.
    func reportFailuresAndTheEnd() {
        let player = playback.player, verbose = options.verbose, device = options.device, tty = tty
        _ = playback.queue.addObserver(queue: events) { [self] event in
            switch event {
            case .failed(let entry, let reason):
                status.withLock { $0.failed += 1 }
                Terminal.error("backline: cannot play \(entry.path): \(reason)", tty: tty)
            case .state(.stopped):
                // The queue's end (or a stop from the desktop's controls): the player's end.
                if status.withLock({ $0.started }) { end() }
            default:
                break
            }
        }
        player.addObserver(queue: events) { [self] event in
            switch event {
            case .playbackStalled:
                if verbose { Terminal.error("backline: underrun (\(player.engine.underrunCount))", tty: tty) }
            case .outputFailed(let e):
                status.withLock { $0.deviceFailed = true }
                Terminal.error("backline: audio device \(device): \(e.message) (\(e.library ?? "ALSA") code \(e.code))", tty: tty)
                end()
            default:
                break
            }
        }
    }

    /// Job control: in the terminal's foreground process group the app is active; put in the
    /// background (Ctrl-Z then `bg`, or started with `&`) it is in the background. Once
    /// nothing keeps it running there, the suspension hook stops the process (SIGSTOP);
    /// `fg` continues it and makes it active again.
    func followJobControl() -> JobControl {
        let keys = !options.noKeys && !options.files.contains("-") && KeyTerminal.available
        let app = playback.application, session = playback.session
        app.addSuspensionHook { _ in
            Terminal.error("backline: stopped: nothing is playing in the background (\(session.category.rawValue) pauses there); `fg` resumes", tty: false)
        }
        // Stop only once the suspension is complete (hooks run, device released), on the queue
        // that also handles SIGCONT, so continuing never races the suspension.
        app.addObserver(queue: events) { [self] event in
            if case .didSuspend = event { stopSelf() }
        }
        let jobs = JobControl(terminal: open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC), keys: keys,
                              app: app, dispatcher: dispatcher, tty: tty)
        playback.player.addObserver(queue: events) { event in
            if case .rateChanged(0, .appBackgrounded) = event { jobs.pausedByBackground.store(true, ordering: .relaxed) }
        }
        return jobs
    }

    /// Ctrl-Z, or the suspension: the status line cleared and the terminal's settings back,
    /// then the process stops.
    func stopSelf() {
        stopping.store(true, ordering: .relaxed)
        Terminal.finish(tty: tty)
        KeyTerminal.leave()
        kill(getpid(), SIGSTOP)
    }

    /// Every signal, handled before raw mode starts; returns the sources, cancelled at the end.
    func handleSignals(_ jobs: JobControl) -> [any DispatchSourceSignal] {
        // The foreground changes only around a stop (Ctrl-Z then `bg`, `fg`, `kill -STOP`/`-CONT`),
        // which ends with SIGCONT: look then (and at start), instead of polling the terminal;
        // back in the foreground, raw mode again (the shell put its own settings back meanwhile).
        signal(SIGCONT, SIG_DFL)
        let continued = DispatchSource.makeSignalSource(signal: SIGCONT, queue: events)
        continued.setEventHandler { [self] in
            stopping.store(false, ordering: .relaxed)
            if jobs.keys, KeyTerminal.inForeground { KeyTerminal.enter() }
            jobs.followTerminal()
            tick.signal()
        }
        continued.resume()
        // Ctrl-Z: the status line cleared and the terminal's settings back before stopping.
        signal(SIGTSTP, SIG_IGN)
        let stop = DispatchSource.makeSignalSource(signal: SIGTSTP, queue: events)
        stop.setEventHandler { [self] in stopSelf() }
        stop.resume()
        // Ctrl-C / SIGTERM: stop at once, close the device, restore the terminal, then die of
        // the signal (a shell loop around the player stops at Ctrl-C, as for any program).
        // A reader of stdout gone (`| head`): the same, of SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        Terminal.onBrokenPipe { [self] in
            fatal.store(SIGPIPE, ordering: .relaxed)
            end()
        }
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        var sources: [any DispatchSourceSignal] = [continued, stop]
        for sig in [SIGINT, SIGTERM] {
            let src = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            src.setEventHandler { [self] in
                fatal.store(sig, ordering: .relaxed)
                end()
            }
            src.resume()
            sources.append(src)
        }
        // A resize redraws the status line at once.
        signal(SIGWINCH, SIG_IGN)
        let resized = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: .global())
        resized.setEventHandler { [self] in tick.signal() }
        resized.resume()
        sources.append(resized)
        return sources
    }

    /// Keys, when standard input is a terminal (and not a list being read from it); then the
    /// terminal's foreground looked at, and raw mode in it.
    func startKeys(_ ui: PlayKeys, _ jobs: JobControl) -> KeyReader? {
        var reader: KeyReader?
        if jobs.keys {
            KeyTerminal.prepare()
            reader = KeyReader { key in ui.handle(key) }
        }
        jobs.followTerminal()
        if jobs.keys, jobs.foreground.load(ordering: .relaxed) { KeyTerminal.enter() }
        return reader
    }

    /// Starts playing (at `--start` when given). In the background only `playback` may start
    /// playing; the others start on `fg`. Nothing to play ends the run at once.
    func startPlaying(_ jobs: JobControl) {
        let queue = playback.queue
        let startAt = options.start.flatMap(parseTime) ?? 0
        status.withLock { $0.started = true }  // (from here a stopped queue is the end)
        if jobs.foreground.load(ordering: .relaxed) || playback.session.category == .playback {
            if startAt > 0 {
                // The first item from `--start`: the queue starts there, nothing before it is heard.
                var snap = queue.snapshot()
                snap.current = queue.playOrder.first
                snap.position = startAt
                snap.state = .playing
                queue.restore(snap, play: true)
            } else {
                _ = dispatcher.execute(PlayCommand(item: nil))
            }
        } else {
            jobs.pausedByBackground.store(true, ordering: .relaxed)
        }
        if queue.playbackState == .stopped, !jobs.pausedByBackground.load(ordering: .relaxed) { end() }
    }

    /// The main loop, until the end: the status line on a terminal (in the foreground), redrawn
    /// four times a second and at once after a key or a resize. Without one nothing is drawn,
    /// so the loop sleeps until woken (job control is followed on SIGCONT).
    func drawStatusLine(_ ui: PlayKeys, _ jobs: JobControl) {
        while !ending.load(ordering: .relaxed) {
            _ = tick.wait(timeout: tty ? .now() + .milliseconds(250) : .distantFuture)
            if ending.load(ordering: .relaxed) { break }
            jobs.followTerminal()
            if tty, jobs.foreground.load(ordering: .relaxed), !stopping.load(ordering: .relaxed) {
                Terminal.progress(ui.status().render(width: Terminal.width, color: color))
            }
        }
    }

    /// The keys stopped, off the bus, the device closed, the terminal restored, the signals'
    /// sources cancelled.
    func shutDown(reader: KeyReader?, mpris: MPRISService?, signals: [any DispatchSourceSignal], jobs: JobControl) {
        reader?.stop()
        mpris?.stop()
        if options.resume {
            PlayBookmarks.save(playback.bookmarks, current: playback.player.currentItem, at: playback.queue.elapsed, to: options.bookmarksFile)
        }
        playback.player.removeAllItems()
        playback.player.engine.shutdown()
        Terminal.finish(tty: tty)
        KeyTerminal.leave()
        for s in signals { s.cancel() }
        if jobs.terminal >= 0 { close(jobs.terminal) }
    }

    /// Dies of the signal that ended the run, or ends with its exit status: 1 when the device
    /// failed or nothing was heard, 2 when some items failed, 0 otherwise (q: 2 or 0).
    func exitStatus() throws {
        let sig = fatal.load(ordering: .relaxed)
        if sig != 0 { PlayOptions.die(of: sig) }
        let s = status.withLock { $0 }
        if s.deviceFailed { throw ExitCode(1) }
        if quit.load(ordering: .relaxed) { throw ExitCode(s.failed > 0 ? 2 : 0) }
        if s.heard == 0 { throw ExitCode(1) }
        if s.failed > 0 { throw ExitCode(2) }
    }
}

/// The terminal's foreground process group followed: in it the app is active and the keys in
/// raw mode; out of it the app is in the background, and the status line and raw mode are off.
final class JobControl: Sendable {
    /// The controlling terminal (-1: none; nothing is followed then).
    let terminal: Int32
    /// Whether keys are read.
    let keys: Bool
    /// Whether this process group is the terminal's foreground one, as last looked at.
    let foreground = Atomic<Bool>(true)
    /// Paused because the app went to the background (or not started there): plays on `fg`.
    let pausedByBackground = Atomic<Bool>(false)
    private let app: Application
    private let dispatcher: CommandDispatcher
    private let tty: Bool

    init(terminal: Int32, keys: Bool, app: Application, dispatcher: CommandDispatcher, tty: Bool) {
        self.terminal = terminal
        self.keys = keys
        self.app = app
        self.dispatcher = dispatcher
        self.tty = tty
    }

    /// Looks whether the foreground changed, and follows it.
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
}
