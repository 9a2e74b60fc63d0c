import Broadcast
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import Locking

extension QueuePlayer {
    /// Calls `block` with the current time every `interval` seconds of item time while playing
    /// (at multiples of `interval`), and also whenever time jumps (seek, item change) and
    /// whenever playback starts or stops. Runs on `queue` (a serial queue; nil means the main
    /// queue, as in AVFoundation, which a command-line program must then run with
    /// `dispatchMain()`). Keep the token and pass it to ``removeTimeObserver(_:)``.
    public func addPeriodicTimeObserver(forInterval interval: Double, queue: DispatchQueue?,
                                        using block: @escaping @Sendable (Double) -> Void) -> ObserverToken {
        clock.add(.periodic(max(0.001, interval)), queue: queue ?? .main) { t in block(t) }
    }

    /// Calls `block` when playback crosses one of `times` (seconds of item time) during normal
    /// playback. A seek that jumps over a time does not fire it (the spec's reading of
    /// "during normal playback"); playing up to it again after a seek back does.
    public func addBoundaryTimeObserver(forTimes times: [Double], queue: DispatchQueue?,
                                        using block: @escaping @Sendable () -> Void) -> ObserverToken {
        clock.add(.boundary(times.sorted()), queue: queue ?? .main) { _ in block() }
    }

    /// ``addPeriodicTimeObserver(forInterval:queue:using:)`` on the main queue for main-actor
    /// code: the block is main-actor isolated, so it needs no `MainActor.assumeIsolated`.
    @discardableResult
    public func addPeriodicTimeObserver(forInterval interval: Double,
                                        using block: @escaping @MainActor @Sendable (Double) -> Void) -> ObserverToken {
        addPeriodicTimeObserver(forInterval: interval, queue: .main) { t in MainActor.assumeIsolated { block(t) } }
    }

    /// ``addBoundaryTimeObserver(forTimes:queue:using:)`` on the main queue for main-actor code.
    @discardableResult
    public func addBoundaryTimeObserver(forTimes times: [Double],
                                        using block: @escaping @MainActor @Sendable () -> Void) -> ObserverToken {
        addBoundaryTimeObserver(forTimes: times, queue: .main) { MainActor.assumeIsolated { block() } }
    }

    /// The periodic observer's times as an `AsyncSequence`: the same reports as
    /// ``addPeriodicTimeObserver(forInterval:queue:using:)`` (multiples of `interval` while
    /// playing, jumps, starts and stops). The observer is removed when iteration ends or the
    /// task is cancelled; a slow reader gets the newest 16 times.
    ///
    /// ```swift
    /// for await time in player.periodicTimes(forInterval: 0.5) { label.text = format(time) }
    /// ```
    public func periodicTimes(forInterval interval: Double) -> AsyncStream<Double> {
        let (stream, continuation) = AsyncStream.makeStream(of: Double.self, bufferingPolicy: .bufferingNewest(16))
        let token = addPeriodicTimeObserver(forInterval: interval, queue: DispatchQueue(label: "backline.player.times")) {
            continuation.yield($0)
        }
        continuation.onTermination = { [weak self] _ in self?.removeTimeObserver(token) }
        return stream
    }

    /// Removes a time observer: no call of its block starts after this returns (one already
    /// running may finish afterwards, as in AVFoundation).
    public func removeTimeObserver(_ token: ObserverToken) {
        clock.remove(token)
    }
}

/// Schedules time observers from the engine's audible position: one serial queue, woken at the
/// next time any observer is due (never a fixed tick), and at once on jumps and status changes.
final class ObserverClock: Sendable {
    enum Kind: Sendable {
        case periodic(Double)
        case boundary([Double])
    }

    final class Observer: Sendable {
        let kind: Kind
        let queue: DispatchQueue
        let block: @Sendable (Double) -> Void
        let active = Atomic<Bool>(true)
        /// Periodic: next item time to fire at. Boundary: last time seen, and its item.
        let progress = Lock<(next: Double, last: Double, item: ObjectIdentifier?)>((0, 0, nil))
        /// What the last start/stop/jump call reported (one event often has several causes).
        let lastReport = Lock<(item: ObjectIdentifier?, millis: Int, started: Bool)?>(nil)

        init(kind: Kind, queue: DispatchQueue, block: @escaping @Sendable (Double) -> Void) {
            self.kind = kind
            self.queue = queue
            self.block = block
        }

        func fire(_ time: Double) {
            queue.async { [self] in
                // The check is the start of the call: after removal nothing new starts.
                guard active.load(ordering: .acquiring) else { return }
                block(time)
            }
        }
    }

    private let queue = DispatchQueue(label: "backline.player.clock")
    private let observers = Lock<[UInt64: Observer]>([:])
    private let nextID = Atomic<UInt64>(1)
    /// Bumped on every reschedule; a scheduled tick from an older one does nothing.
    private let tickGeneration = Atomic<UInt64>(0)
    private let owner = Lock<WeakPlayer>(WeakPlayer())

