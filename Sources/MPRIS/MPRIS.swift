import AudioEngine
import DBus
import Dispatch
import FoundationEssentials
import Glibc
import MediaCore
import NowPlaying
import Platform
import Synchronization
import Locking

/// Where to publish: the session bus under `org.mpris.MediaPlayer2.<name>`, or a bus at an
/// address (tests).
public enum MPRISBus: Sendable {
    case sessionBus(name: String)
    case address(String, name: String)

    var name: String {
        switch self {
        case .sessionBus(let n), .address(_, let n): n
        }
    }
}

/// What MPRIS shows and does beyond the now-playing info and the remote command center: the
/// player's name, volume, quit, opening URIs, and whether there is something to go to.
public struct MPRISOptions: Sendable {
    /// `Identity`, shown by desktop shells.
    public var identity: String
    /// `DesktopEntry`: the `.desktop` file's name without the suffix.
    public var desktopEntry: String?
    public var supportedUriSchemes: [String] = ["file"]
    public var supportedMimeTypes: [String] = ["audio/mpeg", "audio/x-mpegurl"]
    /// The volume, 0–1 (nil: `Volume` reads 1 and cannot be set).
    public var volume: (@Sendable () -> Double)?
    public var setVolume: (@Sendable (Double) -> Void)?
    /// `Quit` (nil: `CanQuit` is false).
    public var quit: (@Sendable () -> Void)?
    /// `OpenUri`: nil when it was opened, else why not (a D-Bus error then).
    public var openURI: (@Sendable (String) -> String?)?
    /// Whether `Play`, `Next`, `Previous` would do something (nil: from the now-playing info:
    /// an item to play, one after it in the queue, a current one).
    public var canPlay: (@Sendable () -> Bool)?
    public var canGoNext: (@Sendable () -> Bool)?
    public var canGoPrevious: (@Sendable () -> Bool)?
    /// The optional TrackList interface: the queue as the player knows it (nil: `HasTrackList`
    /// is false).
    public var trackList: MPRISTrackList?
    /// Where embedded artwork is written for `mpris:artUrl` (default
    /// `$XDG_CACHE_HOME/backline/art`).
    public var artDirectory: String

    public init(identity: String, desktopEntry: String? = nil) {
        self.identity = identity
        self.desktopEntry = desktopEntry
        let env = ProcessInfo.processInfo.environment
        let cache = env["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? (Path.homeDirectory() + "/.cache")
        artDirectory = cache + "/backline/art"
    }
}

/// A queue for MPRIS's TrackList interface: stable ids in order, each one's info, and the edits.
public struct MPRISTrackList: Sendable {
    /// The ids in play order.
    public var tracks: @Sendable () -> [String]
    /// What is known of each of `ids`, in their order (nil: no such track). One call for all
    /// of them: `GetTracksMetadata` may ask for every track of a long queue at once.
    public var info: @Sendable (_ ids: [String]) -> [NowPlayingInfo?]
    /// Plays `id`; nil when done, else why not.
    public var goTo: @Sendable (_ id: String) -> String?
    /// Adds the file at `uri` after `after` (nil: first), playing it when `play`; nil when done.
    public var add: (@Sendable (_ uri: String, _ after: String?, _ play: Bool) -> String?)?
    /// Removes `id`; nil when done.
    public var remove: (@Sendable (_ id: String) -> String?)?

    public init(tracks: @escaping @Sendable () -> [String], info: @escaping @Sendable ([String]) -> [NowPlayingInfo?],
                goTo: @escaping @Sendable (String) -> String?,
                add: (@Sendable (String, String?, Bool) -> String?)? = nil, remove: (@Sendable (String) -> String?)? = nil) {
        (self.tracks, self.info, self.goTo, self.add, self.remove) = (tracks, info, goTo, add, remove)
    }
}

extension NowPlayingInfoCenter {
    /// Publishes this center and `commands` as an MPRIS2 media player (`org.mpris.MediaPlayer2`
    /// and `.Player` at `/org/mpris/MediaPlayer2`): desktop media controls, media keys and
    /// `playerctl` see what is playing and send remote commands. Throws when there is no bus
    /// or the name is taken. Keep the returned service; ``MPRISService/stop()`` unpublishes.
    public func publish(on bus: MPRISBus, commands: RemoteCommandCenter = .shared,
                        options: MPRISOptions = MPRISOptions(identity: "Backline")) throws(DBusError) -> MPRISService {
        try MPRISService(bus: bus, info: self, commands: commands, options: options)
    }
}

/// An MPRIS2 player on a bus, fed by a ``NowPlayingInfoCenter`` and answering with a
/// ``RemoteCommandCenter``. Properties change with one `PropertiesChanged` per transition
/// (never polled, never a stream of positions); a position that jumps emits `Seeked`.
public final class MPRISService: Sendable {
    /// The bus name, `org.mpris.MediaPlayer2.<name>`.
    public let busName: String
    public static let objectPath = "/org/mpris/MediaPlayer2"
    static let root = "org.mpris.MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"
    static let trackListInterface = "org.mpris.MediaPlayer2.TrackList"
    static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"

