import AudioEngine
import Control
import Media
import FoundationEssentials
import MediaCore
import NIOCore
import Platform
import PlayQueue
import Synchronization
import Player
import Locking

/// How an MPD argument is read: each kind fails with mpd's message (`src/protocol/ArgParser.cxx`)
/// before the command runs.
enum MPDArgument: Sendable {
    /// Anything (a URI, a name, a tag value).
    case any
    /// A signed integer: `Integer expected: x`.
    case integer
    /// An unsigned integer: `Integer expected: x`, and `Number too large: -1` for a negative one.
    case unsigned
    /// A float: `Float expected: x`; finite as a 32-bit float (mpd keeps one: a larger value
    /// would be `inf` there, and `-1e308` read back as `-inf`) or `Number too large: x`.
    case float
    /// `0` or `1`: `Boolean (0/1) expected: x`.
    case boolean
    /// A float ≥ 0 (a position in seconds): `Float expected`, `Negative value not allowed: -1`.
    case time
    /// `N`, `N:`, `N:M` (M ≥ N) or `-1`: `Integer or range expected: x`, `Number is negative: -2`,
    /// `Malformed range: 3:1`.
    case range

    /// Checks `s`; mpd's error when it is not of this kind.
    func check(_ s: String) throws(MPDError) {
        switch self {
        case .any: return
        case .integer: guard Int(s) != nil else { throw MPDError(.arg, "Integer expected: \(s)") }
        case .unsigned:
            guard let v = Int(s) else { throw MPDError(.arg, "Integer expected: \(s)") }
            guard v >= 0 else { throw MPDError(.arg, "Number too large: \(s)") }
        case .float:
            guard let v = Double(s), v.isFinite else { throw MPDError(.arg, "Float expected: \(s)") }
            guard Float(v).isFinite else { throw MPDError(.arg, "Number too large: \(s)") }
        case .boolean: guard s == "0" || s == "1" else { throw MPDError(.arg, "Boolean (0/1) expected: \(s)") }
        case .time:
            guard let v = Double(s), v.isFinite else { throw MPDError(.arg, "Float expected: \(s)") }
            guard v >= 0 else { throw MPDError(.arg, "Negative value not allowed: \(s)") }
        case .range:
            if s == "-1" { return }
            let parts = s.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let a = Int(parts[0]), parts.count == 1 || parts[1].isEmpty || Int(parts[1]) != nil else {
                throw MPDError(.arg, "Integer or range expected: \(s)")
            }
            guard a >= 0 else { throw MPDError(.arg, "Number is negative: \(s)") }
            if parts.count == 2, let b = Int(parts[1]), b < a { throw MPDError(.arg, "Malformed range: \(s)") }
        }
    }
}

/// One MPD request as a handler sees it: the words, checked against its ``MPDCommand``.
struct MPDRequest {
    let name: String
    let args: [String]
    let state: MPDClientState
    let connection: any ConnectionContext
}

/// An MPD command: its name, how many arguments it takes and of which kinds, who may run it,
/// where it runs, and what it does. ``MPDCommandTable`` is the one list: `commands`,
/// `notcommands`, the argument checks and their ACKs all come from it.
package struct MPDCommand: Sendable {
    /// Who may run a command on a connection that must give the password.
    enum Permission: Sendable { case anyone, control }

    let name: String
    let minArguments: Int
    /// nil: any number.
    let maxArguments: Int?
    /// The kinds of the first arguments, checked in order (later ones are `.any`).
    let arguments: [MPDArgument]
    let permission: Permission
    /// Runs on the connection's event loop (touches no file: microseconds); otherwise off it,
    /// where ``executor(_:)`` says.
    let inline: Bool
    /// The index of the argument naming what to expand (a file, a directory, a playlist, a
    /// URL), as the JSON protocol's `add` names its paths: it decides where the command runs.
    let expands: Int?
    /// A database command: listed by `commands` only with a library (without one they answer
    /// "No database", as an mpd built without a database would not list them).
    let database: Bool
    /// Whether `commands` lists it.
    func listed(_ p: MPDProtocol) -> Bool { !database || p.playback.library != nil }
    let run: @Sendable (MPDProtocol, MPDRequest, inout ByteBuffer) throws(MPDError) -> Void

    init(_ name: String, _ arity: ClosedRange<Int>, _ arguments: [MPDArgument] = [], unbounded: Bool = false,
         permission: Permission = .control, inline: Bool = false, expands: Int? = nil, database: Bool = false,
         bytes run: @escaping @Sendable (MPDProtocol, MPDRequest, inout ByteBuffer) throws(MPDError) -> Void) {
        self.name = name
        minArguments = arity.lowerBound
        maxArguments = unbounded ? nil : arity.upperBound
        self.arguments = arguments
        self.permission = permission
        self.inline = inline
        self.expands = expands
        self.database = database
        self.run = run
    }

    /// A command answered in text (its values through ``MPDText``'s one rule).
    init(_ name: String, _ arity: ClosedRange<Int>, _ arguments: [MPDArgument] = [], unbounded: Bool = false,
         permission: Permission = .control, inline: Bool = false, expands: Int? = nil, database: Bool = false,
         _ text: @escaping @Sendable (MPDProtocol, MPDRequest) throws(MPDError) -> MPDText) {
        self.init(name, arity, arguments, unbounded: unbounded, permission: permission, inline: inline, expands: expands, database: database,
                  bytes: { (p: MPDProtocol, r: MPDRequest, out: inout ByteBuffer) throws(MPDError) in
                      out.writeMPD(try text(p, r))
                  })
    }

    /// Where the command with `args` runs off the event loop: as the JSON protocol's requests
    /// that expand paths (``Control/CommandExecutor/expanding(_:)``) when it expands one, else
    /// on the server's pool.
    func executor(_ args: ArraySlice<String>) -> CommandExecutor {
        guard let expands, args.indices.contains(args.startIndex + expands) else { return .offLoop }
        return .expanding([args[args.startIndex + expands]])
    }

    /// mpd's argument-count check (`command_check_request`), then each argument's kind.
    package func check(_ args: [String]) throws(MPDError) {
        if let max = maxArguments, minArguments == max, args.count != max {
            throw MPDError(.arg, "wrong number of arguments for \"\(name)\"")
        }
        if args.count < minArguments { throw MPDError(.arg, "too few arguments for \"\(name)\"") }
        if let max = maxArguments, args.count > max { throw MPDError(.arg, "too many arguments for \"\(name)\"") }
        for (a, kind) in zip(args, arguments) { try kind.check(a) }
    }
}

