import BacklineSchema
import MediaCore
import PlayQueue

// Options: repeat, shuffle, single.

public struct RepeatCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .`repeat`, .options)
    /// nil: read it.
    public var mode: RepeatMode?
    /// MPD's `repeat` flag, which with its `single` flag maps onto repeat one/all and stop
    /// after each item: decided from the modes as they are when the command runs.
    public var mpdFlag: Bool?
    public init(mode: RepeatMode?) { self.mode = mode }
    public init(mpdFlag: Bool) { (mode, self.mpdFlag) = (nil, mpdFlag) }
    public init(_ a: Arguments) throws(CommandError) {
        guard let m = a.string("mode") else { mode = nil; return }
        guard let mode = RepeatMode(rawValue: m) else { throw .badArgument("repeat: mode is off, one or all") }
        self.mode = mode
    }
    public var arguments: Arguments { Arguments(mode.map { ["mode": .string($0.rawValue)] } ?? [:]) }
    public func run(_ x: CommandContext) -> Reply {
        let q = x.playback.queue
        if let mode { q.setRepeat(mode) }
        if let on = mpdFlag {
            let single = q.repeatMode == .one || q.stopAfterEach
            if on {
                if q.stopAfterCurrent { q.setStopAfterCurrent(false, each: false) }
                q.setRepeat(single ? .one : .all)
            } else {
                q.setRepeat(.off)
                if single { q.setStopAfterCurrent(true, each: true) }  // single without repeat: stop after each
            }
        }
        return .repeatMode(q.repeatMode)
    }
}

public struct ShuffleCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .shuffle, .options)
    /// nil: toggle.
    public var on: Bool?
    public init(on: Bool?) { self.on = on }
    public init(_ a: Arguments) { on = a.bool("on") }
    public var arguments: Arguments { Arguments(on.map { ["on": .boolean($0)] } ?? [:]) }
    public func run(_ x: CommandContext) -> Reply {
        let q = x.playback.queue
        q.setShuffle(on ?? !q.shuffle)
        return .shuffle(q.shuffle)
    }
}

public struct SingleCommand: ControlCommand {
    /// MPD's `single` values, mapped onto repeat one and stop after the current item.
    public enum MPDMode: Sendable { case on, off, oneshot }
    public static let descriptor = CommandDescriptor(Self.self, .single, .options)
    /// nil: toggle.
    public var on: Bool?
    /// Stay on after taking effect.
    public var each: Bool
    /// MPD's `single`: decided from the repeat mode as it is when the command runs.
    public var mpdMode: MPDMode?
    public init(on: Bool?, each: Bool = false) { (self.on, self.each) = (on, each) }
    public init(mpdMode: MPDMode) { (on, each, self.mpdMode) = (nil, false, mpdMode) }
    public init(_ a: Arguments) { (on, each) = (a.bool("on"), a.bool("each") ?? false) }
    public var arguments: Arguments {
        var a: [String: ArgumentValue] = on.map { ["on": .boolean($0)] } ?? [:]
        if each { a["each"] = .boolean(true) }
        return Arguments(a)
    }
    public func run(_ x: CommandContext) -> Reply {
        let q = x.playback.queue
        if let mpdMode {
            switch mpdMode {
            case .on:
                if q.repeatMode != .off { q.setRepeat(.one) } else { q.setStopAfterCurrent(true, each: true) }
            case .oneshot, .off:
                if q.repeatMode == .one { q.setRepeat(.all) }
                q.setStopAfterCurrent(mpdMode == .oneshot, each: false)
            }
            return .stopAfterCurrent(q.stopAfterCurrent, each: q.stopAfterEach)
        }
        let value = on ?? !q.stopAfterCurrent
        q.setStopAfterCurrent(value, each: each)
        return .stopAfterCurrent(value, each: value && each)
    }
}

