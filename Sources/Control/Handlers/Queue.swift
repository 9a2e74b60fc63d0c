import BacklineSchema
import AudioEngine
import MediaCore
import PlayQueue

// Queue: add, insert, remove, move, clear, list.

/// Queues files, directories (recursively, in name order) and M3U playlists, relative to the
/// music directory; at `position` (an index) or at the end. Paths are resolved and tags read
/// off the command lock and off the event loop (on a thread of its own when a path is a
/// playlist URL: ``CommandExecutor/expanding(_:)``); only the queue change takes the lock.
public struct AddCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .add, .queue, executor: .offLoop)
    public var paths: [String]
    public var position: Int?
    /// Whether paths that cannot be used are skipped (listed in the reply) instead of failing
    /// the request; when none can be used it fails with the first one's reason.
    public var partial: Bool
    /// Where the items go, found when the queue changes, under the command lock: relative to
    /// the current item then (MPD's `+N`, `-N`). Set, it is used instead of `position`.
    public var target: QueueTarget?
    /// Whether a position past the queue's end is refused (`bad-argument` "Number too large",
    /// MPD's `findadd`) instead of appending.
    public var refusesPastEnd = false
    public init(paths: [String], position: Int? = nil, partial: Bool = false) {
        self.paths = paths
        self.position = position
        self.partial = partial
    }
    /// Queues `paths` at `target`, found when the queue changes.
    public init(paths: [String], target: QueueTarget?, partial: Bool = false, refusesPastEnd: Bool = false) {
        self.init(paths: paths, position: nil, partial: partial)
        self.target = target
        self.refusesPastEnd = refusesPastEnd
    }
    public init(_ a: Arguments) throws(CommandError) {
        try self.init(a, command: "add")
    }
    init(_ a: Arguments, command: String) throws(CommandError) {
        paths = (a.strings("paths") ?? []) + (a.string("path").map { [$0] } ?? [])
        guard !paths.isEmpty else { throw .badArgument("\(command): \"paths\" (array of strings) or \"path\" is required") }
        position = a.integer("position")
        partial = a.bool("partial") ?? false
        if let position, position < 0 { throw .badArgument("add: position must be ≥ 0") }
    }
    public var arguments: Arguments {
        var v: [String: ArgumentValue] = ["paths": .strings(paths)]
        if let position { v["position"] = .integer(position) }
        if partial { v["partial"] = .boolean(true) }
        return Arguments(v)
    }
    public var executor: CommandExecutor { .expanding(paths) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        try add(paths, x, failFirst: !partial)
    }

    /// Resolves `requests` and queues what they name. With `failFirst` one request that
    /// cannot be used fails them all (nothing is added); without, it is skipped with its reason.
    ///
    /// Every request shares one walk (``PathResolver/Walk``): the bound of playlist entries and
    /// the time for fetches by URL are the whole request's, not each path's; past the entries'
    /// bound the request is refused even with `partial`. Resolving stops as soon as the files
    /// found outgrow the queue's room, before the next path is read.
    func add(_ requests: [String], _ x: CommandContext, failFirst: Bool) throws(CommandError) -> Reply {
        let resolver = x.playback.resolver
        var walk = PathResolver.Walk()
        // The room now, read without the command lock (checked again under it, where it counts):
        // more files than that can never be queued.
        let room = max(0, Limits.queueLength - x.playback.queue.count)
        for request in requests {
            do throws(PathResolver.Refusal) {
                try resolver.expand(request, into: &walk)
            } catch {
                if failFirst || walk.exhausted { throw CommandError(error) }
                walk.skip(error)
            }
            guard walk.files.count <= room else { throw Self.noRoom(walk.files.count, room: room, more: true) }
        }
        let (files, skipped) = (walk.files, walk.resolution.skipped)
        if files.isEmpty, let first = skipped.first { throw CommandError(first) }
        let ids = try x.locked { () throws(CommandError) -> [Int] in
            let queue = x.playback.queue
            let room = Limits.queueLength - queue.count
            guard files.count <= room else { throw Self.noRoom(files.count, room: room, more: false) }
            let at = try target.map { t throws(CommandError) in try t.resolve(currentIndex: queue.currentIndex) } ?? position
            if refusesPastEnd, let at, at > queue.count { throw .badArgument("Number too large: \(at)") }
            return queue.add(files, at: at)
        }
        x.playback.tags.prefetch(files)  // read tags ahead for `list`
        return .added(ids: ids, skipped: skipped.map { SkippedPath(path: $0.path, reason: $0.message) })
    }

    /// The queue cannot take `count` files (`more`: at least that many, resolving stopped there).
    static func noRoom(_ count: Int, room: Int, more: Bool) -> CommandError {
        .tooLarge("the queue holds at most \(Limits.queueLength) items: \(more ? "more than \(room)" : "\(count)") to add, room for \(max(0, room))")
    }
}

