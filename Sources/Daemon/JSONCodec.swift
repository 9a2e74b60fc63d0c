import BacklineSchema
import AudioEngine
import BacklineWire
import Control
import Library
import FoundationEssentials
import Glibc
import Lifecycle
import MediaCore
import NowPlaying
import Platform
import PlayQueue
import Session

/// The JSON protocol as a codec over the command layer: a request line becomes a typed command
/// (its arguments checked against ``CommandTable``), a typed reply, error or event becomes
/// JSON. Nothing here runs a command.
public enum JSONCodec {
    /// The protocol's version (`version`).
    public static let protocolVersion = 1

    // MARK: - Requests

    /// The typed command `request` asks for. Throws `invalid-request`, `unknown-command` or
    /// `bad-argument` (unknown member, wrong type) errors.
    public static func command(_ request: JSON) throws(ProtocolError) -> any ControlCommand {
        guard case .object(let members) = request else { throw ProtocolError("invalid-request", "a request is a JSON object") }
        guard let name = request["command"]?.string else { throw ProtocolError("invalid-request", "missing \"command\" (a string)") }
        guard let d = CommandTable.descriptor(name) else {
            throw ProtocolError("unknown-command", "unknown command \"\(name)\" (try \"help\")")
        }
        // Unknown members first (whatever their place), then the types of the known ones.
        if let extra = members.first(where: { $0.0 != "id" && $0.0 != "command" && d.argument($0.0) == nil })?.0 {
            throw .badArgument("\(name): unknown argument \"\(extra)\"")
        }
        var values: [String: ArgumentValue] = [:]
        for (key, value) in members where key != "id" && key != "command" && value != .null {
            if let spec = d.argument(key) { values[key] = try argument(value, spec) }
        }
        do throws(CommandError) {
            return try d.make(Arguments(values))
        } catch {
            throw protocolError(error)
        }
    }

    private static func argument(_ v: JSON, _ spec: ArgumentSpec) throws(ProtocolError) -> ArgumentValue {
        let k = spec.name
        switch spec.type {
        case .string:
            guard let s = v.string else { throw .badArgument("\"\(k)\" must be a string") }
            return .string(s)
        case .number:
            guard let n = v.number else { throw .badArgument("\"\(k)\" must be a number") }
            return .number(n)
        case .integer:
            guard let n = v.int else { throw .badArgument("\"\(k)\" must be an integer") }
            return .integer(n)
        case .boolean:
            guard let b = v.bool else { throw .badArgument("\"\(k)\" must be true or false") }
            return .boolean(b)
        case .strings:
            guard let a = v.array, case let s = a.compactMap(\.string), s.count == a.count else {
                throw .badArgument("\"\(k)\" must be an array of strings")
            }
            return .strings(s)
        case .integers:
            guard let a = v.array, case let n = a.compactMap(\.int), n.count == a.count else {
                throw .badArgument("\"\(k)\" must be an array of integers")
            }
            return .integers(n)
        }
    }

    /// The request line for `command` (what `ctl` sends).
    public static func request(_ command: any ControlCommand, id: Int? = nil) -> JSON {
        var members: [(String, JSON)] = []
        if let id { members.append(("id", .int(id))) }
        members.append(("command", .string(command.descriptor.name)))
        for spec in command.descriptor.arguments {
            guard let v = command.arguments.values[spec.name] else { continue }
            members.append((spec.name, json(v)))
        }
        return .object(members)
    }

    private static func json(_ v: ArgumentValue) -> JSON {
        switch v {
        case .string(let s): .string(s)
        case .number(let n): .number(n)
        case .integer(let i): .int(i)
        case .boolean(let b): .bool(b)
        case .strings(let a): .array(a.map(JSON.string))
        case .integers(let a): .array(a.map(JSON.int))
        }
    }

    // MARK: - Replies and errors