/// Every MPD command Backline answers, in mpd's (alphabetical) order. `idle`, `noidle`,
/// `close` and the command lists are the connection's own (``MPDConnectionHandler``).
package enum MPDCommandTable {
    static let all: [MPDCommand] = [
        MPDCommand("add", 1...2, expands: 0) { p, r throws(MPDError) in try p.add(r) },
        MPDCommand("addid", 1...2, expands: 0) { p, r throws(MPDError) in try p.add(r) },
        MPDCommand("addtagid", 3...3, [.unsigned]) { p, r throws(MPDError) in try p.editTags(r) },
        MPDCommand("albumart", 2...2, [.any, .unsigned], bytes: { p, r, out throws(MPDError) in
            out.writeBytes(try p.picture(r))
        }),
        MPDCommand("binarylimit", 1...1, [.unsigned], inline: true) { p, r throws(MPDError) in
            let n = Int(r.args[0])!
            guard n >= 64 else { throw MPDError(.arg, "Value too small") }
            r.state.binaryLimit = min(n, MPDProtocol.maximumResponse)
            return ""
        },
        MPDCommand("channels", 0...0, inline: true) { p, r throws(MPDError) in
            guard case .channels(let names) = try p.runChannel(ChannelsCommand(), r) else { return "" }
            return names.map { "channel: \($0)\n" }.joined()
        },
        MPDCommand("clear", 0...0, inline: true) { p, _ throws(MPDError) in _ = try p.run(ClearCommand()); return "" },
        MPDCommand("clearerror", 0...0, inline: true) { p, _ throws(MPDError) in _ = try p.run(ClearErrorCommand()); return "" },
        MPDCommand("cleartagid", 1...2, [.unsigned]) { p, r throws(MPDError) in try p.editTags(r) },
        // `close`, `idle` (and `noidle`) are the connection's own; listed here for `commands`.
        MPDCommand("close", 0...0, unbounded: true, permission: .anyone, inline: true) { _, _ in "" },
        MPDCommand("commands", 0...0, permission: .anyone, inline: true) { p, r in
            MPDCommandTable.all.filter { $0.listed(p) && r.state.may($0, r.connection) }.map { "command: \($0.name)\n" }.joined()
        },
        MPDCommand("config", 0...0, inline: true) { p, r throws(MPDError) in
            guard r.state.local else { throw MPDError(.permission, "Command only permitted to local clients") }
            return "music_directory: \(p.playback.configuration.musicDirectory)\n"
        },
        MPDCommand("consume", 1...1, inline: true) { p, r throws(MPDError) in
            let mode: ConsumeMode
            switch r.args[0] {
            case "1": mode = .on
            case "0": mode = .off
            case "oneshot": mode = .oneshot
            default: throw MPDError(.arg, "Boolean (0/1) expected: \(r.args[0])")
            }
            _ = try p.run(ConsumeCommand(mode: mode))
            return ""
        },
        MPDCommand("count", 1...1, unbounded: true, database: true) { p, r throws(MPDError) in try p.count(r) },
        MPDCommand("crossfade", 1...1, [.unsigned], inline: true) { p, r throws(MPDError) in
            _ = try p.run(CrossfadeCommand(seconds: Double(min(Int(r.args[0])!, 3600))))
            return ""
        },
        MPDCommand("currentsong", 0...0) { p, r throws(MPDError) in try p.songs(.current, r.state) },
        MPDCommand("decoders", 0...0, inline: true) { _, _ in
            DecoderRegistry.standard.plugins.map { d in
                "plugin: \(d.name)\n" + d.suffixes.map { "suffix: \($0)\n" }.joined() + d.mimeTypes.map { "mime_type: \($0)\n" }.joined()
            }.joined()
        },
        MPDCommand("delete", 1...1, [.range]) { p, r throws(MPDError) in
            _ = try p.run(RemoveCommand(positions: try p.positions(r.args[0])))
            return ""
        },
        MPDCommand("deleteid", 1...1, [.unsigned], inline: true) { p, r throws(MPDError) in
            _ = try p.run(RemoveCommand(ids: [Int(r.args[0])!]))
            return ""
        },
        MPDCommand("disableoutput", 1...1, [.unsigned], inline: true) { p, r throws(MPDError) in try p.output(r, mute: true) },
        MPDCommand("enableoutput", 1...1, [.unsigned], inline: true) { p, r throws(MPDError) in try p.output(r, mute: false) },
        MPDCommand("find", 1...1, unbounded: true, database: true, bytes: { p, r, out throws(MPDError) in try p.find(r, fold: false, into: &out) }),
        MPDCommand("findadd", 1...1, unbounded: true, database: true) { p, r throws(MPDError) in try p.findAdd(r, fold: false) },
        MPDCommand("getvol", 0...0, inline: true) { p, _ in "volume: \(p.volumePercent)\n" },
        MPDCommand("idle", 0...0, unbounded: true, inline: true) { _, _ in "" },
        MPDCommand("list", 1...1, unbounded: true, database: true) { p, r throws(MPDError) in try p.list(r) },
        MPDCommand("listall", 0...1, bytes: { p, r, out throws(MPDError) in
            try p.listing(r.args.first ?? "", recursive: true, info: false, r.state, into: &out)
        }),
        MPDCommand("listallinfo", 0...1, bytes: { p, r, out throws(MPDError) in
            try p.listing(r.args.first ?? "", recursive: true, info: true, r.state, into: &out)
        }),
        MPDCommand("listfiles", 0...1) { p, r throws(MPDError) in try p.listFiles(r.args.first ?? "") },
        MPDCommand("listmounts", 0...0, inline: true) { p, r in
            // The music directory is the one mount, at the root (its path only for local clients, as mpd).
            "mount: \n" + (r.state.local ? "storage: \(p.playback.configuration.musicDirectory)\n" : "")
        },
        MPDCommand("listplaylist", 1...1) { p, r throws(MPDError) in try p.storedPlaylist(r, info: false) },
        MPDCommand("listplaylistinfo", 1...1) { p, r throws(MPDError) in try p.storedPlaylist(r, info: true) },
        MPDCommand("listplaylists", 0...0) { p, _ throws(MPDError) in
            guard case .playlists(let all) = try p.runPlaylist(PlaylistsCommand()) else { return "" }
            return all.map { "playlist: \($0.name)\nLast-Modified: \(JSONCodec.iso8601($0.modified))\n" }.joined()
        },
        MPDCommand("load", 1...3, [.any, .range]) { p, r throws(MPDError) in
            let range = r.args.count > 1 ? try p.range(r.args[1], count: Int(Int32.max), clamp: true) : nil
            let target = r.args.count > 2 ? try p.target(r.args[2]) : nil
            _ = try p.runPlaylist(LoadPlaylistCommand(name: r.args[0], range: range, target: target))
            return ""
        },
        MPDCommand("lsinfo", 0...1, bytes: { p, r, out throws(MPDError) in
            try p.listing(r.args.first ?? "", recursive: false, info: true, r.state, into: &out)
        }),
        // Kept and reported as mpd does; never used: items never overlap.
        MPDCommand("mixrampdb", 1...1, [.float], inline: true) { p, r in
            p.shared.mixRamp.withLock { $0.db = Double(r.args[0])! }
            return ""
        },
        MPDCommand("mixrampdelay", 1...1, [.float], inline: true) { p, r in
            p.shared.mixRamp.withLock { $0.delay = Double(r.args[0])! }
            return ""
        },
        MPDCommand("move", 2...2, [.range, .integer]) { p, r throws(MPDError) in try p.move(r) },
        MPDCommand("moveid", 2...2, [.unsigned, .integer], inline: true) { p, r throws(MPDError) in
            _ = try p.run(MoveCommand(id: Int(r.args[0])!, target: try p.target(r.args[1]), withinQueue: true))
            return ""
        },
        MPDCommand("next", 0...0, inline: true) { p, _ throws(MPDError) in
            _ = try p.run(NextCommand(requiresPlayback: true))
            return ""
        },
        MPDCommand("notcommands", 0...0, permission: .anyone, inline: true) { p, r in
            MPDCommandTable.all.filter { $0.listed(p) && !r.state.may($0, r.connection) }.map { "command: \($0.name)\n" }.joined()
        },
        MPDCommand("outputs", 0...0, inline: true) { p, r throws(MPDError) in
            // Every output, its plugin named by its driver; those of other partitions (or of
            // none) as mpd shows them: `dummy`, off.
            guard case .outputs(let all) = try p.run(OutputsCommand()) else { return "" }
            let here = r.connection.partition
            return all.map { o in
                let mine = o.partition == here
                return "outputid: \(o.id)\noutputname: \(o.name)\nplugin: \(mine ? o.plugin : "dummy")\noutputenabled: \(mine && !o.muted ? 1 : 0)\n"
            }.joined()
        },
        MPDCommand("outputset", 3...3, [.unsigned], inline: true) { p, r throws(MPDError) in
            guard p.dispatcher.partitions.outputList.contains(where: { $0.id == Int(r.args[0]) }) else {
                throw MPDError(.noExist, "No such audio output")
            }
            guard !r.args[1].isEmpty, r.args[1].utf8.allSatisfy({ $0 == UInt8(ascii: "_") || (48...57).contains($0)
                || (65...90).contains($0) || (97...122).contains($0) }) else { throw MPDError(.arg, "Illegal attribute name") }
            throw MPDError(.arg, "Unsupported attribute")  // the one output has no attributes (as mpd's null output)
        },
        MPDCommand("partition", 1...1, inline: true) { p, r throws(MPDError) in
            switch p.dispatcher.execute(PartitionCommand(name: r.args[0]), from: r.connection) {
            case .success: return ""
            case .failure: throw MPDError(.noExist, "partition does not exist")
            }
        },
        MPDCommand("listpartitions", 0...0, inline: true) { p, _ in
            p.dispatcher.partitions.names.map { "partition: \($0)\n" }.joined()
        },
        MPDCommand("newpartition", 1...1) { p, r throws(MPDError) in
            guard Partitions.isValidName(r.args[0]) else { throw MPDError(.arg, "bad name") }
            switch p.perform(NewPartitionCommand(name: r.args[0])) {
            case .success: return ""
            case .failure(.exists): throw MPDError(.exist, "name already exists")
            case .failure(.tooLarge): throw MPDError(.unknown, "too many partitions")
            case .failure(let e): throw MPDError(e)
            }
        },
        MPDCommand("delpartition", 1...1) { p, r throws(MPDError) in
            switch p.perform(DeletePartitionCommand(name: r.args[0])) {
            case .success: return ""
            case .failure(.notFound): throw MPDError(.noExist, "no such partition")
            case .failure(.forbidden): throw MPDError(.unknown, "cannot delete the default partition")
            case .failure(let e): throw MPDError(e)
            }
        },
        MPDCommand("moveoutput", 1...1) { p, r throws(MPDError) in
            switch p.perform(MoveOutputCommand(name: r.args[0])) {
            case .success: return ""
            case .failure(.notFound): throw MPDError(.noExist, "No such output")
            case .failure(.forbidden(let m)): throw MPDError(.unknown, m)
            case .failure(let e): throw MPDError(e)
            }
        },
        MPDCommand("password", 1...1, permission: .anyone) { p, r throws(MPDError) in try p.password(r) },
        MPDCommand("pause", 0...1, [.boolean], inline: true) { p, r throws(MPDError) in
            switch r.args.first {
            case nil: _ = try p.run(ToggleCommand(startsWhenStopped: false))
            case "1": _ = try p.run(PauseCommand())
            default: _ = try p.run(PlayCommand(resumeOnly: true))
            }
            return ""
        },
        MPDCommand("ping", 0...0, permission: .anyone, inline: true) { _, _ in "" },
        MPDCommand("play", 0...1, [.integer], inline: true) { p, r throws(MPDError) in
            guard let a = r.args.first, a != "-1" else { return try p.play(PlayCommand(item: nil)) }
            return try p.play(PlayCommand(position: Int(a)!))
        },
        MPDCommand("playid", 0...1, [.integer], inline: true) { p, r throws(MPDError) in
            guard let a = r.args.first, a != "-1" else { return try p.play(PlayCommand(item: nil)) }
            return try p.play(PlayCommand(item: Int(a)!))
        },
        MPDCommand("playlist", 0...0) { p, _ throws(MPDError) in  // deprecated: `POS:file: URI`
            guard case .queue(let listing) = try p.run(ListCommand()) else { return "" }
            return listing.items.map { "\($0.index ?? 0):file: \(p.relative($0.path))\n" }.joined()
        },
        MPDCommand("playlistadd", 2...2, expands: 1) { p, r throws(MPDError) in
            _ = try p.run(PlaylistAddCommand(name: r.args[0], paths: [try p.uri(r.args[1], r.state)]))
            return ""
        },
        MPDCommand("playlistclear", 1...1) { p, r throws(MPDError) in _ = try p.runPlaylist(PlaylistClearCommand(name: r.args[0])); return "" },
        MPDCommand("playlistdelete", 2...2, [.any, .unsigned]) { p, r throws(MPDError) in
            _ = try p.runPlaylist(PlaylistDeleteCommand(name: r.args[0], position: Int(r.args[1])!), badIndex: true)
            return ""
        },
        MPDCommand("playlistfind", 1...1, unbounded: true) { p, r throws(MPDError) in try p.findInQueue(r, exact: true) },
        MPDCommand("playlistid", 0...1, [.unsigned]) { p, r throws(MPDError) in
            guard let a = r.args.first else { return try p.songs(.all, r.state) }
            return try p.songs(.id(Int(a)!), r.state)
        },
        MPDCommand("playlistinfo", 0...1, [.range]) { p, r throws(MPDError) in
            // `-1` (compat) and no argument: the whole queue.
            guard let a = r.args.first, a != "-1" else { return try p.songs(.all, r.state) }
            return try p.songs(.positions(try p.positions(a, clamp: true)), r.state)
        },
        MPDCommand("playlistmove", 3...3, [.any, .unsigned, .unsigned]) { p, r throws(MPDError) in
            _ = try p.runPlaylist(PlaylistMoveCommand(name: r.args[0], from: Int(r.args[1])!, to: Int(r.args[2])!), badIndex: true)
            return ""
        },
        MPDCommand("playlistsearch", 1...1, unbounded: true) { p, r throws(MPDError) in try p.findInQueue(r, exact: false) },
        MPDCommand("plchanges", 1...2, [.unsigned, .range]) { p, r throws(MPDError) in try p.changes(r, positionsOnly: false) },
        MPDCommand("plchangesposid", 1...2, [.unsigned, .range]) { p, r throws(MPDError) in try p.changes(r, positionsOnly: true) },
        MPDCommand("previous", 0...0, inline: true) { p, _ throws(MPDError) in
            _ = try p.run(PreviousCommand(requiresPlayback: true))
            return ""
        },
        MPDCommand("prio", 2...2, [.unsigned], unbounded: true, inline: true) { p, r throws(MPDError) in try p.priority(r) },
        MPDCommand("prioid", 2...2, [.unsigned], unbounded: true, inline: true) { p, r throws(MPDError) in try p.priority(r) },
        MPDCommand("rangeid", 2...2, [.unsigned]) { p, r throws(MPDError) in try p.range(r) },
        MPDCommand("random", 1...1, [.boolean], inline: true) { p, r throws(MPDError) in
            _ = try p.run(ShuffleCommand(on: r.args[0] == "1"))
            return ""
        },
        MPDCommand("readcomments", 1...1) { p, r throws(MPDError) in try p.comments(r) },
        MPDCommand("readmessages", 0...0, inline: true) { p, r throws(MPDError) in
            guard case .messages(let all) = try p.runChannel(ChannelReadCommand(), r) else { return "" }
            return all.map { "channel: \($0.channel)\nmessage: \($0.text)\n" }.joined()
        },
        MPDCommand("readpicture", 2...2, [.any, .unsigned], bytes: { p, r, out throws(MPDError) in
            out.writeBytes(try p.picture(r))
        }),
        MPDCommand("rename", 2...2) { p, r throws(MPDError) in
            _ = try p.runPlaylist(PlaylistRenameCommand(name: r.args[0], to: r.args[1]))
            return ""
        },
        MPDCommand("repeat", 1...1, [.boolean], inline: true) { p, r throws(MPDError) in
            // mpd's repeat and single flags onto repeat one/all and stop-after-current (each).
            _ = try p.run(RepeatCommand(mpdFlag: r.args[0] == "1"))
            return ""
        },
        MPDCommand("replay_gain_mode", 1...1, inline: true) { p, r throws(MPDError) in
            guard let mode = ReplayGainMode(rawValue: r.args[0]) else { throw MPDError(.arg, "Unrecognized replay gain mode") }
            _ = try p.run(ReplayGainCommand(mode: mode))
            return ""
        },
        MPDCommand("replay_gain_status", 0...0, inline: true) { p, _ in "replay_gain_mode: \(p.playback.replayGain.mode.rawValue)\n" },
        MPDCommand("rescan", 0...1, database: true) { p, r throws(MPDError) in try p.update(r) },
        MPDCommand("rm", 1...1) { p, r throws(MPDError) in _ = try p.runPlaylist(PlaylistRemoveCommand(name: r.args[0])); return "" },
        MPDCommand("save", 1...1) { p, r throws(MPDError) in _ = try p.runPlaylist(SavePlaylistCommand(name: r.args[0])); return "" },
        MPDCommand("search", 1...1, unbounded: true, database: true, bytes: { p, r, out throws(MPDError) in try p.find(r, fold: true, into: &out) }),
        MPDCommand("searchadd", 1...1, unbounded: true, database: true) { p, r throws(MPDError) in try p.findAdd(r, fold: true) },
        MPDCommand("searchaddpl", 2...2, unbounded: true, database: true) { p, r throws(MPDError) in try p.searchAddPlaylist(r) },
        MPDCommand("seek", 2...2, [.unsigned, .time], inline: true) { p, r throws(MPDError) in
            _ = try p.run(SeekCommand(target: .position(Double(r.args[1])!), position: Int(r.args[0])!))
            return ""
        },
        MPDCommand("seekcur", 1...1, [.float], inline: true) { p, r throws(MPDError) in
            let a = r.args[0], t = Double(a)!
            _ = try p.run(SeekCommand(target: a.hasPrefix("+") || a.hasPrefix("-") ? .offset(t) : .position(t), requiresPlayback: true))
            return ""
        },
        MPDCommand("seekid", 2...2, [.unsigned, .time], inline: true) { p, r throws(MPDError) in
            try p.seek(id: Int(r.args[0])!, to: Double(r.args[1])!)
        },
        MPDCommand("sendmessage", 2...2, inline: true) { p, r throws(MPDError) in _ = try p.runChannel(ChannelSendCommand(channel: r.args[0], message: r.args[1]), r); return "" },
        MPDCommand("setvol", 1...1, [.unsigned], inline: true) { p, r throws(MPDError) in
            let v = Int(r.args[0])!
            guard v <= 100 else { throw MPDError(.arg, "Number too large: \(r.args[0])") }
            _ = try p.run(VolumeCommand(change: .set(Double(v))))
            return ""
        },
        MPDCommand("shuffle", 0...1, [.range], inline: true) { p, r throws(MPDError) in try p.shuffle(r) },
        MPDCommand("single", 1...1, inline: true) { p, r throws(MPDError) in try p.single(r) },
        MPDCommand("stats", 0...0) { p, _ throws(MPDError) in try p.stats() },
        MPDCommand("status", 0...0, inline: true, bytes: { p, _, out in p.status(into: &out) }),
        MPDCommand("sticker", 3...3, unbounded: true, database: true) { p, r throws(MPDError) in try p.sticker(r) },
        MPDCommand("stickernames", 0...0, database: true) { p, _ throws(MPDError) in try p.stickerNames() },
        MPDCommand("stickernamestypes", 0...1, database: true) { p, r throws(MPDError) in try p.stickerNamesTypes(r) },
        MPDCommand("stickertypes", 0...0, database: true) { p, _ throws(MPDError) in
            guard p.playback.library != nil else { throw MPDError(.unknown, "sticker database is disabled") }
            return "stickertype: song\n"
        },
        MPDCommand("stop", 0...0, inline: true) { p, _ throws(MPDError) in _ = try p.run(StopCommand()); return "" },
        MPDCommand("subscribe", 1...1, inline: true) { p, r throws(MPDError) in _ = try p.runChannel(ChannelSubscribeCommand(channel: r.args[0]), r); return "" },
        MPDCommand("swap", 2...2, [.unsigned, .unsigned]) { p, r throws(MPDError) in
            _ = try p.run(MoveCommand(swap: .positions(Int(r.args[0])!, Int(r.args[1])!)))
            return ""
        },
        MPDCommand("swapid", 2...2, [.unsigned, .unsigned]) { p, r throws(MPDError) in
            _ = try p.run(MoveCommand(swap: .ids(Int(r.args[0])!, Int(r.args[1])!)))
            return ""
        },
        MPDCommand("tagtypes", 0...0, unbounded: true, inline: true) { p, r throws(MPDError) in try p.tagTypes(r) },
        MPDCommand("toggleoutput", 1...1, [.unsigned], inline: true) { p, r throws(MPDError) in try p.output(r, mute: nil) },
        MPDCommand("unsubscribe", 1...1, inline: true) { p, r throws(MPDError) in _ = try p.runChannel(ChannelUnsubscribeCommand(channel: r.args[0]), r); return "" },
        MPDCommand("update", 0...1, database: true) { p, r throws(MPDError) in try p.update(r) },
        MPDCommand("urlhandlers", 0...0, inline: true) { p, _ in
            // mpd lists its input plugins' schemes (file:// only for local clients); the stream
            // schemes when `add` takes them.
            let streams: [MPDText] = p.playback.configuration.allowStreams ? InputSources.schemes.map { "handler: \($0)://\n" } : []
            return "handler: file://\n" + streams.joined()
        },
        MPDCommand("volume", 1...1, [.integer], inline: true) { p, r throws(MPDError) in
            let d = Int(r.args[0])!
            guard (-100...100).contains(d) else { throw MPDError(.arg, "Number too large: \(r.args[0])") }
            _ = try p.run(VolumeCommand(change: .by(Double(d))))
            return ""
        },
    ].sorted { $0.name < $1.name }

    private static let byName: [String: MPDCommand] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The command named `name`.
    package static func command(_ name: String) -> MPDCommand? { byName[name] }
}