/// Like ``AddCommand``, with the position required.
public struct InsertCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .insert, .queue, executor: .offLoop)
    public var add: AddCommand
    public init(paths: [String], position: Int, partial: Bool = false) {
        add = AddCommand(paths: paths, position: position, partial: partial)
    }
    public init(_ a: Arguments) throws(CommandError) {
        add = try AddCommand(a, command: "insert")
        guard add.position != nil else { throw .badArgument("insert: \"position\" is required") }
    }
    public var arguments: Arguments { add.arguments }
    public var executor: CommandExecutor { add.executor }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply { try add.run(x) }
}

/// Removes items by id (the current one: playback moves on). As mpd does with a list of
/// `deleteid`s, the ids that are in the queue are removed even when others are not; the error
/// then names the unknown ids and says what was removed.
public struct RemoveCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .remove, .queue)
    public var ids: [Int]
    /// The items at these queue positions instead (MPD's `delete`), found when it runs.
    public var positions: QueuePositions?
    public init(ids: [Int]) { self.ids = ids }
    public init(positions: QueuePositions) { (ids, self.positions) = ([], positions) }
    public init(_ a: Arguments) throws(CommandError) {
        let ids = a.integers("items") ?? a.integer("item").map { [$0] }
        guard let ids, !ids.isEmpty else { throw .badArgument("remove: \"items\" (array of ids) or \"item\" is required") }
        self.ids = ids
    }
    public var arguments: Arguments { Arguments(["items": .integers(ids)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let q = x.playback.queue
        var ids = ids
        if let positions {
            let entries = q.entries
            ids = entries[try positions.resolve(count: entries.count)].map(\.id)
        }
        let known = Set(q.entries.map(\.id))
        var seen = Set<Int>()
        let unique = ids.filter { seen.insert($0).inserted }
        let present = unique.filter(known.contains)
        let missing = unique.filter { !known.contains($0) }
        if !present.isEmpty {
            do throws(PlayQueueError) { try q.remove(present) } catch { throw CommandError(error) }
        }
        guard missing.isEmpty else {
            let which = missing.count == 1 ? "id \(missing[0])" : "ids " + missing.map(String.init).joined(separator: ", ")
            let left = q.entries.count
            let done = present.isEmpty
                ? "nothing removed"
                : "removed \(present.count) (\(present.count == 1 ? "id" : "ids") \(present.map(String.init).joined(separator: ", "))), \(left) left"
            throw .noSuchItem("no item with \(which) in the queue; \(done)")
        }
        return .count(q.entries.count)
    }
}

/// Moves an item to an index.
public struct MoveCommand: ControlCommand {
    /// Two items that trade places (MPD's `swap` and `swapid`).
    public enum Swap: Sendable, Equatable {
        case ids(Int, Int)
        case positions(Int, Int)
    }
    public static let descriptor = CommandDescriptor(Self.self, .move, .queue)
    public var id: Int
    public var position: Int
    /// The position must be one the queue has (MPD's `moveid`: "Bad song index"), not clamped.
    public var withinQueue = false
    /// Swap two items instead, found when it runs.
    public var swap: Swap?
    /// Where the item goes, found when it runs (relative to the current item then: MPD's
    /// `+N`, `-N`). Set, it is used instead of `position`.
    public var target: QueueTarget?
    /// The items at these positions instead of `id`, moved as one block so that it starts at
    /// the target (MPD's `move START:END TO`), found when it runs.
    public var block: QueuePositions?
    public init(id: Int, position: Int, withinQueue: Bool = false) { (self.id, self.position, self.withinQueue) = (id, position, withinQueue) }
    /// Moves item `id` to `target`, found when it runs.
    public init(id: Int, target: QueueTarget, withinQueue: Bool = false) {
        self.init(id: id, position: 0, withinQueue: withinQueue)
        self.target = target
    }
    /// Moves the items at `positions` as one block, to start at `target` (all found when it runs).
    public init(positions: QueuePositions, target: QueueTarget) {
        self.init(id: 0, position: 0)
        (block, self.target) = (positions, target)
    }
    public init(swap: Swap) { (id, position, self.swap) = (0, 0, swap) }
    public init(_ a: Arguments) throws(CommandError) {
        guard let id = a.integer("item"), let to = a.integer("position") else {
            throw .badArgument("move: \"item\" and \"position\" are required")
        }
        guard to >= 0 else { throw .badArgument("move: position must be ≥ 0") }
        (self.id, position) = (id, to)
    }
    public var arguments: Arguments { Arguments(["item": .integer(id), "position": .integer(position)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let q = x.playback.queue
        if let swap { return try swapped(swap, q) }
        let position = try target?.resolve(currentIndex: q.currentIndex) ?? self.position
        if let block { return try moved(block, to: position, q) }
        if withinQueue, !q.entries.indices.contains(position) { throw .badArgument("Bad song index") }
        do throws(PlayQueueError) { try q.move(id, to: position) } catch { throw CommandError(error) }
        return .index(q.entries.firstIndex { $0.id == id } ?? 0)
    }

    /// The block at `positions` moved to start at `to`: one item at a time, the last first when
    /// it moves down (each move takes the item out before putting it back).
    private func moved(_ positions: QueuePositions, to: Int, _ q: PlayQueue) throws(CommandError) -> Reply {
        let entries = q.entries
        let range = try positions.resolve(count: entries.count)
        guard to <= entries.count - range.count else { throw .badArgument("Number too large: \(to)") }
        guard to >= 0 else { throw .badArgument("Bad song index") }
        let moves = Array(entries[range].enumerated())
        for (k, e) in to > range.lowerBound ? moves.reversed() : moves {
            do throws(PlayQueueError) { try q.move(e.id, to: to + k) } catch { throw CommandError(error) }
        }
        return .index(to)
    }

    private func swapped(_ swap: Swap, _ q: PlayQueue) throws(CommandError) -> Reply {
        let entries = q.entries
        let i: Int, j: Int
        switch swap {
        case .ids(let a, let b):
            guard let x = entries.firstIndex(where: { $0.id == a }), let y = entries.firstIndex(where: { $0.id == b }) else {
                throw .noSuchItem("No such song")
            }
            (i, j) = (x, y)
        case .positions(let a, let b):
            guard entries.indices.contains(a), entries.indices.contains(b) else { throw .badArgument("Bad song index") }
            (i, j) = (a, b)
        }
        do throws(PlayQueueError) {
            try q.move(entries[i].id, to: j)
            try q.move(entries[j].id, to: i)
        } catch { throw CommandError(error) }
        return .index(j)
    }
}

/// Sets items' priority (0–255): in shuffle, higher priorities play first (MPD's `prio`).
public struct PriorityCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .priority, .queue)
    public var priority: Int
    public var ids: [Int]
    /// The items at these positions too (MPD's `prio`), found when it runs.
    public var positions: [QueuePositions] = []
    public init(priority: Int, ids: [Int]) { (self.priority, self.ids) = (priority, ids) }
    /// Sets the priority of the items at `positions`, found when it runs.
    public init(priority: Int, positions: [QueuePositions]) { (self.priority, ids, self.positions) = (priority, [], positions) }
    public init(_ a: Arguments) throws(CommandError) {
        guard let p = a.integer("priority") else { throw .badArgument("priority: \"priority\" (0–255) is required") }
        guard (0...255).contains(p) else { throw .badArgument("priority: \(p) is not in 0–255") }
        guard let ids = a.integers("items") ?? a.integer("item").map({ [$0] }), !ids.isEmpty else {
            throw .badArgument("priority: \"items\" (array of ids) or \"item\" is required")
        }
        (priority, self.ids) = (p, ids)
    }
    public var arguments: Arguments { Arguments(["priority": .integer(priority), "items": .integers(ids)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let q = x.playback.queue
        var ids = ids
        if !positions.isEmpty {
            let entries = q.entries
            for p in positions { ids += entries[try p.resolve(count: entries.count)].map(\.id) }
        }
        do throws(PlayQueueError) { try q.setPriority(priority, of: ids) } catch { throw CommandError(error) }
        return .none
    }
}

/// Plays only part of an item (MPD's `rangeid`): from `start` to `end` seconds into its file;
/// neither: all of it again. Not the item playing now.
public struct ClipCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .clip, .queue)
    public var id: Int
    public var clip: PlaybackClip?
    /// Whether the clip is fitted to the file's length, as mpd's `rangeid`: a start at or past
    /// it is refused (`bad-argument` "Invalid start offset"), an end at or past it is the end.
    /// The length is read off the command lock (it may read the file).
    public var fitsFile = false
    public init(id: Int, clip: PlaybackClip?) { (self.id, self.clip) = (id, clip) }
    public init(id: Int, clip: PlaybackClip?, fitsFile: Bool) { (self.id, self.clip, self.fitsFile) = (id, clip, fitsFile) }
    public init(_ a: Arguments) throws(CommandError) {
        guard let id = a.integer("item") else { throw .badArgument("clip: \"item\" is required") }
        let start = a.number("start"), end = a.number("end")
        if let start, !(start >= 0 && start.isFinite) { throw .badArgument("clip: start must be 0 or more seconds") }
        if let end, !(end.isFinite && end > (start ?? 0)) { throw .badArgument("clip: end must be after start") }
        self.id = id
        clip = start == nil && end == nil ? nil : PlaybackClip(start: start ?? 0, end: end)
    }
    public var arguments: Arguments {
        var a: [String: ArgumentValue] = ["item": .integer(id)]
        if let clip {
            a["start"] = .number(clip.start)
            if let end = clip.end { a["end"] = .number(end) }
        }
        return Arguments(a)
    }
    public var executor: CommandExecutor { fitsFile ? .offLoop : .loop }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        guard fitsFile else { return try set(clip, x) }
        // (An id's file never changes: only the clip is decided under the lock.)
        let path = x.playback.queue.entries.first { $0.id == id }?.path
        var clip = clip
        if let c = clip, let path, let duration = x.playback.tags.info(path).duration {
            guard c.start < duration else { throw .badArgument("Invalid start offset") }
            if let end = c.end, end >= duration { clip = c.start == 0 ? nil : PlaybackClip(start: c.start, end: nil) }
        }
        return try x.locked { () throws(CommandError) in try set(clip, x) }
    }

    private func set(_ clip: PlaybackClip?, _ x: CommandContext) throws(CommandError) -> Reply {
        do throws(PlayQueueError) { try x.playback.queue.setClip(clip, of: id) } catch { throw CommandError(error) }
        return .none
    }
}

