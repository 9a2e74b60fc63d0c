import Synchronization

/// Fans daemon events out to the connections that subscribed, in one order for everyone: each
/// event gets the next sequence number and is handed to every matching subscriber's `send`
/// (which only enqueues) under one lock.
public final class EventHub: Sendable {

    private struct Subscriber {
        var kinds: Set<String>?
        var send: @Sendable (String) -> Void
    }

    private struct State {
        var subscribers: [UInt64: Subscriber] = [:]
        var seq: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Subscribes `client` to `kinds` (nil: all); replaces an earlier subscription of it.
    public func subscribe(_ client: UInt64, kinds: Set<String>?, send: @escaping @Sendable (String) -> Void) {
        state.withLock { $0.subscribers[client] = Subscriber(kinds: kinds, send: send) }
    }

    public func unsubscribe(_ client: UInt64) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: client) }
    }

    /// Sends `{"event": kind, "seq": n, …fields}` to `client` alone, if it subscribed to
    /// `kind`; whether it did.
    @discardableResult
    public func deliver(to client: UInt64, _ kind: String, _ fields: [(String, JSON)]) -> Bool {
        state.withLock { s in
            guard let w = s.subscribers[client], w.kinds?.contains(kind) ?? true else { return false }
            s.seq += 1
            w.send(JSON.object([("event", .string(kind)), ("seq", .number(Double(s.seq)))] + fields).text + "\n")
            return true
        }
    }

    /// Whether `client` subscribed to `kind`.
    public func wants(_ client: UInt64, _ kind: String) -> Bool {
        state.withLock { s in s.subscribers[client].map { $0.kinds?.contains(kind) ?? true } ?? false }
    }

    /// Publishes `{"event": kind, "seq": n, …fields}` to the subscribers of `kind`.
    public func publish(_ kind: String, _ fields: [(String, JSON)] = []) {
        state.withLock { s in
            let wanted = s.subscribers.values.filter { $0.kinds?.contains(kind) ?? true }
            s.seq += 1
            guard !wanted.isEmpty else { return }
            let line = JSON.object([("event", .string(kind)), ("seq", .number(Double(s.seq)))] + fields).text + "\n"
            for w in wanted { w.send(line) }
        }
    }
}
