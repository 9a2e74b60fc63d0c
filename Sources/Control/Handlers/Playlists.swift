import BacklineSchema
import PlayQueue

// Stored playlists: save, load, list, edit, remove, rename (M3U files, ``PlaylistStore``).
// Every one touches the file system: they run off the event loop.

extension CommandContext {
    /// The playlist store, or an error when the daemon has no playlist directory.
    func store() throws(CommandError) -> PlaylistStore {
        guard let s = playback.playlists else { throw .failed("no playlist directory is configured") }
        return s
    }
}

/// Saves the queue as a stored playlist (an existing one only with `replace`).
public struct SavePlaylistCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .save, .playlists, executor: .offLoop)
    public var name: String
    public var replace: Bool
    public init(name: String, replace: Bool = false) { (self.name, self.replace) = (name, replace) }
    public init(_ a: Arguments) throws(CommandError) {
        guard let n = a.string("name") else { throw .badArgument("save: \"name\" is required") }
        (name, replace) = (n, a.bool("replace") ?? false)
    }
    public var arguments: Arguments { Arguments(["name": .string(name), "replace": .boolean(replace)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let store = try x.store()
        try PlaylistStore.check(name)
        if !replace, store.exists(name) { throw .exists("a playlist named \"\(name)\" exists (replace it with \"replace\")") }
        let paths = try x.locked { x.playback.queue.entries.map(\.path) }
        try store.write(name, entries: paths.map(store.entry(for:)))
        x.playback.post(.playlists(name: name))
        return .count(paths.count)
    }
}

/// Adds a stored playlist's entries (all, or `start..<end`) to the queue, at `position` or the end.
/// It runs on the server's shared threads: the name is a stored playlist's, never a URL, and
/// entries that are playlist URLs are fetched there, within ``PathResolver/fetchSeconds`` in all.
public struct LoadPlaylistCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .load, .playlists, executor: .offLoop)
    public var name: String
    public var range: Range<Int>?
    public var position: Int?
    /// Where the entries go, found when the queue changes (relative to the current item then:
    /// MPD's `+N`, `-N`). Set, it is used instead of `position`.
    public var target: QueueTarget?
    public init(name: String, range: Range<Int>? = nil, position: Int? = nil) { (self.name, self.range, self.position) = (name, range, position) }
    /// Loads `name`'s entries in `range` at `target`, found when the queue changes.
    public init(name: String, range: Range<Int>? = nil, target: QueueTarget?) {
        self.init(name: name, range: range)
        self.target = target
    }
    public init(_ a: Arguments) throws(CommandError) {
        guard let n = a.string("name") else { throw .badArgument("load: \"name\" is required") }
        name = n
        if a.integer("start") != nil || a.integer("end") != nil {
            let start = a.integer("start") ?? 0, end = a.integer("end") ?? Int.max
            guard start >= 0, end >= start else { throw .badArgument("load: 0 ≤ start ≤ end") }
            range = start..<end
        }
        position = a.integer("position")
        if let position, position < 0 { throw .badArgument("load: position must be ≥ 0") }
    }
    public var arguments: Arguments {
        var v: [String: ArgumentValue] = ["name": .string(name)]
        if let range { v["start"] = .integer(range.lowerBound); v["end"] = .integer(range.upperBound) }
        if let position { v["position"] = .integer(position) }
        return Arguments(v)
    }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        var entries = try x.store().entries(name)
        if let range { entries = Array(entries[range.clamped(to: 0..<entries.count)]) }
        // Through the same resolver as `add` (confined to the music directory); an entry that
        // cannot be used is skipped with its reason.
        var add = AddCommand(paths: [], position: position)
        add.target = target
        return try add.add(entries, x, failFirst: false)
    }
}

/// The stored playlists.
public struct PlaylistsCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .playlists, .playlists, executor: .offLoop)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) throws(CommandError) -> Reply { .playlists(try x.store().all()) }
}

