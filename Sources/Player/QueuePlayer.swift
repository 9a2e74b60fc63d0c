import AudioEngine
import Broadcast
import Dispatch
import FoundationEssentials
import Lifecycle
import MediaCore
import Session
import Synchronization
import Locking

/// A queue of ``PlayerItem``s played gaplessly, with `AVQueuePlayer` semantics.
///
/// - Played, failed and skipped items leave the queue; ``items()`` lists the current item first.
/// - Item changes and "did play to end" happen when the boundary is *heard* (the engine's
///   device position), not when it is decoded.
/// - Every method may be called from any thread or task. Callbacks run on the queues their
///   owners chose and never while the player holds its lock.
///
/// ```swift
/// let player = QueuePlayer(items: paths.map { PlayerItem(path: $0) })
/// let token = player.addPeriodicTimeObserver(forInterval: 1, queue: .global()) { t in print(t) }
/// player.play()
/// ```
public final class QueuePlayer: Sendable {
    /// The engine behind the player (one decoder thread, one output thread): Backline's own
    /// modules use it (device settings, shutdown); apps use the player.
    package let engine: PlaybackEngine

    struct State {
        var items: [PlayerItem] = []
        var rate: Float = 0
        var defaultRate: Float = 1
        var action = ActionAtItemEnd.advance
        var status = TimeControlStatus.paused
        var waitingReason: WaitingReason?
        /// The engine's id for the current item, and for every item it was given.
        var currentEngineID: ItemID?
        var engineItems: [ItemID: PlayerItem] = [:]
        /// The current item's audio has been heard since it became current (or since a replan).
        var heardCurrent = false
        /// The current item played to its end with `.pause`/`.none`: the engine holds nothing.
        var atEnd = false
        /// Time to report while nothing is heard (before start, after a seek while paused).
        var parkedTime: Double = 0
        var pendingSeek: (id: UInt64, time: Double, completion: (@Sendable (Bool) -> Void)?)?
        var nextSeekID: UInt64 = 0
        var volume: Float = 1
        var muted = false
        /// The item last announced with `currentItemChanged`.
        var announced: PlayerItem?
        /// Gain from the audio session (silenced 0, ducked < 1).
        var sessionGain: Float = 1
        /// Whether playback was running when the session was interrupted.
        var playingWhenInterrupted = false
        /// Whether the session's interruption is in progress (until it ends or play is called).
        var interrupted = false
        var resumesAfterInterruption = false
        /// Suspended: the engine holds nothing (the device is closed); the current item waits at
        /// `parkedTime` and is fed again on play.
        var parked = false
        /// The device failed and the player has not played since: the next play probes it and
        /// re-plans from the heard position.
        var outputLost: MediaError?
        /// The current item stalled (its network input behind, the device playing silence)
        /// and has not been heard again since.
        var stalled = false
        /// The chapter heard last, and in which item.
        var heardChapter: (item: PlayerItem, chapter: Int?)?
    }

    /// The background task held while the current item is stalled (a stream reconnecting),
    /// as an iOS streaming app holds one: silence does not keep the app running.
    private let stallTask = Lock<BackgroundTaskIdentifier?>(nil)

    let state = Lock(State())
    /// Orders event delivery: events are enqueued here under the lock, fanned out from here.
    private let eventQueue = DispatchQueue(label: "backline.player.events")
    private let broadcaster = Broadcaster<PlayerEvent>(buffering: 1024)
    let clock: ObserverClock
    private let engineToken = Lock<UInt64?>(nil)

    /// The audio session this player plays in: `play()` activates it; its interruptions pause
    /// the player, its silencing and ducking lower the player's output.
    public let session: AudioSession

    /// The app whose life cycle the player follows: it keeps the app running in the background
    /// while it plays in `playback`, and releases the device when the app is suspended.
    public let application: Application

    /// A player over its own engine, with `items` queued (the first becomes current), paused.
    public init(items: [PlayerItem] = [], configuration: EngineConfiguration = EngineConfiguration(),
                session: AudioSession = .shared, application: Application = .shared) {
        self.session = session
        self.application = application
        engine = PlaybackEngine(configuration: configuration)
        engine.pause()
        clock = ObserverClock()
        clock.player = self
        let token = engine.onEvent { [weak self] e in self?.handle(e) }
        engineToken.withLock { $0 = token }
        state.withLock { s in
            for item in items where canInsert(item, in: s) {
                item.state.withLock { $0.owner = ObjectIdentifier(self) }
                s.items.append(item)
            }
            if !s.items.isEmpty { replan(&s, startingAt: nil) }
            s.announced = s.items.first
        }
        session.register(self)
        application.register(self)
    }

    deinit {
        for item in state.withLock({ $0.items }) { item.state.withLock { $0.owner = nil } }
        engine.shutdown()
    }

    // MARK: - Queue

    /// The queued items, the current one first.
    public func items() -> [PlayerItem] { state.withLock { $0.items } }

    /// The item being played (or about to be), nil when the queue is empty.
    public var currentItem: PlayerItem? { state.withLock { $0.items.first } }

