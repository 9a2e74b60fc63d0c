import BacklineSchema
// Info: status, now-playing, ping, version, help.

public struct StatusCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .status, .info)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply { .status(x.playback.status) }
}

public struct NowPlayingCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .nowPlaying, .info)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply { .nowPlaying(x.playback.nowPlayingSnapshot) }
}

public struct PingCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .ping, .info, wakes: false)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply { .pong }
}

public struct VersionCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .version, .info, wakes: false)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply { .version(x.dispatcher.version, protocol: 1) }
}

public struct HelpCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .help, .info, wakes: false)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply { .help(CommandTable.all.map(\.name)) }
}
