import AudioEngine
import Control
import Media
import FoundationEssentials
import Library
import MediaCore
import NIOCore
import Platform
import PlayQueue
import Player
import Synchronization
import Locking

/// MPD's ACK codes (`src/protocol/Ack.hxx`).
package enum MPDAck: Int, Sendable {
    case notList = 1, arg = 2, password = 3, permission = 4, unknown = 5
    case noExist = 50, playlistMax = 51, system = 52, playlistLoad = 53, updateAlready = 54, playerSync = 55, exist = 56
}

/// A failed MPD command: its ACK code and message.
package struct MPDError: Error, Sendable {
    package let ack: MPDAck
    package let message: String
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

/// What every MPD connection shares that is mpd's own, not the player's: the password, and
/// MixRamp's settings (kept and reported as mpd does, never used: items never overlap).
final class MPDShared: Sendable {
    /// `mpd-password`: what `password` must give on a listener that asks for it.
    let password: String?
    let mixRamp = Lock<(db: Double, delay: Double)>((0, -1))
    /// Told when an answer was big (a listing, a search): its memory is given back soon after.
    let bigAnswer: @Sendable () -> Void

    init(password: String?, bigAnswer: @escaping @Sendable () -> Void) {
        self.password = password
        self.bigAnswer = bigAnswer
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
    /// Cancelled when the connection closes: a library query still running for it stops.
    let cancellation = QueryCancellation()
    init(local: Bool) { self.local = local }
}

/// The MPD protocol (0.23) as a codec over the command layer: each MPD command becomes typed
/// commands run by the ``CommandDispatcher``; replies, errors and events are rendered as MPD
/// renders them (`key: value` lines, `ACK [code@index] {command} message`, `changed:` lines).
/// Commands that only read (status, songs, outputs) read the ``Playback`` façade.
package struct MPDProtocol: Sendable {
    /// The command layer: every command runs through it; reads go through its ``Playback`` façade.
    let dispatcher: CommandDispatcher
    /// What MPD connections share that is mpd's own (the password, MixRamp).
    let shared: MPDShared
    /// The connection it serves (its partition: every command runs in it).
    let client: any ConnectionContext
    /// Told of every wrong password (the server logs them, rate-limited).
    var wrongPassword: @Sendable () -> Void = {}
    /// Told when the password is accepted (the connection no longer counts as unauthenticated).
    var passwordAccepted: @Sendable () -> Void = {}
    /// The playback of the connection's partition.
    var playback: Playback { dispatcher.playback(for: client) }

    /// Runs `command` in the connection's partition (as the daemon: MPD's permissions are its own).
    func perform(_ command: any ControlCommand) -> Result<Reply, CommandError> {
        dispatcher.execute(command, in: playback.partition)
    }

    /// The protocol version in the greeting (`OK MPD 0.23.5`).
    static let version = "0.23.5"
    /// The tags Backline reads (mpd's names, in mpd's order): every one (ID3v2, Vorbis comments,
    /// MP4 atoms, a stream's `Name`), but `Comment`, which mpd leaves out by default too
    /// (`readcomments` has the free-form ones).
    static let tagTypes: [String] = TagKey.allCases.filter { $0 != .comment }.map(\.mpdName)
    /// Subsystem names for `idle`, and the command layer's subsystems they stand for.
    static let subsystems: [(String, Subsystems)] = [
        ("database", .database), ("stored_playlist", .storedPlaylist), ("playlist", .playlist), ("player", .player),
        ("mixer", .mixer), ("output", .output), ("options", .options), ("update", .update), ("sticker", .sticker),
        ("subscription", .subscription), ("message", .message), ("partition", .partition), ("neighbor", []), ("mount", []),
    ]

    // MARK: - Requests

    /// Splits a request line into its command and arguments: words separated by spaces or tabs,
    /// or `"…"` with `\"` and `\\` escaped (libmpdclient quotes every argument; `tagtypes enable`
    /// comes unquoted).
    package static func tokenize(_ line: String) throws(MPDError) -> [String] {
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

    /// Runs one command (not `idle`, `noidle`, `close` or a list: the connection handles
    /// those) and appends its response lines (before `OK`) to `out`: the command is looked up in
    /// ``MPDCommandTable``, its permission and arguments checked there, then run.
    func execute(_ words: [String], state: MPDClientState, connection: any ConnectionContext,
                 into out: inout ByteBuffer) throws(MPDError) {
        guard let name = words.first else { throw MPDError(.unknown, "No command given") }
        guard let command = MPDCommandTable.command(name) else { throw MPDError(.unknown, "unknown command \"\(name)\"") }
        guard state.may(command, connection) else { throw MPDError(.permission, "you don't have permission for \"\(name)\"") }
        let args = Array(words.dropFirst())
        try command.check(args)
        try command.run(self, MPDRequest(name: name, args: args, state: state, connection: connection), &out)
    }

    /// When the daemon started serving (read first when the MPD listeners open).
    static let started = ProcessInfo.processInfo.systemUptime

    // MARK: - Through the command layer

    /// A stored-playlist command, its errors in mpd's words (`No such playlist`, …).
    func runPlaylist(_ command: any ControlCommand, badIndex: Bool = false) throws(MPDError) -> Reply {
        switch perform(command) {
        case .success(let r): return r
        case .failure(.notFound): throw MPDError(.noExist, "No such playlist")
        case .failure(.exists): throw MPDError(.exist, "Playlist already exists")
        case .failure(.badArgument) where badIndex: throw MPDError(.arg, "Bad song index")
        case .failure(let e): throw MPDError(e)
        }
    }

    /// A client-to-client command, as this client (its channels are its own); "subscription
    /// list is full" is mpd's `ACK [56]`, as "already subscribed" is.
    func runChannel(_ command: any ControlCommand, _ r: MPDRequest) throws(MPDError) -> Reply {
        switch dispatcher.execute(command, from: r.connection) {
        case .success(let reply): return reply
        case .failure(.tooLarge(let m)): throw MPDError(.exist, m)
        case .failure(let e): throw MPDError(e)
        }
    }

    func run(_ command: any ControlCommand) throws(MPDError) -> Reply {
        switch perform(command) {
        case .success(let r): return r
        case .failure(let e): throw MPDError(e)
        }
    }

    func play(_ command: PlayCommand) throws(MPDError) -> MPDText {
        do throws(MPDError) {
            _ = try run(command)
        } catch where error.ack == .playerSync && command.item == nil && command.position == nil {
            return ""  // play on an empty queue: a silent OK, as mpd
        }
        return ""
    }

    // MARK: - Rendering

    var volumePercent: Int { Int((Double(playback.player.volume) * 100).rounded()) }

    /// `status`, in mpd's field order: read under the play queue's one lock (plus the
    /// volume and the duration the tag cache knows), written straight into the reply's bytes
    /// in one pass (the round trip is what MPD status bars poll).
    func status(into buffer: inout ByteBuffer) {
        let q = playback.queue.status()
        let mixRamp = shared.mixRamp.withLock { $0 }
        let crossfade = playback.crossfade
        let volume = volumePercent
        let info = q.current.flatMap { q.state == .stopped ? nil : playback.tags.lookup($0.entry.path) }
        let total = QueueItem.playedLength(info?.duration, q.current?.entry.clip) ?? 0
        let stream = q.current.map { InputSources.isStream($0.entry.path) } ?? false
        let updating = playback.library?.updating?.job
        // Every field but `error` has a bounded length (≤ 20 digits a number): 512 bytes hold them.
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 512) { raw in
            var w = ASCIIWriter(raw)
            w.put("volume: "); w.put(volume)
            w.put(q.repeatMode == .off ? "\nrepeat: 0\nrandom: " : "\nrepeat: 1\nrandom: ")
            w.put(q.shuffle ? "1\nsingle: " : "0\nsingle: ")
            w.put(q.repeatMode == .one || q.stopAfterEach ? "1" : q.stopAfterCurrent ? "oneshot" : "0")
            w.put(q.consume == .on ? "\nconsume: 1" : q.consume == .oneshot ? "\nconsume: oneshot" : "\nconsume: 0")
            w.put("\npartition: "); w.put(MPDText.field(playback.partition)); w.put("\nplaylist: "); w.put(q.version)
            w.put("\nplaylistlength: "); w.put(q.count)
            w.put("\nmixrampdb: ")
            if mixRamp.db == 0 { w.put("0") } else { w.put(Self.number(mixRamp.db)) }
            w.put(q.state == .playing ? "\nstate: play\n" : q.state == .paused ? "\nstate: pause\n" : "\nstate: stop\n")
            if crossfade > 0 { w.put("xfade: "); w.put(Int(crossfade.rounded())); w.put("\n") }
            if mixRamp.delay > 0 { w.put("mixrampdelay: "); w.put(Self.number(mixRamp.delay)); w.put("\n") }
            guard let (c, i) = q.current else {
                if let updating { w.put("updating_db: "); w.put(updating); w.put("\n") }
                return w.count
            }
            w.put("song: "); w.put(i)
            w.put("\nsongid: "); w.put(c.id); w.put("\n")
            if q.state != .stopped {
                w.put("time: "); w.put(Int(q.elapsed.rounded(.down))); w.put(":"); w.put(Int(total.rounded()))
                w.put("\nelapsed: "); w.putSeconds(q.elapsed)
                // A stream: what the player heard (nothing in the tag cache), and no duration (as mpd).
                let heard = stream ? playback.player.currentItem?.audioDescription : nil
                w.put("\nbitrate: "); w.put(info?.bitrate ?? heard?.bitrate ?? 0)
                if stream { w.put("\n") } else { w.put("\nduration: "); w.putSeconds(total); w.put("\n") }
                if let rate = info?.rate ?? heard?.rate, let channels = info?.channels ?? heard?.channels {
                    // Decoded as 32-bit float: mpd writes that `f` (its mad decoder gives 24).
                    w.put("audio: "); w.put(rate); w.put(":f:"); w.put(channels); w.put("\n")
                }
            }
            if let updating { w.put("updating_db: "); w.put(updating); w.put("\n") }
            if let (n, j) = q.next {
                w.put("nextsong: "); w.put(j)
                w.put("\nnextsongid: "); w.put(n.id); w.put("\n")
            }
            return w.count
        }
        if let e = q.current?.entry.failure { buffer.writeMPD("error: \(e)\n") }
    }

    /// `v` as mpd's `{}` prints a float: shortest form, no `.0` (`-17.5`, `0`, `2`).
    static func number(_ v: Double) -> String {
        v.rounded() == v && abs(v) < 1e15 ? String(Int(v)) : String(v)
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


    /// A song object, in mpd's order: `file`, `Last-Modified`, `Format`, the tags the client
    /// wants (in the order the file has them, one line per value), `Time` and `duration`, then
    /// position, id and priority (not for a stored playlist's or a directory's songs).
    func song(_ i: QueueItem, _ state: MPDClientState, withID: Bool = true, modified: Date? = nil,
              info given: TagCache.Info? = nil) -> MPDText {
        // (Queue songs were read by `describe`; a directory's come with their listing.)
        let info = given ?? playback.tags.cached(i.path) ?? playback.tags.peek(i.path)
        var out: MPDText = "file: \(relative(i.path))\n"
        if let c = i.clip { out += "Range: \(Self.seconds(c.start))-\(c.end.map(Self.seconds) ?? "")\n" }
        if let m = modified ?? info.modified { out += "Last-Modified: \(JSONCodec.iso8601(m))\n" }
        if let rate = info.rate, let channels = info.channels { out += "Format: \(rate):\(info.encoding?.mpdName ?? "f"):\(channels)\n" }
        // A stream's tags as heard now (a chained stream's next link), else the file's.
        for t in (playback.streamMetadata(for: i.id) ?? info.metadata).tags where state.tags.contains(t.key.mpdName) {
            out += "\(t.key.mpdName): \(t.key == .track || t.key == .disc ? Self.decimal(t.value) : t.value)\n"
        }
        if let d = i.duration { out += "Time: \(Int(d.rounded()))\nduration: \(Self.seconds(d))\n" }
        if let p = i.index { out += "Pos: \(p)\n" }
        if withID { out += "Id: \(i.id)\n" }
        if i.priority != 0 { out += "Prio: \(i.priority)\n" }
        return out
    }

    /// A track or disc number as mpd prints it: leading zeros and what follows the digits
    /// dropped (`05/10` is `5`); a value that starts with no digit as it is.
    static func decimal(_ v: String) -> String {
        let digits = v.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty else { return v }
        let trimmed = digits.drop { $0 == "0" }
        return trimmed.isEmpty ? "0" : String(trimmed)
    }

    /// The queue's songs `selection` chooses (chosen under the command lock), as MPD lists them.
    func songs(_ selection: ListCommand.Selection, _ state: MPDClientState) throws(MPDError) -> MPDText {
        guard case .queue(let listing) = try run(ListCommand(selection: selection)) else { return "" }
        return listing.items.map { song($0, state) }.joined()
    }

    /// A queue path as MPD clients see it: relative to the music directory when inside it.
    func relative(_ path: String) -> String {
        guard let root = playback.resolver.root else { return path }
        return path.hasPrefix(root + "/") ? String(path.dropFirst(root.count + 1)) : path
    }

    /// `albumart URI OFFSET` (a cover file beside the song: cover.png, cover.jpg, …) and
    /// `readpicture URI OFFSET` (the picture embedded in its tags): `size`, `type` (readpicture),
    /// `binary: N`, then N bytes from OFFSET, at most the client's binary limit. No embedded
    /// picture answers nothing (as mpd); no cover file is an error.
    func picture(_ r: MPDRequest) throws(MPDError) -> [UInt8] {
        let (name, state) = (r.name, r.state)
        let offset = Int(r.args[1])!
        // One audio file, confined as `add` is (a directory or a playlist is no song).
        let request = try uri(r.args[0], state)
        let ext = Path.extension(request).lowercased()
        guard PathResolver.audioExtensions.contains(ext), let (files, _) = try? playback.resolver.resolve(request),
              files.count == 1, let file = files.first else {
            throw MPDError(.noExist, name == "albumart" ? "No file exists" : "No such song")  // (mpd's words for each)
        }
        let found: (data: [UInt8], type: String?)?
        if name == "readpicture" {
            found = playback.tags.info(file).metadata.artwork.map { ($0.data, $0.mimeType) }
        } else {
            found = playback.coverFile(beside: file).map { ($0, nil) }
            guard found != nil else { throw MPDError(.noExist, "No file exists") }
        }
        guard let (data, type) = found else { return [] }
        guard offset <= data.count else { throw MPDError(.arg, "Offset too large") }
        let chunk = data[offset..<min(data.count, offset + state.binaryLimit)]
        var header: MPDText = "size: \(data.count)\n"
        if let type { header += "type: \(type)\n" }
        header += "binary: \(chunk.count)\n"
        return Array(header.string.utf8) + chunk + [UInt8(ascii: "\n")]
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
    func listing(_ uri: String, recursive: Bool, info: Bool, _ state: MPDClientState) throws(MPDError) -> MPDText {
        let entries: [LibraryEntry]
        do throws(MPDError) {
            entries = try browse(uri, recursive: recursive, tags: info)
        } catch {
            // A song named by its URI.
            guard !uri.isEmpty,
                  case .success(.directory(let parent)) = perform(BrowseCommand(path: Path.deletingLastComponent(uri), tags: info)),
                  let e = parent.first(where: { $0.listed.path == uri.trimming("/") && $0.listed.kind == .audio })
            else { throw error }
            return info ? song(e.item!, state, withID: false, modified: e.listed.modified, info: e.info) : "file: \(e.listed.path)\n"
        }
        var out: MPDText = ""
        if recursive, !uri.isEmpty, uri != "/" {
            // `listall DIR` and `listallinfo DIR` name the directory itself first, as mpd.
            let dir = uri.trimming("/")
            out += "directory: \(dir)\n"
            if info, let root = playback.resolver.root, let modified = PathResolver.modified(root + "/" + dir) {
                out += "Last-Modified: \(JSONCodec.iso8601(modified))\n"
            }
        }
        if !recursive, uri.isEmpty || uri == "/", let store = playback.playlists {
            out += store.all().map { "playlist: \($0.name)\nLast-Modified: \(JSONCodec.iso8601($0.modified))\n" }.joined()
        }
        for e in entries {
            switch e.listed.kind {
            case .directory:
                out += "directory: \(e.listed.path)\n"
                if info { out += "Last-Modified: \(JSONCodec.iso8601(e.listed.modified))\n" }
            case .audio:
                out += info ? e.item.map { song($0, state, withID: false, modified: e.listed.modified, info: e.info) } ?? "" : "file: \(e.listed.path)\n"
            case .playlist:
                out += "playlist: \(e.listed.path)\n"
                if info { out += "Last-Modified: \(JSONCodec.iso8601(e.listed.modified))\n" }
            case .other:
                continue
            }
            guard out.byteCount <= Self.maximumResponse else { throw MPDError(.system, "Output buffer is full") }
        }
        return out
    }

    /// `listfiles`: every file and directory in one directory, with size and time, as mpd
    /// lists a storage directory.
    func listFiles(_ uri: String) throws(MPDError) -> MPDText {
        try browse(uri, recursive: false, tags: false).map { e -> MPDText in
            e.listed.kind == .directory
                ? "directory: \(Path.lastComponent(e.listed.path))\nLast-Modified: \(JSONCodec.iso8601(e.listed.modified))\n"
                : "file: \(Path.lastComponent(e.listed.path))\nsize: \(e.listed.size)\nLast-Modified: \(JSONCodec.iso8601(e.listed.modified))\n"
        }.joined()
    }

    // MARK: - Arguments

    func integer(_ s: String) throws(MPDError) -> Int {
        guard let v = Int(s) else { throw MPDError(.arg, "Integer expected: \(s)") }
        return v
    }

    /// `POS`, `START:END` or `START:` (END excluded) in a queue of `count` songs. With `clamp`
    /// (listings, as mpd), an END past the queue is its length; otherwise it is an error.
    func range(_ s: String, count: Int, clamp: Bool = false) throws(MPDError) -> Range<Int> {
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
    /// it, as mpd 0.23), found when the command runs.
    func target(_ s: String) throws(MPDError) -> QueueTarget {
        let n = try integer(s)
        guard abs(n) <= 1 << 40 else { throw MPDError(.arg, "Bad song index") }  // (no overflow when resolved)
        if s.hasPrefix("+") { return .afterCurrent(n) }
        if s.hasPrefix("-") { return .beforeCurrent(-n) }
        return .at(n)
    }

    /// `POS`, `START:END` or `START:` as queue positions, found when the command runs (with
    /// `clamp`, for listings as mpd: an END past the queue is its length).
    func positions(_ s: String, clamp: Bool = false) throws(MPDError) -> QueuePositions {
        guard let colon = s.firstIndex(of: ":") else { return .one(try integer(s)) }
        let a = try integer(String(s[..<colon]))
        let rest = String(s[s.index(after: colon)...])
        return .range(start: a, end: rest.isEmpty ? nil : try integer(rest), clampsEnd: clamp)
    }

    /// An `add` URI as a path for the resolver: `file://` and absolute paths only for local
    /// clients; `""` and `/` are the whole music directory.
    func uri(_ u: String, _ state: MPDClientState) throws(MPDError) -> String {
        var path = u
        if path.hasPrefix("file://") { path = String(path.dropFirst(7)) }
        if path.hasPrefix("/") {
            guard state.local else { throw MPDError(.permission, "Access denied") }
            return path
        }
        if path.contains("://") {
            // A stream (http, https) when `add` takes them; any other scheme, as mpd answers it.
            guard playback.configuration.allowStreams, InputSources.isStream(u) else { throw MPDError(.noExist, "Unsupported URI scheme") }
            return u
        }
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

    /// A short string (a number's text).
    mutating func put(_ s: String) {
        for b in s.utf8 {
            precondition(count < raw.count)
            raw[count] = b
            count += 1
        }
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