extension MPDError {
    /// What an mpd built without a database answers to its commands.
    static let noDatabase = MPDError(.noExist, "No database")


}

extension MPDClientState {
    /// Whether this client may run `c` now (before the password: only what needs none).
    func may(_ c: MPDCommand, _ connection: any ConnectionContext) -> Bool {
        c.permission == .anyone || !connection.needsToken || passwordGiven
    }
}

// MARK: - The handlers that take more than a few lines

extension MPDProtocol {
    func add(_ r: MPDRequest) throws(MPDError) -> MPDText {
        let target = try r.args.count > 1 ? self.target(r.args[1]) : nil
        let reply: Reply
        switch perform(AddCommand(paths: [try uri(r.args[0], r.state)], target: target)) {
        case .success(let x): reply = x
        case .failure(.notFound): throw MPDError(.noExist, "No such directory")  // mpd's words, for a file too
        case .failure(let e): throw MPDError(e)
        }
        guard case .added(let ids, _) = reply else { return "" }
        return r.name == "addid" ? ids.first.map { "Id: \($0)\n" } ?? "" : ""
    }

    /// `addtagid`/`cleartagid`: mpd edits the tags of remote songs (streams) only; every queue
    /// item here is a local file, answered as mpd answers one.
    func editTags(_ r: MPDRequest) throws(MPDError) -> MPDText {
        if r.name == "addtagid" || r.args.count > 1 {
            guard TagKey(mpdName: r.args[1]) != nil else { throw MPDError(.arg, "Unknown tag type: \(r.args[1])") }
        }
        _ = try run(ListCommand(selection: .id(Int(r.args[0])!)))  // "No such song" when there is none
        throw MPDError(.permission, "Cannot edit tags of local file")
    }

