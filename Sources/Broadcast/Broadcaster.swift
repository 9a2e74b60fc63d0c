import Dispatch
import Synchronization
import Locking

/// Delivers events to observers, each on the dispatch queue it chose, and to `AsyncStream`s.
///
/// The one fan-out used by the session, the app life cycle, the player and the now-playing
/// store. Handlers never run under the broadcaster's lock; a handler removed with
/// ``removeObserver(_:)`` gets nothing that had not started when it returned (the check is the
/// start of the call).
public final class Broadcaster<Event: Sendable>: Sendable {
    private struct State {
        var handlers: [UInt64: (DispatchQueue, @Sendable (Event) -> Void)] = [:]
        var continuations: [UInt64: AsyncStream<Event>.Continuation] = [:]
        var next: UInt64 = 1
    }

    private let state = Lock(State())
    private let buffering: Int

    /// A broadcaster whose streams keep the newest `buffering` events for a slow reader.
    public init(buffering: Int = 256) {
        self.buffering = buffering
    }

    /// Calls `handler` on `queue` for every event, in order; returns a token.
    @discardableResult
    public func addObserver(queue: DispatchQueue, _ handler: @escaping @Sendable (Event) -> Void) -> UInt64 {
        state.withLock { s in
            defer { s.next += 1 }
            s.handlers[s.next] = (queue, handler)
            return s.next
        }
    }

    /// Removes a handler.
    public func removeObserver(_ token: UInt64) {
        _ = state.withLock { $0.handlers.removeValue(forKey: token) }
    }

    /// Every event from now on.
    public func events() -> AsyncStream<Event> {
        let (stream, c) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(buffering))
        let token = state.withLock { s in
            defer { s.next += 1 }
            s.continuations[s.next] = c
            return s.next
        }
        c.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.continuations.removeValue(forKey: token) } }
        return stream
    }

    /// Delivers `event`: to the streams now, to each handler on its queue.
    public func post(_ event: Event) {
        let (handlers, continuations) = state.withLock { s in (s.handlers, Array(s.continuations.values)) }
        for c in continuations { c.yield(event) }
        for (token, (queue, handler)) in handlers {
            queue.async { [weak self] in
                guard let self, state.withLock({ $0.handlers[token] != nil }) else { return }
                handler(event)
            }
        }
    }
}

/// An opaque token for something added to a `Center` (an observer, a handler, a hook): pass it
/// back to the same center to remove it. Each center has its own token type, so a token from
/// one center cannot be handed to another by mistake.
public struct ObservationToken<Center>: Hashable, Sendable {
    package let id: UInt64
    package init(_ id: UInt64) { self.id = id }
}

extension Broadcaster {
    /// ``addObserver(queue:_:)`` returning a token typed for `Center`.
    package func addObserver<Center>(for _: Center.Type, queue: DispatchQueue,
                                     _ handler: @escaping @Sendable (Event) -> Void) -> ObservationToken<Center> {
        ObservationToken(addObserver(queue: queue, handler))
    }

    /// Removes the observer a typed token stands for.
    package func removeObserver<Center>(_ token: ObservationToken<Center>) { removeObserver(token.id) }
}