/// A stored playlist's entries.
public struct PlaylistCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .playlist, .playlists, executor: .offLoop)
    public var name: String
    public init(name: String) { self.name = name }
    public init(_ a: Arguments) throws(CommandError) {
        guard let n = a.string("name") else { throw .badArgument("playlist: \"name\" is required") }
        name = n
    }
    public var arguments: Arguments { Arguments(["name": .string(name)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply { .playlistEntries(try x.store().entries(name)) }
}

/// Appends files (resolved like `add`) to a stored playlist, creating it.
public struct PlaylistAddCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .playlistAdd, .playlists, executor: .offLoop)
    public var name: String
    public var paths: [String]
    public init(name: String, paths: [String]) { (self.name, self.paths) = (name, paths) }
    public init(_ a: Arguments) throws(CommandError) {
        guard let n = a.string("name"), let p = a.strings("paths"), !p.isEmpty else {
            throw .badArgument("playlist-add: \"name\" and \"paths\" are required")
        }
        (name, paths) = (n, p)
    }
    public var arguments: Arguments { Arguments(["name": .string(name), "paths": .strings(paths)]) }
    public var executor: CommandExecutor { .expanding(paths) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let store = try x.store()
        try PlaylistStore.check(name)
        let old = store.exists(name) ? try store.entries(name) : []
        // One walk for every path (its bounds are the request's, as `add`'s), stopped as soon
        // as the files found outgrow the playlist's room.
        let resolver = x.playback.resolver
        var walk = PathResolver.Walk()
        for p in paths {
            do throws(PathResolver.Refusal) { try resolver.expand(p, into: &walk) } catch { throw CommandError(error) }
            guard old.count + walk.files.count <= Limits.playlistEntries else {
                throw .tooLarge("a stored playlist holds at most \(Limits.playlistEntries) entries")
            }
        }
        let files = walk.files
        try store.write(name, entries: old + files.map(store.entry(for:)))
        x.playback.post(.playlists(name: name))
        return .count(old.count + files.count)
    }
}

/// Deletes the entry at `position` from a stored playlist.
public struct PlaylistDeleteCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .playlistDelete, .playlists, executor: .offLoop)
    public var name: String
    public var position: Int
    public init(name: String, position: Int) { (self.name, self.position) = (name, position) }
    public init(_ a: Arguments) throws(CommandError) {
        guard let n = a.string("name"), let p = a.integer("position") else { throw .badArgument("playlist-delete: \"name\" and \"position\" are required") }
        (name, position) = (n, p)
    }
    public var arguments: Arguments { Arguments(["name": .string(name), "position": .integer(position)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let store = try x.store()
        var entries = try store.entries(name)
        guard entries.indices.contains(position) else { throw .badArgument("playlist-delete: no entry \(position) in \"\(name)\"") }
        entries.remove(at: position)
        try store.write(name, entries: entries)
        x.playback.post(.playlists(name: name))
        return .count(entries.count)
    }
}

/// Moves an entry of a stored playlist.
public struct PlaylistMoveCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .playlistMove, .playlists, executor: .offLoop)
    public var name: String
    public var from: Int
    public var to: Int
    public init(name: String, from: Int, to: Int) { (self.name, self.from, self.to) = (name, from, to) }
    public init(_ a: Arguments) throws(CommandError) {
        guard let n = a.string("name"), let f = a.integer("from"), let t = a.integer("to") else {
            throw .badArgument("playlist-move: \"name\", \"from\" and \"to\" are required")
        }
        (name, from, to) = (n, f, t)
    }
    public var arguments: Arguments { Arguments(["name": .string(name), "from": .integer(from), "to": .integer(to)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let store = try x.store()
        var entries = try store.entries(name)
        guard entries.indices.contains(from), entries.indices.contains(to) else { throw .badArgument("playlist-move: no such entry in \"\(name)\"") }
        entries.insert(entries.remove(at: from), at: to)
        try store.write(name, entries: entries)
        x.playback.post(.playlists(name: name))
        return .index(to)
    }
}

/// Empties a stored playlist (creating it).
public struct PlaylistClearCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .playlistClear, .playlists, executor: .offLoop)
    public var name: String
    public init(name: String) { self.name = name }
    public init(_ a: Arguments) throws(CommandError) {
        guard let n = a.string("name") else { throw .badArgument("playlist-clear: \"name\" is required") }
        name = n
    }
    public var arguments: Arguments { Arguments(["name": .string(name)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        try x.store().write(name, entries: [])
        x.playback.post(.playlists(name: name))
        return .none
    }
}

/// Deletes a stored playlist.
public struct PlaylistRemoveCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .playlistRemove, .playlists, executor: .offLoop)
    public var name: String
    public init(name: String) { self.name = name }
    public init(_ a: Arguments) throws(CommandError) {
        guard let n = a.string("name") else { throw .badArgument("playlist-remove: \"name\" is required") }
        name = n
    }
    public var arguments: Arguments { Arguments(["name": .string(name)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        try x.store().remove(name)
        x.playback.post(.playlists(name: name))
        return .none
    }
}

/// Renames a stored playlist.
public struct PlaylistRenameCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .playlistRename, .playlists, executor: .offLoop)
    public var name: String
    public var to: String
    public init(name: String, to: String) { (self.name, self.to) = (name, to) }
    public init(_ a: Arguments) throws(CommandError) {
        guard let n = a.string("name"), let t = a.string("to") else { throw .badArgument("playlist-rename: \"name\" and \"to\" are required") }
        (name, to) = (n, t)
    }
    public var arguments: Arguments { Arguments(["name": .string(name), "to": .string(to)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        try x.store().rename(name, to: to)
        x.playback.post(.playlists(name: to))
        return .none
    }
}