    func password(_ r: MPDRequest) throws(MPDError) -> MPDText {
        guard let want = shared.password, DaemonCore.constantTimeEqual(r.args[0], want) else {
            // A guess costs a second on this connection (its pool thread), and is logged.
            wrongPassword()
            sleepThread(seconds: 1)
            throw MPDError(.password, "incorrect password")
        }
        if !r.state.passwordGiven { passwordAccepted() }
        r.state.passwordGiven = true
        r.connection.authenticated = true
        return ""
    }

    func changes(_ r: MPDRequest, positionsOnly: Bool) throws(MPDError) -> MPDText {
        // The songs whose position changed after VERSION (added, moved, shifted by an edit
        // before them), in an optional position range.
        let version = Int(r.args[0])!
        let positions = r.args.count > 1 ? try self.positions(r.args[1], clamp: true) : nil
        guard case .queue(let listing) = try run(ListCommand(selection: .changes(since: version, positions: positions))) else { return "" }
        guard !positionsOnly else { return listing.items.map { "cpos: \($0.index ?? 0)\nId: \($0.id)\n" }.joined() }
        return listing.items.map { song($0, r.state) }.joined()
    }

    /// `seek`/`seekid`: a pause is kept (as mpd; AVPlayer's seek never changes the rate), also
    /// when the song is another one; a stopped player starts playing it.
    func seek(id: Int, to t: Double) throws(MPDError) -> MPDText {
        _ = try run(SeekCommand(target: .position(t), item: id))
        return ""
    }

