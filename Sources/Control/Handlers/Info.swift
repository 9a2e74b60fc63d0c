// Info: status, now-playing, ping, version, help.

public struct StatusCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(
        Self.self, "status", .info,
        "State, current item, elapsed (ms), duration, volume, queue, modes, session, app state, device, underruns, sleep timer.")
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply { .status(x.playback.status) }
}

public struct NowPlayingCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(
        Self.self, "now-playing", .info, "The now-playing info (MPNowPlayingInfoCenter keys), elapsed extrapolated now.")
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply { .nowPlaying(x.playback.nowPlayingSnapshot) }
}

public struct PingCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, "ping", .info, "Answers pong.", wakes: false)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply { .pong }
}

public struct VersionCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, "version", .info, "Daemon and protocol versions.", wakes: false)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply { .version(x.dispatcher.version, protocol: 1) }
}

public struct HelpCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, "help", .info, "This list.", wakes: false)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply { .help(CommandTable.all.map(\.name)) }
}