    /// The protocol error for a command error (same code, same message).
    public static func protocolError(_ e: CommandError) -> ProtocolError { ProtocolError(e.code, e.message) }

    /// `{"id":…,"ok":true,…}` for `reply`.
    public static func success(_ id: JSON, _ reply: Reply) -> JSON {
        .object([("id", id), ("ok", true)] + fields(reply))
    }

    /// `{"id":…,"ok":false,"error":{code,message}}`.
    public static func failure(_ id: JSON, _ e: ProtocolError) -> JSON {
        .object([("id", id), ("ok", false), ("error", .object([("code", .string(e.code)), ("message", .string(e.message))]))])
    }

    /// A reply's members.
    public static func fields(_ reply: Reply) -> [(String, JSON)] {
        switch reply {
        case .none: []
        case .state(let s): [("state", .string(s.rawValue))]
        case .current(let item): [("current", item.map { .object(fields($0)) } ?? .null)]
        case .position(let t): [("position", ms(t))]
        case .repeatMode(let m): [("repeat", .string(m.rawValue))]
        case .shuffle(let on): [("shuffle", .bool(on))]
        case .stopAfterCurrent(let on, let each): [("stopAfterCurrent", .bool(on)), ("stopAfterEach", .bool(each))]
        case .consume(let m): [("consume", .string(m.rawValue))]
        case .replayGain(let s): [("replayGain", replayGain(s))]
        case .crossfade(let seconds): [("crossfade", .number(seconds))]
        case .alarms(let all): [("alarms", .array(all.map { .object(fields($0)) }))]
        case .rate(let r): [("rate", .number(r))]
        case .speed(let r): [("speed", .number(r))]
        case .bookmarks(let all):
            [("bookmarks", .array(all.sorted { ($0.value.saved, $0.key) > ($1.value.saved, $1.key) }.map { path, b in
                .object([("path", .string(path)), ("position", ms(b.position)), ("duration", b.duration.map(ms) ?? .null),
                         ("saved", .number(b.saved.rounded()))])
            }))]
        case .forgotten(let n): [("forgotten", .int(n))]
        case .chapters(let list, let current, let position):
            [("chapters", .array(list.map { .object(fields($0)) })), ("chapter", current.map(JSON.int) ?? .null)]
                + (position.map { [("position", ms($0))] } ?? [])
        case .added(let ids, let skipped):
            [("items", .array(ids.map(JSON.int))),
             ("skipped", .array(skipped.map { .object([("path", .string($0.path)), ("reason", .string($0.reason))]) }))]
        case .count(let n): [("count", .int(n))]
        case .index(let i): [("index", .int(i))]
        case .queue(let q):
            [("version", .int(q.version)), ("current", q.current.map(JSON.int) ?? .null), ("items", .array(q.items.map { .object(fields($0)) }))]
        case .playlists(let all):
            [("playlists", .array(all.map { .object([("name", .string($0.name)), ("modified", .string(iso8601($0.modified)))]) }))]
        case .playlistEntries(let entries): [("items", .array(entries.map(JSON.string)))]
        case .directory(let entries):
            [("entries", .array(entries.map { e in
                var f: [(String, JSON)] = [("path", .string(e.listed.path)), ("kind", .string(e.listed.kind.rawValue))]
                if e.listed.kind != .directory { f.append(("size", .int(e.listed.size))) }
                f.append(("modified", .string(iso8601(e.listed.modified))))
                if let i = e.item { f += fields(i).filter { !["id", "path"].contains($0.0) } }
                return .object(f)
            }))]
        case .update(let job): [("job", .int(job))]
        case .songs(let songs): [("songs", .array(songs.map { .object(fields($0)) }))]
        case .stickers(let all):
            [("stickers", .array(all.map { .object([("path", .string($0.path)), ("name", .string($0.name)), ("value", .string($0.value))]) }))]
        case .stickerNames(let names): [("names", .array(names.map(JSON.string)))]
        case .tagValues(let keys, let rows):
            [("tags", .array(keys.map { .string($0.mpdName) })), ("values", .array(rows.map { .array($0.map(JSON.string)) }))]
        case .counts(let group, let counts):
            group == nil
                ? [("songs", .int(counts.first?.songs ?? 0)), ("playtime", ms(counts.first?.playtime ?? 0))]
                : [("group", .string(group!.mpdName)), ("counts", .array(counts.map {
                    .object([("value", .string($0.value ?? "")), ("songs", .int($0.songs)), ("playtime", ms($0.playtime))])
                }))]
        case .library(let nodes):
            [("entries", .array(nodes.map { n in
                switch n {
                case .directory(let d): .object([("kind", "directory"), ("path", .string(d.path)), ("modified", .string(iso8601(d.modified)))])
                case .playlist(let p): .object([("kind", "playlist"), ("path", .string(p.path)), ("modified", .string(iso8601(p.modified)))])
                case .song(let s): .object([("kind", "song")] + fields(s))
                }
            }))]
        case .libraryStats(let s, let updating):
            [("artists", .int(s.artists)), ("albums", .int(s.albums)), ("songs", .int(s.songs)), ("playtime", ms(s.playtime)),
             ("updated", s.updated > 0 ? .string(iso8601(s.updated)) : .null), ("unreadable", .int(s.unreadable)),
             ("updating", updating.map { .object(fields($0)) } ?? .null)]
        case .status(let s): fields(s)
        case .nowPlaying(let n): n.map(fields) ?? [("info", .null)]
        case .volume(let v): fields(v)
        case .session(let s): fields(s)
        case .app(let a): [("app", .string(a.name))]
        case .sleep(let s): [("sleep", sleep(s))]
        case .subscribed(let kinds): [("events", .array(kinds.map(JSON.string)))]
        case .channels(let names): [("channels", .array(names.map(JSON.string)))]
        case .messages(let all): [("messages", .array(all.map { .object([("channel", .string($0.channel)), ("message", .string($0.text))]) }))]
        case .partitions(let all, let current):
            [("partitions", .array(all.map { p in
                .object([("name", .string(p.name)), ("output", p.output.map(JSON.string) ?? .null),
                         ("device", p.device.map(JSON.string) ?? .null), ("state", .string(p.state.rawValue)), ("count", .int(p.count))])
            })), ("current", .string(current))]
        case .outputs(let all):
            [("outputs", .array(all.map { o in
                .object([("id", .int(o.id)), ("name", .string(o.name)), ("device", .string(o.device)),
                         ("plugin", .string(o.plugin)), ("partition", o.partition.map(JSON.string) ?? .null)])
            }))]
        case .pong: [("pong", true)]
        case .version(let v, let p): [("version", .string(v)), ("protocol", .int(p))]
        case .help(let names): [("commands", .array(names.compactMap(CommandTable.descriptor).map(help)))]
        }
    }

