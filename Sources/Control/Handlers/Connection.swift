// The connection's own commands: subscribe, unsubscribe, auth.

/// Receives events on this connection (all kinds, or those listed).
public struct SubscribeCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(
        Self.self, "subscribe", .connection, "Receive events on this connection (all kinds, or those listed).",
        [("events", .strings, "event kinds")], wakes: false)
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
    public static let descriptor = CommandDescriptor(Self.self, "unsubscribe", .connection, "Stop receiving events.", wakes: false)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply {
        x.connection.unsubscribe()
        return .none
    }
}

/// Presents the token (TCP clients, first).
public struct AuthCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(
        Self.self, "auth", .connection, "TCP clients: present the token first.", [("token", .string, "")],
        permission: .anyone, wakes: false)
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
