import BacklineSchema
import MediaCore
import PlayQueue
import Platform
import Player

// Transport: play, pause, toggle, stop, next, previous, seek, skip, chapter, rate.

/// Plays (resumes when paused; from the current item's start when stopped), or plays `item`.
public struct PlayCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .play, .transport)
    public var item: Int?
    /// The item at this queue position instead (MPD's `play POS`), found when it runs.
    public var position: Int?
    /// Resume when paused, and do nothing otherwise (MPD's `pause 0`).
    public var resumeOnly = false
    public init(item: Int?) { self.item = item }
    public init(position: Int) { (item, self.position) = (nil, position) }
    public init(resumeOnly: Bool) { (item, self.resumeOnly) = (nil, resumeOnly) }
    public init(_ a: Arguments) { item = a.integer("item") }
    public var arguments: Arguments { Arguments(item.map { ["item": .integer($0)] } ?? [:]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let q = x.playback.queue
        if resumeOnly, q.playbackState != .paused { return .state(q.playbackState) }
        let id = try position.map { p throws(CommandError) in try x.playback.id(atPosition: p) } ?? item
        try x.playback.requireOutput()
        do throws(PlayQueueError) {
            if let id { try q.play(id: id) } else { try q.play() }
        } catch { throw CommandError(error) }
        return .state(q.playbackState)
    }
}

public struct PauseCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .pause, .transport)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply {
        x.playback.queue.pause()
        return .state(x.playback.queue.playbackState)
    }
}

public struct ToggleCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .toggle, .transport)
    /// Whether it starts playing when stopped (MPD's `pause` does not).
    public var startsWhenStopped = true
    public init() {}
    public init(startsWhenStopped: Bool) { self.startsWhenStopped = startsWhenStopped }
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        if !startsWhenStopped, x.playback.queue.playbackState == .stopped { return .state(.stopped) }
        try x.playback.requireOutput()
        do throws(PlayQueueError) { try x.playback.queue.toggle() } catch { throw CommandError(error) }
        return .state(x.playback.queue.playbackState)
    }
}

public struct StopCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .stop, .transport)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply {
        x.playback.queue.stop()
        return .state(x.playback.queue.playbackState)
    }
}

public struct NextCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .next, .transport)
    /// Refuse while stopped (`not-playing`), as MPD's `next` does.
    public var requiresPlayback = false
    public init() {}
    public init(requiresPlayback: Bool) { self.requiresPlayback = requiresPlayback }
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        try x.playback.requirePlayback(requiresPlayback)
        do throws(PlayQueueError) { try x.playback.queue.next() } catch { throw CommandError(error) }
        return .current(x.playback.currentItem)
    }
}

public struct PreviousCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .previous, .transport)
    /// Refuse while stopped (`not-playing`), as MPD's `previous` does.
    public var requiresPlayback = false
    public init() {}
    public init(requiresPlayback: Bool) { self.requiresPlayback = requiresPlayback }
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        try x.playback.requirePlayback(requiresPlayback)
        do throws(PlayQueueError) { try x.playback.queue.previous() } catch { throw CommandError(error) }
        return .current(x.playback.currentItem)
    }
}

/// Seeks the current item to a position or by an offset; clamped to the item (a later time is
/// its end: it ends, and the next one plays).
public struct SeekCommand: ControlCommand {
    public enum Target: Sendable, Equatable {
        case position(Double)
        case offset(Double)
    }
    public static let descriptor = CommandDescriptor(Self.self, .seek, .transport)
    public var target: Target
    /// Another item to seek in (MPD's `seek`/`seekid`): it becomes current, paused when the
    /// queue was paused, playing otherwise.
    public var item: Int?
    /// The item at this queue position instead (MPD's `seek POS TIME`), found when it runs.
    public var position: Int?
    /// Refuse while stopped (`not-playing`), as MPD's `seekcur` does.
    public var requiresPlayback = false
    public init(target: Target, item: Int? = nil, requiresPlayback: Bool = false) {
        (self.target, self.item, self.requiresPlayback) = (target, item, requiresPlayback)
    }
    public init(target: Target, position: Int) { (self.target, self.position) = (target, position) }
    public init(_ a: Arguments) throws(CommandError) {
        switch (a.number("position"), a.number("offset")) {
        case (let p?, nil): target = .position(p)
        case (nil, let o?): target = .offset(o)
        default: throw .badArgument("seek: give \"position\" or \"offset\" (seconds)")
        }
        item = a.integer("item")
    }
    public var arguments: Arguments {
        var a: [String: ArgumentValue]
        switch target {
        case .position(let p): a = ["position": .number(p)]
        case .offset(let o): a = ["offset": .number(o)]
        }
        if let item { a["item"] = .integer(item) }
        return Arguments(a)
    }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        try x.playback.requirePlayback(requiresPlayback)
        let q = x.playback.queue
        let item = try position.map { p throws(CommandError) in try x.playback.id(atPosition: p) } ?? item
        if let item, item != q.current?.id || q.playbackState == .stopped {
            do throws(PlayQueueError) { try q.play(id: item, keepingPause: true) } catch { throw CommandError(error) }
        }
        let t: Double
        switch target {
        case .position(let p): t = p
        case .offset(let o): t = q.elapsed + o
        }
        guard t.isFinite else { throw .badArgument("seek: not a number") }
        // The player knows the length once the item is open; until then the tag cache does.
        let p = x.playback
        if let current = p.player.currentItem, current.isLive {
            throw .unsupported("seek: a live stream cannot seek (\(current.path))")
        }
        let length = p.player.currentItem?.duration ?? p.queue.current.flatMap { p.tags.lookup($0.path)?.duration }
        let clamped = min(max(0, t), length ?? .infinity)
        do throws(PlayQueueError) { try q.seek(to: clamped) } catch { throw CommandError(error) }
        return .position(clamped)
    }
}