    static func fields(_ i: QueueItem) -> [(String, JSON)] {
        var f: [(String, JSON)] = [("id", .int(i.id))]
        if let index = i.index { f.append(("index", .int(index))) }
        f.append(("path", .string(i.path)))
        f.append(("title", .string(i.title)))
        if let a = i.artist { f.append(("artist", .string(a))) }
        if let a = i.album { f.append(("album", .string(a))) }
        if let n = i.track { f.append(("track", .int(n))) }
        f.append(("duration", i.duration.map(ms) ?? .null))
        if let c = i.isCurrent { f.append(("current", .bool(c))) }
        if let e = i.error { f.append(("error", .string(e))) }
        if i.priority != 0 { f.append(("priority", .int(i.priority))) }
        if !i.tags.isEmpty { f.append(("tags", tags(i.tags))) }
        if let c = i.clip { f.append(("clip", .object([("start", ms(c.start)), ("end", c.end.map(ms) ?? .null)]))) }
        return f
    }

    /// Tags as an object: each type (`artist`, `genre`, `date`, `musicBrainzTrackID`, …) once,
    /// in the order the file first has it, with every value in an array.
    static func tags(_ tags: [Tag]) -> JSON {
        var order: [TagKey] = []
        var values: [TagKey: [JSON]] = [:]
        for t in tags {
            if values[t.key] == nil { order.append(t.key) }
            values[t.key, default: []].append(.string(t.value))
        }
        return .object(order.map { ("\($0)", .array(values[$0] ?? [])) })
    }

