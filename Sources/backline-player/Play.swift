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
import MediaCore
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

    @Flag(name: .long, help: "Play podcasts and audiobooks on from where play left them (less 5 s), and keep where they are left (items at least 10 minutes long, or spoken word: genre, .m4b) in $XDG_STATE_HOME/backline/play-bookmarks.json.")
    var resume = PlayOptions.defaults.resume

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

    @Option(name: .long, help: "Play at this rate, 0.5–3, the pitch kept (a time-domain stretch, for speech); [ and ] change it while playing.")
    var speed = PlayOptions.defaults.speed

    @Option(name: .customLong("pitch-algorithm"), help: "How --speed stretches: timeDomain (the pitch kept, made for speech; the default), spectral (the pitch kept, music's quality, more CPU) or varispeed (the pitch follows the rate).")
    var pitchAlgorithm = PlayOptions.defaults.pitchAlgorithm

    @Option(name: .customLong("trim-silence"), help: "Shorten pauses over 0.3 s to 0.3 s: spoken (podcasts and audiobooks: their genre, or .m4b), all, or off (the default). The words are untouched; times stay the file's.")
    var trimSilence = PlayOptions.defaults.trimSilence

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
                    crossfade: crossfade, speed: speed, pitchAlgorithm: pitchAlgorithm, trimSilence: trimSilence, resume: resume, shuffle: shuffle, repeat: self.repeat,
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
    var speed = 1.0
    var pitchAlgorithm = "timeDomain"
    var trimSilence = "off"
    var resume = false
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
    /// `--trim-silence`'s words.
    static let trimModes: [String: SilenceTrimMode] = ["off": .off, "spoken": .spoken, "all": .all]

    func validate() throws {
        guard (20...5000).contains(bufferMs) else { throw ValidationError("--buffer-ms must be 20…5000") }
        guard ["float32", "s16"].contains(format) else { throw ValidationError("--format must be float32 or s16") }
        guard (2...8).contains(channels) else { throw ValidationError("--channels must be 2…8") }
        guard ReplayGainMode(rawValue: replayGain) != nil else { throw ValidationError("--replay-gain must be off, track, album or auto") }
        guard preamp.isFinite, (-60...60).contains(preamp) else { throw ValidationError("--preamp must be -60…60 dB") }
        guard crossfade.isFinite, (0...3600).contains(crossfade) else { throw ValidationError("--crossfade must be 0…3600 seconds") }
        guard speed.isFinite, (0.5...3).contains(speed) else { throw ValidationError("--speed must be 0.5…3") }
        guard TimePitchAlgorithm(rawValue: pitchAlgorithm) != nil else {
            throw ValidationError("--pitch-algorithm must be timeDomain, spectral or varispeed")
        }
        guard Self.trimModes[trimSilence] != nil else { throw ValidationError("--trim-silence must be off, spoken or all") }
        guard backgroundGrace >= 0 else { throw ValidationError("--background-grace must be ≥ 0") }
        guard SessionCategory(rawValue: category) != nil else {
            throw ValidationError("--category must be playback, soloAmbient or ambient")
        }
        if let r = self.repeat, RepeatMode(rawValue: r) == nil { throw ValidationError("--repeat must be all, one or off (got '\(r)')") }
        if let v = volume, !(0...100).contains(v) { throw ValidationError("--volume must be 0…100 (got \(v))") }
        if let s = start, parseTime(s) == nil { throw ValidationError("--start must be seconds, M:SS or H:MM:SS (got '\(s)')") }
        guard !files.isEmpty else { throw ValidationError("give at least one file, folder or playlist") }
    }

    /// Plays the files: each step below in turn, in the order of the run's side effects (what
    /// the terminal, the session bus, the signals and the device see).
    func run() throws {
        let (tty, color) = prepareProcess()
        let files = try inputFiles()
        let (playback, dispatcher) = try makePlayback()
        if resume { PlayBookmarks.load(bookmarksFile, into: playback.bookmarks) }
        queueItems(files, on: playback, dispatcher)
        let run = PlayRun(options: self, playback: playback, dispatcher: dispatcher, tty: tty, color: color)
        let desktop = run.publishOnDesktop()
        let keys = run.makeKeys()
        run.announceItems(keys, desktop)
        run.reportFailuresAndTheEnd()
        let jobs = run.followJobControl()
        let signals = run.handleSignals(jobs)
        let reader = run.startKeys(keys, jobs)
        run.startPlaying(jobs)
        run.drawStatusLine(keys, jobs)
        run.shutDown(reader: reader, mpris: desktop.mpris, signals: signals, jobs: jobs)
        try run.exitStatus()
    }

    /// The process, before any thread starts: two malloc arenas, the log's level; and whether
    /// standard output is a terminal (`tty`), and one in colour.
    private func prepareProcess() -> (tty: Bool, color: Bool) {
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
        return (tty, color)
    }

    /// What to play: the arguments expanded (what was left out said on stderr). Exit status 1
    /// when nothing is left.
    private func inputFiles() throws -> [String] {
        let inputs = PlayInputs.expand(files) {
            String(decoding: readToEnd(STDIN_FILENO), as: UTF8.self)
        }
        for note in inputs.notes { Terminal.error("backline: \(note)", tty: false) }
        guard !inputs.files.isEmpty else {
            Terminal.error("backline: nothing to play", tty: false)
            throw ExitCode(1)
        }
        return inputs.files
    }

    /// The playback façade on the device and settings asked for, and the dispatcher every
    /// command goes through.
    private func makePlayback() throws -> (Playback, CommandDispatcher) {
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
        playback.queue.pitchAlgorithm = TimePitchAlgorithm(rawValue: pitchAlgorithm) ?? .timeDomain
        if speed != 1 { playback.speed = speed }
        playback.silenceTrimming = Self.trimModes[trimSilence] ?? .off
        return (playback, CommandDispatcher(playback: playback, version: Backline.version))
    }

    /// Queues `files`, then sets the repeat mode, shuffle and volume asked for (typed commands
    /// through the dispatcher, as the keys run them).
    private func queueItems(_ files: [String], on playback: Playback, _ dispatcher: CommandDispatcher) {
        playback.queue.add(files)
        if let r = self.repeat, let mode = RepeatMode(rawValue: r) { _ = dispatcher.execute(RepeatCommand(mode: mode)) }
        if shuffle { _ = dispatcher.execute(ShuffleCommand(on: true)) }
        if let v = volume { _ = dispatcher.execute(VolumeCommand(change: .set(Double(v)))) }
    }

    /// Where `--resume` keeps its bookmarks.
    var bookmarksFile: String { PlayBookmarks.path(ProcessInfo.processInfo.environment) }

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

    /// A scale in dB with one decimal: `-6.0 dB`.
    static func decibels(_ scale: Float) -> String {
        guard scale > 0, scale.isFinite else { return "-inf dB" }
        let t = Int((200 * log10(Double(scale))).rounded())
        return "\(t < 0 ? "-" : "+")\(t.magnitude / 10).\(t.magnitude % 10) dB"
    }

    /// `Title — Artist`, the title alone, or the file name.
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
            case "shuffle", "no-keys", "verbose", "notify", "no-mpris", "resume":
                guard inline == nil else { return nil }
                switch name {
                case "shuffle": shuffle = true
                case "resume": resume = true
                case "no-keys": noKeys = true
                case "verbose": verbose = true
                case "notify": notify = true
                default: noMPRIS = true
                }
            case "device", "format", "repeat", "start", "category", "replay-gain", "pitch-algorithm", "trim-silence":
                guard let v = value(inline) else { return nil }
                switch name {
                case "pitch-algorithm": pitchAlgorithm = v
                case "trim-silence": trimSilence = v
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
            case "background-grace", "preamp", "crossfade", "speed":
                guard let v = value(inline).flatMap({ Double($0) }) else { return nil }
                switch name {
                case "preamp": preamp = v
                case "crossfade": crossfade = v
                case "speed": speed = v
                default: backgroundGrace = v
                }
            default:
                return nil  // --help, --version, an unknown option
            }
        }
    }
}