/// Skips forward (positive) or backward (negative) within the current item.
public struct SkipCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .skip, .transport)
    /// ± seconds; nil: by the playback's skip interval (``back`` says which).
    public var seconds: Double?
    /// Without ``seconds``: back by the backward interval (else forward by the forward one).
    public var back: Bool
    public init(seconds: Double) { (self.seconds, back) = (seconds, seconds < 0) }
    /// By the playback's skip interval: forward, or `back`.
    public init(back: Bool) { (seconds, self.back) = (nil, back) }
    public init(_ a: Arguments) throws(CommandError) {
        seconds = a.number("seconds")
        back = a.bool("back") ?? false
        if let s = seconds, !(s != 0 && s.isFinite) { throw .badArgument("skip: \"seconds\" must be non-zero") }
    }
    public var arguments: Arguments {
        Arguments(seconds.map { ["seconds": .number($0)] } ?? (back ? ["back": .boolean(true)] : [:]))
    }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let q = x.playback.queue
        let by = seconds ?? (back ? -x.playback.skipIntervals.backward : x.playback.skipIntervals.forward)
        do throws(PlayQueueError) { try q.seek(to: max(0, q.elapsed + by)) } catch { throw CommandError(error) }
        return .position(q.elapsed)
    }
}

/// The current item's chapters; or a move to the next, the previous or a given chapter's start
/// (a seek there: heard from its first sample).
public struct ChapterCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .chapter, .transport)
    /// Where to go: nil lists.
    public enum Target: Sendable, Equatable {
        case next, previous
        case index(Int)
    }
    public var target: Target?
    public init(_ target: Target?) { self.target = target }
    public init(_ a: Arguments) throws(CommandError) {
        switch (a.string("to"), a.integer("index")) {
        case (nil, nil): target = nil
        case ("next"?, nil): target = .next
        case ("previous"?, nil): target = .previous
        case (nil, let i?): target = .index(i)
        default: throw .badArgument("chapter: give \"to\" (next or previous) or \"index\", not both")
        }
    }
    public var arguments: Arguments {
        switch target {
        case nil: Arguments()
        case .next?: Arguments(["to": .string("next")])
        case .previous?: Arguments(["to": .string("previous")])
        case .index(let i)?: Arguments(["index": .integer(i)])
        }
    }
    /// How far into a chapter `previous` goes back to its start rather than to the chapter
    /// before (as ``PreviousCommand`` does with items).
    public static let restartThreshold = 3.0

    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let p = x.playback
        let chapters = p.currentChapters
        let elapsed = p.queue.elapsed
        let heard = Chapter.index(at: elapsed, in: chapters)
        guard let target else { return .chapters(chapters, current: heard, position: nil) }
        guard let entry = p.queue.current else { throw .emptyQueue("chapter: nothing is current") }
        guard !chapters.isEmpty else { throw .unsupported("chapter: \(Path.lastComponent(entry.path)) has no chapters") }
        let to: Int
        switch target {
        case .next:
            to = heard.map { $0 + 1 } ?? 0
            guard to < chapters.count else { throw .badArgument("chapter: the last chapter is playing (\(chapters.count) of \(chapters.count))") }
        case .previous:
            guard let h = heard else { to = 0; break }
            to = elapsed - chapters[h].start > Self.restartThreshold ? h : max(0, h - 1)
        case .index(let i):
            guard chapters.indices.contains(i) else {
                throw .badArgument("chapter: no chapter \(i) (the item has \(chapters.count), 0 to \(chapters.count - 1))")
            }
            to = i
        }
        _ = try SeekCommand(target: .position(chapters[to].start)).run(x)
        return .chapters(chapters, current: to, position: chapters[to].start)
    }
}

/// The playback rate, as AVPlayer's `rate`: 0 pauses; 0.5…3 sets the speed (saved) and plays at it.
public struct RateCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .rate, .transport)
    public var rate: Double
    public init(rate: Double) { self.rate = rate }
    public init(_ a: Arguments) throws(CommandError) {
        guard let r = a.number("rate") else { throw .badArgument("rate: \"rate\" is required") }
        rate = r
    }
    public var arguments: Arguments { Arguments(["rate": .number(rate)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let player = x.playback.player
        guard rate == 0 || QueuePlayer.supportedRates.contains(Float(rate)) else {
            throw .badArgument("rate \(rate) is not supported: 0 pauses, 0.5 to 3 plays at that rate")
        }
        if rate == 0 {
            x.playback.queue.pause()
        } else {
            // The speed from now on (saved); playing, heard at once; paused, it plays.
            x.playback.speed = rate
            if player.rate == 0 {
                do throws(PlayQueueError) { try x.playback.queue.play() } catch { throw CommandError(error) }
            }
        }
        return .rate(Double(player.rate))
    }
}
