import Control
import Library

/// MPD's sticker commands over the library's stickers (the JSON protocol's `sticker`):
/// `sticker get|set|delete|list|find song …` answered as mpd 0.23 answers them
/// (`src/command/StickerCommands.cxx`), with mpd 0.24's `inc`, `dec`, `find`'s integer and
/// text operators, `sort` and `window`, and `stickernames`, `stickertypes`,
/// `stickernamestypes`. Songs only: the `song` type is the one mpd 0.23 has.
extension MPDProtocol {
    /// The stickers live in the library's database: without one, mpd's answer without a
    /// sticker database.
    private func requireStickers() throws(MPDError) {
        guard playback.library != nil else { throw MPDError(.unknown, "sticker database is disabled") }
    }

    /// `sticker ACTION song URI …`.
    func sticker(_ r: MPDRequest) throws(MPDError) -> MPDText {
        try requireStickers()
        var args = r.args
        guard args[1] == "song" else { throw MPDError(.arg, "unknown sticker domain") }
        let action = args[0], uri = args[2]
        let command: StickerCommand.Action
        switch (action, args.count) {
        case ("get", 4): command = .get(path: uri, name: args[3])
        case ("list", 3): command = .list(path: uri)
        case ("set", 5): command = .set(path: uri, name: args[3], value: args[4])
        case ("inc", 5), ("dec", 5):
            guard let n = Int(args[4]) else { throw MPDError(.arg, "Integer expected: \(args[4])") }
            command = .add(path: uri, name: args[3], amount: action == "inc" ? n : -n)
        case ("delete", 3), ("delete", 4): command = .delete(path: uri, name: args.count == 4 ? args[3] : nil)
        case ("find", 4...):
            let window = try takeWindow(&args, minimum: 6)
            var sort: StickerSort?
            if args.count >= 6, args[args.count - 2] == "sort" {
                guard let s = StickerSort(mpd: args[args.count - 1]) else { throw MPDError(.arg, "Unknown sort tag \"\(args[args.count - 1])\"") }
                sort = s
                args.removeLast(2)
            }
            switch args.count {
            case 4: command = .find(name: args[3], directory: uri, matching: nil, value: nil, sort: sort, window: window)
            case 6:
                guard let op = StickerOperator(rawValue: args[4]) else { throw MPDError(.arg, "bad operator") }
                command = .find(name: args[3], directory: uri, matching: op, value: args[5], sort: sort, window: window)
            default: throw MPDError(.arg, "bad request")
            }
        default: throw MPDError(.arg, "bad request")
        }
        guard case .stickers(let found) = try run(StickerCommand(command)) else { return "" }
        if case .find = command {
            return found.map { "file: \($0.path)\nsticker: \($0.name)=\($0.value)\n" }.joined()
        }
        // (`set`, `inc`, `dec` and `delete` answer nothing, as mpd.)
        switch command {
        case .get, .list: return found.map { "sticker: \($0.name)=\($0.value)\n" }.joined()
        default: return ""
        }
    }

    /// `stickernames`: every name in use.
    func stickerNames() throws(MPDError) -> MPDText {
        try requireStickers()
        guard case .stickerNames(let names) = try run(StickerCommand(.names)) else { return "" }
        return names.map { "name: \($0)\n" }.joined()
    }

    /// `stickernamestypes [TYPE]`: every name in use with its type (songs only here).
    func stickerNamesTypes(_ r: MPDRequest) throws(MPDError) -> MPDText {
        try requireStickers()
        if let type = r.args.first, type != "song" { return "" }
        guard case .stickerNames(let names) = try run(StickerCommand(.names)) else { return "" }
        return names.map { "name: \($0)\ntype: song\n" }.joined()
    }
}
