import AudioEngine
import Broadcast
import Dispatch
import Player
import Synchronization
import Locking

/// One entry of the play queue: a stable id (never reused while the daemon runs, kept across
/// restarts) and a file.
public struct PlayQueueEntry: Sendable, Equatable, Codable {
    /// The entry's stable id (MPD's song id).
    public let id: Int
    /// The file the entry plays.
    public let path: String
    /// Why the item failed the last time it was played (it is then skipped by automatic
    /// advance until played again by id).
    public var failure: String?
    /// 0–255: in shuffle, entries of a higher priority play first (MPD's `prio`); 0 by default.
    public var priority: Int
    /// The part of the file played (MPD's `rangeid`); nil: all of it.
    public var clip: PlaybackClip?

    /// An entry for `path` with the id `id`.
    /// - Parameters:
    ///   - id: The stable id (the queue hands them out).
    ///   - path: The file.
    ///   - failure: Why it failed the last time it was played, if it did.
    ///   - priority: Its shuffle priority, 0–255.
    ///   - clip: The part of the file played (nil: all of it).
    public init(id: Int, path: String, failure: String? = nil, priority: Int = 0, clip: PlaybackClip? = nil) {
        self.id = id
        self.path = path
        self.failure = failure
        self.priority = priority
        self.clip = clip
    }

    private enum CodingKeys: String, CodingKey { case id, path, failure, priority, clip }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(Int.self, forKey: .id)
        path = try c.decode(String.self, forKey: .path)
        failure = try c.decodeIfPresent(String.self, forKey: .failure)
        priority = try c.decodeIfPresent(Int.self, forKey: .priority) ?? 0  // (saved before priorities)
        clip = try c.decodeIfPresent(PlaybackClip.self, forKey: .clip)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(path, forKey: .path)
        try c.encodeIfPresent(failure, forKey: .failure)
        if priority != 0 { try c.encode(priority, forKey: .priority) }
        try c.encodeIfPresent(clip, forKey: .clip)
    }

    /// The player item that plays this entry.
    var playerItem: PlayerItem { PlayerItem(path: path, clip: clip) }
}

/// Consume mode (MPD's `consume`): entries are removed from the queue once played.
public enum ConsumeMode: String, Sendable, Codable, CaseIterable {
    /// Entries stay in the queue once played (the default).
    case off
    /// Every entry heard to its end or skipped with next is removed.
    case on
    /// Like `on` for one entry, then off.
    case oneshot
}