/// ReplayGain: the mode, and optionally the preamps and limiting. Reads them without arguments.
public struct ReplayGainCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .replayGain, .options)
    public var mode: ReplayGainMode?
    public var preamp: Double?
    public var missingPreamp: Double?
    public var limit: Bool?
    public init(mode: ReplayGainMode?, preamp: Double? = nil, missingPreamp: Double? = nil, limit: Bool? = nil) {
        (self.mode, self.preamp, self.missingPreamp, self.limit) = (mode, preamp, missingPreamp, limit)
    }
    public init(_ a: Arguments) throws(CommandError) {
        if let m = a.string("mode") {
            guard let mode = ReplayGainMode(rawValue: m) else { throw .badArgument("replay-gain: mode is off, track, album or auto") }
            self.mode = mode
        }
        for (name, value) in [("preamp", a.number("preamp")), ("missingPreamp", a.number("missingPreamp"))] {
            if let v = value, !(-60...60).contains(v) { throw .badArgument("replay-gain: \(name) is -60…60 dB") }
        }
        preamp = a.number("preamp")
        missingPreamp = a.number("missingPreamp")
        limit = a.bool("limit")
    }
    public var arguments: Arguments {
        var m: [String: ArgumentValue] = [:]
        if let mode { m["mode"] = .string(mode.rawValue) }
        if let preamp { m["preamp"] = .number(preamp) }
        if let missingPreamp { m["missingPreamp"] = .number(missingPreamp) }
        if let limit { m["limit"] = .boolean(limit) }
        return Arguments(m)
    }
    public func run(_ x: CommandContext) -> Reply {
        var s = x.playback.replayGain
        if let mode { s.mode = mode }
        if let preamp { s.preamp = preamp }
        if let missingPreamp { s.missingPreamp = missingPreamp }
        if let limit { s.limit = limit }
        if s != x.playback.replayGain { x.playback.replayGain = s }
        return .replayGain(s)
    }
}

/// Crossfade: seconds the end of an item and the start of the next overlap (0: off). Reads it
/// without `seconds`.
public struct CrossfadeCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .crossfade, .options)
    /// nil: read it.
    public var seconds: Double?
    public init(seconds: Double?) { self.seconds = seconds }
    public init(_ a: Arguments) throws(CommandError) {
        if let s = a.number("seconds"), !(s.isFinite && (0...3600).contains(s)) {
            throw .badArgument("crossfade: seconds is 0…3600")
        }
        seconds = a.number("seconds")
    }
    public var arguments: Arguments { Arguments(seconds.map { ["seconds": .number($0)] } ?? [:]) }
    public func run(_ x: CommandContext) -> Reply {
        if let seconds, seconds != x.playback.crossfade { x.playback.crossfade = seconds }
        return .crossfade(x.playback.crossfade)
    }
}

/// The rate items play at (0.5…3, the pitch kept by each item's stretch): playing, heard at
/// once; paused, from the next play. Reads it without `speed`.
public struct SpeedCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .speed, .options)
    /// nil: read it.
    public var speed: Double?
    public init(speed: Double?) { self.speed = speed }
    public init(_ a: Arguments) throws(CommandError) {
        if let s = a.number("speed"), !(s.isFinite && (0.5...3).contains(s)) {
            throw .badArgument("speed: speed is 0.5…3")
        }
        speed = a.number("speed")
    }
    public var arguments: Arguments { Arguments(speed.map { ["speed": .number($0)] } ?? [:]) }
    public func run(_ x: CommandContext) -> Reply {
        if let speed, speed != x.playback.speed { x.playback.speed = speed }
        return .speed(x.playback.speed)
    }
}

/// Consume mode: played entries leave the queue (`oneshot`: one, then off). Reads it without `mode`.
public struct ConsumeCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .consume, .options)
    /// nil: read it.
    public var mode: ConsumeMode?
    public init(mode: ConsumeMode?) { self.mode = mode }
    public init(_ a: Arguments) throws(CommandError) {
        guard let m = a.string("mode") else { mode = nil; return }
        guard let mode = ConsumeMode(rawValue: m) else { throw .badArgument("consume: mode is off, on or oneshot") }
        self.mode = mode
    }
    public var arguments: Arguments { Arguments(mode.map { ["mode": .string($0.rawValue)] } ?? [:]) }
    public func run(_ x: CommandContext) -> Reply {
        if let mode { x.playback.queue.setConsume(mode) }
        return .consume(x.playback.queue.consume)
    }
}
