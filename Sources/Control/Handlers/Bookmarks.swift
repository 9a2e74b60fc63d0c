import BacklineSchema

// Resume positions: where podcasts and audiobooks were left.

/// Lists where items were left, or forgets some or all of them.
public struct BookmarksCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .bookmarks, .info)
    /// What to do.
    public enum Action: Sendable, Equatable {
        case list
        /// Forget these paths (as `list` names them).
        case forget([String])
        case forgetAll
    }
    public var action: Action
    public init(_ action: Action) { self.action = action }
    public init(_ a: Arguments) throws(CommandError) {
        switch (a.strings("clear"), a.bool("all") ?? false) {
        case (nil, false): action = .list
        case (let paths?, false): action = .forget(paths)
        case (nil, true): action = .forgetAll
        default: throw .badArgument("bookmarks: give \"clear\" (paths) or \"all\", not both")
        }
    }
    public var arguments: Arguments {
        switch action {
        case .list: Arguments()
        case .forget(let paths): Arguments(["clear": .strings(paths)])
        case .forgetAll: Arguments(["all": .boolean(true)])
        }
    }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let b = x.playback.bookmarks
        // (The songs' `elapsed` stickers go with them.)
        switch action {
        case .list: return .bookmarks(b.all)
        case .forget(let paths):
            for p in paths { x.playback.listening?.bookmark(p, position: nil) }
            return .forgotten(b.forget(paths))
        case .forgetAll:
            for p in b.all.keys { x.playback.listening?.bookmark(p, position: nil) }
            return .forgotten(b.forget(nil))
        }
    }
}
