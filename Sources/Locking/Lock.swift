#if BACKLINE_TSAN
import Glibc

/// The mutex every module uses: the standard library's `Mutex`, except under ThreadSanitizer
/// (`scripts/sanitize` builds with `-DBACKLINE_TSAN`). There it is this twin on a pthread mutex,
/// the same API: the standard library's waits on a futex, which ThreadSanitizer does not see,
/// so every access it guards looked like a race to it (123 reports in the engine alone).
public final class Lock<Value>: @unchecked Sendable {
    private var value: Value
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    /// A mutex guarding `initialValue`.
    public init(_ initialValue: consuming sending Value) {
        value = initialValue
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the mutex held.
    public func withLock<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
#else
import Synchronization

/// The mutex every module uses: the standard library's `Mutex` (under ThreadSanitizer, a twin
/// on a pthread mutex that it can see: see `scripts/sanitize`).
public typealias Lock<Value: ~Copyable> = Mutex<Value>
#endif