public struct ClearCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .clear, .queue)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply {
        x.playback.queue.clear()
        return .none
    }
}

/// Shuffles the queue's items once, or those at indexes `start`..<`end` (MPD's `shuffle`): the
/// current item, when among them, moves to the range's start and keeps playing.
public struct ShuffleQueueCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .shuffleQueue, .queue)
    public var range: Range<Int>?
    /// Whether a range starting past the queue's end is refused (`bad-argument` "Bad song
    /// index", MPD's `shuffle START:END`) instead of shuffling nothing.
    public var refusesStartPastEnd = false
    public init(range: Range<Int>?) { self.range = range }
    public init(range: Range<Int>?, refusesStartPastEnd: Bool) { (self.range, self.refusesStartPastEnd) = (range, refusesStartPastEnd) }
    public init(_ a: Arguments) throws(CommandError) {
        guard let start = a.integer("start") else {
            guard a.integer("end") == nil else { throw .badArgument("shuffle-queue: \"end\" needs \"start\"") }
            range = nil
            return
        }
        let end = a.integer("end") ?? Int.max
        guard start >= 0, end >= start else { throw .badArgument("shuffle-queue: need 0 ≤ start ≤ end") }
        range = start..<end
    }
    public var arguments: Arguments {
        guard let range else { return Arguments() }
        return Arguments(["start": .integer(range.lowerBound), "end": .integer(range.upperBound)])
    }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let q = x.playback.queue
        if refusesStartPastEnd, let range, range.lowerBound > q.count { throw .badArgument("Bad song index") }
        q.shuffle(range: range ?? 0..<Int.max)
        return .none
    }
}

