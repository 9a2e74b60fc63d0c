#if canImport(Glibc)
import Glibc
#endif

/// A POSIX thread running one closure: what the engine's and the front ends' own threads are
/// (Foundation's `Thread` without Foundation). Start it with ``start(name:_:)``; ``join()``
/// waits for the closure to return (once).
public final class PlatformThread: @unchecked Sendable {
    // @unchecked Sendable: `handle` is written once, before `start` returns, and read by `join`;
    // `body` is read and cleared by the thread itself only.
    private var handle = pthread_t()
    /// Let go once run: an owner that keeps this thread, referenced from its closure, would
    /// otherwise never be freed.
    private var body: (@Sendable () -> Void)?
    private let name: String

    private init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }

    /// Starts a thread named `name` (as ``nameCurrentThread(_:)`` sets it) running `body`.
    /// A thread that cannot be created is a fatal error, as it is for Foundation's `Thread`.
    @discardableResult
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) -> PlatformThread {
        let t = PlatformThread(name: name, body: body)
        let context = Unmanaged.passRetained(t).toOpaque()
        let r = pthread_create(&t.handle, nil, { context in
            let me = Unmanaged<PlatformThread>.fromOpaque(context!).takeRetainedValue()
            nameCurrentThread(me.name)
            me.body?()
            me.body = nil
            return nil
        }, context)
        precondition(r == 0, "pthread_create failed: \(String(cString: strerror(r)))")
        return t
    }

    /// Waits for the thread's closure to return. Call it once. Called on the thread itself (an
    /// owner whose last reference went on its own thread, stopping it from its `deinit`), it
    /// detaches instead: the thread's resources go when it ends (ThreadSanitizer found such
    /// threads never joined: an engine released by its monitor thread).
    public func join() {
        if pthread_equal(handle, pthread_self()) != 0 {
            pthread_detach(handle)
        } else {
            pthread_join(handle, nil)
        }
    }

    /// Lets the thread's resources go when it ends, for a thread nobody joins.
    public func detach() {
        pthread_detach(handle)
    }
}

/// Names the calling thread as `ps -L`, `top -H`, gdb and `/proc/PID/task/*/comm` show it
/// (at most 15 bytes; longer names are cut).
public func nameCurrentThread(_ name: String) {
    // (`pthread_setname_np` is a GNU extension the Glibc module does not export; this is what
    // it does for the calling thread.)
    let fd = open("/proc/thread-self/comm", O_WRONLY)
    guard fd >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

/// Sleeps the calling thread for `seconds` (EINTR resumed).
public func sleepThread(seconds: Double) {
    var ts = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    var rem = timespec()
    while nanosleep(&ts, &rem) != 0, errno == EINTR { ts = rem }
}

/// CLOCK_MONOTONIC in nanoseconds (inlined: the output thread reads it every period).
@inlinable @inline(__always)
public func monotonicNanos() -> Int {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec &* 1_000_000_000 &+ ts.tv_nsec
}