    /// The chapter of ``currentItem`` being heard: an index into its ``PlayerItem/chapters``, nil
    /// when it has none or is before the first one's start. Changes are posted as
    /// ``PlayerEvent/chapterChanged(_:chapter:)`` when heard.
    public var currentChapterIndex: Int? {
        state.withLock { s in s.heardChapter.flatMap { $0.item === s.items.first ? $0.chapter : nil } }
    }

    /// Whether `item` can be inserted after `after` (nil: at the end): not when it is queued
    /// anywhere already (one item, one place), when it failed (terminal), or when `after` is not
    /// in this queue.
    public func canInsert(_ item: PlayerItem, after: PlayerItem?) -> Bool {
        state.withLock { s in canInsert(item, in: s) && (after.map { a in s.items.contains { $0 === a } } ?? true) }
    }

    private func canInsert(_ item: PlayerItem, in s: State) -> Bool {
        item.state.withLock { $0.owner == nil && $0.status != .failed }
    }

    /// Inserts `item` after `after` (nil appends). Inserting into an empty queue makes it the
    /// current item, and it starts playing at once if the rate is not 0. Upcoming items are
    /// handed to the engine without disturbing what plays now (gapless).
    /// - Returns: false (and nothing changes) when ``canInsert(_:after:)`` is false.
    @discardableResult
    public func insert(_ item: PlayerItem, after: PlayerItem?) -> Bool {
        state.withLock { s in
            guard canInsert(item, in: s) else { return false }
            var index = s.items.count
            if let after {
                guard let i = s.items.firstIndex(where: { $0 === after }) else { return false }
                index = i + 1
            }
            item.state.withLock { $0.owner = ObjectIdentifier(self) }
            s.items.insert(item, at: index)
            if index == 0 || s.items.count == 1 {
                replan(&s, startingAt: nil)
                announceCurrent(&s)
                clock.jumped()
            } else {
                resplice(&s)
            }
            updateStatus(&s)
            return true
        }
    }

    /// Inserts `items`, in order, after `after` (nil appends), in one step: upcoming items reach
    /// the engine once, however many there are (gapless, as ``insert(_:after:)``).
    /// - Returns: how many were inserted; it stops at the first item ``canInsert(_:after:)`` refuses.
    @discardableResult
    public func insert(contentsOf items: [PlayerItem], after: PlayerItem?) -> Int {
        guard !items.isEmpty else { return 0 }
        return state.withLock { s in
            var index = s.items.count
            if let after {
                guard let i = s.items.firstIndex(where: { $0 === after }) else { return 0 }
                index = i + 1
            }
            let wasEmpty = s.items.isEmpty
            var inserted = 0
            for item in items {
                guard canInsert(item, in: s) else { break }
                item.state.withLock { $0.owner = ObjectIdentifier(self) }
                s.items.insert(item, at: index + inserted)
                inserted += 1
            }
            guard inserted > 0 else { return 0 }
            if index == 0 || wasEmpty {
                replan(&s, startingAt: nil)
                announceCurrent(&s)
                clock.jumped()
            } else if index + inserted == s.items.count {
                spliceAtEnd(&s, Array(s.items[index...]))
            } else {
                resplice(&s)
            }
            updateStatus(&s)
            return inserted
        }
    }

    /// Removes every item after `item` in one step (`item` and what plays stay as they are).
    public func removeItems(after item: PlayerItem) {
        state.withLock { s in
            guard let i = s.items.firstIndex(where: { $0 === item }), i + 1 < s.items.count else { return }
            for gone in s.items[(i + 1)...] { release(gone) }
            s.items.removeSubrange((i + 1)...)
            resplice(&s)
        }
    }

    /// Removes `item`; removing the current item is ``advanceToNextItem()``.
    public func remove(_ item: PlayerItem) {
        state.withLock { s in
            guard let i = s.items.firstIndex(where: { $0 === item }) else { return }
            if i == 0 {
                advance(&s)
            } else {
                s.items.remove(at: i)
                release(item)
                resplice(&s)
            }
        }
    }

    /// Ends the current item now (no "did play to end"), removes it, and plays the next one
    /// at the current rate.
    public func advanceToNextItem() {
        state.withLock { s in advance(&s) }
    }

    /// Empties the queue and stops playback, as AVQueuePlayer: the device is released and the
    /// rate becomes 0 (`rateChanged` with `setRateCalled`), so an item inserted later waits for
    /// ``play()``.
    public func removeAllItems() {
        state.withLock { s in
            let had = !s.items.isEmpty
            for item in s.items { release(item) }
            s.items = []
            replan(&s, startingAt: nil)
            if had { announceCurrent(&s) }
            setRateLocked(&s, 0, reason: .setRateCalled)
            updateStatus(&s)
        }
    }

    /// Replaces the current item with `item`, keeping the items after it (AVPlayer's
    /// `replaceCurrentItem(with:)` on a queue player): `item` plays from its start at the current
    /// rate, as a jump (the device stays open). With nil the current item is removed, as
    /// ``advanceToNextItem()``. Nothing changes when `item` belongs to a queue or has failed.
    public func replaceCurrentItem(with item: PlayerItem?) {
        guard let item else { return advanceToNextItem() }
        state.withLock { s in
            guard canInsert(item, in: s) else { return }
            if !s.items.isEmpty { release(s.items.removeFirst()) }
            item.state.withLock { $0.owner = ObjectIdentifier(self) }
            s.items.insert(item, at: 0)
            replan(&s, startingAt: nil)
            announceCurrent(&s)
            clock.jumped()
            updateStatus(&s)
        }
    }

