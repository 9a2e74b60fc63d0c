// The play queue's public face: its events, snapshot and errors, and `PlayQueue`, whose one
// lock holds the queue's data (`Queue`, Queue.swift) and what the player holds; every public
// method runs under that lock. Feeding the player and following it are in PlayerFeed.swift.

import Broadcast
import Dispatch
import MediaCore
import Player
import Synchronization
import Locking
/// Transport state of the play queue.
public enum PlaybackState: String, Sendable, Codable {
    /// The current entry is playing.
    case playing
    /// The current entry is paused where it was heard.
    case paused
    /// Nothing is loaded (the device is released); the current entry stays selected and plays
    /// from its start.
    case stopped
}

/// What the play queue reports to its observers (on their queues, in order).
public enum PlayQueueEvent: Sendable, Equatable {
    /// The transport state changed.
    case state(PlaybackState)
    /// The current entry changed (nil: none), heard by the listener.
    case current(PlayQueueEntry?)
    /// Entries were added, removed, moved or cleared; `version` bumps on every change.
    case queue(version: Int, count: Int)
    /// Repeat, shuffle, stop-after-current or consume changed.
    case modes(repeat: RepeatMode, shuffle: Bool, stopAfterCurrent: Bool, consume: ConsumeMode)
    /// An entry failed to play (file and reason); playback went on.
    case failed(PlayQueueEntry, reason: String)
    /// The current item jumped (seek) to `time`.
    case seeked(id: Int, time: Double)
    /// The current entry's tags changed within it, heard now (a chained stream's next link).
    case metadata(id: Int, TrackMetadata)
    /// The current entry's chapter changed, heard now: an index into its chapters (nil: before
    /// the first one's start).
    case chapter(id: Int, chapter: Int?)
}

/// A snapshot of the play queue for saving and restoring.
public struct PlayQueueSnapshot: Sendable, Equatable, Codable {
    /// The entries in queue order.
    public var entries: [PlayQueueEntry]
    /// The id the next added entry gets (ids are not reused while they can be avoided: see
    /// ``PlayQueue/maximumID``).
    public var nextID: Int
    /// The current entry's id, if any.
    public var current: Int?
    /// The audible position in the current entry, seconds.
    public var position: Double
    /// The transport state when saved.
    public var state: PlaybackState
    /// The repeat mode.
    public var repeatMode: RepeatMode
    /// Whether shuffle is on.
    public var shuffle: Bool
    /// The shuffled order of entry ids (empty when shuffle is off).
    public var shuffleOrder: [Int]
    /// Whether playback stops at the end of the current entry.
    public var stopAfterCurrent: Bool
    /// Whether stop-after-current stays on once it takes effect (MPD's `single 1` without repeat).
    public var stopAfterEach: Bool
    /// Ids of the entries played before the current one, most recent last.
    public var history: [Int]
    /// The consume mode.
    public var consume: ConsumeMode
    /// The queue's version when saved (the restored queue goes on from it, so a client's
    /// version from before a restart never looks current).
    public var version: Int

    /// A snapshot with the given fields; the defaults describe an empty, stopped queue.
    public init(entries: [PlayQueueEntry] = [], nextID: Int = 1, current: Int? = nil, position: Double = 0,
                state: PlaybackState = .stopped, repeatMode: RepeatMode = .off, shuffle: Bool = false,
                shuffleOrder: [Int] = [], stopAfterCurrent: Bool = false, stopAfterEach: Bool = false, history: [Int] = [],
                consume: ConsumeMode = .off, version: Int = 0) {
        self.entries = entries
        self.nextID = nextID
        self.current = current
        self.position = position
        self.state = state
        self.repeatMode = repeatMode
        self.shuffle = shuffle
        self.shuffleOrder = shuffleOrder
        self.stopAfterCurrent = stopAfterCurrent || stopAfterEach
        self.stopAfterEach = stopAfterEach
        self.history = history
        self.consume = consume
        self.version = version
    }

