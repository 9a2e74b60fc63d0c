// The play queue's data, as mpd's `Queue`: the entries with their ids, priorities and parts
// played, their order and the shuffled one, the version and what moved in each, the modes,
// and the lists of entries played (history, consume). No player here: `PlayQueue` holds a
// `Queue` under its lock and feeds the player from it (PlayerFeed.swift).

import MediaCore
import Player

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

/// The entries and their order, as values: every mutation is one of the methods below, made
/// with `PlayQueue`'s state locked. Which entry is current and what the player holds are
/// `PlayQueue`'s; the methods that depend on the current entry take it as an argument.
struct Queue {
    /// The entries in queue order.
    var entries: [PlayQueueEntry] = []
    /// The id the next added entry gets.
    var nextID = 1
    /// At least the highest id in ``entries`` (stale-high after removals): ids from
    /// `nextID` on are free while `nextID` is above it.
    var highestID = 0
    var repeatMode: RepeatMode = .off
    var shuffle = false
    /// The shuffled order of entry ids (empty when shuffle is off).
    var shuffleOrder: [Int] = []
    var stopAfterCurrent = false
    /// Stop-after-current stays on when it takes effect.
    var stopAfterEach = false
    /// Ids of the entries played before the current one, most recent last.
    var history: [Int] = []
    /// Bumps on every change to the entries.
    var version = 0
    /// The version at which each entry's position last changed (MPD's `plchanges`).
    var moved: [Int: Int] = [:]
    var consume: ConsumeMode = .off
    /// Entries played while consume was on, removed once no longer current.
    var consumed: [Int] = []

    // MARK: - Reading

    /// The order automatic advance follows: the shuffled order when shuffle is on, else queue order.
    var order: [Int] {
        shuffle ? shuffleOrder : entries.map(\.id)
    }

    /// The entry with the id `id`.
    func entry(_ id: Int) -> PlayQueueEntry? {
        entries.first { $0.id == id }
    }

    /// Why the entry `id` failed the last time it was played (nil: it did not, or no such entry).
    func failure(_ id: Int) -> String? {
        entries.first { $0.id == id }?.failure
    }

    /// The player item that plays the entry `id`.
    func item(for id: Int) -> PlayerItem? {
        entries.first { $0.id == id }.map(\.playerItem)
    }

    // MARK: - Ids

    /// `n` free ids (see ``PlayQueue/maximumID``).
    mutating func newIDs(_ n: Int) -> [Int] {
        if nextID > highestID, nextID + n - 1 <= PlayQueue.maximumID {
            defer { nextID += n; highestID = nextID - 1 }
            return Array(nextID..<(nextID + n))
        }
        let used = Set(entries.map(\.id))
        var ids: [Int] = []
        ids.reserveCapacity(n)
        var id = min(max(nextID, 1), PlayQueue.maximumID + 1)
        while ids.count < n {  // (ends: the queue holds far fewer than 2³¹ entries)
            if id > PlayQueue.maximumID { id = 1 }
            if !used.contains(id) { ids.append(id) }
            id += 1
        }
        nextID = id
        highestID = max(used.max() ?? 0, ids.max() ?? 0)
        return ids
    }

    // MARK: - Editing

    /// Inserts entries for `paths` at `position` (an index into ``entries``, clamped; nil: the
    /// end). In shuffle each lands at a random place after `current` in the shuffled order.
    /// Returns their ids and the index of the first.
    mutating func add(_ paths: [String], at position: Int?, current: Int?) -> (ids: [Int], index: Int) {
        let new = zip(newIDs(paths.count), paths).map { PlayQueueEntry(id: $0, path: $1) }
        let at = max(0, min(position ?? entries.count, entries.count))
        entries.insert(contentsOf: new, at: at)
        if shuffle {
            // New entries land at random places after the current one.
            let start = current.flatMap { c in shuffleOrder.firstIndex(of: c) }.map { $0 + 1 } ?? 0
            for e in new { shuffleOrder.insert(e.id, at: Int.random(in: start...shuffleOrder.count)) }
            prioritize(current: current)
        }
        return (new.map(\.id), at)
    }

    /// Removes the entries `gone` from the entries, the shuffled order and the history, and
    /// forgets when they moved.
    mutating func remove(_ gone: Set<Int>) {
        entries.removeAll { gone.contains($0.id) }
        shuffleOrder.removeAll { gone.contains($0) }
        history.removeAll { gone.contains($0) }
        for id in gone { moved[id] = nil }
    }

    /// Moves the entry at index `i` to index `position` (clamped); returns the index it lands at.
    mutating func move(from i: Int, to position: Int) -> Int {
        let e = entries.remove(at: i)
        let j = max(0, min(position, entries.count))
        entries.insert(e, at: j)
        return j
    }

    /// Puts the entries at indexes `r` in a random order, `current` first when among them.
    mutating func shuffleEntries(in r: Range<Int>, current: Int?) {
        var part = Array(entries[r])
        var head: [PlayQueueEntry] = []
        if let c = current, let k = part.firstIndex(where: { $0.id == c }) { head = [part.remove(at: k)] }
        part.shuffle()
        entries.replaceSubrange(r, with: head + part)
    }

