import AudioEngine
import Control
import CtlCore
import FoundationEssentials
import MediaCore
import Platform
import PlayQueue
import Player
import Synchronization
import Locking

/// What `backline play`'s keys do: each key is a typed command run through the dispatcher (the
/// same commands the daemon's clients and the desktop's media controls send), and the status
/// line is read from the same play queue.
final class PlayKeys: Sendable {
    let playback: Playback
    let dispatcher: CommandDispatcher
    let device: String
    let tty: Bool
    private let redraw: @Sendable () -> Void
    private let quit: @Sendable () -> Void
    /// The item heard now, as the engine opened it (tags, format, length).
    let current = Lock<ItemInfo?>(nil)

    /// How far the arrow keys seek, and how much a volume key changes, as mpv and mplayer do.
    static let shortSeek = 5.0, longSeek = 30.0, volumeStep = 5.0
    /// How much `[` and `]` change the speed (mpv's keys; steps of a tenth, from 0.5 to 3).
    static let speedStep = 0.1

    /// The keys, as `?` shows them.
    static let help = """
        keys: space/p pause · n/> next · b/< previous · ←/→ seek 5 s · ↓/↑ seek 30 s · 9/0 or -/+ volume · m mute
              j/l skip −15 / +30 s · [/] speed (0.5–3, the pitch kept) · backspace speed 1
              PgUp/@ next chapter · PgDn/! previous chapter
              r repeat (off, all, one) · s shuffle
              i about this item · ? keys · q quit
        """

    init(playback: Playback, dispatcher: CommandDispatcher, device: String, tty: Bool,
         redraw: @escaping @Sendable () -> Void, quit: @escaping @Sendable () -> Void) {
        self.playback = playback
        self.dispatcher = dispatcher
        self.device = device
        self.tty = tty
        self.redraw = redraw
        self.quit = quit
    }

    /// Runs what `key` asks for; unknown keys do nothing.
    func handle(_ key: Key) {
        let queue = playback.queue
        switch key {
        case .character(" "), .character("p"): run(ToggleCommand())
        case .character("n"), .character(">"): run(NextCommand())
        case .character("b"), .character("<"): run(PreviousCommand())
        case .left: run(SeekCommand(target: .offset(-Self.shortSeek)))
        case .right: run(SeekCommand(target: .offset(Self.shortSeek)))
        case .down: run(SeekCommand(target: .offset(-Self.longSeek)))
        case .up: run(SeekCommand(target: .offset(Self.longSeek)))
        case .character("9"), .character("-"), .character("_"): volume(by: -Self.volumeStep)
        case .character("0"), .character("+"), .character("="): volume(by: Self.volumeStep)
        case .character("m"): run(MuteCommand(on: nil))
        case .character("j"): run(SkipCommand(back: true))
        case .character("l"): run(SkipCommand(back: false))
        case .character("["), .character("]"):
            let step = key == .character("]") ? Self.speedStep : -Self.speedStep
            let target = ((playback.speed + step) * 10).rounded() / 10
            run(SpeedCommand(speed: min(3, max(0.5, target))))
        case .backspace: run(SpeedCommand(speed: 1))
        case .pageUp, .character("@"): run(ChapterCommand(.next))
        case .pageDown, .character("!"): run(ChapterCommand(.previous))
        case .character("r"):
            let next: RepeatMode = switch queue.repeatMode {
            case .off: .all
            case .all: .one
            case .one: .off
            }
            run(RepeatCommand(mode: next))
        case .character("s"): run(ShuffleCommand(on: nil))
        case .character("i"): for line in info() { say(line) }
        case .character("?"), .character("h"): for line in Self.help.split(separator: "\n") { say(String(line)) }
        case .character("q"), .character("Q"): quit()
        default: return
        }
        redraw()
    }

    /// The volume `step` percent up or down, kept within 0–100 (the step lands on a multiple of it).
    private func volume(by step: Double) {
        let now = Double(playback.player.volume) * 100
        let size = abs(step)
        let target = step > 0 ? ((now / size + 1e-6).rounded(.down) + 1) * size : ((now / size - 1e-6).rounded(.up) - 1) * size
        run(VolumeCommand(change: .set(min(100, max(0, target)))))
    }