    private enum CodingKeys: String, CodingKey {
        case entries, nextID, current, position, state, repeatMode, shuffle, shuffleOrder, stopAfterCurrent, stopAfterEach, history, consume, version
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(entries: try c.decode([PlayQueueEntry].self, forKey: .entries), nextID: try c.decode(Int.self, forKey: .nextID),
                  current: try c.decodeIfPresent(Int.self, forKey: .current), position: try c.decode(Double.self, forKey: .position),
                  state: try c.decode(PlaybackState.self, forKey: .state), repeatMode: try c.decode(RepeatMode.self, forKey: .repeatMode),
                  shuffle: try c.decode(Bool.self, forKey: .shuffle), shuffleOrder: try c.decode([Int].self, forKey: .shuffleOrder),
                  stopAfterCurrent: try c.decode(Bool.self, forKey: .stopAfterCurrent),
                  stopAfterEach: try c.decodeIfPresent(Bool.self, forKey: .stopAfterEach) ?? false,  // (saved before it)
                  history: try c.decode([Int].self, forKey: .history),
                  consume: try c.decodeIfPresent(ConsumeMode.self, forKey: .consume) ?? .off,  // (saved before consume)
                  version: try c.decodeIfPresent(Int.self, forKey: .version) ?? 0)
    }
}

/// Errors of play-queue operations.
public struct PlayQueueError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure, with the daemon protocol's spelling as the raw value.
    public enum Code: String, Sendable {
        /// No entry has the id given.
        case noSuchItem = "no-such-item"
        /// The queue has no entries to play.
        case emptyQueue = "empty-queue"
        /// The operation needs a current (or playing) entry and there is none.
        case notPlaying = "not-playing"
        /// The audio device failed and is still gone: the queue stays paused where it was heard.
        case outputUnavailable = "output-unavailable"
        /// The operation cannot change the entry heard now.
        case currentItem = "current-item"
    }
    /// What kind of failure.
    public let code: Code
    /// What went wrong, for people.
    public let message: String
    /// The ``message``.
    public var description: String { message }
}

/// A music player's play queue above a `QueuePlayer`: stable ids, a current entry, repeat,
/// shuffle, stop-after-current and a history for "previous".
///
/// The queue keeps the player fed with the current item and the one that plays after it, so the
/// change is gapless; everything else stays in the queue until it is due. The current entry
/// changes when the listener *hears* the change (the player's `currentItemChanged`).
/// Stopped means the player holds nothing (the device is released); the current entry stays
/// selected, and `play()` starts it from the beginning.
/// Every method may be called from any thread.
public final class PlayQueue: Sendable {
    /// The player this queue feeds.
    public let player: QueuePlayer

    /// Everything behind the lock: the queue's data, the current entry, and what the player holds.
    struct State {
        var queue = Queue()
        var current: Int?
        var stopped = true
        /// What the player holds, in order: its current item first.
        var fed: [(id: Int, item: PlayerItem)] = []
        var failuresInARow = 0
        var lastState: PlaybackState = .stopped
        var pitchAlgorithm = TimePitchAlgorithm.timeDomain
        var resume: (any ResumePositions)?
    }

    let state = Lock(State())
    private let broadcaster = Broadcaster<PlayQueueEvent>()
    private let queue = DispatchQueue(label: "backline.playqueue")
    private let observer = Lock<ObserverToken?>(nil)
    /// How far into an item `previous()` restarts it instead of going back (Apple's and most players' rule).
    public static let restartThreshold = 3.0
    /// Automatic advance stops after this many failed items in a row (all broken, repeat on).
    public static let maximumFailuresInARow = 10
    /// The history keeps this many entries.
    public static let historyLimit = 500

    /// How many items after the current one the player holds (decoded ahead, gapless).
    public let lookahead: Int

    /// Where entries played from their beginning start, and who is told when one is left
    /// before its end (nil: every entry starts at 0).
    public var resumePositions: (any ResumePositions)? {
        get { state.withLock { $0.resume } }
        set { state.withLock { $0.resume = newValue } }
    }

