import CMalloc
import Dispatch
import Synchronization

/// Gives the memory a burst of requests used back to the system.
///
/// glibc keeps freed memory for reuse: after 10,000 pipelined requests the reply buffers NIO
/// grew stay resident, and the per-thread arenas of the event-loop and worker threads each hold
/// their own free pages. The daemon limits malloc to two arenas at start and, a few seconds
/// after traffic (and after a connection closes), asks glibc to return what is free
/// (`malloc_trim`), at most once per ``delay``; an idle daemon never runs it.
final class MemoryTrimmer: Sendable {
    /// How long after the first request of a burst the trim runs.
    let delay: DispatchTimeInterval
    private let queue: DispatchQueue
    private let scheduled = Atomic<Bool>(false)

    /// Called just before each trim (caches that can go: the library's idle connections).
    private let before: @Sendable () -> Void

    init(queue: DispatchQueue, delay: DispatchTimeInterval = .seconds(5), before: @escaping @Sendable () -> Void = {}) {
        self.queue = queue
        self.delay = delay
        self.before = before
    }

    /// Limits malloc to two arenas (per-thread arenas multiply the free memory each keeps;
    /// the daemon's threads mostly wait). Call once, before the threads start.
    static func limitArenas() {
        _ = mallopt(M_ARENA_MAX, 2)
    }

    /// Traffic happened: trims once, `delay` from now, unless a trim is already on its way.
    func noteActivity() {
        guard scheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        queue.asyncAfter(deadline: .now() + delay) { [self] in
            scheduled.store(false, ordering: .releasing)
            before()
            _ = malloc_trim(0)
        }
    }
}