    /// `enableoutput`, `disableoutput` (`mute`: true, false) and `toggleoutput` (nil).
    func output(_ r: MPDRequest, mute: Bool?) throws(MPDError) -> MPDText {
        guard case .outputs(let all) = try run(OutputsCommand()), let o = all.first(where: { $0.id == Int(r.args[0]) }) else {
            throw MPDError(.noExist, "No such audio output")
        }
        guard o.partition == r.connection.partition else { return "" }  // another partition's: a dummy here, as in mpd
        // The partition's one output: disabling it mutes the player (its volume is kept).
        _ = try run(MuteCommand(on: mute))
        return ""
    }

    /// `move POS|START:END TO`: the block ends up starting at TO.
    func move(_ r: MPDRequest) throws(MPDError) -> MPDText {
        _ = try run(MoveCommand(positions: try positions(r.args[0]), target: try target(r.args[1])))
        return ""
    }

    func priority(_ r: MPDRequest) throws(MPDError) -> MPDText {
        let p = Int(r.args[0])!
        guard p <= 255 else { throw MPDError(.arg, "Number too large: \(r.args[0])") }
        if r.name == "prio" {
            var positions: [QueuePositions] = []
            for a in r.args.dropFirst() {
                try MPDArgument.range.check(a)
                positions.append(try self.positions(a))
            }
            _ = try run(PriorityCommand(priority: p, positions: positions))
            return ""
        }
        var ids: [Int] = []
        for a in r.args.dropFirst() {
            try MPDArgument.unsigned.check(a)
            ids.append(Int(a)!)
        }
        _ = try run(PriorityCommand(priority: p, ids: ids))
        return ""
    }