    /// How the items it feeds the player from now on are stretched at rates other than 1
    /// (`PlayerItem.audioTimePitchAlgorithm`).
    public var pitchAlgorithm: TimePitchAlgorithm {
        get { state.withLock { $0.pitchAlgorithm } }
        set { state.withLock { $0.pitchAlgorithm = newValue } }
    }

    /// A play queue feeding `player`.
    /// - Parameters:
    ///   - player: the player to feed; it should start empty (the queue owns its items from now on).
    ///   - lookahead: how many items after the current one the player holds. One (the
    ///   default, as mpd) is enough on a device that plays in real time. A player that may run
    ///   faster than real time (ALSA's `null` or `file` devices) feeds more, so an item's end
    ///   never comes before the queue has fed what follows.
    public init(player: QueuePlayer, lookahead: Int = 1) {
        self.player = player
        self.lookahead = max(1, lookahead)
        let token = player.addObserver(queue: queue) { [weak self] e in self?.handle(e) }
        observer.withLock { $0 = token }
    }

    deinit {
        if let t = observer.withLock({ $0 }) { player.removeObserver(t) }
    }

    // MARK: - Reading

    /// The entries in queue order.
    public var entries: [PlayQueueEntry] { state.withLock { $0.queue.entries } }
    /// How many entries the queue has (no copy of them).
    public var count: Int { state.withLock { $0.queue.entries.count } }
    /// The current entry (selected even while stopped).
    public var current: PlayQueueEntry? { state.withLock { s in s.current.flatMap { id in s.queue.entries.first { $0.id == id } } } }
    /// The current entry's index in ``entries``.
    public var currentIndex: Int? { state.withLock { s in s.current.flatMap { id in s.queue.entries.firstIndex { $0.id == id } } } }
    /// Playing, paused or stopped.
    public var playbackState: PlaybackState { state.withLock { currentState($0) } }
    /// Bumps on every change to the entries.
    public var version: Int { state.withLock { $0.queue.version } }
    /// The repeat mode (``setRepeat(_:)`` changes it).
    public var repeatMode: RepeatMode { state.withLock { $0.queue.repeatMode } }
    /// Whether shuffle is on (``setShuffle(_:)`` changes it).
    public var shuffle: Bool { state.withLock { $0.queue.shuffle } }
    /// Whether playback stops at the end of the current entry (``setStopAfterCurrent(_:each:)``).
    public var stopAfterCurrent: Bool { state.withLock { $0.queue.stopAfterCurrent } }
    /// Whether stop-after-current stays on after each entry (``setStopAfterCurrent(_:each:)``).
    public var stopAfterEach: Bool { state.withLock { $0.queue.stopAfterEach } }
    /// The consume mode (``setConsume(_:)`` changes it).
    public var consume: ConsumeMode { state.withLock { $0.queue.consume } }
    /// Ids of the entries played before the current one, most recent last.
    public var history: [Int] { state.withLock { $0.queue.history } }
    /// The order automatic advance follows (the shuffled order when shuffle is on).
    public var playOrder: [Int] { state.withLock { $0.queue.order } }

    /// The audible position in the current item (0 when stopped).
    public var elapsed: Double {
        state.withLock { s in s.stopped || s.fed.isEmpty ? 0 : max(0, player.currentTime()) }
    }

    /// What a status line needs, read under one lock (cheap: no copy of the queue).
    public struct Status: Sendable {
        /// Playing, paused or stopped.
        public var state: PlaybackState
        /// The current entry and its index.
        public var current: (entry: PlayQueueEntry, index: Int)?
        /// The entry automatic advance plays after the current one, and its index.
        public var next: (entry: PlayQueueEntry, index: Int)?
        /// How many entries the queue has.
        public var count: Int
        /// The queue's version (bumps on every change to the entries).
        public var version: Int
        /// The repeat mode.
        public var repeatMode: RepeatMode
        /// Whether shuffle is on.
        public var shuffle: Bool
        /// Whether playback stops at the end of the current entry.
        public var stopAfterCurrent: Bool
        /// Whether that stays on after each entry.
        public var stopAfterEach: Bool
        /// The consume mode.
        public var consume: ConsumeMode
        /// The audible position in the current item (0 when stopped).
        public var elapsed: Double
    }

