import AudioEngine
import Control
import FoundationEssentials
import NIOCore
import Platform
import PlayQueue
import Player
import Synchronization

/// MPD's ACK codes (`src/protocol/Ack.hxx`).
enum MPDAck: Int, Sendable {
    case notList = 1, arg = 2, password = 3, permission = 4, unknown = 5
    case noExist = 50, playlistMax = 51, system = 52, playlistLoad = 53, updateAlready = 54, playerSync = 55, exist = 56
}

/// A failed MPD command: its ACK code and message.
struct MPDError: Error, Sendable {
    let ack: MPDAck
    let message: String
    init(_ ack: MPDAck, _ message: String) { (self.ack, self.message) = (ack, message) }

    /// A command-layer error in MPD's terms (mapped once, here).
    init(_ e: CommandError) {
        switch e {
        case .badArgument(let m): self.init(.arg, m)
        case .noSuchItem: self.init(.noExist, "No such song")
        case .notPlaying, .emptyQueue: self.init(.playerSync, "Not playing")
        case .outputUnavailable(let m), .sessionError(let m), .failed(let m): self.init(.system, m)
        case .notFound(let m), .unsupported(let m): self.init(.noExist, m)
        case .forbidden(let m): self.init(.permission, m)
        case .unauthorized(let m): self.init(.permission, m)
        case .unknownCommand(let m): self.init(.unknown, m)
        case .exists(let m): self.init(.exist, m)
        case .tooLarge(let m): self.init(.playlistMax, m)
        }
    }
}

/// One MPD connection's protocol state: its tag mask, whether it gave the password, whether it
/// is local (a Unix socket: `config` and absolute paths).
final class MPDClientState: @unchecked Sendable {
    // @unchecked: used only from the connection's serial work queue.
    var tags: Set<String> = Set(MPDProtocol.tagTypes)
    var passwordGiven = false
    /// The largest binary chunk (`albumart`, `readpicture`) this client takes (`binarylimit`).
    var binaryLimit = 8192
    let local: Bool
    init(local: Bool) { self.local = local }
}

/// The MPD protocol (0.23) as a codec over the command layer: each MPD command becomes typed
/// commands run by the ``CommandDispatcher``; replies, errors and events are rendered as MPD
/// renders them (`key: value` lines, `ACK [code@index] {command} message`, `changed:` lines).
/// Commands that only read (status, songs, outputs) read the ``Playback`` façade.
struct MPDProtocol: Sendable {
    let core: DaemonCore
    /// Told of every wrong password (the server logs them, rate-limited).
    var wrongPassword: @Sendable () -> Void = {}
    /// Told when the password is accepted (the connection no longer counts as unauthenticated).
    var passwordAccepted: @Sendable () -> Void = {}
    var playback: Playback { core.playback }
    var dispatcher: CommandDispatcher { core.dispatcher }

    /// The protocol version in the greeting (`OK MPD 0.23.5`).
    static let version = "0.23.5"
    /// The tags songs carry, in MPD's names.
    static let tagTypes = ["Artist", "Album", "Title", "Track"]
    /// Subsystem names for `idle`, and the command layer's subsystems they stand for.
    static let subsystems: [(String, Subsystems)] = [
        ("database", []), ("stored_playlist", .storedPlaylist), ("playlist", .playlist), ("player", .player),
        ("mixer", .mixer), ("output", .output), ("options", .options), ("update", []), ("sticker", []),
        ("subscription", []), ("message", []), ("partition", []), ("neighbor", []), ("mount", []),
    ]

    /// Commands that touch no file (no tags read, no paths resolved, no playlist written): the
    /// connection runs them on its event loop, as the JSON protocol runs its own.
    static let inline: Set<String> = [
        "ping", "status", "getvol", "outputs", "commands", "notcommands", "urlhandlers", "decoders", "stats",
        "replay_gain_status", "play", "playid", "pause", "stop", "next", "previous", "seekcur", "setvol", "volume",
        "repeat", "random", "single", "consume", "crossfade", "mixrampdb", "mixrampdelay", "replay_gain_mode",
        "enableoutput", "disableoutput", "toggleoutput", "tagtypes", "clear", "deleteid", "moveid", "prio", "prioid",
    ]

    /// What the connection may run before giving the password.
    static let beforePassword: Set<String> = ["ping", "password", "close", "commands", "notcommands"]

    // MARK: - Requests