    struct WeakPlayer { weak var player: QueuePlayer? }

    var player: QueuePlayer? {
        get { owner.withLock { $0.player } }
        set { owner.withLock { $0.player = newValue } }
    }

    func add(_ kind: Kind, queue: DispatchQueue, block: @escaping @Sendable (Double) -> Void) -> ObserverToken {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        let o = Observer(kind: kind, queue: queue, block: block)
        observers.withLock { $0[id] = o }
        self.queue.async { [self] in
            if let snap = snapshot() { reset(o, snap, fire: false) }
            reschedule()
        }
        return ObserverToken(id)
    }

    func remove(_ token: ObserverToken) {
        observers.withLock { $0.removeValue(forKey: token.id) }?.active.store(false, ordering: .releasing)
    }

    /// Time jumped, or the current item changed: periodic observers fire now, boundaries restart.
    func jumped() {
        queue.async { [self] in fireAll() }
    }

    /// Playback started or stopped: periodic observers fire now.
    func statusChanged() {
        queue.async { [self] in fireAll() }
    }

    private struct Snapshot {
        var item: ObjectIdentifier?
        var time: Double
        /// The position advancing (`timeControlStatus` `.playing`).
        var playing: Bool
        /// Playback asked for (rate ≠ 0), whether or not it is waiting: what a start/stop report
        /// tells (waiting to play and then playing after a jump is one start, not two).
        var started: Bool
    }

    private func snapshot() -> Snapshot? {
        guard let player else { return nil }
        return player.state.withLock { s in
            Snapshot(item: s.items.first.map(ObjectIdentifier.init), time: player.currentTimeLocked(s),
                     playing: s.status == .playing, started: s.rate != 0)
        }
    }

    private func reset(_ o: Observer, _ snap: Snapshot, fire: Bool) {
        switch o.kind {
        case .periodic(let interval):
            o.progress.withLock { $0 = (Self.nextMultiple(after: snap.time, interval), snap.time, snap.item) }
            let report = (snap.item, Int((snap.time * 1000).rounded()), snap.started)
            let repeated = o.lastReport.withLock { last in
                defer { last = report }
                return last.map { $0.item == report.0 && abs($0.millis - report.1) <= 20 && $0.started == report.2 } ?? false
            }
            if fire && !repeated { o.fire(snap.time) }
        case .boundary:
            o.progress.withLock { $0 = (0, snap.time, snap.item) }
        }
    }

    /// The multiple of `interval` a periodic observer fires at next, after one fired at `time`.
    /// A tick counts as reaching a multiple from 1 ms before it (`tick` fires at `next − 0.001`),
    /// so the time is taken 1 ms later here too: a tick landing in that last millisecond
    /// (1.4995 for 1.5) moves on to the following multiple instead of firing twice.
    static func nextMultiple(after time: Double, _ interval: Double) -> Double {
        (floor((time + 0.001) / interval + 1e-9) + 1) * interval
    }

    private func fireAll() {
        guard let snap = snapshot() else { return }
        for o in observers.withLock({ Array($0.values) }) { reset(o, snap, fire: true) }
        reschedule(snap)
    }

    private func tick(_ generation: UInt64) {
        guard generation == tickGeneration.load(ordering: .acquiring), let snap = snapshot() else { return }
        if snap.playing {
            for o in observers.withLock({ Array($0.values) }) {
                switch o.kind {
                case .periodic(let interval):
                    let due = o.progress.withLock { p -> Bool in
                        guard p.item == snap.item else {
                            p = (Self.nextMultiple(after: snap.time, interval), snap.time, snap.item)
                            return false
                        }
                        guard snap.time >= p.next - 0.001 else { return false }
                        p.next = Self.nextMultiple(after: snap.time, interval)
                        return true
                    }
                    if due {
                        o.lastReport.withLock { $0 = (snap.item, Int((snap.time * 1000).rounded()), snap.started) }
                        o.fire(snap.time)
                    }
                case .boundary(let times):
                    let crossed = o.progress.withLock { p -> Int in
                        defer { p.last = snap.time; p.item = snap.item }
                        guard p.item == snap.item, snap.time > p.last else { return 0 }
                        return times.filter { $0 > p.last && $0 <= snap.time }.count
                    }
                    for _ in 0..<crossed { o.fire(snap.time) }
                }
            }
        }
        reschedule(snap)
    }

    private func reschedule(_ known: Snapshot? = nil) {
        let g = tickGeneration.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue
        guard let snap = known ?? snapshot(), snap.playing else { return }
        var wait = 0.5
        for o in observers.withLock({ Array($0.values) }) {
            switch o.kind {
            case .periodic:
                wait = min(wait, o.progress.withLock { $0.next } - snap.time)
            case .boundary(let times):
                if let b = times.first(where: { $0 > snap.time }) { wait = min(wait, b - snap.time) }
            }
        }
        let micros = Int(max(0.002, wait) * 1_000_000)
        queue.asyncAfter(deadline: .now() + .microseconds(micros)) { [self] in tick(g) }
    }
}
