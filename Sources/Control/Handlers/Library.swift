import BacklineSchema
import AudioEngine
import FoundationEssentials
import Library
import MediaCore
import Platform

// Library: browsing the music directory (until a database exists, the directory is the library).

/// Lists a directory of the music directory: audio files (with tags and durations unless
/// `tags` is false), playlists, other files and subdirectories; `recursive` descends. Confined
/// to the music directory as `add` is.
public struct BrowseCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .browse, .library, executor: .offLoop)
    public var path: String
    public var recursive: Bool
    public var tags: Bool
    public init(path: String = "", recursive: Bool = false, tags: Bool = true) {
        (self.path, self.recursive, self.tags) = (path, recursive, tags)
    }
    public init(_ a: Arguments) {
        self.init(path: a.string("path") ?? "", recursive: a.bool("recursive") ?? false, tags: a.bool("tags") ?? true)
    }
    public var arguments: Arguments {
        Arguments(["path": .string(path), "recursive": .boolean(recursive), "tags": .boolean(tags)])
    }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let p = x.playback
        let listed: [PathResolver.Listed]
        do throws(PathResolver.Refusal) { listed = try p.resolver.browse(path, recursive: recursive) } catch { throw CommandError(error) }
        return .directory(listed.map { e in
            guard tags, e.kind == .audio else { return LibraryEntry(listed: e, item: nil) }
            // Read, not kept: browsing a whole library must not fill the tag cache (with covers).
            let info = p.tags.peek(e.file)
            let m = info.metadata
            return LibraryEntry(listed: e, item: QueueItem(
                id: 0, path: (p.resolver.root ?? "") + "/" + e.path, title: m.title ?? Path.lastComponent(e.path), artist: m.artist,
                album: m.album, track: m.trackNumber, duration: info.duration, error: info.error, tags: m.tags), info: info)
        })
    }
}

// MARK: - The music library (the database)

extension CommandError {
    /// A library failure as a command error.
    init(_ e: LibraryError) {
        switch e.kind {
        case .badFilter: self = .badArgument(e.message)
        case .notFound: self = .notFound(e.message)
        case .tooLarge: self = .tooLarge(e.message)
        case .newerSchema, .database, .cancelled: self = .failed(e.message)
        }
    }

    static let noLibrary = CommandError.unsupported("no music library (library = off)")
}

extension CommandContext {
    /// The library, or the error a daemon without one answers.
    func library() throws(CommandError) -> MusicLibrary {
        guard let l = playback.library else { throw .noLibrary }
        return l
    }
}

/// Song counts per value of a tag (MPD's `count … group TAG`), or over all the songs taken.
public struct LibraryCount: Sendable, Equatable {
    /// The group's value (nil: no grouping).
    public var value: String?
    public var songs: Int
    public var playtime: Double
}

/// `update` / `rescan`: scans the music directory (or a directory of it) into the library.
public struct UpdateCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .update, .library, executor: .offLoop, wakes: false)
    public var path: String
    public var rescan: Bool
    public init(path: String = "", rescan: Bool = false) { (self.path, self.rescan) = (path, rescan) }
    public init(_ a: Arguments) { self.init(path: a.string("path") ?? "", rescan: a.bool("rescan") ?? false) }
    public var arguments: Arguments { Arguments(["path": .string(path), "rescan": .boolean(rescan)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let library = try x.library()
        do throws(LibraryError) { return .update(job: try library.update(path, rescan: rescan)) } catch { throw CommandError(error) }
    }
}

/// What `find`, `search`, `count`, `list`, `findadd` and `searchadd` take: MPD's filter (one
/// expression, or TAG VALUE pairs), a sort and a window.
struct SongQuery: Sendable, Equatable {
    var terms: [String]
    var sort: String?
    var window: Range<Int>?

    init(_ a: Arguments, required: Bool = true) throws(CommandError) {
        terms = a.strings("terms") ?? []
        if required, terms.isEmpty { throw .badArgument("\"terms\" (an MPD filter) is required") }
        sort = a.string("sort")
        if let w = a.string("window") {
            let p = w.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard p.count == 2, let s = Int(p[0]), let e = Int(p[1]), s >= 0, e >= s else { throw .badArgument("window: expected START:END, got \(w)") }
            window = s..<e
        }
    }

    init(terms: [String], sort: String? = nil, window: Range<Int>? = nil) { (self.terms, self.sort, self.window) = (terms, sort, window) }

    var arguments: [String: ArgumentValue] {
        var v: [String: ArgumentValue] = ["terms": .strings(terms)]
        if let sort { v["sort"] = .string(sort) }
        if let window { v["window"] = .string("\(window.lowerBound):\(window.upperBound)") }
        return v
    }

    func filter(fold: Bool) throws(CommandError) -> SongFilter {
        guard !terms.isEmpty else { return .all }
        do { return try SongFilter.parse(terms, fold: fold) } catch { throw CommandError(error) }
    }

    /// The most songs one reply carries (about 10 MB of JSON): past it, ask for a `window`.
    static let maximumSongs = 20_000

    func songs(_ x: CommandContext, fold: Bool, limited: Bool = true) throws(CommandError) -> [LibrarySong] {
        let library = try x.library()
        let filter = try filter(fold: fold)
        let found: [LibrarySong]
        do throws(LibraryError) {
            let order = try sort.map { (s: String) throws(LibraryError) in try SongSort(mpd: s) }
            found = try library.songs(filter, sort: order, window: window)
        } catch { throw CommandError(error) }
        if limited, found.count > Self.maximumSongs {
            throw .tooLarge("\(found.count) songs match: more than \(Self.maximumSongs) in one reply (give a window, START:END)")
        }
        return found
    }
}

/// `find` (exact) and `search` (ignoring case and diacritics): songs of the library.
public struct FindCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .find, .library, executor: .offLoop, wakes: false)
    var query: SongQuery
    public init(terms: [String], sort: String? = nil, window: Range<Int>? = nil) { query = SongQuery(terms: terms, sort: sort, window: window) }
    public init(_ a: Arguments) throws(CommandError) { query = try SongQuery(a) }
    public var arguments: Arguments { Arguments(query.arguments) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply { .songs(try query.songs(x, fold: false)) }
}

