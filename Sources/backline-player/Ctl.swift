import ArgumentParser
import BacklineWire
import Control
import CtlCore
import Daemon
import MediaCore

/// `backline ctl COMMAND [ARGS]`: one protocol command, from the shell (`CtlRun` in CtlCore
/// runs it; here every command's arguments are checked, with the daemon's own command types
/// for those `CtlCommands.simple` leaves: the small `backline` hands those lines here).
struct Ctl: ParsableCommand {
    // The discussion is short lines (ArgumentParser rewraps longer ones to the terminal's
    // width, which broke a table); the commands are listed by `ctl help`.
    static let configuration = CommandConfiguration(
        commandName: "ctl",  // (given: deriving it reflects on the type, a conformance scan at start-up)
        abstract: "Control a running `backline daemon`.",
        usage: "backline ctl [--socket PATH] [--json] [--format F] COMMAND [ARGUMENTS…]",
        discussion: """
            The commands and their arguments: backline ctl help
            One command in detail:            backline ctl help COMMAND

            Positions in the queue count from 1, as `list` numbers them; ids are
            the numbers `list` shows as [id N] and stay with an item wherever it
            moves. `play ID`, `remove ID…` and `move ID POS` take ids; `insert POS`,
            `add --at POS` and `move`'s POS take positions.

            Output is for people; --json prints the daemon's reply as it is.
            Exit status: 0 done; 1 the daemon refused, nothing could play, or a
            usage error (the message on stderr); 3 no daemon is running.
            """)

    @Option(name: .long, help: "Control socket (default: $XDG_RUNTIME_DIR/backline/control.sock).")
    var socket: String?

    @Option(name: .long, help: "Run the command in this partition (zone) of the daemon.")
    var partition: String?

    @Flag(name: .long, help: "Print the daemon's JSON reply (or events) instead of text.")
    var json = false

    @Option(name: .long, help: "With status: one line, %title% %artist% %album% %elapsed% %duration% %state% %buffering% %id% %file% %position% replaced.")
    var format: String?

    @Argument(help: "The command (`backline ctl help` lists them).")
    var command: String

    @Argument(parsing: .captureForPassthrough, help: "Its arguments.")
    var arguments: [String] = []

    func run() throws {
        var ctl = CtlInvocation(socket: socket, partition: partition, json: json, format: format, command: command, arguments: arguments)
        ctl.takeTrailingOptions()
        do {
            try CtlRun.perform(ctl, build: Self.build)
        } catch let e as CtlExit {
            throw ExitCode(e.code)
        }
    }

    /// The request for `command`: the shared simple ones, else from the typed command.
    static func build(_ command: String, _ arguments: [String]) throws(CtlBuildFailure) -> CtlRequest {
        do {
            if let simple = try CtlCommands.simple(command, arguments) { return simple }
            guard let typed = try typed(command, arguments),
                  case .object(let members) = JSONCodec.request(typed) else { return .untyped }
            return .command(name: typed.descriptor.name, members: members.filter { $0.0 != "command" })
        } catch let u as CtlUsage {
            throw .usage(u)
        } catch let e as CommandError {
            if case .unknownCommand = e { throw .unknownCommand }
            throw .usage(CtlUsage(command, e.message))
        } catch {
            throw .usage(CtlUsage(command, "\(error)"))
        }
    }

    // MARK: Building the request

