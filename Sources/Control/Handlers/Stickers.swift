import BacklineSchema
import Library

// Stickers: the listener's values on songs of the library (MPD's `sticker`).

/// One sticker: the song (relative to the music directory), its name and value.
public struct StickerValue: Sendable, Equatable {
    public var path: String
    public var name: String
    public var value: String
    public init(path: String, name: String, value: String) { (self.path, self.name, self.value) = (path, name, value) }
}

/// Reads, sets, counts, deletes and finds stickers on songs of the library.
public struct StickerCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .sticker, .library, executor: .offLoop, wakes: false)
    /// What to do.
    public enum Action: Sendable, Equatable {
        case list(path: String)
        case get(path: String, name: String)
        case set(path: String, name: String, value: String)
        /// Adds `amount` (negative for `dec`).
        case add(path: String, name: String, amount: Int)
        /// Deletes one sticker, or all of the song's (`name` nil).
        case delete(path: String, name: String?)
        /// The songs under `directory` ("" for all) holding `name`, those `matching` takes.
        case find(name: String, directory: String, matching: StickerOperator?, value: String?, sort: StickerSort?, window: Range<Int>?)
        case names
    }
    public var action: Action
    public init(_ action: Action) { self.action = action }

    public init(_ a: Arguments) throws(CommandError) {
        let path = a.string("path"), name = a.string("name"), value = a.string("value")
        func need(_ v: String?, _ what: String) throws(CommandError) -> String {
            guard let v else { throw .badArgument("sticker \(a.string("action") ?? "list"): \"\(what)\" is required") }
            return v
        }
        switch a.string("action") ?? "list" {
        case "list": action = .list(path: try need(path, "path"))
        case "get": action = .get(path: try need(path, "path"), name: try need(name, "name"))
        case "set": action = .set(path: try need(path, "path"), name: try need(name, "name"), value: try need(value, "value"))
        case "inc": action = .add(path: try need(path, "path"), name: try need(name, "name"), amount: a.integer("by") ?? 1)
        case "dec": action = .add(path: try need(path, "path"), name: try need(name, "name"), amount: -(a.integer("by") ?? 1))
        case "delete": action = .delete(path: try need(path, "path"), name: name)
        case "find":
            let op = a.string("op").flatMap(StickerOperator.init(rawValue:))
            if (op == nil) != (value == nil) { throw .badArgument("sticker find: give \"op\" and \"value\" together") }
            var sort: StickerSort?
            if let s = a.string("sort") {
                guard let parsed = StickerSort(mpd: s) else { throw .badArgument("Unknown sort tag \"\(s)\"") }
                sort = parsed
            }
            var window: Range<Int>?
            if let w = a.string("window") {
                let parts = w.split(separator: ":", omittingEmptySubsequences: false)
                guard parts.count == 2, let lo = Int(parts[0]), lo >= 0, let hi = parts[1].isEmpty ? Int(Int32.max) : Int(parts[1]), hi >= lo
                else { throw .badArgument("\"window\" is START:END, not \"\(w)\"") }
                window = lo..<hi
            }
            action = .find(name: try need(name, "name"), directory: path ?? "", matching: op, value: value, sort: sort, window: window)
        case "names": action = .names
        case let other: throw .badArgument("sticker: no action \"\(other)\"")
        }
    }

    public var arguments: Arguments {
        switch action {
        case .list(let path): Arguments(["action": .string("list"), "path": .string(path)])
        case .get(let path, let name): Arguments(["action": .string("get"), "path": .string(path), "name": .string(name)])
        case .set(let path, let name, let value):
            Arguments(["action": .string("set"), "path": .string(path), "name": .string(name), "value": .string(value)])
        case .add(let path, let name, let amount):
            Arguments(["action": .string(amount < 0 ? "dec" : "inc"), "path": .string(path), "name": .string(name), "by": .integer(amount.magnitude > Int32.max ? Int(Int32.max) : Int(amount.magnitude))])
        case .delete(let path, let name):
            Arguments(["action": .string("delete"), "path": .string(path)].merging(name.map { ["name": .string($0)] } ?? [:]) { a, _ in a })
        case .find(let name, let directory, let op, let value, let sort, let window):
            Arguments(["action": .string("find"), "name": .string(name), "path": .string(directory)]
                .merging(op.map { ["op": .string($0.rawValue)] } ?? [:]) { a, _ in a }
                .merging(value.map { ["value": .string($0)] } ?? [:]) { a, _ in a }
                .merging(sort.map { ["sort": .string(($0.descending ? "-" : "") + $0.key.rawValue)] } ?? [:]) { a, _ in a }
                .merging(window.map { ["window": .string("\($0.lowerBound):\($0.upperBound)")] } ?? [:]) { a, _ in a })
        case .names: Arguments(["action": .string("names")])
        }
    }

    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let library = try x.library()
        func song(_ path: String) -> String { Self.relative(path, library) }
        func L<T>(_ body: () throws(LibraryError) -> T) throws(CommandError) -> T {
            do { return try body() } catch { throw CommandError(error) }
        }
        switch action {
        case .list(let path):
            let p = song(path)
            return .stickers(try L { () throws(LibraryError) in try library.stickers(p) }.map { StickerValue(path: p, name: $0.name, value: $0.value) })
        case .get(let path, let name):
            let p = song(path)
            guard let v = try L({ () throws(LibraryError) in try library.sticker(p, name) }) else { throw .notFound("no such sticker") }
            return .stickers([StickerValue(path: p, name: name, value: v)])
        case .set(let path, let name, let value):
            let p = song(path)
            try L { () throws(LibraryError) in try library.setSticker(p, name, value) }
            x.playback.post(.sticker(path: p, name: name))
            return .stickers([StickerValue(path: p, name: name, value: value)])
        case .add(let path, let name, let amount):
            let p = song(path)
            let v = try L { () throws(LibraryError) in try library.addToSticker(p, name, amount) }
            x.playback.post(.sticker(path: p, name: name))
            return .stickers([StickerValue(path: p, name: name, value: String(v))])
        case .delete(let path, let name):
            let p = song(path)
            guard try L({ () throws(LibraryError) in try library.deleteSticker(p, name) }) else { throw .notFound("no such sticker") }
            x.playback.post(.sticker(path: p, name: name))
            return .stickers([])
        case .find(let name, let directory, let op, let value, let sort, let window):
            let found = try L { () throws(LibraryError) in
                try library.findStickers(name, under: song(directory), matching: op.map { ($0, value ?? "") }, sort: sort, window: window)
            }
            return .stickers(found.map { StickerValue(path: $0.path, name: name, value: $0.value) })
        case .names:
            return .stickerNames(try L { () throws(LibraryError) in try library.stickerNames() })
        }
    }

    /// `path` relative to the music directory: an absolute path within it (as queue items
    /// carry) loses the directory's part; others are kept as given.
    static func relative(_ path: String, _ library: MusicLibrary) -> String {
        for base in [library.root, library.musicDirectory].compactMap({ $0 }) where !base.isEmpty {
            let prefix = base.hasSuffix("/") ? base : base + "/"
            if path.hasPrefix(prefix) { return String(path.dropFirst(prefix.count)) }
        }
        return path
    }
}