/// `search`: as `find`, ignoring case and diacritics, values matched anywhere in a tag.
public struct SearchCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .search, .library, executor: .offLoop, wakes: false)
    var query: SongQuery
    public init(terms: [String], sort: String? = nil, window: Range<Int>? = nil) { query = SongQuery(terms: terms, sort: sort, window: window) }
    public init(_ a: Arguments) throws(CommandError) { query = try SongQuery(a) }
    public var arguments: Arguments { Arguments(query.arguments) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply { .songs(try query.songs(x, fold: true)) }
}

/// `findadd` / `searchadd`: queues what `find` / `search` takes, in its order.
public struct FindAddCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .findAdd, .library, executor: .offLoop)
    var query: SongQuery
    public var search: Bool
    public var position: Int?
    public init(terms: [String], search: Bool = false, sort: String? = nil, position: Int? = nil) {
        query = SongQuery(terms: terms, sort: sort)
        (self.search, self.position) = (search, position)
    }
    public init(_ a: Arguments) throws(CommandError) {
        query = try SongQuery(a)
        search = a.bool("search") ?? false
        position = a.integer("position")
        if let position, position < 0 { throw .badArgument("findadd: position must be ≥ 0") }
    }
    public var arguments: Arguments {
        var v = query.arguments
        if search { v["search"] = .boolean(true) }
        if let position { v["position"] = .integer(position) }
        return Arguments(v)
    }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let songs = try query.songs(x, fold: search, limited: false)
        guard !songs.isEmpty, let root = x.playback.resolver.root else { return .added(ids: [], skipped: []) }
        return try AddCommand(paths: songs.map { root + "/" + $0.path }, position: position, partial: true).run(x)
    }
}

/// `count`: how many songs a filter takes and how long they play, per value of a tag.
public struct CountCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .count, .library, executor: .offLoop, wakes: false)
    var query: SongQuery
    public var group: TagKey?
    public init(terms: [String], group: TagKey? = nil) { query = SongQuery(terms: terms); self.group = group }
    public init(_ a: Arguments) throws(CommandError) {
        query = try SongQuery(a, required: false)
        if let g = a.string("group") {
            guard let k = TagKey(mpdName: g) else { throw .badArgument("Unknown tag type: \(g)") }
            group = k
        }
    }
    public var arguments: Arguments {
        var v = query.arguments
        if let group { v["group"] = .string(group.mpdName) }
        return Arguments(v)
    }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let library = try x.library()
        let filter = try query.filter(fold: false)
        do throws(LibraryError) {
            if let group {
                return .counts(group: group, try library.counts(filter, group: group).map { LibraryCount(value: $0.value, songs: $0.songs, playtime: $0.playtime) })
            }
            let c = try library.count(filter)
            return .counts(group: nil, [LibraryCount(value: nil, songs: c.songs, playtime: c.playtime)])
        } catch { throw CommandError(error) }
    }
}

/// `list TAG`: a tag's values over the library (or what a filter takes), grouped by others.
public struct TagValuesCommand: Sendable, Equatable {
    public var tag: TagKey
    public var terms: [String]
    public var groups: [TagKey]

    /// The rows: group values (outermost first), then the value; sorted, unique.
    func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let library = try x.library()
        do {
            let filter = terms.isEmpty ? SongFilter.all : try SongFilter.parse(terms, fold: false)
            return .tagValues(keys: groups + [tag], try library.values(tag, filter: filter, groups: groups))
        } catch { throw CommandError(error) }
    }
}

/// `ls`: a directory of the library (its songs with their tags, playlists, subdirectories).
public struct LsCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .ls, .library, executor: .offLoop, wakes: false)
    public var path: String
    public var recursive: Bool
    public init(path: String = "", recursive: Bool = false) { (self.path, self.recursive) = (path, recursive) }
    public init(_ a: Arguments) { self.init(path: a.string("path") ?? "", recursive: a.bool("recursive") ?? false) }
    public var arguments: Arguments { Arguments(["path": .string(path), "recursive": .boolean(recursive)]) }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let library = try x.library()
        do throws(LibraryError) { return .library(try library.entries(path, recursive: recursive)) } catch { throw CommandError(error) }
    }
}

/// `stats`: the library's counts and when it was last updated.
public struct StatsCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .stats, .library, executor: .offLoop, wakes: false)
    public init() {}
    public init(_ a: Arguments) {}
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let library = try x.library()
        do throws(LibraryError) { return .libraryStats(try library.stats(), updating: library.updating) } catch { throw CommandError(error) }
    }
}
