import BacklineSchema
import Player
// Mixer: volume and mute.

/// Sets the volume (percent, or a change in percent) or reads it.
public struct VolumeCommand: ControlCommand {
    public enum Change: Sendable, Equatable {
        case set(Double)
        case by(Double)
    }
    public static let descriptor = CommandDescriptor(Self.self, .volume, .mixer)
    /// nil: read it.
    public var change: Change?
    public init(change: Change?) { self.change = change }
    public init(_ a: Arguments) throws(CommandError) {
        switch (a.number("volume"), a.number("change")) {
        case (nil, nil): change = nil
        case (let v?, nil):
            guard v.isFinite else { throw .badArgument("volume: not a number") }
            change = .set(min(100, max(0, v)))  // as mpc: 150 is 100 (MPD's `setvol` checks its range first)
        case (nil, let d?):
            guard d.isFinite else { throw .badArgument("volume: not a number") }
            change = .by(d)
        default: throw .badArgument("volume: give \"volume\" or \"change\", not both")
        }
    }
    public var arguments: Arguments {
        switch change {
        case nil: Arguments()
        case .set(let v): Arguments(["volume": .number(v)])
        case .by(let d): Arguments(["change": .number(d)])
        }
    }
    public func run(_ x: CommandContext) -> Reply {
        let p = x.playback
        if let change {
            let percent: Double
            switch change {
            case .set(let v): percent = v
            case .by(let d): percent = Double(p.player.volume) * 100 + d
            }
            p.player.volume = Float(min(100, max(0, percent)) / 100)
            p.post(.volume(p.volumeState))
        }
        return .volume(p.volumeState)
    }
}

/// Mutes or unmutes (toggles without `on`); the volume is kept.
public struct MuteCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .mute, .mixer)
    /// nil: toggle.
    public var on: Bool?
    public init(on: Bool?) { self.on = on }
    public init(_ a: Arguments) { on = a.bool("on") }
    public var arguments: Arguments { Arguments(on.map { ["on": .boolean($0)] } ?? [:]) }
    public func run(_ x: CommandContext) -> Reply {
        let p = x.playback
        let was = p.player.isMuted
        p.player.isMuted = on ?? !was
        p.post(.volume(p.volumeState, muteChanged: p.player.isMuted != was))
        return .volume(p.volumeState)
    }
}