    static func fields(_ s: StatusSnapshot) -> [(String, JSON)] {
        [
            ("state", .string(s.state.rawValue)),
            ("buffering", .bool(s.buffering)),
            ("current", s.current.map { .object(fields($0)) } ?? .null),
            ("elapsed", ms(s.elapsed)),
            ("duration", s.duration.map(ms) ?? .null),
            ("volume", percent(s.volume.volume)),
            ("muted", .bool(s.volume.muted)),
            ("rate", .number(s.rate)),
            ("index", s.index.map(JSON.int) ?? .null),
            ("count", .int(s.count)),
            ("queueVersion", .int(s.queueVersion)),
            ("repeat", .string(s.repeatMode.rawValue)),
            ("shuffle", .bool(s.shuffle)),
            ("stopAfterCurrent", .bool(s.stopAfterCurrent)),
            ("stopAfterEach", .bool(s.stopAfterEach)),
            ("consume", .string(s.consume.rawValue)),
            ("session", .object(fields(s.session))),
            ("app", .string(s.app.name)),
            ("device", .string(s.device)),
            ("output", s.output.map { .string($0.description) } ?? .null),
            ("audio", s.audio.map { a in
                .object([("format", .string(a.formatName)), ("encoding", .string(a.encoding.description)),
                         ("rate", .int(a.rate)), ("channels", .int(a.sourceChannels)), ("playedChannels", .int(a.channels)),
                         ("downmix", a.isDownmixed ? .string("ITU-R BS.775") : .null), ("bitrate", a.bitrate.map(JSON.int) ?? .null),
                         ("description", .string(a.description))])
            } ?? .null),
            ("replayGain", replayGain(s.replayGain)),
            ("replayGainScale", s.replayGainScale.map { .number(Double($0)) } ?? .null),
            ("replayGainDecibels", s.replayGainScale.flatMap { $0 > 0 ? .number(20 * log10(Double($0))) : nil } ?? .null),
            ("crossfade", .number(s.crossfade)),
            ("speed", .number(s.speed)),
            ("silenceTrimmed", .number((s.silenceTrimmed * 1000).rounded() / 1000)),
            ("chapter", s.chapter.map { .object(fields($0)) } ?? .null),
            ("underruns", .int(s.underruns)),
            ("sleep", sleep(s.sleep)),
            ("musicDirectory", .string(s.musicDirectory)),
        ]
    }

    /// A chapter as replies list it: `title` (or null), `start` and `end` (null: where the next
    /// starts, or the item's end), seconds.
    static func fields(_ c: Chapter) -> [(String, JSON)] {
        [("title", c.title.map(JSON.string) ?? .null), ("start", ms(c.start)), ("end", c.end.map(ms) ?? .null)]
    }

    /// Where an item is among its chapters: `chapter` (index or null), `count`, and the
    /// chapter's `title` and `start`.
    static func fields(_ c: ChapterPosition) -> [(String, JSON)] {
        [("chapter", c.index.map(JSON.int) ?? .null), ("count", .int(c.count)),
         ("title", c.chapter?.title.map(JSON.string) ?? .null), ("start", c.chapter.map { ms($0.start) } ?? .null)]
    }

    static func replayGain(_ s: ReplayGainSettings) -> JSON {
        .object([("mode", .string(s.mode.rawValue)), ("preamp", .number(s.preamp)), ("missingPreamp", .number(s.missingPreamp)),
                 ("limit", .bool(s.limit))])
    }