    /// Replaces every item by `item` in one step, playing it from `time` (its start when nil) at
    /// the current rate (a plain AVPlayer's `replaceCurrentItem(with:)`). Unlike ``removeAllItems()``
    /// then ``insert(_:after:)`` the device stays open and nothing is heard of the empty queue
    /// in between (a jump, not a stop and a start).
    /// - Returns: false (and nothing changes) when `item` belongs to a queue or has failed.
    @discardableResult
    public func replaceAllItems(with item: PlayerItem, startingAt time: Double? = nil) -> Bool {
        state.withLock { s in
            guard canInsert(item, in: s) else { return false }
            for old in s.items { release(old) }
            item.state.withLock { $0.owner = ObjectIdentifier(self) }
            s.items = [item]
            replan(&s, startingAt: time.map { max(0, $0) })
            announceCurrent(&s)
            clock.jumped()
            updateStatus(&s)
            return true
        }
    }

    /// What happens when an item ends. Changing it applies at once: to the current item's end
    /// if it is still playing, and immediately if the current item already sits at its end.
    public var actionAtItemEnd: ActionAtItemEnd {
        get { state.withLock { $0.action } }
        set {
            state.withLock { s in
                guard s.action != newValue else { return }
                s.action = newValue
                if s.atEnd {
                    switch newValue {
                    case .advance: advance(&s)
                    case .pause: setRateLocked(&s, 0, reason: .reachedEndOfItem)
                    case .none: break
                    }
                } else {
                    resplice(&s)
                }
            }
        }
    }

    // MARK: - Rate

    /// 0 (paused), or the rate it plays at: 1, or anything in ``supportedRates`` (0.5…3), each
    /// item stretched by its ``PlayerItem/audioTimePitchAlgorithm`` (the pitch kept by default).
    /// Times (``currentTime()``, events, the now-playing store) stay the item's own: at 1.5 the
    /// current time advances 1.5 s each second. While waiting (see ``timeControlStatus``) this is
    /// the rate playback will use. Settable, as AVPlayer's: `player.rate = 1.5` plays at 1.5,
    /// `0` pauses; a change while playing is heard at once (what is buffered is replaced from
    /// the frame heard). A rate the player cannot play leaves the rate as it is and posts
    /// `rateChanged` with `setRateFailed` (``setRate(_:)`` throws the reason instead).
    public var rate: Float {
        get { state.withLock { $0.rate } }
        set { try? setRate(newValue) }
    }

    /// The rates other than 0 the player plays (`MPChangePlaybackRateCommand`'s range).
    public static let supportedRates: ClosedRange<Float> = 0.5...3

    /// The rate ``play()`` uses (AVPlayer's `defaultRate`, iOS 16): 1 unless set, within
    /// ``supportedRates``. Setting a rate the player cannot play leaves it as it is and posts
    /// `rateChanged` with `setRateFailed`. Setting it does not change ``rate``: the next
    /// ``play()`` uses it.
    public var defaultRate: Float {
        get { state.withLock { $0.defaultRate } }
        set {
            state.withLock { s in
                if Self.supportedRates.contains(newValue) { s.defaultRate = newValue } else { post(&s, .rateChanged(s.rate, reason: .setRateFailed)) }
            }
        }
    }

    /// Plays at `rate` at once with what is buffered (AVPlayer's `playImmediately(atRate:)`).
    /// Backline never waits to minimise stalls (its items are local files), so this is
    /// `rate = rate`.
    public func playImmediately(atRate rate: Float) {
        self.rate = rate
    }

    /// Whether the player can be used (AVPlayer's `status`). A `QueuePlayer` is ready from the
    /// start and never fails as a whole: a broken item fails that item (its `status` and
    /// `error`), and a lost device pauses the player (``outputError``) until it returns.
    public var status: PlayerStatus { .readyToPlay }

    /// Why the player failed (AVPlayer's `error`): always nil, as ``status`` never becomes
    /// `.failed` (see ``outputError`` for a lost device, ``PlayerItem/error`` for an item).
    public var error: (any Error)? { nil }

    /// Sets the rate: 0 pauses, a rate in ``supportedRates`` plays at it; any other throws
    /// ``UnsupportedRateError`` (and posts a `rateChanged` event with `.setRateFailed`).
    public func setRate(_ rate: Float) throws(UnsupportedRateError) {
        guard rate == 0 || Self.supportedRates.contains(rate) else {
            state.withLock { s in post(&s, .rateChanged(s.rate, reason: .setRateFailed)) }
            throw UnsupportedRateError(rate: rate)
        }
        state.withLock { s in setRateLocked(&s, rate, reason: .setRateCalled) }
    }

    /// Plays at ``defaultRate`` (1 unless set).
    public func play() { state.withLock { s in setRateLocked(&s, s.defaultRate, reason: .setRateCalled) } }