/// Repeat modes (MPRemoteCommandCenter's `changeRepeatModeCommand`, MPD's repeat/single).
public enum RepeatMode: String, Sendable, Codable, CaseIterable {
    /// Play to the end of the queue, then stop.
    case off
    /// Repeat the current item (next/previous still move).
    case one
    /// Wrap around from the last item to the first.
    case all
}

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

    private struct State {
        var entries: [PlayQueueEntry] = []
        var nextID = 1
        /// At least the highest id in ``entries`` (stale-high after removals): ids from
        /// `nextID` on are free while `nextID` is above it.
        var highestID = 0
        var current: Int?
        var stopped = true
        /// What the player holds, in order: its current item first.
        var fed: [(id: Int, item: PlayerItem)] = []
        var repeatMode: RepeatMode = .off
        var shuffle = false
        var shuffleOrder: [Int] = []
        var stopAfterCurrent = false
        /// Stop-after-current stays on when it takes effect.
        var stopAfterEach = false
        var history: [Int] = []
        var version = 0
        /// The version at which each entry's position last changed (MPD's `plchanges`).
        var moved: [Int: Int] = [:]
        var consume: ConsumeMode = .off
        /// Entries played while consume was on, removed once no longer current.
        var consumed: [Int] = []
        var failuresInARow = 0
        var lastState: PlaybackState = .stopped
    }

    private let state = Lock(State())
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
    public var entries: [PlayQueueEntry] { state.withLock { $0.entries } }
    /// How many entries the queue has (no copy of them).
    public var count: Int { state.withLock { $0.entries.count } }
    /// The current entry (selected even while stopped).
    public var current: PlayQueueEntry? { state.withLock { s in s.current.flatMap { id in s.entries.first { $0.id == id } } } }
    /// The current entry's index in ``entries``.
    public var currentIndex: Int? { state.withLock { s in s.current.flatMap { id in s.entries.firstIndex { $0.id == id } } } }
    /// Playing, paused or stopped.
    public var playbackState: PlaybackState { state.withLock { currentState($0) } }
    /// Bumps on every change to the entries.
    public var version: Int { state.withLock { $0.version } }
    /// The repeat mode (``setRepeat(_:)`` changes it).
    public var repeatMode: RepeatMode { state.withLock { $0.repeatMode } }
    /// Whether shuffle is on (``setShuffle(_:)`` changes it).
    public var shuffle: Bool { state.withLock { $0.shuffle } }
    /// Whether playback stops at the end of the current entry (``setStopAfterCurrent(_:each:)``).
    public var stopAfterCurrent: Bool { state.withLock { $0.stopAfterCurrent } }
    /// Whether stop-after-current stays on after each entry (``setStopAfterCurrent(_:each:)``).
    public var stopAfterEach: Bool { state.withLock { $0.stopAfterEach } }
    /// The consume mode (``setConsume(_:)`` changes it).
    public var consume: ConsumeMode { state.withLock { $0.consume } }
    /// Ids of the entries played before the current one, most recent last.
    public var history: [Int] { state.withLock { $0.history } }
    /// The order automatic advance follows (the shuffled order when shuffle is on).
    public var playOrder: [Int] { state.withLock { order($0) } }

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
            let ci = s.current.flatMap { id in s.entries.firstIndex { $0.id == id } }
            var next: (PlayQueueEntry, Int)?
            if let ci, let n = automaticNext(after: s.entries[ci].id, s, ignoringStop: true),
               let ni = s.entries.firstIndex(where: { $0.id == n }) {
                next = (s.entries[ni], ni)
            }
            return Status(state: state, current: ci.map { (s.entries[$0], $0) }, next: next, count: s.entries.count,
                          version: s.version, repeatMode: s.repeatMode, shuffle: s.shuffle,
                          stopAfterCurrent: s.stopAfterCurrent, stopAfterEach: s.stopAfterEach, consume: s.consume,
                          elapsed: state == .stopped ? 0 : max(0, player.currentTime()))
        }
    }

    /// The entries whose position changed after queue version `version` (added, moved, or
    /// shifted by an edit before them), with their indexes: MPD's `plchanges`. A version the
    /// queue never had (from before a restart) lists every entry.
    public func changes(since version: Int) -> [(index: Int, entry: PlayQueueEntry)] {
        state.withLock { s in
            s.entries.enumerated().compactMap { i, e in
                version > s.version || s.moved[e.id, default: 0] > version ? (i, e) : nil
            }
        }
    }

    /// A snapshot for saving.
    public func snapshot() -> PlayQueueSnapshot {
        state.withLock { s in
            PlayQueueSnapshot(entries: s.entries, nextID: s.nextID, current: s.current,
                              position: s.stopped || s.fed.isEmpty ? 0 : max(0, player.currentTime()),
                              state: currentState(s), repeatMode: s.repeatMode, shuffle: s.shuffle,
                              shuffleOrder: s.shuffleOrder, stopAfterCurrent: s.stopAfterCurrent,
                              stopAfterEach: s.stopAfterEach, history: s.history,
                              consume: s.consume, version: s.version)
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

    // MARK: - Editing

    /// Appends `paths` (or inserts them at `position`, an index into ``entries``); returns their ids.
    @discardableResult
    public func add(_ paths: [String], at position: Int? = nil) -> [Int] {
        state.withLock { s in
            let new = zip(Self.newIDs(paths.count, &s), paths).map { PlayQueueEntry(id: $0, path: $1) }
            let at = max(0, min(position ?? s.entries.count, s.entries.count))
            s.entries.insert(contentsOf: new, at: at)
            if s.shuffle {
                // New entries land at random places after the current one.
                let start = s.current.flatMap { c in s.shuffleOrder.firstIndex(of: c) }.map { $0 + 1 } ?? 0
                for e in new { s.shuffleOrder.insert(e.id, at: Int.random(in: start...s.shuffleOrder.count)) }
                prioritize(&s)
            }
            changed(&s, from: at)
            return new.map(\.id)
        }
    }

    /// Ids are 1 ..< 2³¹−1 (MPD's song ids are 32-bit), never reused while they can be
    /// avoided: counted up from `nextID`; once the count would pass the top, it starts again
    /// from 1, skipping the ids still in the queue.
    public static let maximumID = Int(Int32.max) - 1

    private static func newIDs(_ n: Int, _ s: inout State) -> [Int] {
        if s.nextID > s.highestID, s.nextID + n - 1 <= maximumID {
            defer { s.nextID += n; s.highestID = s.nextID - 1 }
            return Array(s.nextID..<(s.nextID + n))
        }
        let used = Set(s.entries.map(\.id))
        var ids: [Int] = []
        ids.reserveCapacity(n)
        var id = min(max(s.nextID, 1), maximumID + 1)
        while ids.count < n {  // (ends: the queue holds far fewer than 2³¹ entries)
            if id > maximumID { id = 1 }
            if !used.contains(id) { ids.append(id) }
            id += 1
        }
        s.nextID = id
        s.highestID = max(used.max() ?? 0, ids.max() ?? 0)
        return ids
    }

    /// Removes the entries with `ids`. Removing the current entry while playing or paused moves
    /// on to the one after it, keeping the transport state; while stopped it leaves no current
    /// entry (as mpd: `status` then names no song, and `play` starts from the first). Throws
    /// when an id is unknown (nothing is removed then).
    public func remove(_ ids: [Int]) throws(PlayQueueError) {
        try state.withLock { s throws(PlayQueueError) in
            let known = Set(s.entries.map(\.id))
            if let bad = ids.first(where: { !known.contains($0) }) { throw noSuchItem(bad) }
            let gone = Set(ids)
            let first = s.entries.firstIndex { gone.contains($0.id) } ?? s.entries.count
            if let c = s.current, gone.contains(c) {
                let order = order(s)
                let i = order.firstIndex(of: c) ?? 0
                let stopped = currentState(s) == .stopped
                let after = stopped ? nil : order[(i + 1)...].first { !gone.contains($0) && failure($0, s) == nil }
                    ?? (s.repeatMode == .all ? order[..<i].first { !gone.contains($0) && failure($0, s) == nil } : nil)
                s.entries.removeAll { gone.contains($0.id) }
                s.shuffleOrder.removeAll { gone.contains($0) }
                s.history.removeAll { gone.contains($0) }
                jump(&s, to: after, keepRate: true)
            } else {
                s.entries.removeAll { gone.contains($0.id) }
                s.shuffleOrder.removeAll { gone.contains($0) }
                s.history.removeAll { gone.contains($0) }
            }
            for id in gone { s.moved[id] = nil }
            changed(&s, from: first)
        }
    }

    /// Moves the entry `id` to index `position` of ``entries`` (clamped).
    public func move(_ id: Int, to position: Int) throws(PlayQueueError) {
        try state.withLock { s throws(PlayQueueError) in
            guard let i = s.entries.firstIndex(where: { $0.id == id }) else { throw noSuchItem(id) }
            let e = s.entries.remove(at: i)
            let j = max(0, min(position, s.entries.count))
            s.entries.insert(e, at: j)
            changed(&s, from: min(i, j), through: max(i, j))
        }
    }

    /// Puts the entries at positions `range` of ``entries`` (clamped) in a random order; the
    /// current entry, when among them, goes to the range's start first (MPD's `shuffle`, which
    /// keeps it playing).
    public func shuffle(range: Range<Int>) {
        state.withLock { s in
            let r = range.clamped(to: 0..<s.entries.count)
            guard r.count > 1 else { return }
            var part = Array(s.entries[r])
            var head: [PlayQueueEntry] = []
            if let c = s.current, let k = part.firstIndex(where: { $0.id == c }) { head = [part.remove(at: k)] }
            part.shuffle()
            s.entries.replaceSubrange(r, with: head + part)
            changed(&s, from: r.lowerBound, through: r.upperBound - 1)
        }
    }

    /// Forgets why the current entry failed (MPD's `clearerror`: `status` has no `error` line
    /// after it). Returns whether there was a failure to forget.
    @discardableResult
    public func clearFailure() -> Bool {
        state.withLock { s in
            guard let c = s.current, let i = s.entries.firstIndex(where: { $0.id == c }), s.entries[i].failure != nil else { return false }
            s.entries[i].failure = nil
            post(.queue(version: s.version, count: s.entries.count))
            return true
        }
    }

    /// Sets the priority (0–255) of the entries `ids`; in shuffle, the entries not yet played
    /// are reordered so that higher priorities come first. Throws when an id is unknown
    /// (nothing changes then).
    public func setPriority(_ priority: Int, of ids: [Int]) throws(PlayQueueError) {
        try state.withLock { s throws(PlayQueueError) in
            let wanted = Set(ids)
            if let bad = ids.first(where: { id in !s.entries.contains { $0.id == id } }) { throw noSuchItem(bad) }
            let p = max(0, min(255, priority))
            for i in s.entries.indices where wanted.contains(s.entries[i].id) {
                s.entries[i].priority = p
                s.moved[s.entries[i].id] = s.version + 1  // (the version changed() sets)
            }
            prioritize(&s)
            changed(&s, from: s.entries.count)
        }
    }

    /// Plays only part of entry `id` from now on (MPD's `rangeid`; nil: all of it). The entry
    /// heard now cannot change (the engine is playing it): ``PlayQueueError/Code/currentItem``.
    public func setClip(_ clip: PlaybackClip?, of id: Int) throws(PlayQueueError) {
        try state.withLock { s throws(PlayQueueError) in
            guard let i = s.entries.firstIndex(where: { $0.id == id }) else { throw noSuchItem(id) }
            if s.current == id, currentState(s) != .stopped {
                throw PlayQueueError(code: .currentItem, message: "cannot change the part played of the item playing now")
            }
            s.entries[i].clip = clip
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
            s.entries = []
            s.shuffleOrder = []
            s.history = []
            s.moved = [:]
            s.consumed = []
            s.current = nil
            stopPlayer(&s)
            changed(&s, from: 0)
        }
    }

    // MARK: - Transport

    /// Plays: resumes when paused; when stopped, starts the current entry (or the first) from its start.
    public func play() throws(PlayQueueError) {
        try refuseWhileOutputIsGone()
        try state.withLock { s throws(PlayQueueError) in
            if s.stopped || s.fed.isEmpty {
                let start = s.current ?? order(s).first { failure($0, s) == nil } ?? order(s).first
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

    /// Throws when the player could not play because its device is still gone.
    private func checkOutput() throws(PlayQueueError) {
        guard player.rate == 0, let e = player.outputError else { return }
        throw Self.outputUnavailable(e)
    }

    /// Before anything changes: a device that failed and is still gone refuses `play` (the
    /// queue stays as it is, paused where it was heard).
    private func refuseWhileOutputIsGone() throws(PlayQueueError) {
        guard let e = player.outputError, !player.outputIsBack() else { return }
        throw Self.outputUnavailable(e)
    }

    private static func outputUnavailable(_ e: MediaError) -> PlayQueueError {
        PlayQueueError(code: .outputUnavailable, message: "\(e.item) is unavailable (\(e.message)): paused where it stopped")
    }

    /// Plays the entry `id` from its start (a failed entry is retried). With `keepingPause`, a
    /// paused queue stays paused, now at `id`'s start (MPD's `seek` to another song, which
    /// never makes a paused player heard).
    public func play(id: Int, keepingPause: Bool = false) throws(PlayQueueError) {
        try refuseWhileOutputIsGone()
        try state.withLock { s throws(PlayQueueError) in
            guard let i = s.entries.firstIndex(where: { $0.id == id }) else { throw noSuchItem(id) }
            let staysPaused = keepingPause && currentState(s) == .paused
            s.entries[i].failure = nil
            if let c = s.current, c != id, !s.stopped { played(&s, c) }
            if s.shuffle, let k = s.shuffleOrder.firstIndex(of: id) {
                // In shuffle, the item played by id takes the current place in the order (after
                // the current item; first when stopped), so the rest plays as shuffled (mpd's rule).
                s.shuffleOrder.remove(at: k)
                let at = s.stopped ? 0 : s.current.flatMap { c in s.shuffleOrder.firstIndex(of: c) }.map { $0 + 1 } ?? 0
                s.shuffleOrder.insert(id, at: at)
            }
            s.current = id
            s.stopped = false
            prioritize(&s)
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
            let order = order(s)
            let i = order.firstIndex(of: c) ?? 0
            var succ = order[(i + 1)...].first { failure($0, s) == nil }
            if succ == nil, s.repeatMode != .off { succ = order[...i].first { failure($0, s) == nil } }
            defer { consumePlayed(&s) }
            if let succ, s.fed.count > 1, s.fed[1].id == succ, !s.stopped {
                // The item after is loaded already: advance to it (AVQueuePlayer's
                // advanceToNextItem: current at once).
                played(&s, c)
                s.fed.removeFirst()
                s.current = succ
                player.advanceToNextItem()
                post(.current(s.entries.first { $0.id == succ }))
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
            let ids = Set(s.entries.map(\.id))
            while let h = s.history.popLast() {
                if ids.contains(h), h != c {
                    jump(&s, to: h, keepRate: true)
                    return
                }
            }
            let order = order(s)
            let i = order.firstIndex(of: c) ?? 0
            if i > 0 {
                jump(&s, to: order[i - 1], keepRate: true)
            } else if s.repeatMode == .all, let last = order.last, last != c {
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

    /// Sets the repeat mode; the item fed next follows it at once.
    public func setRepeat(_ mode: RepeatMode) {
        state.withLock { s in
            s.repeatMode = mode
            refeed(&s)
            postModes(s)
        }
    }

    /// Shuffle on: a new random order, the current entry first. Off: queue order.
    public func setShuffle(_ on: Bool) {
        state.withLock { s in
            s.shuffle = on
            if on {
                var rest = s.entries.map(\.id).filter { $0 != s.current }
                rest.shuffle()
                s.shuffleOrder = (s.current.map { [$0] } ?? []) + rest
                prioritize(&s)
            } else {
                s.shuffleOrder = []
            }
            refeed(&s)
            postModes(s)
        }
    }

    /// Stop at the end of the current item: once (cleared when it takes effect), or, with
    /// `each`, at the end of every item until turned off (MPD's `single 1` without repeat).
    public func setStopAfterCurrent(_ on: Bool, each: Bool = false) {
        state.withLock { s in
            s.stopAfterCurrent = on
            s.stopAfterEach = on && each
            refeed(&s)
            postModes(s)
        }
    }

    /// Consume mode: `on` removes every entry once it is heard to its end or skipped with
    /// next (not while repeat-one holds it current); `oneshot` does so once, then turns off.
    public func setConsume(_ mode: ConsumeMode) {
        state.withLock { s in
            s.consume = mode
            postModes(s)
        }
    }

    /// Restores a saved queue: entries, current entry at `position`, modes and history; paused
    /// (or playing when `play` and the snapshot was playing). Replaces whatever was queued.
    public func restore(_ snap: PlayQueueSnapshot, play: Bool = false) {
        state.withLock { s in
            stopPlayer(&s)
            s.entries = snap.entries
            s.highestID = snap.entries.map(\.id).max() ?? 0
            s.nextID = min(max(snap.nextID, 1), Self.maximumID + 1)
            let ids = Set(snap.entries.map(\.id))
            s.current = snap.current.flatMap { ids.contains($0) ? $0 : nil }
            s.repeatMode = snap.repeatMode
            s.shuffle = snap.shuffle
            s.shuffleOrder = snap.shuffleOrder.filter { ids.contains($0) }
            if s.shuffle {
                let ordered = Set(s.shuffleOrder)
                s.shuffleOrder += snap.entries.map(\.id).filter { !ordered.contains($0) }
            }
            s.stopAfterCurrent = snap.stopAfterCurrent
            s.stopAfterEach = snap.stopAfterEach
            s.consume = snap.consume
            s.consumed = []
            s.moved = [:]
            s.version = max(s.version, snap.version)
            s.history = snap.history.filter { ids.contains($0) }
            if s.current != nil, snap.state != .stopped {
                s.stopped = false
                rebuild(&s, startingAt: snap.position)
                if play, snap.state == .playing { player.play() }
            }
            changed(&s, from: 0)
            post(.current(s.current.flatMap { id in s.entries.first { $0.id == id } }))
            postModes(s)
            publishState(&s)
        }
    }

    // MARK: - Internals (all with the state locked)

    private func order(_ s: State) -> [Int] {
        s.shuffle ? s.shuffleOrder : s.entries.map(\.id)
    }

    private func failure(_ id: Int, _ s: State) -> String? {
        s.entries.first { $0.id == id }?.failure
    }

    private func noSuchItem(_ id: Int) -> PlayQueueError {
        PlayQueueError(code: .noSuchItem, message: "no item with id \(id) in the queue")
    }

    private func currentState(_ s: State) -> PlaybackState {
        if s.stopped || s.fed.isEmpty { return .stopped }
        return player.rate == 0 ? .paused : .playing
    }

    /// The entry automatic advance plays after `id`.
    private func automaticNext(after id: Int, _ s: State, ignoringStop: Bool = false) -> Int? {
        if s.stopAfterCurrent, !ignoringStop { return nil }
        if s.repeatMode == .one { return failure(id, s) == nil ? id : nil }
        // Failed entries are skipped, and so are those consume mode is about to remove.
        let consumed = s.consumed
        guard !s.shuffle else {
            let order = s.shuffleOrder
            guard let i = order.firstIndex(of: id) else { return nil }
            let playable = { (n: Int) in self.failure(n, s) == nil && !consumed.contains(n) }
            if let n = order[(i + 1)...].first(where: playable) { return n }
            if s.repeatMode == .all { return order[...i].first(where: playable) }
            return nil
        }
        // Queue order, read in place (no copy of the ids).
        let e = s.entries
        guard let i = e.firstIndex(where: { $0.id == id }) else { return nil }
        let playable = { (x: PlayQueueEntry) in x.failure == nil && !consumed.contains(x.id) }
        if let n = e[(i + 1)...].first(where: playable) { return n.id }
        if s.repeatMode == .all { return e[...i].first(where: playable)?.id }
        return nil
    }

    /// `id` was played and is left: into the history; with consume on, to be removed.
    private func played(_ s: inout State, _ id: Int) {
        remember(&s, id)
        guard s.consume != .off, !s.consumed.contains(id) else { return }
        s.consumed.append(id)
        if s.consume == .oneshot {
            s.consume = .off
            postModes(s)
        }
    }

    /// Removes the entries consume mode took, once none of them is current (automatic advance
    /// skips them meanwhile; a consumed one fed as next is dropped by the refeed `changed` does).
    private func consumePlayed(_ s: inout State) {
        let gone = Set(s.consumed.filter { $0 != s.current })
        s.consumed.removeAll { gone.contains($0) }
        guard let first = s.entries.firstIndex(where: { gone.contains($0.id) }) else { return }
        s.entries.removeAll { gone.contains($0.id) }
        s.shuffleOrder.removeAll { gone.contains($0) }
        s.history.removeAll { gone.contains($0) }
        for id in gone { s.moved[id] = nil }
        changed(&s, from: first)
    }

    /// In shuffle, orders the entries after the current one by priority, highest first (the
    /// shuffled order kept among equals).
    private func prioritize(_ s: inout State) {
        guard s.shuffle, s.entries.contains(where: { $0.priority > 0 }) else { return }
        let start = s.current.flatMap { c in s.shuffleOrder.firstIndex(of: c) }.map { $0 + 1 } ?? 0
        let priority = Dictionary(s.entries.map { ($0.id, $0.priority) }, uniquingKeysWith: max)
        let tail = s.shuffleOrder[start...].enumerated().sorted { a, b in
            let (pa, pb) = (priority[a.element, default: 0], priority[b.element, default: 0])
            return pa != pb ? pa > pb : a.offset < b.offset
        }
        s.shuffleOrder.replaceSubrange(start..., with: tail.map(\.element))
    }

    private func remember(_ s: inout State, _ id: Int) {
        if s.history.last != id { s.history.append(id) }
        if s.history.count > Self.historyLimit { s.history.removeFirst(s.history.count - Self.historyLimit) }
    }

    private func item(for id: Int, _ s: State) -> PlayerItem? {
        s.entries.first { $0.id == id }.map(\.playerItem)
    }

    /// Makes `id` current, keeping playing/paused (stopped stays stopped, nil stops).
    private func jump(_ s: inout State, to id: Int?, keepRate: Bool) {
        guard let id else {
            s.current = nil
            post(.current(nil))
            stopPlayer(&s)
            return
        }
        s.current = id
        if s.stopped {
            post(.current(s.entries.first { $0.id == id }))
            return
        }
        let playing = player.rate != 0
        rebuild(&s)
        if keepRate, playing { player.play() }
    }

    /// Replaces what the player holds by the current entry (from `startingAt`) and its successor.
    private func rebuild(_ s: inout State, startingAt time: Double = 0) {
        let wasPlaying = player.rate != 0
        s.fed = []
        guard let c = s.current, let item = item(for: c, s) else {
            player.removeAllItems()
            return
        }
        // One step: the device stays open, as for any other jump.
        player.replaceAllItems(with: item, startingAt: time > 0 ? time : nil)
        s.fed = [(c, item)]
        refeed(&s)
        if wasPlaying { player.play() }
        post(.current(s.entries.first { $0.id == c }))
    }

    /// Keeps what the player holds after the current item what automatic advance plays next:
    /// ``lookahead`` items, counting none that failed to decode ahead of the listener. Those stay
    /// where they are (their failure is reported, and the entry marked, when the listener
    /// reaches it) and what follows them is fed at once, so the change stays gapless. Only what
    /// differs from the wanted order is replaced; what is fed as wanted stays.
    private func refeed(_ s: inout State) {
        guard let first = s.fed.first else { return }
        let failed = Set(s.fed.lazy.filter { $0.item.status == .failed }.map(\.id))
        let want = upcoming(after: first.id, s, skipping: failed)
        var w = 0, keep = 0  // wanted items fed so far; the fed index of the last item that stays
        for k in s.fed.indices.dropFirst() {
            if s.fed[k].item.status == .failed {
                keep = k
                continue
            }
            guard w < want.count, s.fed[k].id == want[w] else { break }
            w += 1
            keep = k
        }
        if keep + 1 < s.fed.count {
            player.removeItems(after: s.fed[keep].item)
            s.fed.removeSubrange((keep + 1)...)
        }
        guard w < want.count else { return }
        let byID = want.count - w > 8 ? Dictionary(s.entries.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a }) : nil
        let items = want[w...].compactMap { id -> (id: Int, item: PlayerItem)? in
            let item = byID.map { $0[id].map(\.playerItem) } ?? self.item(for: id, s)
            return item.map { (id, $0) }
        }
        let n = player.insert(contentsOf: items.map(\.item), after: s.fed[keep].item)
        s.fed += items.prefix(n)
    }

    /// The entries automatic advance plays after `id`, in order, leaving out `skipped` (items
    /// that failed to decode, not marked yet): at most ``lookahead`` of them, and with more than
    /// one, at most the queue's length (but 8 at least: with repeat all a short queue comes
    /// round again; repeat one repeats `id` 8 times at most).
    private func upcoming(after id: Int, _ s: State, skipping failed: Set<Int> = []) -> [Int] {
        guard !s.stopAfterCurrent else { return [] }
        guard lookahead > 1 || !failed.isEmpty else { return automaticNext(after: id, s).map { [$0] } ?? [] }
        if s.repeatMode == .one {
            return failure(id, s) == nil && !failed.contains(id) ? Array(repeating: id, count: min(lookahead, 8)) : []
        }
        let order = order(s)
        let limit = min(lookahead, max(order.count, 8))
        guard let i = order.firstIndex(of: id) else { return [] }
        let skipped = Set(s.entries.lazy.filter { $0.failure != nil }.map(\.id)).union(s.consumed).union(failed)
        var out: [Int] = []
        var k = i + 1, steps = 0
        while out.count < limit, steps < 2 * limit + order.count {
            if k == order.count {
                guard s.repeatMode == .all else { break }
                k = 0
            }
            if !skipped.contains(order[k]) { out.append(order[k]) }
            k += 1
            steps += 1
        }
        return out
    }

    private func stopPlayer(_ s: inout State) {
        s.stopped = true
        s.fed = []
        player.removeAllItems()
        publishState(&s)
    }

    /// The entries changed: the version bumps; entries at indexes `from…through` (to the end
    /// without `through`) moved in this version.
    private func changed(_ s: inout State, from: Int, through: Int? = nil) {
        s.version += 1
        let end = min(through.map { $0 + 1 } ?? s.entries.count, s.entries.count)
        if from < end { for i in from..<end { s.moved[s.entries[i].id] = s.version } }
        refeed(&s)
        post(.queue(version: s.version, count: s.entries.count))
    }

    private func postModes(_ s: State) {
        post(.modes(repeat: s.repeatMode, shuffle: s.shuffle, stopAfterCurrent: s.stopAfterCurrent, consume: s.consume))
    }

    private func publishState(_ s: inout State) {
        let now = currentState(s)
        guard now != s.lastState else { return }
        s.lastState = now
        post(.state(now))
    }

    private func post(_ e: PlayQueueEvent) { broadcaster.post(e) }

    // MARK: - Player events (on `queue`)

    private func handle(_ e: PlayerEvent) {
        state.withLock { s in
            switch e {
            case .currentItemChanged, .itemFailedToPlayToEnd:
                settle(&s)
            case .itemDidPlayToEnd(let item):
                s.failuresInARow = 0
                if s.fed.count == 1, s.fed[0].item === item { ranOut(&s, after: s.fed[0].id, failed: false) }
            case .timeJumped(let item, let time):
                if let f = s.fed.first, f.item === item { post(.seeked(id: f.id, time: time)) }
            case .timedMetadata(let item, let metadata):
                if let f = s.fed.first, f.item === item { post(.metadata(id: f.id, metadata)) }
            case .itemStatusChanged(_, .failed):
                refeed(&s)  // the decoder went on past it: what follows is fed now
            case .rateChanged, .timeControlStatusChanged:
                publishState(&s)
            default:
                break
            }
            consumePlayed(&s)
        }
    }

    /// Brings ``State/fed`` in line with what the player still holds: items it let go of were
    /// heard to their end (into the history) or failed (marked, reported); the first one it
    /// still holds is current. When it holds nothing after a failure, the queue goes on with
    /// what comes next; after a normal end, the queue has ended.
    private func settle(_ s: inout State) {
        guard !s.stopped else { return }
        let live = Set(player.items().map(ObjectIdentifier.init))
        var lastDropped: (id: Int, failed: Bool)?
        var frontChanged = false
        var k = 0
        while k < s.fed.count {
            let f = s.fed[k]
            if live.contains(ObjectIdentifier(f.item)) {
                k += 1
                continue
            }
            if f.item.status == .failed {
                let reason = f.item.error?.reason ?? "failed"
                if let i = s.entries.firstIndex(where: { $0.id == f.id }) {
                    s.entries[i].failure = reason
                    post(.failed(s.entries[i], reason: reason))
                }
                s.failuresInARow += 1
                lastDropped = (f.id, true)
            } else if k == 0 {
                // Heard to its end before its start was handled here (a device far faster than
                // real time): it was current all the same, and is announced so, in order.
                if s.current != f.id {
                    s.current = f.id
                    post(.current(s.entries.first { $0.id == f.id }))
                }
                played(&s, f.id)
                lastDropped = (f.id, false)
            } else {
                k += 1  // not failed, not heard: removed by someone else; keep the books as they are
                continue
            }
            if k == 0 { frontChanged = true }
            s.fed.remove(at: k)
        }
        if s.failuresInARow >= Self.maximumFailuresInARow {
            s.failuresInARow = 0
            stopPlayer(&s)
            return
        }
        if let first = s.fed.first {
            if frontChanged || first.id != s.current {
                s.current = first.id
                post(.current(s.entries.first { $0.id == first.id }))
            }
            refeed(&s)
            return
        }
        guard let dropped = lastDropped else { return }
        ranOut(&s, after: dropped.id, failed: dropped.failed)
    }

    /// The player holds nothing after `id` (heard to its end, or failed): the queue goes on
    /// with what comes next, or ends. An entry that is due but was not fed in time (the player
    /// reached the end of what it held first: a device far faster than real time, a machine
    /// too busy to feed it) plays now, after a short gap, rather than stopping the queue.
    private func ranOut(_ s: inout State, after id: Int, failed: Bool) {
        if failed || !s.stopAfterCurrent, let n = automaticNext(after: id, s) {
            let playing = player.rate != 0 || s.lastState == .playing
            if !failed { played(&s, id) }  // (at most once: `played` is idempotent)
            s.current = n
            rebuild(&s)
            if playing { player.play() }
        } else {
            s.current = id
            endOfQueue(&s)
        }
    }

    /// The last fed item was heard to its end (or failed): stop. With stop-after-current, the
    /// entry after it becomes current (stopped) and the flag clears.
    private func endOfQueue(_ s: inout State) {
        let last = s.fed.first?.id ?? s.current
        if s.stopAfterCurrent, let last {
            s.stopAfterCurrent = s.stopAfterEach
            played(&s, last)
            s.current = automaticNext(after: last, s, ignoringStop: true) ?? s.current
            post(.current(s.current.flatMap { id in s.entries.first { $0.id == id } }))
            postModes(s)
            stopPlayer(&s)
            return
        }
        if let last { played(&s, last) }
        s.current = nil
        post(.current(nil))
        stopPlayer(&s)
    }
}