    private let connection: DBusConnection
    private let info: NowPlayingInfoCenter
    private let commands: RemoteCommandCenter
    private let options: MPRISOptions
    private let observer = Lock<NowPlayingObserverToken?>(nil)
    private let events = DispatchQueue(label: "backline.mpris.events")
    private let refreshPending = Atomic<Bool>(false)
    /// The last cover written, and its URL.
    private let lastArt = Lock<(NowPlayingInfo.Artwork, String)?>(nil)
    /// What the bus was last told (only on the connection's thread).
    private let sent = Lock(Sent())

    struct Sent {
        var properties: [String: DBusValue] = [:]
        var trackID = ""
        var tracks: [String]?
        /// The position last seen and when (monotonic s), at which rate.
        var position = 0.0
        var at = 0.0
        var rate = 0.0
    }

    init(bus: MPRISBus, info: NowPlayingInfoCenter, commands: RemoteCommandCenter, options: MPRISOptions) throws(DBusError) {
        busName = "org.mpris.MediaPlayer2." + bus.name
        switch bus {
        case .sessionBus: connection = try DBusConnection.session()
        case .address(let a, _): connection = try DBusConnection.connect(address: a)
        }
        self.info = info
        self.commands = commands
        self.options = options
        // Register and take the name on the connection's thread; wait for the outcome.
        let outcome = Lock<Result<Void, DBusError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let queued = connection.perform { [self] c in
            do throws(DBusError) {
                try c.addObject(path: Self.objectPath) { [self] m in handle(m) }
                try c.requestName(busName)
                sent.withLock { $0.properties = playerProperties() }
                outcome.withLock { $0 = .success(()) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        // (a bus lost meanwhile drops the job: do not wait for it)
        if !queued || done.wait(timeout: .now() + 10) == .timedOut {
            outcome.withLock { if $0 == nil { $0 = .failure(DBusError(function: "sd_bus_request_name", code: -ETIMEDOUT, message: "the bus did not answer")) } }
        }
        if case .failure(let e) = outcome.withLock({ $0 }) {
            connection.close()
            throw e
        }
        let token = info.addObserver(queue: events) { [weak self] _ in self?.refresh() }
        observer.withLock { $0 = token }
    }

    /// Tells the bus what changed (call it when something the now-playing info does not carry
    /// changes: volume, repeat, shuffle, the queue). Changes that arrive together are sent as one.
    public func refresh() {
        guard !refreshPending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        connection.perform { [self] c in
            refreshPending.store(false, ordering: .releasing)
            sendChanges(c)
        }
    }

    /// Leaves the bus.
    public func stop() {
        if let t = observer.withLock({ $0 }) { info.removeObserver(t) }
        connection.close()
    }

    deinit { stop() }

    // MARK: - Properties (on the connection's thread)

    private var trackID: String {
        guard let i = info.nowPlayingInfo else { return Self.noTrack }
        return Self.trackPath(i.externalContentIdentifier ?? i.playbackQueueIndex.map(String.init) ?? "0")
    }

    /// A track's object path from its id (object paths take [A-Za-z0-9_] only).
    static func trackPath(_ id: String) -> String {
        let safe = id.unicodeScalars.map { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) ? String($0) : "_" }.joined()
        return "/org/mpris/MediaPlayer2/Track/" + (safe.isEmpty ? "0" : safe)
    }

    /// The id behind a track's object path (among the track list's ids).
    private func trackListID(_ path: String, _ list: MPRISTrackList) -> String? {
        list.tracks().first { Self.trackPath($0) == path }
    }

    private func trackListProperties() -> [String: DBusValue] {
        guard let list = options.trackList else { return [:] }
        return ["Tracks": .array(element: "o", list.tracks().map { .objectPath(Self.trackPath($0)) }),
                "CanEditTracks": .bool(list.add != nil && list.remove != nil)]
    }

    private var positionMicroseconds: Int64 {
        Int64(((info.elapsed() ?? 0) * 1e6).rounded())
    }

    private func rootProperties() -> [String: DBusValue] {
        [
            "CanQuit": .bool(options.quit != nil), "CanRaise": .bool(false), "HasTrackList": .bool(options.trackList != nil),
            "Identity": .string(options.identity), "DesktopEntry": .string(options.desktopEntry ?? ""),
            "SupportedUriSchemes": .strings(options.supportedUriSchemes), "SupportedMimeTypes": .strings(options.supportedMimeTypes),
            "Fullscreen": .bool(false), "CanSetFullscreen": .bool(false),
        ]
    }

    /// Every Player property but Position (read on demand, never signalled).
    private func playerProperties() -> [String: DBusValue] {
        let now = info.nowPlayingInfo
        let state = info.playbackState
        let status = state == .playing ? "Playing" : (state == .paused || state == .interrupted) && now != nil ? "Paused" : "Stopped"
        let loop: String
        switch commands.changeRepeatModeCommand.currentRepeatType {
        case .off: loop = "None"
        case .one: loop = "Track"
        case .all: loop = "Playlist"
        }
        let hasItem = now != nil
        let canPlay = options.canPlay?() ?? hasItem
        let canNext = options.canGoNext?() ?? now.map { i in (i.playbackQueueIndex ?? 0) + 1 < (i.playbackQueueCount ?? 0) } ?? false
        let canPrevious = options.canGoPrevious?() ?? hasItem
        // The rate: what plays now (the now-playing store's), while paused the one play uses;
        // the range, the remote command center's supported rates.
        let rates = Self.rateRange(commands)
        let rate = now.flatMap { i in i.playbackRate.flatMap { $0 > 0 ? $0 : nil } ?? i.defaultPlaybackRate } ?? 1
        return [
            "PlaybackStatus": .string(status), "LoopStatus": .string(loop),
            "Shuffle": .bool(commands.changeShuffleModeCommand.currentShuffleType != .off),
            "Volume": .double(options.volume?() ?? 1), "Rate": .double(rate), "MinimumRate": .double(rates.lowerBound), "MaximumRate": .double(rates.upperBound),
            "Metadata": .dictionary(metadata(now)),
            "CanGoNext": .bool(canNext && commands.nextTrackCommand.isEnabled),
            "CanGoPrevious": .bool(canPrevious && commands.previousTrackCommand.isEnabled),
            "CanPlay": .bool(canPlay && commands.playCommand.isEnabled),
            "CanPause": .bool(hasItem && commands.pauseCommand.isEnabled),
            "CanSeek": .bool(hasItem && now?.playbackDuration != nil && commands.changePlaybackPositionCommand.isEnabled),
            "CanControl": .bool(true),
        ]
    }

    private func metadata(_ i: NowPlayingInfo?, track: String? = nil) -> [(String, DBusValue)] {
        guard let i else { return [("mpris:trackid", .objectPath(Self.noTrack))] }
        var m: [(String, DBusValue)] = [("mpris:trackid", .objectPath(track ?? trackID))]
        if let d = i.playbackDuration { m.append(("mpris:length", .int64(Int64((d * 1e6).rounded())))) }
        if let art = i.artwork, let url = artURL(art) { m.append(("mpris:artUrl", .string(url))) }
        if let t = i.title { m.append(("xesam:title", .string(t))) }
        // Lists are lists: every value the file has (one when only Apple's property is set).
        func all(_ key: TagKey, _ one: String?) -> [String]? {
            let v = i.tags.values(key)
            return v.isEmpty ? one.map { [$0] } : v
        }
        if let a = all(.artist, i.artist) { m.append(("xesam:artist", .strings(a))) }
        if let a = i.albumTitle { m.append(("xesam:album", .string(a))) }
        if let a = all(.albumArtist, i.albumArtist) { m.append(("xesam:albumArtist", .strings(a))) }
        if let n = i.albumTrackNumber { m.append(("xesam:trackNumber", .int32(Int32(clamping: n)))) }
        if let n = i.discNumber { m.append(("xesam:discNumber", .int32(Int32(clamping: n)))) }
        if let g = all(.genre, i.genre) { m.append(("xesam:genre", .strings(g))) }
        if let c = all(.composer, i.composer) { m.append(("xesam:composer", .strings(c))) }
        if let d = i.tags.values(.date).first { m.append(("xesam:contentCreated", .string(d))) }
        let comments = i.tags.values(.comment)
        if !comments.isEmpty { m.append(("xesam:comment", .strings(comments))) }
        if let u = i.assetURL { m.append(("xesam:url", .string(u))) }
        return m
    }

    /// Embedded artwork as a file URL, for `mpris:artUrl`.
    /// (the last one is remembered: properties are rebuilt at every change, and hashing a cover
    /// and looking for its file each time would be I/O on every transition)
    private func artURL(_ art: NowPlayingInfo.Artwork) -> String? {
        if let (known, url) = lastArt.withLock({ $0 }), known == art { return url }
        let url = Self.artworkFile(art, directory: options.artDirectory).map(NowPlayingBinding.fileURL)
        lastArt.withLock { $0 = url.map { (art, $0) } }
        return url
    }

    /// Embedded artwork as a file in `directory`, written once and named by its content (so a
    /// cover shared by an album is one file); nil when it cannot be written.
    public static func artworkFile(_ art: NowPlayingInfo.Artwork, directory: String) -> String? {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for b in art.data { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        let ext = art.mimeType.contains("png") ? "png" : art.mimeType.contains("jpeg") || art.mimeType.contains("jpg") ? "jpg" : "img"
        let path = directory + "/" + String(h, radix: 16) + "." + ext
        if !FileManager.default.fileExists(atPath: path) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                try Data(art.data).write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                return nil
            }
        }
        return path
    }

    /// One `PropertiesChanged` with what changed since the last; `Seeked` when the position
    /// moved otherwise than time and rate say.
    private func sendChanges(_ c: DBusConnection) {
        let now = playerProperties()
        let track = trackID
        let position = info.elapsed() ?? 0
        let clock = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        let rate = info.playbackState == .playing ? 1.0 : 0.0
        let (changed, seeked) = sent.withLock { s -> ([(String, DBusValue)], Bool) in
            let changed = now.filter { s.properties[$0.key] != $0.value }.sorted { $0.key < $1.key }
            let expected = s.position + s.rate * (clock - s.at)
            let seeked = track == s.trackID && track != Self.noTrack && abs(position - expected) > 0.25
            s.properties = now
            s.trackID = track
            (s.position, s.at, s.rate) = (position, clock, rate)
            return (changed, seeked)
        }
        if !changed.isEmpty {
            try? c.emit(path: Self.objectPath, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                        [.string(Self.player), .dictionary(changed), .strings([])])
        }
        if seeked {
            try? c.emit(path: Self.objectPath, interface: Self.player, member: "Seeked", [.int64(Int64((position * 1e6).rounded()))])
        }
        // The track list: replaced as a whole when it changed (the spec's signal for any
        // change; `Tracks` is announced as invalidated, its value not sent).
        if let list = options.trackList {
            let tracks = list.tracks()
            let changedList = sent.withLock { s -> Bool in
                defer { s.tracks = tracks }
                return s.tracks != nil && s.tracks != tracks
            }
            if changedList {
                try? c.emit(path: Self.objectPath, interface: Self.trackListInterface, member: "TrackListReplaced",
                            [.array(element: "o", tracks.map { .objectPath(Self.trackPath($0)) }), .objectPath(track)])
                try? c.emit(path: Self.objectPath, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                            [.string(Self.trackListInterface), .dictionary([]), .strings(["Tracks"])])
            }
        }
    }

    // MARK: - Calls (on the connection's thread)

    private static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"

    private func handle(_ m: borrowing DBusMessage) -> DBusReply {
        guard let interface = m.interface, let member = m.member else { return .unhandled }
        switch (interface, member) {
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return .values([.string(Self.introspection)])
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard m.signature == "ss", case .string(let i)? = try? m.read(), case .string(let p)? = try? m.read() else {
                return .error(name: Self.invalidArgs, message: "Get takes (ss)")
            }
            // Position is what clients poll (playerctl position): read on its own.
            if i == Self.player, p == "Position" { return .values([.variant(.int64(positionMicroseconds))]) }
            let all = properties(of: i)
            guard let v = all[p] else { return .error(name: Self.invalidArgs, message: "no property \(p) on \(i)") }
            return .values([.variant(v)])
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            guard m.signature == "s", case .string(let i)? = try? m.read() else { return .error(name: Self.invalidArgs, message: "GetAll takes (s)") }
            return .values([.dictionary(properties(of: i).sorted { $0.key < $1.key })])
        case ("org.freedesktop.DBus.Properties", "Set"):
            guard m.signature == "ssv", case .string(let i)? = try? m.read(), case .string(let p)? = try? m.read(), let v = try? m.read() else {
                return .error(name: Self.invalidArgs, message: "Set takes (ssv)")
            }
            return set(i, p, v)
        case (Self.trackListInterface, _):
            return trackListCall(m, member)
        case (Self.root, "Raise"): return .values([])
        case (Self.root, "Quit"):
            guard let quit = options.quit else { return .error(name: "org.freedesktop.DBus.Error.NotSupported", message: "cannot quit") }
            quit()
            return .values([])
        case (Self.player, "Play"): return dispatch(.play)
        case (Self.player, "Pause"): return dispatch(.pause)
        case (Self.player, "PlayPause"): return dispatch(.togglePlayPause)
        case (Self.player, "Stop"): return dispatch(.stop)
        case (Self.player, "Next"): return dispatch(.nextTrack)
        case (Self.player, "Previous"): return dispatch(.previousTrack)
        case (Self.player, "Seek"):
            guard m.signature == "x", case .int64(let offset)? = try? m.read() else { return .error(name: Self.invalidArgs, message: "Seek takes (x)") }
            guard let now = info.nowPlayingInfo else { return .values([]) }
            let target = (info.elapsed() ?? 0) + Double(offset) / 1e6
            // Past the end: as Next; before the start: the start (the spec's rules).
            if let d = now.playbackDuration, target > d { return dispatch(.nextTrack) }
            return dispatch(.changePlaybackPosition, .position(max(0, target)))
        case (Self.player, "SetPosition"):
            guard m.signature == "ox", case .objectPath(let track)? = try? m.read(), case .int64(let us)? = try? m.read() else {
                return .error(name: Self.invalidArgs, message: "SetPosition takes (ox)")
            }
            // A stale track id, or a position outside the track, is ignored (the spec's rule).
            guard track == trackID, us >= 0, let now = info.nowPlayingInfo, Double(us) / 1e6 <= now.playbackDuration ?? .infinity else {
                return .values([])
            }
            return dispatch(.changePlaybackPosition, .position(Double(us) / 1e6))
        case (Self.player, "OpenUri"):
            guard m.signature == "s", case .string(let uri)? = try? m.read() else { return .error(name: Self.invalidArgs, message: "OpenUri takes (s)") }
            guard let open = options.openURI else { return .error(name: "org.freedesktop.DBus.Error.NotSupported", message: "cannot open URIs") }
            if let why = open(uri) { return .error(name: Self.invalidArgs, message: why) }
            return .values([])
        default:
            return .unhandled
        }
    }

    private func properties(of interface: String) -> [String: DBusValue] {
        switch interface {
        case Self.root: rootProperties()
        case Self.player: playerProperties().merging(["Position": .int64(positionMicroseconds)]) { $1 }
        case Self.trackListInterface: trackListProperties()
        default: [:]
        }
    }

    /// GetTracksMetadata, AddTrack, RemoveTrack, GoTo.
    private func trackListCall(_ m: borrowing DBusMessage, _ member: String) -> DBusReply {
        guard let list = options.trackList else { return .unhandled }
        let readOnly = "org.mpris.MediaPlayer2.TrackList.Error.ReadOnly"
        func done(_ error: String?) -> DBusReply {
            refresh()
            return error.map { .error(name: "org.freedesktop.DBus.Error.Failed", message: $0) } ?? .values([])
        }
        switch member {
        case "GetTracksMetadata":
            guard m.signature == "ao", case .array(_, let paths)? = try? m.read() else { return .error(name: Self.invalidArgs, message: "GetTracksMetadata takes (ao)") }
            // Linear in the queue and the ids asked (a map from path to id), not their product:
            // every track of a 40,000-item queue is one pass.
            var byPath: [String: String] = [:]
            for id in list.tracks() { byPath[Self.trackPath(id)] = id }
            let asked: [(path: String, id: String)] = paths.compactMap { p in
                guard case .objectPath(let path) = p, let id = byPath[path] else { return nil }
                return (path, id)
            }
            let infos = list.info(asked.map(\.id))
            let all: [DBusValue] = zip(asked, infos).compactMap { a, i in i.map { .dictionary(metadata($0, track: a.path)) } }
            return .values([.array(element: "a{sv}", all)])
        case "GoTo":
            guard m.signature == "o", case .objectPath(let path)? = try? m.read() else { return .error(name: Self.invalidArgs, message: "GoTo takes (o)") }
            guard let id = trackListID(path, list) else { return .values([]) }  // (a stale id: ignored, as SetPosition's)
            return done(list.goTo(id))
        case "RemoveTrack":
            guard m.signature == "o", case .objectPath(let path)? = try? m.read() else { return .error(name: Self.invalidArgs, message: "RemoveTrack takes (o)") }
            guard let remove = list.remove else { return .error(name: readOnly, message: "the track list cannot be edited") }
            guard let id = trackListID(path, list) else { return .values([]) }
            return done(remove(id))
        case "AddTrack":
            guard m.signature == "sob", case .string(let uri)? = try? m.read(), case .objectPath(let after)? = try? m.read(),
                  case .bool(let play)? = try? m.read() else { return .error(name: Self.invalidArgs, message: "AddTrack takes (sob)") }
            guard let add = list.add else { return .error(name: readOnly, message: "the track list cannot be edited") }
            let afterID = after == "/org/mpris/MediaPlayer2/TrackList/NoTrack" ? nil : trackListID(after, list)
            return done(add(uri, afterID, play))
        default:
            return .unhandled
        }
    }

    private func set(_ interface: String, _ property: String, _ value: DBusValue) -> DBusReply {
        guard interface == Self.player else {
            return .error(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "\(interface).\(property) is read-only")
        }
        switch (property, value) {
        case ("LoopStatus", .string(let s)):
            let type: RepeatType
            switch s {
            case "None": type = .off
            case "Track": type = .one
            case "Playlist": type = .all
            default: return .error(name: Self.invalidArgs, message: "LoopStatus is None, Track or Playlist")
            }
            return dispatch(.changeRepeatMode, .repeatMode(type, preservesRepeatMode: false))
        case ("Shuffle", .bool(let on)):
            return dispatch(.changeShuffleMode, .shuffleMode(on ? .items : .off, preservesShuffleMode: false))
        case ("Volume", .double(let v)):
            guard let setVolume = options.setVolume else {
                return .error(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "the volume cannot be set")
            }
            setVolume(min(1, max(0, v.isFinite ? v : 0)))
            refresh()
            return .values([])
        case ("Rate", .double(let r)):
            if r == 0 { return dispatch(.pause) }  // (the spec: as Pause)
            let rates = Self.rateRange(commands)
            guard r.isFinite, rates.contains(r) else {
                return .error(name: Self.invalidArgs, message: "Rate is \(rates.lowerBound) to \(rates.upperBound), or 0 to pause")
            }
            return dispatch(.changePlaybackRate, .rate(Float(r)))
        default:
            return .error(name: Self.invalidArgs, message: "cannot set \(property) to a \(value.signature)")
        }
    }

    /// `MinimumRate`…`MaximumRate`: the change-rate command's supported rates (1 alone when it
    /// is disabled or has none, as the specification wants of a player without rates).
    static func rateRange(_ commands: RemoteCommandCenter) -> ClosedRange<Double> {
        let command = commands.changePlaybackRateCommand
        let rates = command.isEnabled ? command.supportedPlaybackRates.map(Double.init) : []
        guard let low = rates.min(), let high = rates.max() else { return 1...1 }
        return min(low, 1)...max(high, 1)
    }

    private func dispatch(_ kind: RemoteCommandKind, _ payload: RemoteCommandEvent.Payload = .none) -> DBusReply {
        let result = commands.dispatch(RemoteCommandEvent(command: kind, payload: payload))
        refresh()
        guard result.status == .success else {
            return .error(name: "org.freedesktop.DBus.Error.Failed", message: result.reason ?? "\(kind.rawValue): \(result.status)")
        }
        return .values([])
    }

    static let introspection = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect"><arg name="xml" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get"><arg name="interface" type="s" direction="in"/><arg name="property" type="s" direction="in"/><arg name="value" type="v" direction="out"/></method>
            <method name="GetAll"><arg name="interface" type="s" direction="in"/><arg name="properties" type="a{sv}" direction="out"/></method>
            <method name="Set"><arg name="interface" type="s" direction="in"/><arg name="property" type="s" direction="in"/><arg name="value" type="v" direction="in"/></method>
            <signal name="PropertiesChanged"><arg name="interface" type="s"/><arg name="changed" type="a{sv}"/><arg name="invalidated" type="as"/></signal>
          </interface>
          <interface name="org.mpris.MediaPlayer2">
            <method name="Raise"/><method name="Quit"/>
            <property name="CanQuit" type="b" access="read"/><property name="CanRaise" type="b" access="read"/>
            <property name="HasTrackList" type="b" access="read"/><property name="Identity" type="s" access="read"/>
            <property name="DesktopEntry" type="s" access="read"/><property name="SupportedUriSchemes" type="as" access="read"/>
            <property name="SupportedMimeTypes" type="as" access="read"/><property name="Fullscreen" type="b" access="read"/>
            <property name="CanSetFullscreen" type="b" access="read"/>
          </interface>
          <interface name="org.mpris.MediaPlayer2.Player">
            <method name="Next"/><method name="Previous"/><method name="Pause"/><method name="PlayPause"/>
            <method name="Stop"/><method name="Play"/>
            <method name="Seek"><arg name="Offset" type="x" direction="in"/></method>
            <method name="SetPosition"><arg name="TrackId" type="o" direction="in"/><arg name="Position" type="x" direction="in"/></method>
            <method name="OpenUri"><arg name="Uri" type="s" direction="in"/></method>
            <signal name="Seeked"><arg name="Position" type="x"/></signal>
            <property name="PlaybackStatus" type="s" access="read"/><property name="LoopStatus" type="s" access="readwrite"/>
            <property name="Rate" type="d" access="readwrite"/><property name="Shuffle" type="b" access="readwrite"/>
            <property name="Metadata" type="a{sv}" access="read"/><property name="Volume" type="d" access="readwrite"/>
            <property name="Position" type="x" access="read"/><property name="MinimumRate" type="d" access="read"/>
            <property name="MaximumRate" type="d" access="read"/><property name="CanGoNext" type="b" access="read"/>
            <property name="CanGoPrevious" type="b" access="read"/><property name="CanPlay" type="b" access="read"/>
            <property name="CanPause" type="b" access="read"/><property name="CanSeek" type="b" access="read"/>
            <property name="CanControl" type="b" access="read"/>
          </interface>
          <interface name="org.mpris.MediaPlayer2.TrackList">
            <method name="GetTracksMetadata"><arg name="TrackIds" type="ao" direction="in"/><arg name="Metadata" type="aa{sv}" direction="out"/></method>
            <method name="AddTrack"><arg name="Uri" type="s" direction="in"/><arg name="AfterTrack" type="o" direction="in"/><arg name="SetAsCurrent" type="b" direction="in"/></method>
            <method name="RemoveTrack"><arg name="TrackId" type="o" direction="in"/></method>
            <method name="GoTo"><arg name="TrackId" type="o" direction="in"/></method>
            <signal name="TrackListReplaced"><arg name="Tracks" type="ao"/><arg name="CurrentTrack" type="o"/></signal>
            <property name="Tracks" type="ao" access="read"/><property name="CanEditTracks" type="b" access="read"/>
          </interface>
        </node>
        """
}