    /// Pauses (rate 0); nothing is lost or repeated across pause and play. A pause during an
    /// interruption is the user's: the player stays paused when the interruption ends.
    public func pause() {
        state.withLock { s in
            s.playingWhenInterrupted = false
            setRateLocked(&s, 0, reason: .setRateCalled)
        }
    }

    /// Whether the player plays again by itself when an interruption ends with `shouldResume`
    /// and it was playing when the interruption began (and was not paused meanwhile). Off by
    /// default, as AVPlayer: it pauses, and the app decides to resume on
    /// `interruptionEnded(shouldResume: true)`. A player that stands for the whole app (the
    /// command-line player, the daemon) turns it on.
    public var resumesAfterInterruption: Bool {
        get { state.withLock { $0.resumesAfterInterruption } }
        set { state.withLock { $0.resumesAfterInterruption = newValue } }
    }

    /// Sets the rate for a reason other than the app's own call (interruption, background,
    /// device loss): used by the audio-session and lifecycle layers.
    package func setRate(_ rate: Float, reason: RateChangeReason) {
        state.withLock { s in setRateLocked(&s, rate == 0 ? 0 : s.defaultRate, reason: reason) }
    }

    /// The device failure that paused the player, until it plays again: while the device is
    /// still gone, ``play()`` leaves the rate at 0 (posting `outputFailed` again) rather than
    /// pretending to play; once it is back, playing re-opens it and goes on from the heard
    /// position of the same item.
    public var outputError: MediaError? { state.withLock { $0.outputLost } }

    /// After a device failure, whether the device opens again now (a probe, off the player's
    /// lock: at most a second for a sound server that does not answer); true when nothing failed.
    public func outputIsBack() -> Bool {
        guard outputError != nil else { return true }
        return engine.probeDevice().available
    }

    /// Whether playback is advancing, waiting, or paused.
    public var timeControlStatus: TimeControlStatus { state.withLock { $0.status } }

    /// Why the player waits; nil unless ``timeControlStatus`` is `.waitingToPlayAtSpecifiedRate`.
    public var reasonForWaitingToPlay: WaitingReason? { state.withLock { $0.waitingReason } }

    /// Player volume 0…1 (software gain, smoothed), relative to other output.
    public var volume: Float {
        get { state.withLock { $0.volume } }
        set { state.withLock { s in s.volume = min(1, max(0, newValue)); engine.volume = s.volume * s.sessionGain } }
    }

    /// Mutes this player only (keeps ``volume``).
    public var isMuted: Bool {
        get { state.withLock { $0.muted } }
        set { state.withLock { s in s.muted = newValue; engine.isMuted = newValue } }
    }

    // MARK: - Time

    /// The current item's time in seconds: what is heard now (0 with no current item).
    public func currentTime() -> Double {
        state.withLock { s in currentTimeLocked(s) }
    }

    func currentTimeLocked(_ s: State) -> Double {
        guard let item = s.items.first else { return 0 }
        if s.atEnd { return item.duration ?? s.parkedTime }
        // A seek not heard yet (paused right after it, say): its target, as AVPlayer reports.
        if let seek = s.pendingSeek { return seek.time }
        if s.heardCurrent, let pos = engine.position, pos.item == s.currentEngineID {
            return pos.seconds
        }
        return s.parkedTime
    }