    /// Splits a request line into its command and arguments: words separated by spaces or tabs,
    /// or `"…"` with `\"` and `\\` escaped (libmpdclient quotes every argument; `tagtypes enable`
    /// comes unquoted).
    static func tokenize(_ line: String) throws(MPDError) -> [String] {
        // Most lines (`status`, `idle player`) quote nothing: split the bytes.
        let plain: [String]? = line.utf8.withContiguousStorageIfAvailable { b -> [String]? in
            var words: [String] = []
            var start = -1
            for i in b.indices {
                switch b[i] {
                case UInt8(ascii: "\""): return nil
                case UInt8(ascii: " "), UInt8(ascii: "\t"):
                    if start >= 0 { words.append(String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)) }
                    start = -1
                default:
                    if start < 0 { start = i }
                }
            }
            if start >= 0 { words.append(String(decoding: UnsafeBufferPointer(rebasing: b[start...]), as: UTF8.self)) }
            return words
        } ?? nil
        if let plain { return plain }
        var out: [String] = []
        var i = line.unicodeScalars.startIndex
        let s = line.unicodeScalars
        while i < s.endIndex {
            if s[i] == " " || s[i] == "\t" { i = s.index(after: i); continue }
            var word = String.UnicodeScalarView()
            if s[i] == "\"" {
                i = s.index(after: i)
                var closed = false
                while i < s.endIndex {
                    let c = s[i]
                    if c == "\\" {
                        i = s.index(after: i)
                        guard i < s.endIndex else { break }
                        word.append(s[i])
                    } else if c == "\"" {
                        closed = true
                        i = s.index(after: i)
                        break
                    } else {
                        word.append(c)
                    }
                    i = s.index(after: i)
                }
                guard closed else { throw MPDError(.arg, "Missing closing '\"'") }
                if i < s.endIndex, s[i] != " ", s[i] != "\t" { throw MPDError(.arg, "Space expected after closing '\"'") }
            } else {
                while i < s.endIndex, s[i] != " ", s[i] != "\t" {
                    guard s[i] != "\"" else { throw MPDError(.arg, "Invalid unquoted character") }
                    word.append(s[i])
                    i = s.index(after: i)
                }
            }
            out.append(String(word))
        }
        return out
    }

    /// The commands this codec answers (what `commands` lists).
    static let commandNames: [String] = [
        "add", "addid", "albumart", "binarylimit", "clear", "close", "commands", "config", "consume", "crossfade", "currentsong", "decoders",
        "delete", "deleteid", "disableoutput", "enableoutput", "getvol", "idle", "listplaylist", "listplaylistinfo",
        "listall", "listallinfo", "listfiles", "listplaylists", "load", "lsinfo", "mixrampdb", "mixrampdelay",
        "move", "moveid", "next", "noidle", "notcommands", "outputs", "password", "pause", "ping", "play", "playid",
        "playlistadd", "playlistclear", "playlistdelete", "playlistfind", "playlistid", "playlistinfo", "playlistmove",
        "playlistsearch", "plchanges", "plchangesposid", "previous", "prio", "prioid", "random", "readpicture", "repeat",
        "rename", "replay_gain_mode", "replay_gain_status", "rm", "save", "seek", "seekcur", "seekid", "setvol", "single", "stats", "status",
        "stop", "swap", "swapid", "tagtypes", "toggleoutput", "urlhandlers", "volume",
    ]

    /// Runs one command (not `idle`, `noidle`, `close` or a list: the connection handles
    /// those) and appends its response lines (before `OK`) to `out`. `status`, which clients
    /// poll, is written into it directly; the pictures are binary; the rest is text.
    func execute(_ words: [String], state: MPDClientState, connection: any ConnectionContext,
                 into out: inout ByteBuffer) throws(MPDError) {
        guard let name = words.first else { throw MPDError(.unknown, "No command given") }
        if connection.needsToken, !state.passwordGiven, !Self.beforePassword.contains(name) {
            throw MPDError(.permission, "you don't have permission for \"\(name)\"")
        }
        switch name {
        case "status":
            guard words.count == 1 else { throw MPDError(.arg, "too many arguments for \"status\"") }
            status(into: &out)
        case "albumart", "readpicture":
            out.writeBytes(try picture(words, state: state))
        default:
            out.writeString(try text(words, state: state, connection: connection))
        }
    }

    /// A command answered in text.
    private func text(_ words: [String], state: MPDClientState, connection: any ConnectionContext) throws(MPDError) -> String {
        let name = words[0]
        let args = Array(words.dropFirst())
        func arity(_ range: ClosedRange<Int>) throws(MPDError) {
            if args.count < range.lowerBound { throw MPDError(.arg, "too few arguments for \"\(name)\"") }
            if args.count > range.upperBound { throw MPDError(.arg, "too many arguments for \"\(name)\"") }
        }
        switch name {
        case "ping": try arity(0...0); return ""
        case "binarylimit":
            try arity(1...1)
            let n = try integer(args[0])
            guard n >= 64 else { throw MPDError(.arg, "Value too small") }
            state.binaryLimit = min(n, Self.maximumResponse)
            return ""
        case "password":
            try arity(1...1)
            guard let want = core.config.mpdPassword, DaemonCore.constantTimeEqual(args[0], want) else {
                // A guess costs a second on this connection (its serial queue), and is logged.
                wrongPassword()
                sleepThread(seconds: 1)
                throw MPDError(.password, "incorrect password")
            }
            if !state.passwordGiven { passwordAccepted() }
            state.passwordGiven = true
            connection.authenticated = true
            return ""
        case "commands": return Self.commandNames.map { "command: \($0)\n" }.joined()
        case "notcommands": return ""
        case "currentsong":
            try arity(0...0)
            guard let c = playback.queue.current, let i = playback.queue.currentIndex else { return "" }
            return song(playback.describe(c, index: i, current: true, read: true), state)
        case "playlistinfo":
            try arity(0...1)
            let n = playback.queue.entries.count
            guard let a = args.first else { return try songs(in: nil, state) }
            return try songs(in: try range(a, count: n, clamp: true), state)
        case "playlistid":
            try arity(0...1)
            guard let a = args.first else { return try songs(in: nil, state) }
            let id = try integer(a)
            let entries = playback.queue.entries
            guard let i = entries.firstIndex(where: { $0.id == id }) else { throw MPDError(.noExist, "No such song") }
            return song(playback.describe(entries[i], index: i, current: false, read: true), state)
        case "plchanges", "plchangesposid":
            // The songs whose position changed after VERSION (added, moved, shifted by an
            // edit before them), in an optional position range.
            try arity(1...2)
            let version = try integer(args[0])
            let r = args.count > 1 ? try range(args[1], count: playback.queue.entries.count, clamp: true) : nil
            let changes = playback.queue.changes(since: version).filter { r?.contains($0.index) ?? true }
            guard name == "plchanges" else { return changes.map { "cpos: \($0.index)\nId: \($0.entry.id)\n" }.joined() }
            let current = playback.queue.current?.id
            return changes.map { song(playback.describe($0.entry, index: $0.index, current: $0.entry.id == current, read: true), state) }.joined()

        case "play":
            try arity(0...1)
            guard let a = args.first else { return try play(nil) }
            let pos = try integer(a)
            if pos == -1 { return try play(nil) }
            return try play(try id(atPosition: pos))
        case "playid":
            try arity(0...1)
            guard let a = args.first else { return try play(nil) }
            let id = try integer(a)
            return try play(id == -1 ? nil : id)
        case "pause":
            try arity(0...1)
            let state = playback.queue.playbackState
            switch args.first {
            case nil where state == .stopped: return ""
            case nil: _ = try run(ToggleCommand())
            case "1": _ = try run(PauseCommand())
            case "0": if state == .paused { _ = try run(PlayCommand(item: nil)) }
            default: throw MPDError(.arg, "Boolean (0/1) expected: \(args[0])")
            }
            return ""
        case "stop": try arity(0...0); _ = try run(StopCommand()); return ""
        case "next", "previous":
            try arity(0...0)
            guard playback.queue.playbackState != .stopped else { throw MPDError(.playerSync, "Not playing") }
            _ = try run(name == "next" ? NextCommand() as any ControlCommand : PreviousCommand())
            return ""
        case "seek", "seekid":
            try arity(2...2)
            let id = name == "seek" ? try id(atPosition: try integer(args[0])) : try integer(args[0])
            let t = try float(args[1])
            if playback.queue.current?.id != id || playback.queue.playbackState == .stopped { _ = try play(id) }
            _ = try run(SeekCommand(target: .position(max(0, t))))
            return ""
        case "seekcur":
            try arity(1...1)
            let a = args[0]
            let t = try float(a)
            guard playback.queue.playbackState != .stopped else { throw MPDError(.playerSync, "Not playing") }
            _ = try run(SeekCommand(target: a.hasPrefix("+") || a.hasPrefix("-") ? .offset(t) : .position(t)))
            return ""

        case "setvol":
            try arity(1...1)
            let v = try integer(args[0])
            guard v <= 100 else { throw MPDError(.arg, "Number too large: \(args[0])") }
            guard v >= 0 else { throw MPDError(.arg, "Number too small: \(args[0])") }
            _ = try run(VolumeCommand(change: .set(Double(v))))
            return ""
        case "volume":
            try arity(1...1)
            let d = try integer(args[0])
            guard (-100...100).contains(d) else { throw MPDError(.arg, "Number too large: \(args[0])") }
            _ = try run(VolumeCommand(change: .by(Double(d))))
            return ""
        case "getvol": try arity(0...0); return "volume: \(volumePercent)\n"
        case "outputs":
            try arity(0...0)
            let device = playback.configuration.device
            let plugin = device.hasPrefix("pulse") ? "pulse" : "alsa"
            return "outputid: 0\noutputname: \(device)\nplugin: \(plugin)\noutputenabled: \(playback.player.isMuted ? 0 : 1)\n"
        case "enableoutput", "disableoutput", "toggleoutput":
            try arity(1...1)
            guard try integer(args[0]) == 0 else { throw MPDError(.noExist, "No such audio output") }
            // The one output: disabling it mutes the player (its volume is kept).
            let on: Bool = name == "enableoutput" ? false : name == "disableoutput" ? true : !playback.player.isMuted
            _ = try run(MuteCommand(on: on))
            return ""

        case "repeat":
            try arity(1...1)
            let on = try bool(args[0])
            let q = playback.queue
            let single = q.repeatMode == .one
            _ = try run(RepeatCommand(mode: on ? (single ? .one : .all) : .off))
            if !on, single { _ = try run(SingleCommand(on: true)) }  // single without repeat: stop after this one
            return ""
        case "random":
            try arity(1...1)
            _ = try run(ShuffleCommand(on: try bool(args[0])))
            return ""
        case "single":
            try arity(1...1)
            let q = playback.queue
            switch args[0] {
            case "1":
                if q.repeatMode != .off { _ = try run(RepeatCommand(mode: .one)) } else { _ = try run(SingleCommand(on: true)) }
            case "oneshot":
                _ = try run(SingleCommand(on: true))
            case "0":
                if q.repeatMode == .one { _ = try run(RepeatCommand(mode: .all)) }
                _ = try run(SingleCommand(on: false))
            default: throw MPDError(.arg, "Boolean (0/1) or \"oneshot\" expected: \(args[0])")
            }
            return ""
        case "consume":
            try arity(1...1)
            let mode: ConsumeMode
            switch args[0] {
            case "1": mode = .on
            case "0": mode = .off
            case "oneshot": mode = .oneshot
            default: throw MPDError(.arg, "Boolean (0/1) or \"oneshot\" expected: \(args[0])")
            }
            _ = try run(ConsumeCommand(mode: mode))
            return ""
        case "crossfade", "mixrampdb", "mixrampdelay":
            try arity(1...1)
            _ = try float(args[0])
            return ""  // accepted; gapless playback never overlaps items (reported off)
        case "replay_gain_mode":
            try arity(1...1)
            guard ["off", "track", "album", "auto"].contains(args[0]) else { throw MPDError(.arg, "Unrecognized replay gain mode") }
            return ""  // accepted; replay gain is not applied (reported off)
        case "replay_gain_status": return "replay_gain_mode: off\n"

        case "add", "addid":
            try arity(1...2)
            let position = try args.count > 1 ? self.position(args[1]) : nil
            let reply = try run(AddCommand(paths: [try uri(args[0], state)], position: position))
            guard case .added(let ids, _) = reply else { return "" }
            return name == "addid" ? ids.first.map { "Id: \($0)\n" } ?? "" : ""
        case "clear": try arity(0...0); _ = try run(ClearCommand()); return ""
        case "delete":
            try arity(1...1)
            let entries = playback.queue.entries
            let r = try range(args[0], count: entries.count)
            _ = try run(RemoveCommand(ids: entries[r].map(\.id)))
            return ""
        case "deleteid":
            try arity(1...1)
            _ = try run(RemoveCommand(ids: [try integer(args[0])]))
            return ""
        case "move":
            try arity(2...2)
            let entries = playback.queue.entries
            let r = try range(args[0], count: entries.count)
            let to = try position(args[1])
            guard to >= 0, to <= entries.count - r.count else { throw MPDError(.arg, "Bad song index") }
            // The block ends up starting at `to`: moved one by one, the last first when it moves
            // down (each move takes the item out before putting it back).
            let moves = Array(entries[r].enumerated())
            for (k, e) in to > r.lowerBound ? moves.reversed() : moves { _ = try run(MoveCommand(id: e.id, position: to + k)) }
            return ""
        case "moveid":
            try arity(2...2)
            let to = try position(args[1])
            guard to >= 0, to < playback.queue.entries.count else { throw MPDError(.arg, "Bad song index") }
            _ = try run(MoveCommand(id: try integer(args[0]), position: to))
            return ""
        case "prio", "prioid":
            guard args.count >= 2 else { throw MPDError(.arg, "too few arguments for \"\(name)\"") }
            let p = try integer(args[0])
            guard (0...255).contains(p) else { throw MPDError(.arg, "Priority out of range: \(args[0])") }
            var ids: [Int] = []
            if name == "prio" {
                let entries = playback.queue.entries
                for a in args.dropFirst() { ids += entries[try range(a, count: entries.count)].map(\.id) }
            } else {
                ids = try args.dropFirst().map { a throws(MPDError) in try integer(a) }
            }
            _ = try run(PriorityCommand(priority: p, ids: ids))
            return ""
        case "swap", "swapid":
            try arity(2...2)
            let entries = playback.queue.entries
            let a = name == "swap" ? try id(atPosition: try integer(args[0])) : try integer(args[0])
            let b = name == "swap" ? try id(atPosition: try integer(args[1])) : try integer(args[1])
            guard let i = entries.firstIndex(where: { $0.id == a }), let j = entries.firstIndex(where: { $0.id == b }) else {
                throw MPDError(.noExist, "No such song")
            }
            _ = try run(MoveCommand(id: a, position: j))
            _ = try run(MoveCommand(id: b, position: i))
            return ""

        case "tagtypes":
            switch args.first {
            case nil: return Self.tagTypes.filter(state.tags.contains).map { "tagtype: \($0)\n" }.joined()
            case "clear": state.tags = []
            case "all": state.tags = Set(Self.tagTypes)
            case "enable", "disable":
                for t in args.dropFirst() {
                    guard let tag = Self.tagTypes.first(where: { $0.lowercased() == t.lowercased() }) else { continue }  // tags we never send
                    if args[0] == "enable" { state.tags.insert(tag) } else { state.tags.remove(tag) }
                }
            default: throw MPDError(.arg, "Unknown sub command")
            }
            return ""
        case "config":
            guard state.local else { throw MPDError(.permission, "Command only permitted to local clients") }
            return "music_directory: \(playback.configuration.musicDirectory)\n"
        case "urlhandlers": return "handler: file://\n"
        case "decoders":
            return "plugin: mpg123\n" + PathResolver.audioExtensions.sorted().map { "suffix: \($0)\n" }.joined() + "mime_type: audio/mpeg\n"
        case "stats":
            return "uptime: \(Int(ProcessInfo.processInfo.systemUptime - Self.started))\nplaytime: 0\nartists: 0\nalbums: 0\nsongs: 0\ndb_playtime: 0\n"
        case "lsinfo", "listall", "listallinfo":
            try arity(0...1)
            return try listing(args.first ?? "", recursive: name != "lsinfo", info: name != "listall", state)
        case "listfiles":
            try arity(0...1)
            return try listFiles(args.first ?? "")
        case "playlistfind", "playlistsearch":
            // TAG VALUE pairs (`any` matches every tag and the file): exact for find, a
            // case-insensitive substring for search, as mpd.
            guard !args.isEmpty, args.count % 2 == 0 else { throw MPDError(.arg, "Incorrect number of filter arguments") }
            let pairs = stride(from: 0, to: args.count, by: 2).map { (args[$0].lowercased(), args[$0 + 1]) }
            let entries = playback.queue.entries
            return entries.enumerated().compactMap { i, e -> String? in
                let item = playback.describe(e, index: i, current: false, read: true)
                let fields: [String: String?] = ["artist": item.artist, "album": item.album, "title": item.title,
                                                 "track": item.track.map(String.init), "file": relative(item.path)]
                let matches = pairs.allSatisfy { tag, value in
                    let candidates: [String] = tag == "any" ? fields.values.compactMap { $0 } : [fields[tag] ?? nil].compactMap { $0 }
                    return candidates.contains { name == "playlistfind" ? $0 == value : $0.lowercased().contains(value.lowercased()) }
                }
                return matches ? song(item, state) : nil
            }.joined()
        // Stored playlists.
        case "save":
            try arity(1...1)
            _ = try run(SavePlaylistCommand(name: args[0]))
            return ""
        case "load":
            try arity(1...3)
            let r = args.count > 1 ? try range(args[1], count: Int(Int32.max), clamp: true) : nil
            let position = args.count > 2 ? try self.position(args[2]) : nil
            _ = try run(LoadPlaylistCommand(name: args[0], range: r, position: position))
            return ""
        case "listplaylists":
            try arity(0...0)
            guard case .playlists(let all) = try run(PlaylistsCommand()) else { return "" }
            return all.map { "playlist: \($0.name)\nLast-Modified: \(JSONCodec.iso8601($0.modified))\n" }.joined()
        case "listplaylist", "listplaylistinfo":
            try arity(1...1)
            guard case .playlistEntries(let entries) = try run(PlaylistCommand(name: args[0])) else { return "" }
            return entries.map { e in
                guard name == "listplaylistinfo" else { return "file: \(e)\n" }
                let path = e.hasPrefix("/") ? e : (playback.resolver.root ?? "") + "/" + e
                let info = playback.tags.info(path)
                let item = QueueItem(id: 0, index: nil, path: path, title: info.metadata.title ?? Path.lastComponent(e),
                                     artist: info.metadata.artist, album: info.metadata.album, track: info.metadata.trackNumber,
                                     duration: info.duration, isCurrent: nil, error: nil)
                return song(item, state, withID: false)
            }.joined()
        case "playlistadd":
            try arity(2...2)
            _ = try run(PlaylistAddCommand(name: args[0], paths: [try uri(args[1], state)]))
            return ""
        case "playlistdelete":
            try arity(2...2)
            _ = try run(PlaylistDeleteCommand(name: args[0], position: try integer(args[1])))
            return ""
        case "playlistmove":
            try arity(3...3)
            _ = try run(PlaylistMoveCommand(name: args[0], from: try integer(args[1]), to: try integer(args[2])))
            return ""
        case "playlistclear":
            try arity(1...1)
            _ = try run(PlaylistClearCommand(name: args[0]))
            return ""
        case "rm":
            try arity(1...1)
            _ = try run(PlaylistRemoveCommand(name: args[0]))
            return ""
        case "rename":
            try arity(2...2)
            _ = try run(PlaylistRenameCommand(name: args[0], to: args[1]))
            return ""
        case "update", "rescan", "find", "search", "findadd", "searchadd", "list", "count":
            throw MPDError(.noExist, "No database")  // as an mpd without a database answers
        default:
            throw MPDError(.unknown, "unknown command \"\(name)\"")
        }
    }

    /// When the daemon started serving (read first when the MPD listeners open).
    static let started = ProcessInfo.processInfo.systemUptime

    // MARK: - Through the command layer

    private func run(_ command: any ControlCommand) throws(MPDError) -> Reply {
        switch dispatcher.execute(command) {
        case .success(let r): return r
        case .failure(let e): throw MPDError(e)
        }
    }

    private func play(_ id: Int?) throws(MPDError) -> String {
        do throws(MPDError) {
            _ = try run(PlayCommand(item: id))
        } catch where error.ack == .playerSync && id == nil {
            return ""  // play on an empty queue: a silent OK, as mpd
        }
        return ""
    }

    // MARK: - Rendering

    private var volumePercent: Int { Int((Double(playback.player.volume) * 100).rounded()) }

    /// `status`, in mpd's field order: read under the play queue's one lock (plus the
    /// volume and the duration the tag cache knows), written straight into the reply's bytes
    /// in one pass (the round trip is what MPD status bars poll).
    private func status(into buffer: inout ByteBuffer) {
        let q = playback.queue.status()
        let volume = volumePercent
        let total = q.current.flatMap { q.state == .stopped ? nil : playback.tags.lookup($0.entry.path)?.duration } ?? 0
        // Every field but `error` has a bounded length (≤ 20 digits a number): 512 bytes hold them.
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 512) { raw in
            var w = ASCIIWriter(raw)
            w.put("volume: "); w.put(volume)
            w.put(q.repeatMode == .off ? "\nrepeat: 0\nrandom: " : "\nrepeat: 1\nrandom: ")
            w.put(q.shuffle ? "1\nsingle: " : "0\nsingle: ")
            w.put(q.repeatMode == .one ? "1" : q.stopAfterCurrent ? "oneshot" : "0")
            w.put(q.consume == .on ? "\nconsume: 1" : q.consume == .oneshot ? "\nconsume: oneshot" : "\nconsume: 0")
            w.put("\npartition: default\nplaylist: "); w.put(q.version)
            w.put("\nplaylistlength: "); w.put(q.count)
            w.put("\nmixrampdb: 0\nstate: ")
            w.put(q.state == .playing ? "play\n" : q.state == .paused ? "pause\n" : "stop\n")
            guard let (c, i) = q.current else { return w.count }
            w.put("song: "); w.put(i)
            w.put("\nsongid: "); w.put(c.id); w.put("\n")
            if q.state != .stopped {
                w.put("time: "); w.put(Int(q.elapsed.rounded(.down))); w.put(":"); w.put(Int(total.rounded()))
                w.put("\nelapsed: "); w.putSeconds(q.elapsed)
                w.put("\nduration: "); w.putSeconds(total); w.put("\n")
            }
            if let (n, j) = q.next {
                w.put("nextsong: "); w.put(j)
                w.put("\nnextsongid: "); w.put(n.id); w.put("\n")
            }
            return w.count
        }
        if let e = q.current?.entry.failure { buffer.writeString("error: \(e)\n") }
    }

    /// `t` with three decimals, as mpd's `%.3f`.
    static func seconds(_ t: Double) -> String {
        var out = ByteBuffer()
        out.writeWithUnsafeMutableBytes(minimumWritableBytes: 32) { raw in
            var w = ASCIIWriter(raw)
            w.putSeconds(t)
            return w.count
        }
        return String(buffer: out)
    }


    /// A song object: `file:` first, then the tags the client wants, then times, position and
    /// id (not for a stored playlist's songs).
    private func song(_ i: QueueItem, _ state: MPDClientState, withID: Bool = true, modified: Date? = nil) -> String {
        var out = "file: \(relative(i.path))\n"
        if let modified { out += "Last-Modified: \(JSONCodec.iso8601(modified))\n" }
        let tags = state.tags
        if tags.contains("Artist"), let a = i.artist { out += "Artist: \(a)\n" }
        if tags.contains("Album"), let a = i.album { out += "Album: \(a)\n" }
        if tags.contains("Title"), i.title != Path.lastComponent(i.path) { out += "Title: \(i.title)\n" }
        if tags.contains("Track"), let n = i.track { out += "Track: \(n)\n" }
        if let d = i.duration { out += "Time: \(Int(d.rounded()))\nduration: \(Self.seconds(d))\n" }
        if let p = i.index { out += "Pos: \(p)\n" }
        if withID { out += "Id: \(i.id)\n" }
        if i.priority != 0 { out += "Prio: \(i.priority)\n" }
        return out
    }

    private func songs(in r: Range<Int>?, _ state: MPDClientState) throws(MPDError) -> String {
        let entries = playback.queue.entries
        let current = playback.queue.current?.id
        return (r ?? 0..<entries.count).clamped(to: 0..<entries.count).map { i in
            song(playback.describe(entries[i], index: i, current: entries[i].id == current, read: true), state)
        }.joined()
    }

    /// A queue path as MPD clients see it: relative to the music directory when inside it.
    private func relative(_ path: String) -> String {
        guard let root = playback.resolver.root else { return path }
        return path.hasPrefix(root + "/") ? String(path.dropFirst(root.count + 1)) : path
    }

    /// `albumart URI OFFSET` (a cover file beside the song: cover.png, cover.jpg, …) and
    /// `readpicture URI OFFSET` (the picture embedded in its tags): `size`, `type` (readpicture),
    /// `binary: N`, then N bytes from OFFSET, at most the client's binary limit. No embedded
    /// picture answers nothing (as mpd); no cover file is an error.
    private func picture(_ words: [String], state: MPDClientState) throws(MPDError) -> [UInt8] {
        let name = words[0]
        guard words.count == 3 else { throw MPDError(.arg, "\(words.count < 3 ? "too few" : "too many") arguments for \"\(name)\"") }
        let offset = try integer(words[2])
        guard offset >= 0 else { throw MPDError(.arg, "Number too small: \(words[2])") }
        // One audio file, confined as `add` is (a directory or a playlist is no song).
        let request = try uri(words[1], state)
        let ext = Path.extension(request).lowercased()
        guard PathResolver.audioExtensions.contains(ext), let (files, _) = try? playback.resolver.resolve(request),
              files.count == 1, let file = files.first else { throw MPDError(.noExist, "No such song") }
        let found: (data: [UInt8], type: String?)?
        if name == "readpicture" {
            found = playback.tags.info(file).metadata.artwork.map { ($0.data, $0.mimeType) }
        } else {
            found = coverFile(beside: file).map { ($0, nil) }
            guard found != nil else { throw MPDError(.noExist, "No file exists") }
        }
        guard let (data, type) = found else { return [] }
        guard offset <= data.count else { throw MPDError(.arg, "Offset too large") }
        let chunk = data[offset..<min(data.count, offset + state.binaryLimit)]
        let header = "size: \(data.count)\n" + (type.map { "type: \($0)\n" } ?? "") + "binary: \(chunk.count)\n"
        return Array(header.utf8) + chunk + [UInt8(ascii: "\n")]
    }

    /// The names mpd looks for beside a song, in its order.
    static let coverNames = ["cover.png", "cover.jpg", "cover.jpeg", "cover.webp", "cover.tiff", "cover.bmp"]

    /// The first cover file in `file`'s directory, confined to the music directory.
    private func coverFile(beside file: String) -> [UInt8]? {
        let dir = Path.deletingLastComponent(file)
        for n in Self.coverNames {
            guard let real = PathResolver.realPath(dir + "/" + n), let root = playback.resolver.root,
                  playback.resolver.allowAbsolutePaths || real.hasPrefix(root + "/"),
                  case .success(let data) = readRegularFile(real, limit: 32 << 20,
                                                            beneath: playback.resolver.allowAbsolutePaths ? nil : root) else { continue }
            return [UInt8](data)
        }
        return nil
    }

    /// mpd's default `max_output_buffer_size`: a longer answer is an error, not a stall.
    static let maximumResponse = 8 << 20

    /// A directory of the music directory, through the command layer (confined as `add` is).
    private func browse(_ uri: String, recursive: Bool, tags: Bool) throws(MPDError) -> [LibraryEntry] {
        let path = uri == "/" ? "" : uri
        do throws(MPDError) {
            guard case .directory(let entries) = try run(BrowseCommand(path: path, recursive: recursive, tags: tags)) else { return [] }
            return entries
        } catch where error.ack == .noExist || error.ack == .permission {
            throw MPDError(.noExist, "No such directory")
        }
    }

    /// `lsinfo`, `listall`, `listallinfo`: songs with their tags (or `file:` alone), playlists,
    /// directories; the root of `lsinfo` also lists the stored playlists, as mpd's does
    /// (`mpc lsplaylists` reads them there). A song's URI lists that song.
    private func listing(_ uri: String, recursive: Bool, info: Bool, _ state: MPDClientState) throws(MPDError) -> String {
        let entries: [LibraryEntry]
        do throws(MPDError) {
            entries = try browse(uri, recursive: recursive, tags: info)
        } catch {
            // A song named by its URI.
            guard !uri.isEmpty,
                  case .success(.directory(let parent)) = dispatcher.execute(BrowseCommand(path: Path.deletingLastComponent(uri), tags: info)),
                  let e = parent.first(where: { $0.listed.path == uri.trimming("/") && $0.listed.kind == .audio })
            else { throw error }
            return info ? song(e.item!, state, withID: false, modified: e.listed.modified) : "file: \(e.listed.path)\n"
        }
        var out = ""
        if !recursive, uri.isEmpty || uri == "/", let store = playback.playlists {
            out += store.all().map { "playlist: \($0.name)\nLast-Modified: \(JSONCodec.iso8601($0.modified))\n" }.joined()
        }
        for e in entries {
            switch e.listed.kind {
            case .directory:
                out += "directory: \(e.listed.path)\n"
                if info { out += "Last-Modified: \(JSONCodec.iso8601(e.listed.modified))\n" }
            case .audio:
                out += info ? e.item.map { song($0, state, withID: false, modified: e.listed.modified) } ?? "" : "file: \(e.listed.path)\n"
            case .playlist:
                out += "playlist: \(e.listed.path)\n"
                if info { out += "Last-Modified: \(JSONCodec.iso8601(e.listed.modified))\n" }
            case .other:
                continue
            }
            guard out.utf8.count <= Self.maximumResponse else { throw MPDError(.system, "Output buffer is full") }
        }
        return out
    }

    /// `listfiles`: every file and directory in one directory, with size and time, as mpd
    /// lists a storage directory.
    private func listFiles(_ uri: String) throws(MPDError) -> String {
        try browse(uri, recursive: false, tags: false).map { e in
            e.listed.kind == .directory
                ? "directory: \(Path.lastComponent(e.listed.path))\nLast-Modified: \(JSONCodec.iso8601(e.listed.modified))\n"
                : "file: \(Path.lastComponent(e.listed.path))\nsize: \(e.listed.size)\nLast-Modified: \(JSONCodec.iso8601(e.listed.modified))\n"
        }.joined()
    }

    // MARK: - Arguments

    private func integer(_ s: String) throws(MPDError) -> Int {
        guard let v = Int(s) else { throw MPDError(.arg, "Integer expected: \(s)") }
        return v
    }

    private func float(_ s: String) throws(MPDError) -> Double {
        guard let v = Double(s), v.isFinite else { throw MPDError(.arg, "Float expected: \(s)") }
        return v
    }

    private func bool(_ s: String) throws(MPDError) -> Bool {
        switch s {
        case "1": return true
        case "0": return false
        default: throw MPDError(.arg, "Boolean (0/1) expected: \(s)")
        }
    }

    /// `POS`, `START:END` or `START:` (END excluded) in a queue of `count` songs. With `clamp`
    /// (listings, as mpd), an END past the queue is its length; otherwise it is an error.
    private func range(_ s: String, count: Int, clamp: Bool = false) throws(MPDError) -> Range<Int> {
        if let colon = s.firstIndex(of: ":") {
            let a = try integer(String(s[..<colon]))
            let rest = String(s[s.index(after: colon)...])
            var b = rest.isEmpty ? count : try integer(rest)
            if clamp { b = min(b, count) }
            guard a >= 0, b >= a, b <= count else { throw MPDError(.arg, "Bad song index") }
            return a..<b
        }
        let p = try integer(s)
        guard p >= 0, p < count else { throw MPDError(.arg, "Bad song index") }
        return p..<(p + 1)
    }

    /// A target position: absolute, or `+N`/`-N` relative to the current song (after it / before
    /// it, as mpd 0.23).
    private func position(_ s: String) throws(MPDError) -> Int {
        let n = try integer(s)
        guard abs(n) <= 1 << 40 else { throw MPDError(.arg, "Bad song index") }  // (no overflow below)
        guard s.hasPrefix("+") || s.hasPrefix("-") else { return n }
        guard let current = playback.queue.currentIndex else { throw MPDError(.arg, "No current song") }
        return s.hasPrefix("+") ? current + 1 + n : current + n  // (n ≤ 0 for "-N")
    }

    private func id(atPosition pos: Int) throws(MPDError) -> Int {
        let entries = playback.queue.entries
        guard pos >= 0, pos < entries.count else { throw MPDError(.arg, "Bad song index") }
        return entries[pos].id
    }

    /// An `add` URI as a path for the resolver: `file://` and absolute paths only for local
    /// clients; `""` and `/` are the whole music directory.
    private func uri(_ u: String, _ state: MPDClientState) throws(MPDError) -> String {
        var path = u
        if path.hasPrefix("file://") { path = String(path.dropFirst(7)) }
        if path.hasPrefix("/") {
            guard state.local else { throw MPDError(.permission, "Access denied") }
            return path
        }
        if path.contains("://") { throw MPDError(.noExist, "Unsupported URI scheme") }
        return path.isEmpty ? "." : path
    }
}

