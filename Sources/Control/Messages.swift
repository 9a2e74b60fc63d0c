import Synchronization
import Locking

/// The client-to-client channels (MPD's `subscribe`, `channels`, `sendmessage`,
/// `readmessages`): clients subscribe to named channels and send each other text through the
/// daemon (scrobblers, lyrics fetchers and remotes use them to talk).
///
/// As mpd: a channel name is `[A-Za-z0-9_.:-]+`; a client holds at most
/// ``maximumSubscriptions`` channels and ``maximumQueued`` unread messages (a full queue drops
/// what it cannot take, and that delivery does not count); a channel exists while someone is
/// subscribed to it. Connections register to be told of changes: every one hears
/// ``Subsystems/subscription`` when anyone subscribes or unsubscribes, a receiver hears
/// ``Subsystems/message`` when its first unread message arrives.
public final class ClientMessages: Sendable {
    /// Channels one client may hold at once (mpd's `CLIENT_MAX_SUBSCRIPTIONS`).
    public static let maximumSubscriptions = 16
    /// Unread messages one client may hold (mpd's `CLIENT_MAX_MESSAGES`).
    public static let maximumQueued = 64

    /// One message as a client reads it.
    public struct Message: Sendable, Equatable {
        public let channel: String
        public let text: String
    }

    private struct Client {
        var channels: Set<String> = []
        var unread: [Message] = []
        var notify: (@Sendable (Subsystems) -> Void)?
    }

    private let clients = Lock<[UInt64: Client]>([:])

    public init() {}

    /// Tells `client` of changes from now on (until ``remove(_:)``).
    public func register(_ client: UInt64, notify: @escaping @Sendable (Subsystems) -> Void) {
        clients.withLock { $0[client, default: Client()].notify = notify }
    }

    /// Forgets `client` (its connection closed): its subscriptions and unread messages.
    public func remove(_ client: UInt64) {
        let had = clients.withLock { $0.removeValue(forKey: client) }
        if let had, !had.channels.isEmpty { notifyAll(.subscription) }
    }

    /// Whether `name` may name a channel.
    public static func isValidChannel(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { b in
            (48...57).contains(b) || (65...90).contains(b) || (97...122).contains(b)
                || b == UInt8(ascii: "_") || b == UInt8(ascii: ".") || b == UInt8(ascii: ":") || b == UInt8(ascii: "-")
        }
    }

    public func subscribe(_ client: UInt64, to channel: String) throws(CommandError) {
        guard Self.isValidChannel(channel) else { throw .badArgument("invalid channel name") }
        try clients.withLock { (all: inout [UInt64: Client]) throws(CommandError) in
            var c = all[client] ?? Client()
            guard !c.channels.contains(channel) else { throw .exists("already subscribed to this channel") }
            guard c.channels.count < Self.maximumSubscriptions else { throw .tooLarge("subscription list is full") }
            c.channels.insert(channel)
            all[client] = c
        }
        notifyAll(.subscription)
    }

    public func unsubscribe(_ client: UInt64, from channel: String) throws(CommandError) {
        try clients.withLock { (all: inout [UInt64: Client]) throws(CommandError) in
            guard all[client]?.channels.remove(channel) != nil else { throw .notFound("not subscribed to this channel") }
        }
        notifyAll(.subscription)
    }

    /// Every channel someone is subscribed to, sorted.
    public func channels() -> [String] {
        clients.withLock { all in Set(all.values.flatMap(\.channels)).sorted() }
    }

    /// Sends `text` to every subscriber of `channel` (the sender too, when subscribed).
    /// Throws when nobody took it.
    public func send(_ text: String, to channel: String) throws(CommandError) {
        guard Self.isValidChannel(channel) else { throw .badArgument("invalid channel name") }
        let woken = clients.withLock { all -> [@Sendable (Subsystems) -> Void]? in
            var delivered = false
            var woken: [@Sendable (Subsystems) -> Void] = []
            for (id, c) in all where c.channels.contains(channel) && c.unread.count < Self.maximumQueued {
                delivered = true
                if c.unread.isEmpty, let n = c.notify { woken.append(n) }
                all[id]?.unread.append(Message(channel: channel, text: text))
            }
            return delivered ? woken : nil
        }
        guard let woken else { throw .notFound("nobody is subscribed to this channel") }
        for n in woken { n(.message) }
    }

    /// `client`'s unread messages, in arrival order; they are read now.
    public func read(_ client: UInt64) -> [Message] {
        clients.withLock { all in
            defer { all[client]?.unread = [] }
            return all[client]?.unread ?? []
        }
    }

    private func notifyAll(_ s: Subsystems) {
        for n in clients.withLock({ $0.values.compactMap(\.notify) }) { n(s) }
    }
}