    /// Seeks as ``seek(to:toleranceBefore:toleranceAfter:queue:completion:)`` does and returns once the
    /// seek lands (`true`: heard from `time`) or is superseded by another jump (`false`), as
    /// AVPlayer's `seek(to:) async -> Bool`.
    @discardableResult
    public func seek(to time: Double, toleranceBefore: Double = 0, toleranceAfter: Double = 0) async -> Bool {
        await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            seek(to: time, toleranceBefore: toleranceBefore, toleranceAfter: toleranceAfter, queue: eventQueue) { c.resume(returning: $0) }
        }
    }

    /// Seeks the current item to `time` seconds. Backline always seeks sample-accurately, so
    /// the tolerances only exist for AVFoundation compatibility. A newer seek completes an older
    /// one at once with `false`; a seek that lands completes with `true` when its first sample is
    /// heard (at once while paused). With no current item it completes with `false`.
    ///
    /// The completion runs on `queue`; nil means the main queue, as AVPlayer's.
    public func seek(to time: Double, toleranceBefore: Double = 0, toleranceAfter: Double = 0,
                     queue: DispatchQueue? = nil, completion: (@Sendable (Bool) -> Void)? = nil) {
        let target = queue ?? .main
        let completion = completion.map { c in { @Sendable (ok: Bool) in target.async { c(ok) } } }
        state.withLock { s in
            if let old = s.pendingSeek?.completion { eventQueue.async { old(false) } }
            s.pendingSeek = nil
            // Nothing to seek in, or a live stream (AVPlayer's seekableTimeRanges are empty): refused.
            guard let item = s.items.first, !item.isLive else {
                if let completion { eventQueue.async { completion(false) } }
                return
            }
            let t = max(0, min(time, item.duration ?? .infinity))
            s.nextSeekID += 1
            let id = s.nextSeekID
            if s.parked, s.rate == 0 {
                // Suspended: only the waiting position moves; the engine stays idle.
            } else if s.heardCurrent, !s.atEnd, let pos = engine.position, pos.item == s.currentEngineID {
                engine.seek(to: t)
            } else {
                replan(&s, startingAt: t)
            }
            s.parkedTime = t
            if s.rate == 0 {
                // Paused: the frame is ready; the jump is what the listener will hear on play.
                s.heardCurrent = false
                post(&s, .timeJumped(item, time: t))
                if let completion { eventQueue.async { completion(true) } }
                clock.jumped()
            } else {
                s.pendingSeek = (id, t, completion)
            }
        }
    }

    // MARK: - Events

    /// Calls `handler` on `queue` for every player event, in order; returns a token for
    /// ``removeObserver(_:)``.
    @discardableResult
    public func addObserver(queue: DispatchQueue, _ handler: @escaping @Sendable (PlayerEvent) -> Void) -> ObserverToken {
        broadcaster.addObserver(for: QueuePlayer.self, queue: queue, handler)
    }

    /// ``addObserver(queue:_:)`` on the main queue for main-actor code: the handler is
    /// main-actor isolated, so it needs no `MainActor.assumeIsolated`.
    @discardableResult
    public func addObserver(_ handler: @escaping @MainActor @Sendable (PlayerEvent) -> Void) -> ObserverToken {
        addObserver(queue: .main) { e in MainActor.assumeIsolated { handler(e) } }
    }

    /// Removes an event handler; no delivery to it starts once this returns.
    public func removeObserver(_ token: ObserverToken) { broadcaster.removeObserver(token) }

    /// Every player event from now on, for async code.
    public func events() -> AsyncStream<PlayerEvent> { broadcaster.events() }

    /// Queues an event for delivery (called with the lock held): the serial event queue keeps
    /// the posting order, and the fan-out happens there, outside the lock.
    private func post(_ s: inout State, _ event: PlayerEvent) {
        let broadcaster = broadcaster
        eventQueue.async { broadcaster.post(event) }
    }

    // MARK: - Internals (lock held)

    private func release(_ item: PlayerItem) {
        item.state.withLock { $0.owner = nil }
    }

    private func setRateLocked(_ s: inout State, _ rate: Float, reason: RateChangeReason) {
        guard s.rate != rate else { return }
        if rate != 0, let lost = s.outputLost {
            // After a device failure: play only once the device is back, and from what was
            // heard (the engine holds its place; a new plan opens the device again).
            guard engine.probeDevice().available else {
                post(&s, .outputFailed(lost))
                post(&s, .rateChanged(0, reason: .setRateFailed))
                return
            }
            s.outputLost = nil
            if !s.parked { replan(&s, startingAt: currentTimeLocked(s)) }
        }
        if rate != 0 {
            s.interrupted = false
            // Playing wakes a suspended app, as the audio background mode does on iOS: the app
            // is in the background again (with `didResume`) and its evaluation runs.
            if application.applicationState == .suspended { application.resume(reason: "playing") }
            // Players activate their session on play (interrupting others as its category says).
            // A registry that cannot be used does not stop local playback.
            try? session.setActive(true)
            session.claimNowPlaying()
        }
        let playing = s.rate != 0
        s.rate = rate
        // Another rate while playing: the engine replaces what it buffered from the frame heard.
        if rate != 0 { engine.speed = Double(rate) }
        if rate != 0, playing {
            post(&s, .rateChanged(rate, reason: reason))
            return
        }
        if rate != 0, s.parked {
            replan(&s, startingAt: s.parkedTime)  // back from suspension: feed the engine again
        }
        if rate == 0 {
            engine.pause()
        } else if s.atEnd {
            // Playing an item that sits at its end: it ends again at once.
            engine.resume()
            post(&s, .rateChanged(rate, reason: reason))
            itemReachedEnd(&s)
            updateStatus(&s)
            return
        } else {
            engine.resume()
        }
        post(&s, .rateChanged(rate, reason: reason))
        updateStatus(&s)
    }

    /// Feeds the engine from scratch: the current item (from `startingAt`, else its start) and,
    /// with `.advance`, the items after it.
    private func replan(_ s: inout State, startingAt time: Double?) {
        settleSeek(&s, landed: false)  // a seek still on its way is superseded by the new plan
        s.parked = false
        s.engineItems = [:]
        s.currentEngineID = nil
        s.heardCurrent = false
        s.stalled = false
        s.atEnd = false
        s.parkedTime = time ?? 0
        guard let current = s.items.first else {
            engine.stop()  // nothing to play: the device is released
            if s.rate == 0 { engine.pause() }
            return
        }
        // One flush to the new plan: the device stays open across the jump.
        let upcoming = s.action == .advance ? Array(s.items.dropFirst()) : []
        let ids = engine.replaceAll(withItems: [current.engineItem] + upcoming.map(\.engineItem), startingAt: time, paused: s.rate == 0)
        s.currentEngineID = ids[0]
        for (item, eid) in zip([current] + upcoming, ids) { feed(&s, item, eid) }
    }

    /// Hands the engine the items after the current one (all of them with `.advance`, none
    /// otherwise) without touching the current item's audio.
    private func resplice(_ s: inout State) {
        guard let cid = s.currentEngineID, !s.atEnd, s.items.first != nil else { return }
        let upcoming = s.action == .advance ? Array(s.items.dropFirst()) : []
        guard let ids = engine.replaceItems(after: cid, withItems: upcoming.map(\.engineItem)) else {
            replan(&s, startingAt: currentTimeLocked(s))
            return
        }
        s.engineItems = s.engineItems.filter { $0.key == cid }
        for (item, eid) in zip(upcoming, ids) { feed(&s, item, eid) }
    }

    /// `added` were appended: the engine gets them after the item before them, and what it
    /// holds (and has decoded ahead) up to there stays. Falls back to ``resplice(_:)``.
    private func spliceAtEnd(_ s: inout State, _ added: [PlayerItem]) {
        guard s.action == .advance, !s.atEnd, s.currentEngineID != nil, s.items.count > added.count else { return resplice(&s) }
        let anchor = s.items[s.items.count - added.count - 1]
        guard let aid = s.engineItems.first(where: { $0.value === anchor })?.key,
              let ids = engine.replaceItems(after: aid, withItems: added.map(\.engineItem)) else { return resplice(&s) }
        for (item, eid) in zip(added, ids) { feed(&s, item, eid) }
    }

    /// Holds a background task while the current item is stalled and ends it once it is not
    /// (after each engine event). Its expiration (the background budget spent) ends it: the
    /// app may then be suspended, as on iOS.
    private func syncStallTask() {
        let stalled = state.withLock { $0.stalled }
        let application = application
        stallTask.withLock { task in
            if stalled, task == nil {
                task = application.beginBackgroundTask(name: "stream stalled, reconnecting") { [weak self] in self?.endStallTask() }
            } else if !stalled, let t = task {
                application.endBackgroundTask(t)
                task = nil
            }
        }
    }

    private func endStallTask() {
        let application = application
        stallTask.withLock { task in
            if let t = task, t != .invalid { application.endBackgroundTask(t) }
            if task != nil { task = .invalid }  // not begun again for this stall
        }
    }

    /// Records that the engine plays `item` as `eid`; an item over the network reads what the
    /// engine's input has loaded for it (`loadedTimeRanges`).
    private func feed(_ s: inout State, _ item: PlayerItem, _ eid: ItemID) {
        s.engineItems[eid] = item
        if item.isRemote { item.setProbe { [weak engine] in engine?.inputProgress(for: eid) } }
    }

    /// Drops the current item (no end event) and makes the next one current.
    private func advance(_ s: inout State) {
        guard !s.items.isEmpty else { return }
        release(s.items.removeFirst())
        replan(&s, startingAt: nil)
        announceCurrent(&s)
        updateStatus(&s)
        clock.jumped()
    }

    /// Where the probes run (a serial queue: a global one would start libdispatch's once-a-second
    /// pool monitor in a process that otherwise uses none).
    private static let deviceWatch = DispatchQueue(label: "backline.device-watch")

    /// After a device loss: probes the device until it opens again, then reports
    /// `newDeviceAvailable` (and, for a sound server that came back, `mediaServicesWereReset`).
    /// Nothing plays again by itself.
    private func watchForDeviceReturn(attempt: Int = 0) {
        // Every 500 ms for the first minute, then every 5 s (a device that never comes back
        // costs almost nothing).
        let delay = attempt < 120 ? 500 : 5_000
        Self.deviceWatch.asyncAfter(deadline: .now() + .milliseconds(delay)) { [weak self] in
            guard let self else { return }
            let probe = engine.probeDevice()
            guard probe.available else { return watchForDeviceReturn(attempt: attempt + 1) }
            if probe.soundServer { session.reportMediaServicesReset() }
            session.reportRouteChange(.newDeviceAvailable)
        }
    }

    /// Posts `currentItemChanged` if the current item is not the one last announced.
    private func announceCurrent(_ s: inout State) {
        guard s.items.first !== s.announced else { return }
        s.announced = s.items.first
        post(&s, .currentItemChanged(s.items.first))
    }

    /// Ends the seek on its way, if any: its completion gets `landed`, and the position is the
    /// engine's again (a seek whose target never sounds must not hold `currentTime` there).
    private func settleSeek(_ s: inout State, landed: Bool) {
        guard let seek = s.pendingSeek else { return }
        s.pendingSeek = nil
        if let c = seek.completion { eventQueue.async { c(landed) } }
    }

    /// The current item was heard to its end under `.pause`/`.none`.
    private func itemReachedEnd(_ s: inout State) {
        guard let item = s.items.first else { return }
        s.atEnd = true
        post(&s, .itemDidPlayToEnd(item))
        if s.action == .pause, s.rate != 0 {
            s.rate = 0
            engine.pause()
            post(&s, .rateChanged(0, reason: .reachedEndOfItem))
        }
    }

    private func updateStatus(_ s: inout State) {
        let (status, reason): (TimeControlStatus, WaitingReason?)
        if s.rate == 0 {
            (status, reason) = (.paused, nil)
        } else if s.items.isEmpty {
            (status, reason) = (.waitingToPlayAtSpecifiedRate, .noItemToPlay)
        } else if s.stalled {
            (status, reason) = (.waitingToPlayAtSpecifiedRate, .toMinimizeStalls)
        } else if !s.heardCurrent && !s.atEnd {
            // An item over the network buffers its first audio; a file is on its way to the device.
            let remote = s.items.first?.isRemote == true
            (status, reason) = (.waitingToPlayAtSpecifiedRate, remote ? .toMinimizeStalls : .evaluatingBufferingRate)
        } else {
            (status, reason) = (.playing, nil)
        }
        guard status != s.status || reason != s.waitingReason else { return }
        s.status = status
        s.waitingReason = reason
        post(&s, .timeControlStatusChanged(status, reason: reason))
        clock.statusChanged()
    }

    // MARK: - Engine events (monitor thread)

    private func handle(_ event: EngineEvent) {
        defer { syncStallTask() }
        state.withLock { s in
            switch event {
            case .itemLoaded(let info):
                guard let item = s.engineItems[info.id], item.markLoaded(info) else { return }
                post(&s, .itemStatusChanged(item, .readyToPlay))

            case .itemDecodeFailed(let id, let path, let error):
                // As AVPlayerItem's status turns `.failed` when loading fails: at once, before
                // the failure is heard (`itemFailedToPlayToEnd` comes then).
                guard let item = s.engineItems[id] else { return }
                var e = error
                e.item = path
                if item.markFailed(e) { post(&s, .itemStatusChanged(item, .failed)) }

            case .itemStarted(let info, let fromSeek):
                guard let item = s.engineItems[info.id], s.items.contains(where: { $0 === item }) else { return }
                let changed = s.items.first !== item
                // A gapless change heard now: earlier items are done (their end came first).
                while let first = s.items.first, first !== item {
                    release(s.items.removeFirst())
                }
                announceCurrent(&s)
                s.currentEngineID = info.id
                s.heardCurrent = true
                s.stalled = false
                if item.setBuffering(likelyToKeepUp: true, bufferEmpty: false) { post(&s, .playbackLikelyToKeepUpChanged(item, true)) }
                s.atEnd = false
                if fromSeek, let seek = s.pendingSeek {
                    // The landing point (sample-exact), not the time when this event is handled.
                    post(&s, .timeJumped(item, time: seek.time))
                    settleSeek(&s, landed: true)
                } else if changed {
                    settleSeek(&s, landed: false)  // another item is heard: the seek never landed
                }
                updateStatus(&s)
                clock.jumped()

            case .itemEnded(let id):
                guard let item = s.engineItems.removeValue(forKey: id) else { return }
                guard item === s.items.first else { return }
                if let seek = s.pendingSeek {
                    // A seek to the end (a later time is clamped to it): it lands where the item
                    // ends, heard now; then the item's end, as for any other.
                    post(&s, .timeJumped(item, time: seek.time))
                    settleSeek(&s, landed: true)
                }
                if s.action == .advance {
                    s.items.removeFirst()
                    release(item)
                    post(&s, .itemDidPlayToEnd(item))
                    // The next item (if any) becomes current at the same device frame: its
                    // `itemStarted` follows in this batch. With none left, the queue is done.
                    if s.items.isEmpty {
                        s.currentEngineID = nil
                        s.heardCurrent = false
                        announceCurrent(&s)
                        updateStatus(&s)
                    } else {
                        // Gapless: audio goes on without a break, so the status stays `playing`.
                        s.currentEngineID = s.engineItems.first { $0.value === s.items.first }?.key
                    }
                } else {
                    itemReachedEnd(&s)
                    updateStatus(&s)
                }
                clock.jumped()

            case .itemFailed(let id, let path, let error):
                guard let item = s.engineItems.removeValue(forKey: id) else { return }
                var e = error
                e.item = path
                if item.markFailed(e) { post(&s, .itemStatusChanged(item, .failed)) }
                // One rule for every failed item, as AVQueuePlayer: when its turn comes it becomes
                // current (`currentItemChanged`), posts its failure, and is consumed; the next item
                // becomes current. (An item that failed before its turn is reported in its turn.)
                if s.items.first === item { announceCurrent(&s) }
                post(&s, .itemFailedToPlayToEnd(item, e))
                guard let i = s.items.firstIndex(where: { $0 === item }) else { return }
                s.items.remove(at: i)
                release(item)
                if i == 0 {
                    s.stalled = false  // (a stream that gave up reconnecting fails while stalled)
                    settleSeek(&s, landed: false)  // a seek in the failed item never lands
                    if s.action == .advance && s.engineItems.values.contains(where: { $0 === s.items.first }) {
                        // The engine goes straight on into the next item.
                        s.currentEngineID = s.engineItems.first { $0.value === s.items.first }?.key
                    } else {
                        replan(&s, startingAt: nil)
                    }
                    announceCurrent(&s)
                    updateStatus(&s)
                    clock.jumped()
                }

            case .underrun:
                post(&s, .playbackStalled(s.items.first))

            case .stalled(let id):
                // The network is behind: silence, the position held, until enough is buffered.
                guard let item = s.engineItems[id], item === s.items.first, s.heardCurrent else { return }
                s.stalled = true
                if item.setBuffering(likelyToKeepUp: false, bufferEmpty: true) { post(&s, .playbackLikelyToKeepUpChanged(item, false)) }
                post(&s, .playbackStalled(item))
                updateStatus(&s)

            case .stallEnded(let id):
                guard s.stalled, let item = s.engineItems[id], item === s.items.first else { return }
                s.stalled = false
                if item.setBuffering(likelyToKeepUp: true, bufferEmpty: false) { post(&s, .playbackLikelyToKeepUpChanged(item, true)) }
                updateStatus(&s)

            case .deviceError(let e):
                // The device is gone (unplugged, sound server gone): pause, as AVPlayer does on
                // `oldDeviceUnavailable`; nothing plays again by itself when it returns.
                s.outputLost = e
                post(&s, .outputFailed(e))
                setRateLocked(&s, 0, reason: .oldDeviceUnavailable)
                let session = session
                DispatchQueue.global().async { session.reportRouteChange(.oldDeviceUnavailable) }
                watchForDeviceReturn()

            case .endOfInput:
                updateStatus(&s)

            case .deviceOpened:
                break

            case .metadataChanged(let info):
                guard let item = s.engineItems[info.id] else { return }
                item.updateMetadata(info.metadata)
                post(&s, .timedMetadata(item, info.metadata))

            case .chapterChanged(let id, let chapter):
                guard let item = s.engineItems[id], item === s.items.first else { return }
                s.heardChapter = (item, chapter)
                post(&s, .chapterChanged(item, chapter: chapter))
            }
        }
    }
}