    static func fields(_ a: Alarm) -> [(String, JSON)] {
        var f: [(String, JSON)] = [("id", .int(a.id)), ("time", .string(a.time)), ("daily", .bool(a.daily)), ("fade", .number(a.fade))]
        if let item = a.item { f.append(("item", .int(item))) }
        if let p = a.playlist { f.append(("playlist", .string(p))) }
        f.append(("next", .string(iso8601(a.next))))
        return f
    }

    static func fields(_ v: VolumeState) -> [(String, JSON)] {
        [("volume", percent(v.volume)), ("muted", .bool(v.muted))]
    }

    static func fields(_ s: SessionSnapshot) -> [(String, JSON)] {
        [
            ("category", .string(s.category.rawValue)), ("options", .array(s.options.map(JSON.string))),
            ("active", .bool(s.active)), ("interrupted", .bool(s.interrupted)),
            ("silentSwitch", .bool(s.silentSwitch)), ("screenLocked", .bool(s.screenLocked)),
            ("silenced", .bool(s.silenced)), ("ducked", .bool(s.ducked)),
            ("nowPlayingApp", .bool(s.nowPlayingApp)),
        ]
    }

    static func fields(_ n: NowPlayingSnapshot) -> [(String, JSON)] {
        let i = n.info
        var f: [(String, JSON)] = []
        func add(_ k: String, _ v: JSON?) { if let v { f.append((k, v)) } }
        add("title", i.title.map(JSON.string))
        add("artist", i.artist.map(JSON.string))
        add("albumTitle", i.albumTitle.map(JSON.string))
        add("albumArtist", i.albumArtist.map(JSON.string))
        add("albumTrackNumber", i.albumTrackNumber.map(JSON.int))
        add("albumTrackCount", i.albumTrackCount.map(JSON.int))
        add("discNumber", i.discNumber.map(JSON.int))
        add("discCount", i.discCount.map(JSON.int))
        add("genre", i.genre.map(JSON.string))
        if !i.tags.isEmpty { f.append(("tags", tags(i.tags))) }
        add("playbackDuration", i.playbackDuration.map(ms))
        add("elapsedPlaybackTime", n.elapsed.map(ms))
        add("playbackRate", i.playbackRate.map(JSON.number))
        add("defaultPlaybackRate", i.defaultPlaybackRate.map(JSON.number))
        add("playbackQueueIndex", i.playbackQueueIndex.map(JSON.int))
        add("playbackQueueCount", i.playbackQueueCount.map(JSON.int))
        add("chapterNumber", i.chapterNumber.map(JSON.int))
        add("chapterCount", i.chapterCount.map(JSON.int))
        add("mediaType", i.mediaType.map { .string($0.name) })
        if let a = i.artwork {
            f.append(("artwork", .object([("mimeType", .string(a.mimeType)), ("bytes", .int(a.data.count)),
                                          ("base64", .string(Data(a.data).base64EncodedString()))])))
        }
        return [("item", .int(n.item)), ("info", .object(f)), ("playbackState", .string(n.playbackState))]
    }

    static func sleep(_ s: SleepSnapshot?) -> JSON {
        guard let s else { return .null }
        return .object([("remaining", s.remaining.map(ms) ?? .null), ("endOfItem", .bool(s.endOfItem)),
                        ("endOfChapter", .bool(s.endOfChapter)), ("fade", .number(s.fade))])
    }