    /// The transport state, current and next entries, modes and position, at one instant.
    public func status() -> Status {
        state.withLock { s in
            let state = currentState(s)
            let ci = s.current.flatMap { id in s.queue.entries.firstIndex { $0.id == id } }
            var next: (PlayQueueEntry, Int)?
            if let ci, let n = automaticNext(after: s.queue.entries[ci].id, s, ignoringStop: true),
               let ni = s.queue.entries.firstIndex(where: { $0.id == n }) {
                next = (s.queue.entries[ni], ni)
            }
            return Status(state: state, current: ci.map { (s.queue.entries[$0], $0) }, next: next, count: s.queue.entries.count,
                          version: s.queue.version, repeatMode: s.queue.repeatMode, shuffle: s.queue.shuffle,
                          stopAfterCurrent: s.queue.stopAfterCurrent, stopAfterEach: s.queue.stopAfterEach, consume: s.queue.consume,
                          elapsed: state == .stopped ? 0 : max(0, player.currentTime()))
        }
    }

    /// The entries whose position changed after queue version `version` (added, moved, or
    /// shifted by an edit before them), with their indexes: MPD's `plchanges`. A version the
    /// queue never had (from before a restart) lists every entry.
    public func changes(since version: Int) -> [(index: Int, entry: PlayQueueEntry)] {
        state.withLock { s in
            s.queue.entries.enumerated().compactMap { i, e in
                version > s.queue.version || s.queue.moved[e.id, default: 0] > version ? (i, e) : nil
            }
        }
    }

    /// A snapshot for saving.
    public func snapshot() -> PlayQueueSnapshot {
        state.withLock { s in
            PlayQueueSnapshot(entries: s.queue.entries, nextID: s.queue.nextID, current: s.current,
                              position: s.stopped || s.fed.isEmpty ? 0 : max(0, player.currentTime()),
                              state: currentState(s), repeatMode: s.queue.repeatMode, shuffle: s.queue.shuffle,
                              shuffleOrder: s.queue.shuffleOrder, stopAfterCurrent: s.queue.stopAfterCurrent,
                              stopAfterEach: s.queue.stopAfterEach, history: s.queue.history,
                              consume: s.queue.consume, version: s.queue.version)
        }
    }

    // MARK: - Events

    /// Adds an event handler called on `queue`; returns a token for ``removeObserver(_:)``.
    public func addObserver(queue: DispatchQueue, _ handler: @escaping @Sendable (PlayQueueEvent) -> Void) -> UInt64 {
        broadcaster.addObserver(queue: queue, handler)
    }

    /// Removes a handler added with ``addObserver(queue:_:)``.
    public func removeObserver(_ token: UInt64) { broadcaster.removeObserver(token) }

    /// The events as an `AsyncStream`.
    public func events() -> AsyncStream<PlayQueueEvent> { broadcaster.events() }

    func post(_ e: PlayQueueEvent) { broadcaster.post(e) }

    func postModes(_ s: State) {
        post(.modes(repeat: s.queue.repeatMode, shuffle: s.queue.shuffle, stopAfterCurrent: s.queue.stopAfterCurrent, consume: s.queue.consume))
    }

    // MARK: - Editing

    /// Appends `paths` (or inserts them at `position`, an index into ``entries``); returns their ids.
    @discardableResult
    public func add(_ paths: [String], at position: Int? = nil) -> [Int] {
        state.withLock { s in
            let added = s.queue.add(paths, at: position, current: s.current)
            changed(&s, from: added.index)
            return added.ids
        }
    }

    /// Ids are 1 ..< 2³¹−1 (MPD's song ids are 32-bit), never reused while they can be
    /// avoided: counted up from `nextID`; once the count would pass the top, it starts again
    /// from 1, skipping the ids still in the queue.
    public static let maximumID = Int(Int32.max) - 1