    private func run(_ command: any ControlCommand) {
        switch dispatcher.execute(command) {
        case .failure(let e): Terminal.error("backline: \(type(of: command).descriptor.name): \(e.message)", tty: tty)
        case .success(let reply):
            // Without a status line, each change is a line of its own.
            if !tty, let text = Self.describe(reply) { Terminal.line(text, tty: false) }
        }
    }

    private func say(_ line: String) { Terminal.line(line, tty: tty) }

    /// A reply as a line, for output that is not a terminal.
    static func describe(_ reply: Reply) -> String? {
        switch reply {
        case .state(let s): return s == .playing ? "playing" : s == .paused ? "paused" : "stopped"
        case .volume(let v): return v.muted ? "muted (volume \(Int((v.volume * 100).rounded()))%)" : "volume \(Int((v.volume * 100).rounded()))%"
        case .repeatMode(let m): return "repeat \(m.rawValue)"
        case .shuffle(let on): return "shuffle \(on ? "on" : "off")"
        case .position(let t): return "at \(formatTime(t))"
        case .speed(let r): return "speed \(CtlText.rateText(r))"
        case .chapters(let list, let current?, _?):
            return "chapter \(current + 1)/\(list.count)" + (list[current].title.map { ": \($0)" } ?? "")
        default: return nil
        }
    }

    /// The status line's contents now.
    func status() -> PlayStatus {
        let q = playback.queue.status()
        let info = current.withLock { $0 }
        let name = info.map(PlayOptions.name) ?? q.current.map { Path.lastComponent($0.entry.path) } ?? ""
        let p = playback.player
        return PlayStatus(
            state: q.state, name: name, position: q.current.map { ($0.index + 1, q.count) },
            elapsed: q.elapsed, duration: info?.duration ?? p.currentItem?.duration,
            volume: Int((p.volume * 100).rounded()), muted: p.isMuted, repeatMode: q.repeatMode, shuffle: q.shuffle)
    }

    /// `i`: the item's file, tags and format, and the device's settings.
    func info() -> [String] {
        guard let info = current.withLock({ $0 }) else { return ["(nothing is playing)"] }
        let m = info.metadata
        var lines = ["  file: \(info.path)"]
        let tags: [(String, String?)] = [
            ("title", m.title), ("artist", m.artist), ("album", m.album), ("album artist", m.albumArtist),
            ("track", m.trackNumber.map { n in m.trackCount.map { "\(n)/\($0)" } ?? "\(n)" }),
            ("disc", m.discNumber.map { n in m.discCount.map { "\(n)/\($0)" } ?? "\(n)" }),
            ("genre", m.genre), ("year", m.year),
        ]
        for (k, v) in tags { if let v, !v.isEmpty { lines.append("  \(k): \(v)") } }
        if let art = m.artwork { lines.append("  cover: \(art.mimeType), \(art.data.count) bytes") }
        if !m.chapters.isEmpty {
            let at = Chapter.index(at: playback.queue.elapsed, in: m.chapters)
            let heard = at.map { i in "; now \(i + 1). \(m.chapters[i].title ?? "(untitled)") from \(formatTime(m.chapters[i].start))" } ?? ""
            lines.append("  chapters: \(m.chapters.count)\(heard)")
        }
        let audio = info.audio.map(String.init(describing:)) ?? "\(info.format)"
        lines.append("  audio: \(audio), \(formatTime(info.duration)) (\(info.durationFrames) frames)")
        let rg = playback.replayGain
        if rg.mode != .off {
            lines.append("  replay gain: \(rg.mode.rawValue), this item \(PlayOptions.decibels(info.replayGainScale))")
        }
        if playback.crossfade > 0 { lines.append("  crossfade: \(CtlText.seconds(playback.crossfade)) (not within an album in order)") }
        let engine = playback.player.engine
        if let c = engine.deviceConfiguration {
            let rt = engine.isRealtime.map { $0 ? "real-time" : "normal priority" } ?? "priority unknown"
            lines.append("  device: \(device): \(c); \(rt); underruns \(engine.underrunCount)")
        } else {
            lines.append("  device: \(device) (not open)")
        }
        return lines
    }
}