    /// `shuffle [RANGE]`: the range's items in a random order (the end clipped to the queue; a
    /// playing item in it moves to its start first, as mpd keeps it playing).
    func shuffle(_ r: MPDRequest) throws(MPDError) -> MPDText {
        var range: Range<Int>?
        if let a = r.args.first, a != "-1" {
            let parts = a.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let start = Int(parts[0])!
            let end = parts.count == 1 ? start + 1 : parts[1].isEmpty ? Int.max : Int(parts[1])!
            range = start..<max(start, end)
        }
        _ = try run(ShuffleQueueCommand(range: range, refusesStartPastEnd: true))
        return ""
    }

    /// `rangeid ID START:END`: either side may be empty (`2:` to the end, `:4.5` from the
    /// start, `:` all of it again); not the song playing now, as mpd.
    func range(_ r: MPDRequest) throws(MPDError) -> MPDText {
        let id = Int(r.args[0]) ?? -1
        let spec = r.args[1]
        guard let colon = spec.firstIndex(of: ":") else { throw MPDError(.arg, "Bad range") }
        func seconds(_ s: Substring) throws(MPDError) -> Double? {
            guard !s.isEmpty else { return nil }
            guard let v = Double(s), v.isFinite, v >= 0 else { throw MPDError(.arg, "Bad range") }
            return v
        }
        let start = try seconds(spec[..<colon])
        let end = try seconds(spec[spec.index(after: colon)...])
        if let end, end <= (start ?? 0) { throw MPDError(.arg, "Bad range") }
        // Fitted to the file's length, as mpd: a start past it is refused, an end past it is the end.
        let clip = (start ?? 0) == 0 && end == nil ? nil : PlaybackClip(start: start ?? 0, end: end)
        switch perform(ClipCommand(id: id, clip: clip, fitsFile: true)) {
        case .success: return ""
        case .failure(.forbidden): throw MPDError(.permission, "Cannot edit the current song")
        case .failure(let e): throw MPDError(e)
        }
    }