extension QueuePlayer: AudioSessionParticipant {
    /// Whether the player is playing (running I/O, for deactivation checks).
    package var isRunningIO: Bool { state.withLock { $0.rate != 0 } }

    /// ReplayGain for the items it plays (mode, preamps, limiting; `auto` plays as `album`:
    /// a queue that knows its shuffle resolves it first). From the next item on.
    public var replayGain: ReplayGainSettings {
        get { engine.replayGain }
        set { engine.replayGain = newValue }
    }

    /// Crossfade between items, in seconds (0: off, the default; see `Crossfade` in AudioEngine):
    /// the end of one item and the start of the next overlap with an equal-power curve, and the
    /// next item becomes ``currentItem`` when its first sample is heard. Consecutive tracks of one
    /// album, and items of different rates or channels, stay gapless. From the next join on.
    public var crossfade: Double {
        get { engine.crossfade }
        set { engine.crossfade = newValue }
    }

    /// Whether the audio session was interrupted and the interruption has not ended yet.
    public var isInterrupted: Bool { state.withLock { $0.interrupted } }

    package func sessionInterrupted() {
        state.withLock { s in
            s.interrupted = true
            s.playingWhenInterrupted = s.rate != 0
            setRateLocked(&s, 0, reason: .audioSessionInterrupted)
        }
    }