    /// The protocol's schema as the web remote reads it (`GET /schema`): every command's
    /// name, older names and arguments, and every event kind.
    public static func schema() -> JSON {
        .object([
            ("commands", .array(Schema.commands.map { c in
                .object([
                    ("name", .string(c.name)), ("aliases", .array(c.aliases.map(JSON.string))), ("summary", .string(c.summary)),
                    ("arguments", .array(c.arguments.map { a in
                        .object([("name", .string(a.name)), ("type", .string(a.type.rawValue)), ("required", .bool(a.required))]
                            + (a.allowed.map { [("allowed", .array($0.map(JSON.string)))] } ?? [])
                            + (a.range.map { [("minimum", .number($0.lowerBound)), ("maximum", .number($0.upperBound))] } ?? []))
                    })),
                ])
            })),
            ("events", .array(Schema.eventKinds.map(JSON.string))),
        ])
    }

    /// A command as `help` lists it.
    static func help(_ d: CommandDescriptor) -> JSON {
        .object([
            ("name", .string(d.name)), ("summary", .string(d.summary)),
            ("arguments", .array(d.arguments.map { .object([("name", .string($0.name)), ("type", .string($0.type.rawValue)), ("summary", .string($0.summary))]) })),
        ])
    }

    // MARK: - Events

    /// An event as subscribers read it: `{"event": kind, "seq": n, …fields}`.
    public static func event(_ p: PublishedEvent) -> JSON {
        let members: [(String, JSON)]
        switch p.event {
        case .control(let e): members = fields(e)
        case .message(let channel, let text): members = [("channel", .string(channel)), ("message", .string(text))]
        }
        return .object([("event", .string(p.event.kind.rawValue)), ("seq", .number(Double(p.seq)))] + members)
    }

    /// An event's members (after `event` and `seq`).
    public static func fields(_ e: ControlEvent) -> [(String, JSON)] {
        switch e {
        case .state(let s): [("state", .string(s.rawValue))]
        case .buffering(let b): [("buffering", .bool(b))]
        case .current(let item): [("item", item.map { .object(fields($0)) } ?? .null)]
        case .queue(let version, let count): [("version", .int(version)), ("count", .int(count))]
        case .modes(let r, let sh, let sac, let consume):
            [("repeat", .string(r.rawValue)), ("shuffle", .bool(sh)), ("stopAfterCurrent", .bool(sac)), ("consume", .string(consume.rawValue))]
        case .failed(let item, let path, let reason): [("item", .int(item)), ("path", .string(path)), ("reason", .string(reason))]
        case .seeked(let item, let time): [("item", .int(item)), ("time", ms(time))]
        case .chapter(let item, let c): [("item", .int(item))] + fields(c)
        case .position(let item, let elapsed, let duration):
            [("item", .int(item)), ("elapsed", ms(elapsed)), ("duration", duration.map(ms) ?? .null)]
        case .volume(let v, _): fields(v)
        case .session(let e):
            switch e {
            case .interruptionBegan(let reason, let by):
                [("kind", "interruptionBegan"), ("reason", .string("\(reason)")), ("by", by.map(JSON.string) ?? .null)]
            case .interruptionEnded(let shouldResume): [("kind", "interruptionEnded"), ("shouldResume", .bool(shouldResume))]
            case .routeChanged(let reason): [("kind", "routeChanged"), ("reason", .string("\(reason)"))]
            case .mediaServicesWereReset: [("kind", "mediaServicesWereReset")]
            case .silencedChanged(let on): [("kind", "silencedChanged"), ("silenced", .bool(on))]
            case .duckingChanged(let on): [("kind", "duckingChanged"), ("ducked", .bool(on))]
            }
        case .lifecycle(let e, let state): [("kind", .string(lifecycleName(e))), ("state", .string(state.name))]
        case .alarm(let e):
            switch e {
            case .set(let a): [("kind", "set"), ("alarm", .object(fields(a)))]
            case .cancelled(let id): [("kind", "cancelled"), ("id", .int(id))]
            case .fired(let a): [("kind", "fired"), ("alarm", .object(fields(a)))]
            }
        case .sleep(let s):
            switch s {
            case .set(let minutes, let endOfItem):
                [("kind", "set"), ("minutes", minutes.map(JSON.number) ?? .null), ("endOfItem", .bool(endOfItem)), ("endOfChapter", .bool(false))]
            case .setAtEndOfChapter: [("kind", "set"), ("minutes", .null), ("endOfItem", .bool(false)), ("endOfChapter", .bool(true))]
            case .cancelled: [("kind", "cancelled")]
            case .fired: [("kind", "fired")]
            }
        case .hook(let name, let status): [("hook", .string(name)), ("status", status.map { .int(Int($0)) } ?? .null)]
        case .shutdown, .partitions: []
        case .playlists(let name): [("name", .string(name))]
        case .sticker(let path, let name): [("path", .string(path)), ("name", name.map(JSON.string) ?? .null)]
        case .update(let u): fields(u)
        }
    }

