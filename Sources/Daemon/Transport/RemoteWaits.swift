import Control
import Locking
import Media
import NIOCore
import NIOPosix
import Platform
import Synchronization

/// Where requests that may wait on a remote server run (``Control/CommandExecutor/network``:
/// an `add` naming a playlist URL, which it fetches): threads of their own, at most ``maxThreads`` at once,
/// never the server's shared pool (``ControlServer/blocking``). That pool's two threads answer
/// everyone's file requests (`list`, `browse`, `lsinfo`, cover art); two `add`s of a server
/// that drips once held both, and everyone else waited as long as they lasted.
///
/// A thread starts for a request when fewer than ``maxThreads`` run, and ends when nothing
/// waits; past that many, requests wait their turn here (each connection has at most one
/// request running at a time, and a request's fetches take at most
/// ``Control/PathResolver/fetchSeconds`` in all).
///
/// The threads are joined, not detached (as the HTTP input's transfer threads are): one that
/// fetched over https runs OpenSSL's per-thread clean-up as it ends, and doing so while `exit`
/// runs OpenSSL's global clean-up crashes on its freed locks. Each thread, before its first
/// request, joins those that ended before it started, and ``finish(seconds:)`` joins every one
/// that has ended. Never the caller of ``run(_:)`` (the event loop): a thread whose loop has
/// returned may still be in its exit clean-up, and joining it waits for that.
final class RemoteWaits: Sendable {
    /// Threads at once: requests waiting on remote servers at once before more wait their turn.
    let maxThreads: Int

    private struct State {
        var queue: [@Sendable () -> Void] = []
        var first = 0
        /// The threads running, by number.
        var threads: [Int: PlatformThread] = [:]
        var nextThread = 0
        /// Threads whose loop has returned, to join.
        var ended: [PlatformThread] = []
        var stopped = false
    }
    private let state = Lock(State())

    init(maxThreads: Int = 32) { self.maxThreads = maxThreads }

    /// Runs `work` on a thread of its own (or after the running ones, when ``maxThreads`` run).
    /// After ``finish(seconds:)`` it is not run.
    func run(_ work: @escaping @Sendable () -> Void) {
        state.withLock { s in
            guard !s.stopped else { return }
            s.queue.append(work)
            guard s.threads.count < maxThreads else { return }
            let n = s.nextThread
            s.nextThread += 1
            // Started with the lock held: the thread's end, which takes it, comes after it is recorded.
            s.threads[n] = PlatformThread.start(name: "bl-remote") { [self] in
                joinEnded()
                loop(n)
            }
        }
    }

    /// Runs `work` on a thread of its own (as ``run(_:)``), then `answer` with its result on
    /// `loop`, unless ``finish(seconds:)`` has begun: the server shuts its event loops down
    /// after it, and a task given to a loop that is shut down is an error.
    func run<T: Sendable>(_ work: @escaping @Sendable () -> T, answerOn loop: any EventLoop,
                          _ answer: @escaping @Sendable (T) -> Void) {
        run { [self] in
            let result = work()
            // (Under the lock: `finish` cannot begin between the check and the hand-over.)
            state.withLock { s in
                guard !s.stopped else { return }
                loop.execute { answer(result) }
            }
        }
    }

    /// Runs `work` off the event loop where `executor` says, then `answer` with its result on
    /// `loop`: on a thread of its own (``Control/CommandExecutor/network``, as ``run(_:answerOn:_:)``),
    /// or on `pool`, the server's shared threads (``ControlServer/blocking``). The JSON and MPD
    /// connections both choose here.
    func run<T: Sendable>(_ executor: CommandExecutor, pool: NIOThreadPool, _ work: @escaping @Sendable () -> T,
                          answerOn loop: any EventLoop, _ answer: @escaping @Sendable (T) -> Void) {
        guard executor != .network else { return run(work, answerOn: loop, answer) }
        pool.submit { _ in
            let result = work()
            loop.execute { answer(result) }
        }
    }

    /// Joins the threads whose loop has returned (each once: the list is taken under the lock).
    private func joinEnded() {
        let ended = state.withLock { s -> [PlatformThread] in
            defer { s.ended = [] }
            return s.ended
        }
        for t in ended { t.join() }
    }

    private func loop(_ n: Int) {
        while let work = next(n) { work() }
    }

    /// The next request waiting, or nil (and the thread `n` is counted out, to be joined).
    private func next(_ n: Int) -> (@Sendable () -> Void)? {
        state.withLock { s in
            guard !s.stopped, s.first < s.queue.count else {
                if let t = s.threads.removeValue(forKey: n) { s.ended.append(t) }
                return nil
            }
            let w = s.queue[s.first]
            s.first += 1
            if s.first == s.queue.count { s.queue.removeAll(); s.first = 0 }
            return w
        }
    }

    /// Runs nothing more, ends the waits of what runs (every fetch in flight,
    /// ``Media/InputSources/cancelFetches()``), waits at most `seconds` for it to return, and
    /// joins every thread that has ended: a daemon told to stop does so promptly whatever
    /// servers it waits on. A thread still running then (a request that returns late) answers
    /// nobody and is not joined.
    func finish(seconds: Double) {
        state.withLock { s in
            s.stopped = true
            s.queue.removeAll()
            s.first = 0
        }
        let deadline = monotonicNanos() + Int(seconds * 1e9)
        repeat {
            InputSources.cancelFetches()  // (again: one may have begun meanwhile)
            if state.withLock({ $0.threads.isEmpty }) { break }
            sleepThread(seconds: 0.01)
        } while monotonicNanos() < deadline
        joinEnded()
    }
}