    /// `single 0|1|oneshot`.
    func single(_ r: MPDRequest) throws(MPDError) -> MPDText {
        let mode: SingleCommand.MPDMode
        switch r.args[0] {
        case "1": mode = .on
        case "oneshot": mode = .oneshot
        case "0": mode = .off
        default: throw MPDError(.arg, "Unrecognized single mode, expected 0, 1, or oneshot")
        }
        _ = try run(SingleCommand(mpdMode: mode))
        return ""
    }

    /// `tagtypes`, `tagtypes clear|all`, `tagtypes enable|disable NAME…` (names case-insensitive;
    /// an unknown one fails the whole command, as mpd).
    func tagTypes(_ r: MPDRequest) throws(MPDError) -> MPDText {
        let args = r.args
        switch args.first {
        case nil: return Self.tagTypes.filter(r.state.tags.contains).map { "tagtype: \($0)\n" }.joined()
        case "clear", "all":
            guard args.count == 1 else { throw MPDError(.arg, "Too many arguments") }
            r.state.tags = args[0] == "all" ? Set(Self.tagTypes) : []
        case "enable", "disable":
            guard args.count > 1 else { throw MPDError(.arg, "Not enough arguments") }
            var names: [String] = []
            for t in args.dropFirst() {
                guard let key = TagKey(mpdName: t) else { throw MPDError(.arg, "Unknown tag type") }
                names.append(key.mpdName)
            }
            if args[0] == "enable" { r.state.tags.formUnion(names) } else { r.state.tags.subtract(names) }
        default: throw MPDError(.arg, "Unknown sub command")
        }
        return ""
    }

