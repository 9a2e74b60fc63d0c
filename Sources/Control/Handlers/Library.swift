import AudioEngine
import FoundationEssentials
import Platform

// Library: browsing the music directory (until a database exists, the directory is the library).

/// Lists a directory of the music directory: audio files (with tags and durations unless
/// `tags` is false), playlists, other files and subdirectories; `recursive` descends. Confined
/// to the music directory as `add` is.
public struct BrowseCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(
        Self.self, "browse", .library, "List a directory of the music directory (recursively, with tags).",
        [("path", .string, "relative to the music directory (default: its root)"), ("recursive", .boolean, "descend (default: no)"),
         ("tags", .boolean, "read audio files' tags (default: yes)")],
        executor: .offLoop)
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
