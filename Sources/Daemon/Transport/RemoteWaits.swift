import Locking
import Media
import Platform
import Synchronization

/// Where requests that may wait on a remote server run (``Control/CommandExecutor/network``:
/// an `add` that fetches a playlist URL): threads of their own, at most ``maxThreads`` at once,
/// never the server's shared pool (``ControlServer/blocking``). That pool's two threads answer
/// everyone's file requests (`list`, `browse`, `lsinfo`, cover art); two `add`s of a server
/// that drips once held both, and everyone else waited as long as they lasted.
///
/// A thread starts for a request when fewer than ``maxThreads`` run, and ends when nothing
/// waits; past that many, requests wait their turn here (each connection has at most one
/// request running at a time, and a fetch at most ``Control/PathResolver/fetchSeconds``).
final class RemoteWaits: Sendable {
    /// Threads at once: requests waiting on remote servers at once before more wait their turn.
    static let maxThreads = 32

    private struct State {
        var queue: [@Sendable () -> Void] = []
        var first = 0
        var threads = 0
        var stopped = false
    }
    private let state = Lock(State())

    /// Runs `work` on a thread of its own (or after the running ones, when ``maxThreads`` run).
    /// After ``finish(seconds:)`` it is not run.
    func run(_ work: @escaping @Sendable () -> Void) {
        let start = state.withLock { s -> Bool in
            guard !s.stopped else { return false }
            s.queue.append(work)
            guard s.threads < Self.maxThreads else { return false }
            s.threads += 1
            return true
        }
        if start { PlatformThread.start(name: "bl-remote") { [self] in loop() }.detach() }
    }

    private func loop() {
        while let work = next() { work() }
    }

    /// The next request waiting, or nil (and the thread is counted out).
    private func next() -> (@Sendable () -> Void)? {
        state.withLock { s in
            guard !s.stopped, s.first < s.queue.count else {
                s.threads -= 1
                return nil
            }
            let w = s.queue[s.first]
            s.first += 1
            if s.first == s.queue.count { s.queue.removeAll(); s.first = 0 }
            return w
        }
    }

    /// Runs nothing more, ends the waits of what runs (every fetch in flight,
    /// ``Media/InputSources/cancelFetches()``) and waits at most `seconds` for it to return:
    /// a daemon told to stop does so promptly whatever servers it waits on.
    func finish(seconds: Double) {
        state.withLock { s in
            s.stopped = true
            s.queue.removeAll()
            s.first = 0
        }
        let deadline = monotonicNanos() + Int(seconds * 1e9)
        repeat {
            InputSources.cancelFetches()  // (again: one may have begun meanwhile)
            if state.withLock({ $0.threads }) == 0 { return }
            sleepThread(seconds: 0.01)
        } while monotonicNanos() < deadline
    }
}