    func storedPlaylist(_ r: MPDRequest, info: Bool) throws(MPDError) -> MPDText {
        guard case .playlistEntries(let entries) = try runPlaylist(PlaylistCommand(name: r.args[0])) else { return "" }
        return entries.map { e in
            guard info else { return "file: \(e)\n" }
            let path = e.hasPrefix("/") ? e : (playback.resolver.root ?? "") + "/" + e
            let info = playback.tags.info(path)
            let item = QueueItem(id: 0, index: nil, path: path, title: info.metadata.title ?? Path.lastComponent(e),
                                 artist: info.metadata.artist, album: info.metadata.album, track: info.metadata.trackNumber,
                                 duration: info.duration, isCurrent: nil, error: nil)
            return song(item, r.state, withID: false, info: info)
        }.joined()
    }

    /// `playlistfind`/`playlistsearch TAG VALUE…` (`any` matches every tag and the file): exact
    /// for find, a case-insensitive substring for search, as mpd.
    func findInQueue(_ r: MPDRequest, exact: Bool) throws(MPDError) -> MPDText {
        let args = r.args
        guard args.count % 2 == 0 else { throw MPDError(.arg, "Incorrect number of filter arguments") }
        let pairs = stride(from: 0, to: args.count, by: 2).map { (args[$0].lowercased(), args[$0 + 1]) }
        guard case .queue(let listing) = try run(ListCommand(selection: .all)) else { return "" }
        return listing.items.compactMap { item -> MPDText? in
            let fields: [String: String?] = ["artist": item.artist, "album": item.album, "title": item.title,
                                             "track": item.track.map(String.init), "file": relative(item.path)]
            let matches = pairs.allSatisfy { tag, value in
                let candidates: [String] = tag == "any" ? fields.values.compactMap { $0 } : [fields[tag] ?? nil].compactMap { $0 }
                return candidates.contains { exact ? $0 == value : $0.lowercased().contains(value.lowercased()) }
            }
            return matches ? song(item, r.state) : nil
        }.joined()
    }

    /// `readcomments URI`: the file's free-form tags (ID3v2 `TXXX`), those whose key is a word
    /// (`^[A-Za-z][A-Za-z_-]*$`) and whose value has no control character, as mpd prints them.
    func comments(_ r: MPDRequest) throws(MPDError) -> MPDText {
        let request = try uri(r.args[0], r.state)
        guard PathResolver.audioExtensions.contains(Path.extension(request).lowercased()),
              let (files, _) = try? playback.resolver.resolve(request), files.count == 1, let file = files.first
        else { throw MPDError(.noExist, "No such song") }
        let info = playback.tags.readFile(file)
        guard info.error == nil else { throw MPDError(.noExist, "No such song") }
        return info.metadata.comments.filter { (c: TagPair) -> Bool in
            guard let first = c.name.utf8.first, Self.isLetter(first),
                  c.name.utf8.allSatisfy({ Self.isLetter($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }) else { return false }
            return !c.value.utf8.contains { $0 < 0x20 }
        }.map { "\($0.name): \($0.value)\n" }.joined()
    }

    private static func isLetter(_ b: UInt8) -> Bool { (65...90).contains(b) || (97...122).contains(b) }
}