    package func sessionInterruptionEnded(shouldResume: Bool) {
        // The end of an interruption wakes a suspended app (iOS delivers it to the app).
        if application.applicationState == .suspended { application.resume(reason: "interruption ended") }
        let resume = state.withLock { s in
            defer { s.playingWhenInterrupted = false; s.interrupted = false }
            return s.resumesAfterInterruption && shouldResume && s.playingWhenInterrupted && s.rate == 0
        }
        if resume { play() }
    }

    /// The session was deactivated while playing: the player stops (rate 0, reason
    /// `audioSessionDeactivated`), as AVAudioSession stops running I/O.
    package func sessionDeactivatedWhileRunning() {
        state.withLock { s in
            s.playingWhenInterrupted = false
            setRateLocked(&s, 0, reason: .audioSessionDeactivated)
        }
    }

    package func sessionGainChanged(_ gain: Float) {
        state.withLock { s in
            s.sessionGain = gain
            engine.volume = s.volume * gain
        }
    }
}

extension QueuePlayer: ApplicationParticipant {
    /// Playing audible audio in the `playback` category keeps the app running in the background.
    package var keepsAppRunningInBackground: Bool {
        let playing = state.withLock { s in s.rate != 0 && !s.items.isEmpty && !s.atEnd && !s.stalled }
        return playing && session.category == .playback && session.isActive
    }

    /// Outside `playback`, audio stops in the background (rate 0, reason `appBackgrounded`).
    package func applicationDidEnterBackground() {
        guard session.category != .playback else { return }
        setRate(0, reason: .appBackgrounded)
    }

    /// Suspension: the device is released; the queue and the position are kept (paused there).
    package func applicationWillSuspend() {
        // Resumed meanwhile (the app came back while the hooks ran): nothing to release.
        guard application.applicationState == .suspended else { return }
        state.withLock { s in
            if s.rate != 0 { setRateLocked(&s, 0, reason: .appBackgrounded) }
            guard !s.items.isEmpty, !s.atEnd else {
                engine.stop()  // holds nothing worth keeping (an item at its end stays current)
                return
            }
            // Park: the engine lets go of everything (and the device); play feeds it again.
            let t = currentTimeLocked(s)
            engine.stop()
            s.engineItems = [:]
            s.currentEngineID = nil
            s.heardCurrent = false
            s.parkedTime = t
            s.parked = true
        }
    }

    package func applicationDidResume() {}
}