    /// A library song: its path (relative to the music directory), id, tags and what the file is.
    static func fields(_ s: LibrarySong) -> [(String, JSON)] {
        var f: [(String, JSON)] = [("path", .string(s.path)), ("songId", .int(s.id))]
        if let t = s.first(.title) { f.append(("title", .string(t))) }
        if let a = s.first(.artist) { f.append(("artist", .string(a))) }
        if let a = s.first(.album) { f.append(("album", .string(a))) }
        if let n = s.first(.track).flatMap({ Int($0) }) { f.append(("track", .int(n))) }
        f.append(("duration", s.duration.map(ms) ?? .null))
        if !s.tags.isEmpty { f.append(("tags", tags(s.tags))) }
        f.append(("format", s.format.map(JSON.string) ?? .null))
        f.append(("audioFormat", s.audioFormat.map(JSON.string) ?? .null))
        f.append(("size", .int(s.size)))
        f.append(("modified", .string(iso8601(s.modified))))
        f.append(("added", .string(iso8601(s.added))))
        if s.hasArtwork { f.append(("artwork", true)) }
        return f
    }

    /// A library scan's progress or end.
    static func fields(_ u: LibraryUpdate) -> [(String, JSON)] {
        var f: [(String, JSON)] = [("job", .int(u.job)), ("path", .string(u.path)), ("rescan", .bool(u.rescan)), ("done", .bool(u.done)),
                                   ("scanned", .int(u.scanned)), ("expected", u.expected.map(JSON.int) ?? .null),
                                   ("added", .int(u.added)), ("updated", .int(u.updated)), ("removed", .int(u.removed)),
                                   ("moved", .int(u.moved)), ("failed", .int(u.failed)), ("read", .int(u.read))]
        if let e = u.error { f.append(("error", .string(e))) }
        return f
    }

    static func lifecycleName(_ e: ApplicationEvent) -> String {
        switch e {
        case .willResignActive: "willResignActive"
        case .didEnterBackground: "didEnterBackground"
        case .willEnterForeground: "willEnterForeground"
        case .didBecomeActive: "didBecomeActive"
        case .willTerminate: "willTerminate"
        case .didSuspend: "didSuspend"
        case .didResume: "didResume"
        case .backgroundTaskExpiring: "backgroundTaskExpiring"
        case .backgroundTaskLeaked: "backgroundTaskLeaked"
        }
    }

    // MARK: - Numbers

    /// A date as ISO 8601 in UTC (`2026-11-23T15:04:05Z`), as MPD's `Last-Modified`.
    static func iso8601(_ d: Date) -> String { iso8601(Int(d.timeIntervalSince1970)) }

    /// Seconds since 1970 as ISO 8601 in UTC.
    static func iso8601(_ seconds: Int) -> String {
        var t = time_t(seconds)
        var tm = tm()
        gmtime_r(&t, &tm)
        return cFormat("%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec)
    }

    /// Seconds, rounded to the millisecond.
    static func ms(_ t: Double) -> JSON { .number((t * 1000).rounded() / 1000) }
    /// 0–1 as a percentage with one decimal.
    static func percent(_ v: Float) -> JSON { .number((Double(v) * 1000).rounded() / 10) }
}