    /// Removes the entries with `ids`. Removing the current entry while playing or paused moves
    /// on to the one after it, keeping the transport state; while stopped it leaves no current
    /// entry (as mpd: `status` then names no song, and `play` starts from the first). Throws
    /// when an id is unknown (nothing is removed then).
    public func remove(_ ids: [Int]) throws(PlayQueueError) {
        try state.withLock { s throws(PlayQueueError) in
            let known = Set(s.queue.entries.map(\.id))
            if let bad = ids.first(where: { !known.contains($0) }) { throw noSuchItem(bad) }
            let gone = Set(ids)
            let first = s.queue.entries.firstIndex { gone.contains($0.id) } ?? s.queue.entries.count
            if let c = s.current, gone.contains(c) {
                leaving(&s)
                let order = s.queue.order
                let i = order.firstIndex(of: c) ?? 0
                let stopped = currentState(s) == .stopped
                let after = stopped ? nil : order[(i + 1)...].first { !gone.contains($0) && s.queue.failure($0) == nil }
                    ?? (s.queue.repeatMode == .all ? order[..<i].first { !gone.contains($0) && s.queue.failure($0) == nil } : nil)
                s.queue.remove(gone)
                jump(&s, to: after, keepRate: true)
            } else {
                s.queue.remove(gone)
            }
            changed(&s, from: first)
        }
    }

    /// Moves the entry `id` to index `position` of ``entries`` (clamped).
    public func move(_ id: Int, to position: Int) throws(PlayQueueError) {
        try state.withLock { s throws(PlayQueueError) in
            guard let i = s.queue.entries.firstIndex(where: { $0.id == id }) else { throw noSuchItem(id) }
            let j = s.queue.move(from: i, to: position)
            changed(&s, from: min(i, j), through: max(i, j))
        }
    }

    /// Puts the entries at positions `range` of ``entries`` (clamped) in a random order; the
    /// current entry, when among them, goes to the range's start first (MPD's `shuffle`, which
    /// keeps it playing).
    public func shuffle(range: Range<Int>) {
        state.withLock { s in
            let r = range.clamped(to: 0..<s.queue.entries.count)
            guard r.count > 1 else { return }
            s.queue.shuffleEntries(in: r, current: s.current)
            changed(&s, from: r.lowerBound, through: r.upperBound - 1)
        }
    }

    /// Forgets why the current entry failed (MPD's `clearerror`: `status` has no `error` line
    /// after it). Returns whether there was a failure to forget.
    @discardableResult
    public func clearFailure() -> Bool {
        state.withLock { s in
            guard let c = s.current, let i = s.queue.entries.firstIndex(where: { $0.id == c }),
                  s.queue.entries[i].failure != nil else { return false }
            s.queue.entries[i].failure = nil
            post(.queue(version: s.queue.version, count: s.queue.entries.count))
            return true
        }
    }

    /// Sets the priority (0–255) of the entries `ids`; in shuffle, the entries not yet played
    /// are reordered so that higher priorities come first. Throws when an id is unknown
    /// (nothing changes then).
    public func setPriority(_ priority: Int, of ids: [Int]) throws(PlayQueueError) {
        try state.withLock { s throws(PlayQueueError) in
            let wanted = Set(ids)
            if let bad = ids.first(where: { id in !s.queue.entries.contains { $0.id == id } }) { throw noSuchItem(bad) }
            s.queue.setPriority(max(0, min(255, priority)), of: wanted, current: s.current)
            changed(&s, from: s.queue.entries.count)
        }
    }

    /// Plays only part of entry `id` from now on (MPD's `rangeid`; nil: all of it). The entry
    /// heard now cannot change (the engine is playing it): ``PlayQueueError/Code/currentItem``.
    public func setClip(_ clip: PlaybackClip?, of id: Int) throws(PlayQueueError) {
        try state.withLock { s throws(PlayQueueError) in
            guard let i = s.queue.entries.firstIndex(where: { $0.id == id }) else { throw noSuchItem(id) }
            if s.current == id, currentState(s) != .stopped {
                throw PlayQueueError(code: .currentItem, message: "cannot change the part played of the item playing now")
            }
            s.queue.entries[i].clip = clip
            // The player may hold it already (fed as next): drop it and what follows, to be fed again.
            if let k = s.fed.indices.dropFirst().first(where: { s.fed[$0].id == id }) {
                player.removeItems(after: s.fed[k - 1].item)
                s.fed.removeSubrange(k...)
            }
            changed(&s, from: i, through: i)
        }
    }