    /// The typed command the arguments ask for (the daemon's own command types: what `ctl`
    /// sends is what every protocol runs). Nil for `send` (a raw line). Positions a person
    /// gives count from 1; the protocol's indexes from 0.
    private static func typed(_ command: String, _ arguments: [String]) throws -> (any ControlCommand)? {
        var a = arguments
        let cmd = command
        func id(_ s: String) throws -> Int { try CtlCommands.itemID(s, cmd) }
        func onOff(_ s: String?) throws -> Bool? { try CtlCommands.onOff(s, cmd) }
        func int(_ s: String, _ what: String = "an integer") throws -> Int {
            guard let i = Int(s) else { throw CtlUsage(cmd, "expected \(what), got '\(s)'") }
            return i
        }
        /// A 1-based position → a 0-based index.
        func position(_ s: String) throws -> Int {
            guard let i = Int(s), i >= 1 else { throw CtlUsage(cmd, "expected a position (1 is the first), got '\(s)'") }
            return i - 1
        }
        func number(_ s: String, _ what: String = "a number") throws -> Double {
            if s.contains(":") {
                guard let t = parseTime(s) else { throw CtlUsage(cmd, "expected \(what), got '\(s)'") }
                return t
            }
            guard let d = Double(s), d.isFinite else { throw CtlUsage(cmd, "expected \(what), got '\(s)'") }
            return d
        }
        func option(_ name: String) throws -> String? {
            guard let i = a.firstIndex(of: name) else { return nil }
            guard i + 1 < a.count else { throw CtlUsage(cmd, "\(name) needs a value") }
            let v = a[i + 1]
            a.removeSubrange(i...(i + 1))
            return v
        }
        func flag(_ name: String) -> Bool {
            guard let i = a.firstIndex(of: name) else { return false }
            a.remove(at: i)
            return true
        }
        func atMost(_ n: Int) throws {
            guard a.count > n else { return }
            throw CtlUsage(cmd, "unexpected '\(a[n])'")
        }
        func required(_ what: String) throws -> String {
            guard let v = a.first else { throw CtlUsage(cmd, "give \(what)") }
            a.removeFirst()
            return v
        }
        /// Built from arguments, checked as the daemon checks them.
        func make(_ name: String, _ values: [String: ArgumentValue]) throws -> any ControlCommand {
            guard let d = CommandTable.descriptor(name) else { throw CommandError.unknownCommand(name) }
            do { return try d.make(Arguments(values)) } catch { throw CtlUsage(cmd, Self.withoutPrefix(Self.message(error), name)) }
        }
        switch command {
        case "seek":
            let t = try required("SECONDS, +SECONDS, -SECONDS or M:SS")
            try atMost(0)
            let what = "SECONDS, +SECONDS, -SECONDS or M:SS"
            if t.hasPrefix("+") || t.hasPrefix("-") {
                let v = try number(String(t.dropFirst()), what)
                return SeekCommand(target: .offset(t.hasPrefix("-") ? -v : v))
            }
            return SeekCommand(target: .position(try number(t, what)))
        case "skip":
            try atMost(1)
            if a.first == "back" { return try make("skip", ["back": .boolean(true)]) }
            return try make("skip", try a.first.map { ["seconds": .number(try number($0, "±SECONDS or back"))] } ?? [:])
        case "repeat", "consume":
            try atMost(1)
            let modes = command == "repeat" ? ["off", "one", "all"] : ["off", "on", "oneshot"]
            if let m = a.first, !modes.contains(m) { throw CtlUsage(cmd, "expected \(modes.joined(separator: ", ")), got '\(m)'") }
            return try make(command, a.first.map { ["mode": .string($0)] } ?? [:])
        case "rate":
            let r = try required("a rate (1 plays, 0 pauses)")
            try atMost(0)
            return RateCommand(rate: try number(r))
        case "add":
            let at = try option("--at").map(position)
            guard !a.isEmpty else { throw CtlUsage(cmd, "give at least one path") }
            return AddCommand(paths: a, position: at, partial: true)
        case "insert":
            let at = try position(try required("a position and at least one path"))
            guard !a.isEmpty else { throw CtlUsage(cmd, "give at least one path after the position") }
            return InsertCommand(paths: a, position: at, partial: true)
        case "remove":
            guard !a.isEmpty else { throw CtlUsage(cmd, "give at least one item id") }
            return RemoveCommand(ids: try a.map(id))
        case "move":
            guard a.count == 2 else { throw CtlUsage(cmd, "give an item id and a position") }
            return MoveCommand(id: try id(a[0]), position: try position(a[1]))
        case "priority":
            let p = try int(try required("a priority (0–255) and item ids"), "a priority from 0 to 255")
            guard !a.isEmpty else { throw CtlUsage(cmd, "give at least one item id after the priority") }
            return try make("priority", ["priority": .integer(p), "items": .integers(try a.map(id))])
        case "clip":
            // ID START END, ID START (to the end), ID (all of it again); times as seek takes them.
            let item = try id(try required("an item id, then START and END (or neither)"))
            guard a.count <= 2 else { throw CtlUsage(cmd, "give an item id, then START and END") }
            var values: [String: ArgumentValue] = ["item": .integer(item)]
            if a.count >= 1 { values["start"] = .number(try number(a[0], "START (SECONDS or M:SS)")) }
            if a.count == 2 { values["end"] = .number(try number(a[1], "END (SECONDS or M:SS)")) }
            return try make("clip", values)
        case "volume":
            try atMost(1)
            guard let v = a.first else { return VolumeCommand(change: nil) }
            let what = "N (0–100), +N or -N"
            if v.hasPrefix("+") || v.hasPrefix("-") { return VolumeCommand(change: .by(try number(v, what))) }
            return try make("volume", ["volume": .number(try number(v, what))])
        case "session":
            var values: [String: ArgumentValue] = [:]
            if let c = try option("--category") { values["category"] = .string(c) }
            if let o = try option("--options") { values["options"] = .strings(o.split(separator: ",").map(String.init)) }
            if let s = try option("--silent-switch") { values["silentSwitch"] = .boolean(try onOff(s)!) }
            if let s = try option("--screen-lock") { values["screenLocked"] = .boolean(try onOff(s)!) }
            try atMost(0)
            return try make("session", values)
        case "lifecycle":
            try atMost(1)
            if let s = a.first, s != "foreground", s != "background" { throw CtlUsage(cmd, "expected foreground or background, got '\(s)'") }
            return try make("lifecycle", a.first.map { ["state": .string($0)] } ?? [:])
        case "sticker":
            // list PATH; get PATH NAME; set PATH NAME VALUE; inc|dec PATH NAME [N]; delete PATH [NAME];
            // find NAME [DIR] [--op OP --value V] [--sort KEY] [--window A:B]; names.
            let action = a.isEmpty ? "names" : a.removeFirst()
            var v: [String: ArgumentValue] = ["action": .string(action)]
            switch action {
            case "names": break
            case "list": v["path"] = .string(try required("a song"))
            case "get": (v["path"], v["name"]) = (.string(try required("a song and a name")), .string(try required("a name after the song")))
            case "set":
                v["path"] = .string(try required("a song, a name and a value"))
                v["name"] = .string(try required("a name and a value after the song"))
                v["value"] = .string(try required("a value after the name"))
            case "inc", "dec":
                v["path"] = .string(try required("a song and a name"))
                v["name"] = .string(try required("a name after the song"))
                if let n = a.first { a.removeFirst(); v["by"] = .integer(try int(n, "a whole number to add")) }
            case "delete":
                v["path"] = .string(try required("a song"))
                if let n = a.first { a.removeFirst(); v["name"] = .string(n) }
            case "find":
                if let op = try option("--op") { v["op"] = .string(op) }
                if let value = try option("--value") { v["value"] = .string(value) }
                if let sort = try option("--sort") { v["sort"] = .string(sort) }
                if let window = try option("--window") { v["window"] = .string(window) }
                v["name"] = .string(try required("a sticker name"))
                if let dir = a.first { a.removeFirst(); v["path"] = .string(dir) }
            default: throw CtlUsage(cmd, "expected list, get, set, inc, dec, delete, find or names, got '\(action)'")
            }
            try atMost(0)
            return try make("sticker", v)
        case "sleep":
            if flag("--cancel") { try atMost(0); return SleepCommand(action: .cancel) }
            if flag("--end-of-item") { try atMost(0); return SleepCommand(action: .endOfItem) }
            if flag("--end-of-chapter") { try atMost(0); return SleepCommand(action: .endOfChapter) }
            var values: [String: ArgumentValue] = [:]
            if let f = try option("--fade") { values["fade"] = .number(try number(f, "fade seconds")) }
            try atMost(1)
            if let m = a.first {
                let minutes = try number(m, "MINUTES")
                if minutes == 0 { return SleepCommand(action: .cancel) }  // `sleep 0`: off
                guard minutes > 0, minutes <= 24 * 60 else { throw CtlUsage(cmd, "MINUTES is from 0 (off) to 1440 (24 hours), got '\(m)'") }
                values["minutes"] = .number(minutes)
            }
            return try make("sleep", values)
        case "alarm":
            // `alarm 07:30 [--fade S] [--play ID|--load PLAYLIST] [--daily]`, `alarm --cancel N`, `alarm`.
            if let n = try option("--cancel") { try atMost(0); return AlarmCommand(action: .cancel(id: try int(n, "an alarm number"))) }
            var values: [String: ArgumentValue] = [:]
            if let f = try option("--fade") { values["fade"] = .number(try number(f, "fade seconds")) }
            if let i = try option("--play") { values["item"] = .integer(try id(i)) }
            if let p = try option("--load") { values["playlist"] = .string(p) }
            if flag("--daily") { values["daily"] = .boolean(true) }
            try atMost(1)
            if let t = a.first { values["time"] = .string(t) }
            return try make("alarm", values)
        case "save":
            let replace = flag("--replace")
            let n = try required("a playlist name")
            try atMost(0)
            return try make("save", ["name": .string(n), "replace": .boolean(replace)])
        case "load":
            let at = try option("--at").map(position)
            let n = try required("a playlist name")
            try atMost(0)
            return LoadPlaylistCommand(name: n, position: at)
        case "playlist", "playlist-clear", "playlist-remove":
            let n = try required("a playlist name")
            try atMost(0)
            return try make(command, ["name": .string(n)])
        case "playlist-add":
            let n = try required("a playlist name and at least one path")
            guard !a.isEmpty else { throw CtlUsage(cmd, "give at least one path after the name") }
            return PlaylistAddCommand(name: n, paths: a)
        case "playlist-delete":
            guard a.count == 2 else { throw CtlUsage(cmd, "give a playlist name and a position") }
            return PlaylistDeleteCommand(name: a[0], position: try position(a[1]))
        case "playlist-move":
            guard a.count == 3 else { throw CtlUsage(cmd, "give a playlist name and two positions") }
            return PlaylistMoveCommand(name: a[0], from: try position(a[1]), to: try position(a[2]))
        case "playlist-rename":
            guard a.count == 2 else { throw CtlUsage(cmd, "give a playlist name and its new name") }
            return try make("playlist-rename", ["name": .string(a[0]), "to": .string(a[1])])
        case "browse":
            let recursive = flag("--recursive")
            try atMost(1)
            var values: [String: ArgumentValue] = ["recursive": .boolean(recursive)]
            if let p = a.first { values["path"] = .string(p) }
            return try make("browse", values)
        case "update":
            let rescan = flag("--rescan")
            _ = flag("--wait")  // (CtlRun waits)
            try atMost(1)
            return UpdateCommand(path: a.first ?? "", rescan: rescan)
        case "find", "search":
            let sort = try option("--sort")
            let window = try option("--window")
            guard !a.isEmpty else { throw CtlUsage(cmd, "give a filter: TAG VALUE… or one expression \"(Artist == 'X')\"") }
            var values: [String: ArgumentValue] = ["terms": .strings(a)]
            if let sort { values["sort"] = .string(sort) }
            if let window { values["window"] = .string(window) }
            return try make(command, values)
        case "find-add", "search-add":
            let at = try option("--at").map(position)
            guard !a.isEmpty else { throw CtlUsage(cmd, "give a filter: TAG VALUE… or one expression") }
            return FindAddCommand(terms: a, search: command == "search-add", position: at)
        case "list":
            var groups: [String] = []
            while let g = try option("--group") { groups.append(g) }
            let tag = try required("a tag (Artist, Album, Genre…)")
            return try make("list", ["tag": .string(tag), "terms": .strings(a), "group": .strings(groups)])
        case "count":
            let group = try option("--group")
            var values: [String: ArgumentValue] = ["terms": .strings(a)]
            if let group { values["group"] = .string(group) }
            return try make("count", values)
        case "ls":
            let recursive = flag("--recursive")
            try atMost(1)
            return LsCommand(path: a.first ?? "", recursive: recursive)
        case "send":
            try atMost(1)
            return nil
        default:
            throw CommandError.unknownCommand(command)
        }
    }

    private static func message(_ e: any Error) -> String { (e as? CommandError)?.message ?? "\(e)" }

    /// A daemon message without its leading "command: " (ctl prints the command itself).
    static func withoutPrefix(_ message: String, _ name: String) -> String {
        message.hasPrefix(name + ": ") ? String(message.dropFirst(name.count + 2)) : message
    }
}