/// Writes ASCII into a buffer the caller sized (MPD's hot replies, without `String`s).
struct ASCIIWriter {
    private let raw: UnsafeMutableRawBufferPointer
    private(set) var count = 0

    init(_ raw: UnsafeMutableRawBufferPointer) { self.raw = raw }

    mutating func put(_ s: StaticString) {
        let n = s.utf8CodeUnitCount
        precondition(count + n <= raw.count)
        (raw.baseAddress! + count).copyMemory(from: s.utf8Start, byteCount: n)
        count += n
    }

    /// `n` in decimal.
    mutating func put(_ n: Int) {
        precondition(count + 20 <= raw.count)
        if n < 0 {
            raw[count] = UInt8(ascii: "-")
            count += 1
        }
        var v = n.magnitude
        var digits = 1
        var t = v
        while t >= 10 { t /= 10; digits += 1 }
        var k = count + digits
        count = k
        repeat {
            k -= 1
            raw[k] = UInt8(ascii: "0") &+ UInt8(v % 10)
            v /= 10
        } while v > 0
    }

    /// `t` ≥ 0 with three decimals (mpd's `%.3f`).
    mutating func putSeconds(_ t: Double) {
        let ms = t.isFinite ? max(0, Int((min(t, 1e15) * 1000).rounded())) : 0
        put(ms / 1000)
        let frac = ms % 1000
        put(frac < 10 ? ".00" : frac < 100 ? ".0" : ".")
        put(frac)
    }
}