    /// Empties the queue and stops.
    public func clear() {
        state.withLock { s in
            leaving(&s)
            s.queue.removeAll()
            s.current = nil
            stopPlayer(&s)
            changed(&s, from: 0)
        }
    }

    func noSuchItem(_ id: Int) -> PlayQueueError {
        PlayQueueError(code: .noSuchItem, message: "no item with id \(id) in the queue")
    }

    // MARK: - Transport

    /// Plays: resumes when paused; when stopped, starts the current entry (or the first) from its start.
    public func play() throws(PlayQueueError) {
        try refuseWhileOutputIsGone()
        try state.withLock { s throws(PlayQueueError) in
            if s.stopped || s.fed.isEmpty {
                let start = s.current ?? s.queue.order.first { s.queue.failure($0) == nil } ?? s.queue.order.first
                guard let start else { throw PlayQueueError(code: .emptyQueue, message: "the queue is empty") }
                s.current = start
                s.stopped = false
                rebuild(&s)
            }
            player.play()
            publishState(&s)
            try checkOutput()
        }
    }

    /// Plays the entry `id` from its start (a failed entry is retried). With `keepingPause`, a
    /// paused queue stays paused, now at `id`'s start (MPD's `seek` to another song, which
    /// never makes a paused player heard).
    public func play(id: Int, keepingPause: Bool = false) throws(PlayQueueError) {
        try refuseWhileOutputIsGone()
        try state.withLock { s throws(PlayQueueError) in
            guard let i = s.queue.entries.firstIndex(where: { $0.id == id }) else { throw noSuchItem(id) }
            let staysPaused = keepingPause && currentState(s) == .paused
            s.queue.entries[i].failure = nil
            if let c = s.current, c != id, !s.stopped { played(&s, c) }
            // In shuffle, the item played by id takes the current place in the order (after
            // the current item; first when stopped).
            s.queue.playNextInShuffle(id, after: s.stopped ? nil : s.current)
            s.current = id
            s.stopped = false
            s.queue.prioritize(current: s.current)
            rebuild(&s)
            consumePlayed(&s)
            if !staysPaused { player.play() }
            publishState(&s)
            try checkOutput()
        }
    }

    /// Pauses (no effect when stopped).
    public func pause() {
        state.withLock { s in
            guard !s.stopped else { return }
            player.pause()
            publishState(&s)
        }
    }

    /// Pauses when playing, plays otherwise.
    public func toggle() throws(PlayQueueError) {
        if playbackState == .playing { pause() } else { try play() }
    }

    /// Stops: the player lets go of its items (and the device); the current entry stays selected.
    public func stop() {
        state.withLock { s in stopPlayer(&s) }
    }

    /// Goes to the entry after the current one in play order (wrapping when repeat is on);
    /// past the last entry, stops. Keeps playing or paused.
    public func next() throws(PlayQueueError) {
        try state.withLock { s throws(PlayQueueError) in
            guard let c = s.current else { throw PlayQueueError(code: .notPlaying, message: "nothing is current") }
            let order = s.queue.order
            let i = order.firstIndex(of: c) ?? 0
            var succ = order[(i + 1)...].first { s.queue.failure($0) == nil }
            if succ == nil, s.queue.repeatMode != .off { succ = order[...i].first { s.queue.failure($0) == nil } }
            defer { consumePlayed(&s) }
            if let succ, s.fed.count > 1, s.fed[1].id == succ, !s.stopped {
                // The item after is loaded already: advance to it (AVQueuePlayer's
                // advanceToNextItem: current at once).
                played(&s, c)
                leaving(&s)
                s.fed.removeFirst()
                s.current = succ
                player.advanceToNextItem()
                post(.current(s.queue.entry(succ)))
                refeed(&s)
                return
            }
            if !s.stopped { played(&s, c) }
            guard let succ else {
                s.current = nil
                post(.current(nil))
                stopPlayer(&s)
                return
            }
            jump(&s, to: succ, keepRate: true)
        }
    }

