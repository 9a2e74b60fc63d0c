import BacklineSchema
// The connection's own commands: subscribe, unsubscribe, auth.

/// Receives events on this connection (all kinds, or those listed).
public struct SubscribeCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .subscribe, .connection, wakes: false)
    /// nil: every kind.
    public var kinds: [String]?
    public init(kinds: [String]?) { self.kinds = kinds }
    public init(_ a: Arguments) throws(CommandError) {
        kinds = a.strings("events")
        if let bad = kinds?.first(where: { !ControlEvent.kinds.contains($0) }) {
            throw .badArgument("subscribe: unknown event kind \"\(bad)\" (kinds: \(ControlEvent.kinds.joined(separator: ", ")))")
        }
    }
    public var arguments: Arguments { Arguments(kinds.map { ["events": .strings($0)] } ?? [:]) }
    public func run(_ x: CommandContext) -> Reply {
        x.connection.subscribe(kinds: kinds.map(Set.init))
        return .subscribed(kinds.map { Array(Set($0)).sorted() } ?? ControlEvent.kinds)
    }
}

public struct UnsubscribeCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .unsubscribe, .connection, wakes: false)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply {
        x.connection.unsubscribe()
        return .none
    }
}

/// Presents the token (TCP clients, first).
public struct AuthCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .auth, .connection, wakes: false)
    public var token: String
    public init(token: String) { self.token = token }
    public init(_ a: Arguments) throws(CommandError) {
        guard let t = a.string("token") else { throw .badArgument("auth: \"token\" is required") }
        token = t
    }
    public var arguments: Arguments { Arguments(["token": .string(token)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        guard x.dispatcher.checkToken?(token) == true else { throw .unauthorized("wrong token") }
        x.connection.authenticated = true
        return .none
    }
}

/// Subscribes this connection to a client-to-client channel (MPD's `subscribe`).
public struct ChannelSubscribeCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .channelSubscribe, .connection, wakes: false)
    public var channel: String
    public init(channel: String) { self.channel = channel }
    public init(_ a: Arguments) throws(CommandError) {
        guard let c = a.string("channel") else { throw .badArgument("channel-subscribe: \"channel\" is required") }
        channel = c
    }
    public var arguments: Arguments { Arguments(["channel": .string(channel)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        try x.dispatcher.messages.subscribe(x.connection.id, to: channel)
        return .channels(x.dispatcher.messages.channels())
    }
}

/// Leaves a client-to-client channel.
public struct ChannelUnsubscribeCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .channelUnsubscribe, .connection, wakes: false)
    public var channel: String
    public init(channel: String) { self.channel = channel }
    public init(_ a: Arguments) throws(CommandError) {
        guard let c = a.string("channel") else { throw .badArgument("channel-unsubscribe: \"channel\" is required") }
        channel = c
    }
    public var arguments: Arguments { Arguments(["channel": .string(channel)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        try x.dispatcher.messages.unsubscribe(x.connection.id, from: channel)
        return .channels(x.dispatcher.messages.channels())
    }
}

/// The client-to-client channels someone is subscribed to (MPD's `channels`).
public struct ChannelsCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .channels, .connection, wakes: false)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply { .channels(x.dispatcher.messages.channels()) }
}

/// Sends a message to a client-to-client channel's subscribers (MPD's `sendmessage`).
public struct ChannelSendCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .channelSend, .connection, wakes: false)
    public var channel: String
    public var message: String
    public init(channel: String, message: String) { (self.channel, self.message) = (channel, message) }
    public init(_ a: Arguments) throws(CommandError) {
        guard let c = a.string("channel"), let m = a.string("message") else {
            throw .badArgument("channel-send: \"channel\" and \"message\" are required")
        }
        (channel, message) = (c, m)
    }
    public var arguments: Arguments { Arguments(["channel": .string(channel), "message": .string(message)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        try x.dispatcher.messages.send(message, to: channel)
        return .none
    }
}

/// This connection's unread client-to-client messages; they are read now (MPD's `readmessages`).
public struct ChannelReadCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .channelRead, .connection, wakes: false)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply { .messages(x.dispatcher.messages.read(x.connection.id)) }
}