/// Forgets why the current item failed (MPD's `clearerror`).
public struct ClearErrorCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .clearError, .queue)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) -> Reply {
        x.playback.queue.clearFailure()
        return .none
    }
}

/// The queue with tags and durations (read off the command lock: the first listing of new
/// files reads them).
public struct ListCommand: ControlCommand {
    /// Which of the queue's items a listing holds, chosen with the snapshot under the command
    /// lock (MPD's `playlistinfo`, `playlistid`, `currentsong`, `plchanges`).
    public enum Selection: Sendable, Equatable {
        /// Every item.
        case all
        /// The items at these positions.
        case positions(QueuePositions)
        /// The item of this id (`no-such-item` when there is none).
        case id(Int)
        /// The current item, if any.
        case current
        /// The items whose position changed after queue version `since` (added, moved, shifted
        /// by an edit before them), those at `positions` only when given.
        case changes(since: Int, positions: QueuePositions?)
    }
    public static let descriptor = CommandDescriptor(Self.self, .list, .queue, executor: .offLoop)
    /// Set: the library's values of a tag instead of the queue.
    public var values: TagValuesCommand?
    /// Which items (JSON's `list`: all of them).
    public var selection = Selection.all
    public init() {}
    public init(selection: Selection) { self.selection = selection }
    public init(tag: TagKey, terms: [String] = [], groups: [TagKey] = []) { values = TagValuesCommand(tag: tag, terms: terms, groups: groups) }
    public init(_ a: Arguments) throws(CommandError) {
        guard let t = a.string("tag") else { return }
        guard let tag = TagKey(mpdName: t) else { throw .badArgument("Unknown tag type: \(t)") }
        var groups: [TagKey] = []
        for g in a.strings("group") ?? [] {
            guard let k = TagKey(mpdName: g) else { throw .badArgument("Unknown tag type: \(g)") }
            guard k != tag, !groups.contains(k) else { throw .badArgument("Conflicting group") }
            groups.append(k)
        }
        values = TagValuesCommand(tag: tag, terms: a.strings("terms") ?? [], groups: groups)
    }
    public var arguments: Arguments {
        guard let v = values else { return Arguments() }
        return Arguments(["tag": .string(v.tag.mpdName), "terms": .strings(v.terms), "group": .strings(v.groups.map(\.mpdName))])
    }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        if let values { return try values.run(x) }
        let p = x.playback
        let (chosen, current, version) = try x.locked { () throws(CommandError) in
            let q = p.queue
            let entries = q.entries
            let current = q.current?.id
            let all = entries.enumerated().map { (index: $0.offset, entry: $0.element) }
            let chosen: [(index: Int, entry: PlayQueueEntry)]
            switch selection {
            case .all: chosen = all
            case .positions(let positions): chosen = Array(all[try positions.resolve(count: entries.count)])
            case .id(let id):
                guard let i = entries.firstIndex(where: { $0.id == id }) else { throw .noSuchItem("No such song") }
                chosen = [all[i]]
            case .current: chosen = q.currentIndex.map { [all[$0]] } ?? []
            case .changes(let version, let positions):
                let range = try positions?.resolve(count: entries.count)
                chosen = q.changes(since: version).filter { range?.contains($0.index) ?? true }
            }
            return (chosen, current, q.version)
        }
        return .queue(QueueListing(version: version, current: current, items: chosen.map { i, e in
            p.describe(e, index: i, current: e.id == current, read: true)
        }))
    }
}

extension CommandError {
    /// A path refusal as a command error.
    init(_ r: PathResolver.Refusal) {
        switch r.code {
        case .notFound: self = .notFound(r.description)
        case .forbidden: self = .forbidden(r.description)
        case .unsupported: self = .unsupported(r.description)
        case .tooLarge: self = .tooLarge(r.description)
        }
    }
}