    /// Restarts the current item when more than ``restartThreshold`` s in; otherwise goes back to
    /// the item played before (history), or the one before in play order.
    public func previous() throws(PlayQueueError) {
        try state.withLock { s throws(PlayQueueError) in
            guard let c = s.current else { throw PlayQueueError(code: .notPlaying, message: "nothing is current") }
            if !s.stopped, !s.fed.isEmpty, player.currentTime() > Self.restartThreshold {
                player.seek(to: 0)
                return
            }
            let ids = Set(s.queue.entries.map(\.id))
            while let h = s.queue.history.popLast() {
                if ids.contains(h), h != c {
                    jump(&s, to: h, keepRate: true)
                    return
                }
            }
            let order = s.queue.order
            let i = order.firstIndex(of: c) ?? 0
            if i > 0 {
                jump(&s, to: order[i - 1], keepRate: true)
            } else if s.queue.repeatMode == .all, let last = order.last, last != c {
                jump(&s, to: last, keepRate: true)
            } else if !s.stopped {
                player.seek(to: 0)
            }
        }
    }

    /// Seeks the current item to `time` seconds (clamped to [0, duration]).
    public func seek(to time: Double, completion: (@Sendable (Bool) -> Void)? = nil) throws(PlayQueueError) {
        try state.withLock { s throws(PlayQueueError) in
            guard !s.stopped, !s.fed.isEmpty else { throw PlayQueueError(code: .notPlaying, message: "not playing") }
            player.seek(to: max(0, time), queue: queue, completion: completion)
        }
    }

    // MARK: - Modes

    /// Sets the repeat mode; the item fed next follows it at once.
    public func setRepeat(_ mode: RepeatMode) {
        state.withLock { s in
            s.queue.repeatMode = mode
            refeed(&s)
            postModes(s)
        }
    }

    /// Shuffle on: a new random order, the current entry first. Off: queue order.
    public func setShuffle(_ on: Bool) {
        state.withLock { s in
            s.queue.setShuffle(on, current: s.current)
            refeed(&s)
            postModes(s)
        }
    }

    /// Stop at the end of the current item: once (cleared when it takes effect), or, with
    /// `each`, at the end of every item until turned off (MPD's `single 1` without repeat).
    public func setStopAfterCurrent(_ on: Bool, each: Bool = false) {
        state.withLock { s in
            s.queue.stopAfterCurrent = on
            s.queue.stopAfterEach = on && each
            refeed(&s)
            postModes(s)
        }
    }

    /// Consume mode: `on` removes every entry once it is heard to its end or skipped with
    /// next (not while repeat-one holds it current); `oneshot` does so once, then turns off.
    public func setConsume(_ mode: ConsumeMode) {
        state.withLock { s in
            s.queue.consume = mode
            postModes(s)
        }
    }

    /// Restores a saved queue: entries, current entry at `position`, modes and history; paused
    /// (or playing when `play` and the snapshot was playing). Replaces whatever was queued.
    public func restore(_ snap: PlayQueueSnapshot, play: Bool = false) {
        state.withLock { s in
            stopPlayer(&s)
            let ids = s.queue.restore(snap)
            s.current = snap.current.flatMap { ids.contains($0) ? $0 : nil }
            if s.current != nil, snap.state != .stopped {
                s.stopped = false
                rebuild(&s, startingAt: snap.position)
                if play, snap.state == .playing { player.play() }
            }
            changed(&s, from: 0)
            post(.current(s.current.flatMap { s.queue.entry($0) }))
            postModes(s)
            publishState(&s)
        }
    }
}
