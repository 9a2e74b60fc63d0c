import BacklineWire
import Control
import Synchronization
import Locking

/// What the hub carries, typed: the command layer's events, and client-to-client messages
/// (delivered to one connection). Each protocol renders them (``JSONCodec/event(_:)`` for the
/// JSON socket and the WebSocket).
public enum HubEvent: Sendable, Equatable {
    case control(ControlEvent)
    /// A message on a channel the connection subscribed to.
    case message(channel: String, text: String)

    /// Its kind, as clients subscribe to it.
    public var kind: EventKind {
        switch self {
        case .control(let e): e.eventKind
        case .message: .message
        }
    }
}

/// An event with its place in the daemon's one sequence of events.
public struct PublishedEvent: Sendable, Equatable {
    /// Counts every event published (one sequence for every connection).
    public let seq: UInt64
    public let event: HubEvent
}

/// Fans daemon events out to the connections that subscribed, in one order for everyone: each
/// event gets the next sequence number and is handed to every matching subscriber's `send`
/// (which only enqueues) under one lock. Protocol-neutral: each subscriber's transport renders
/// and frames what it is handed.
public final class EventHub: Sendable {

    private struct Subscriber {
        var kinds: Set<String>?
        /// The partition the connection is in (it hears that partition's player and queue).
        var partition: PartitionChoice?
        var send: @Sendable (PublishedEvent) -> Void
        func wants(_ kind: EventKind) -> Bool { kinds?.contains(kind.rawValue) ?? true }
        func hears(_ partition: String?) -> Bool {
            guard let partition else { return true }
            return (self.partition?.value ?? Partitions.defaultName) == partition
        }
    }

    private struct State {
        var subscribers: [UInt64: Subscriber] = [:]
        var seq: UInt64 = 0
    }

    private let state = Lock(State())

    public init() {}

    /// Subscribes `client` to `kinds` (nil: all); replaces an earlier subscription of it. It
    /// hears the events of the partition `partition` names when each is published.
    public func subscribe(_ client: UInt64, kinds: Set<String>?, partition: PartitionChoice? = nil,
                          send: @escaping @Sendable (PublishedEvent) -> Void) {
        state.withLock { $0.subscribers[client] = Subscriber(kinds: kinds, partition: partition, send: send) }
    }

    public func unsubscribe(_ client: UInt64) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: client) }
    }

    /// Sends `event` to `client` alone, if it subscribed to its kind; whether it did.
    @discardableResult
    public func deliver(to client: UInt64, _ event: HubEvent) -> Bool {
        state.withLock { s in
            guard let w = s.subscribers[client], w.wants(event.kind) else { return false }
            s.seq += 1
            w.send(PublishedEvent(seq: s.seq, event: event))
            return true
        }
    }

    /// Whether `client` subscribed to `kind`.
    public func wants(_ client: UInt64, _ kind: EventKind) -> Bool {
        state.withLock { s in s.subscribers[client]?.wants(kind) ?? false }
    }

    /// Publishes `event` to the subscribers of its kind (of one partition's: to those in it).
    public func publish(_ event: HubEvent, partition: String? = nil) {
        state.withLock { s in
            s.seq += 1
            let published = PublishedEvent(seq: s.seq, event: event)
            for w in s.subscribers.values where w.wants(event.kind) && w.hears(partition) { w.send(published) }
        }
    }
}