    /// Sets the priority of the entries `wanted` to `p`, marks them moved in the version
    /// ``changed(from:through:)`` sets next, and in shuffle reorders what follows `current`.
    mutating func setPriority(_ p: Int, of wanted: Set<Int>, current: Int?) {
        for i in entries.indices where wanted.contains(entries[i].id) {
            entries[i].priority = p
            moved[entries[i].id] = version + 1  // (the version changed() sets)
        }
        prioritize(current: current)
    }

    /// Removes every entry (ids, version and modes stay).
    mutating func removeAll() {
        entries = []
        shuffleOrder = []
        history = []
        moved = [:]
        consumed = []
    }

    /// The entries changed: the version bumps; entries at indexes `from…through` (to the end
    /// without `through`) moved in this version.
    mutating func changed(from: Int, through: Int? = nil) {
        version += 1
        let end = min(through.map { $0 + 1 } ?? entries.count, entries.count)
        if from < end { for i in from..<end { moved[entries[i].id] = version } }
    }

    // MARK: - Order

    /// Shuffle on: a new random order, `current` first. Off: queue order.
    mutating func setShuffle(_ on: Bool, current: Int?) {
        shuffle = on
        if on {
            var rest = entries.map(\.id).filter { $0 != current }
            rest.shuffle()
            shuffleOrder = (current.map { [$0] } ?? []) + rest
            prioritize(current: current)
        } else {
            shuffleOrder = []
        }
    }

    /// In shuffle, the entry `id` played by id takes the place after `current` in the order
    /// (first without one), so the rest plays as shuffled (mpd's rule).
    mutating func playNextInShuffle(_ id: Int, after current: Int?) {
        guard shuffle, let k = shuffleOrder.firstIndex(of: id) else { return }
        shuffleOrder.remove(at: k)
        let at = current.flatMap { c in shuffleOrder.firstIndex(of: c) }.map { $0 + 1 } ?? 0
        shuffleOrder.insert(id, at: at)
    }

    /// In shuffle, orders the entries after `current` by priority, highest first (the
    /// shuffled order kept among equals).
    mutating func prioritize(current: Int?) {
        guard shuffle, entries.contains(where: { $0.priority > 0 }) else { return }
        let start = current.flatMap { c in shuffleOrder.firstIndex(of: c) }.map { $0 + 1 } ?? 0
        let priority = Dictionary(entries.map { ($0.id, $0.priority) }, uniquingKeysWith: max)
        let tail = shuffleOrder[start...].enumerated().sorted { a, b in
            let (pa, pb) = (priority[a.element, default: 0], priority[b.element, default: 0])
            return pa != pb ? pa > pb : a.offset < b.offset
        }
        shuffleOrder.replaceSubrange(start..., with: tail.map(\.element))
    }

    // MARK: - Played entries

    /// `id` was played and is left: into the history; with consume on, to be removed.
    /// Returns whether the consume mode changed (a one-shot consume turns off).
    mutating func played(_ id: Int) -> Bool {
        remember(id)
        guard consume != .off, !consumed.contains(id) else { return false }
        consumed.append(id)
        guard consume == .oneshot else { return false }
        consume = .off
        return true
    }

    private mutating func remember(_ id: Int) {
        if history.last != id { history.append(id) }
        if history.count > PlayQueue.historyLimit { history.removeFirst(history.count - PlayQueue.historyLimit) }
    }

    /// Removes the entries consume mode took but `current`; returns the index of the first
    /// removed (nil: none was in the queue).
    mutating func removeConsumed(keeping current: Int?) -> Int? {
        let gone = Set(consumed.filter { $0 != current })
        consumed.removeAll { gone.contains($0) }
        guard let first = entries.firstIndex(where: { gone.contains($0.id) }) else { return nil }
        remove(gone)
        return first
    }

    // MARK: - Restoring

    /// Takes `snap`'s entries, modes, shuffled order and history (ids it names that are not
    /// among its entries dropped; in shuffle, entries it leaves out of the order appended);
    /// the version goes on from the higher of the two. Returns the entries' ids.
    mutating func restore(_ snap: PlayQueueSnapshot) -> Set<Int> {
        entries = snap.entries
        highestID = snap.entries.map(\.id).max() ?? 0
        nextID = min(max(snap.nextID, 1), PlayQueue.maximumID + 1)
        let ids = Set(snap.entries.map(\.id))
        repeatMode = snap.repeatMode
        shuffle = snap.shuffle
        shuffleOrder = snap.shuffleOrder.filter { ids.contains($0) }
        if shuffle {
            let ordered = Set(shuffleOrder)
            shuffleOrder += snap.entries.map(\.id).filter { !ordered.contains($0) }
        }
        stopAfterCurrent = snap.stopAfterCurrent
        stopAfterEach = snap.stopAfterEach
        consume = snap.consume
        consumed = []
        moved = [:]
        version = max(version, snap.version)
        history = snap.history.filter { ids.contains($0) }
        return ids
    }
}
