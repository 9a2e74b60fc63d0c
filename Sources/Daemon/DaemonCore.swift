import AudioEngine
import Dispatch
import Foundation
import Lifecycle
import Logging
import NowPlaying
import PlayQueue
import Player
import Session
import Synchronization

/// A protocol error: a stable code for scripts and a message for people.
public struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: String
    public let message: String
    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { "\(code): \(message)" }

    static func badArgument(_ m: String) -> ProtocolError { ProtocolError("bad-argument", m) }
}

/// What the core knows about the connection a request came from.
public final class ClientContext: Sendable {
    /// Unique per connection.
    public let id: UInt64
    /// TCP clients must `auth` first; Unix-socket clients are the owner (peer uid checked).
    public let needsToken: Bool
    private let authed = Atomic<Bool>(false)
    /// Enqueues a line (an event) for this client.
    public let send: @Sendable (String) -> Void

    public init(id: UInt64, needsToken: Bool, send: @escaping @Sendable (String) -> Void) {
        self.id = id
        self.needsToken = needsToken
        self.send = send
    }

    var authenticated: Bool {
        get { authed.load(ordering: .acquiring) }
        set { authed.store(newValue, ordering: .releasing) }
    }
}

/// The daemon without its sockets: a play queue over a ``QueuePlayer`` in an ``AudioSession``
/// and an ``Application`` life cycle, remote commands, now-playing info, persistence, hooks,
/// the sleep timer, and the protocol's commands (``execute(_:client:)``).
public final class DaemonCore: Sendable {
    public let config: DaemonConfig
    let logger: Logger
    public let session: AudioSession
    public let application: Application
    public let player: QueuePlayer
    public let queue: PlayQueue
    public let nowPlaying: NowPlayingInfoCenter
    let nowPlayingBinding: NowPlayingBinding
    /// The daemon's remote command center; the protocol's transport commands are dispatched
    /// through it, and so are other processes' commands when the daemon is the now-playing app.
    public let remote: RemoteCommandCenter
    let store: StateStore
    let tags = TagCache()
    let resolver: PathResolver
    let hooks: HookRunner
    /// Subscribers' event fan-out.
    public let hub = EventHub()
    let version: String

    /// Serialises commands (each is short: microseconds), so every request sees the effects of
    /// the ones answered before it.
    private let commandLock = Mutex(())
    /// The failure a remote-command handler met (read right after the dispatch).
    private let handlerFailure = Mutex<ProtocolError?>(nil)
    /// Timers, saving, observers.
    private let work = DispatchQueue(label: "backline.daemon")
    /// Returns what bursts of requests used to the system, a few seconds after them.
    let trimmer: MemoryTrimmer

    private struct Timers {
        var saveScheduled = false
        var ticker: (any DispatchSourceTimer)?
        var lastSave = 0.0
        var lastPosition = 0.0
        var sleep: SleepTimer?
        var fading: (any DispatchSourceTimer)?
        var fadeStep = 0
        var shuttingDown = false
    }

    struct SleepTimer {
        var deadline: Double?  // monotonic seconds
        var endOfItem: Bool
        var fade: Double  // seconds of fade-out (0: stop at once)
        var timer: (any DispatchSourceTimer)?
    }

    private let timers = Mutex(Timers())

    /// Builds the daemon's player and state (restoring the saved state) without opening sockets.
    public init(config: DaemonConfig, logger: Logger, version: String, registryDirectory: String? = nil) throws(ProtocolError) {
        MemoryTrimmer.limitArenas()
        self.config = config
        self.logger = logger
        self.version = version
        trimmer = MemoryTrimmer(queue: work)
        session = AudioSession(registryDirectory: registryDirectory)
        do {
            try session.setCategory(SessionCategory(rawValue: config.category) ?? .playback)
        } catch {
            throw ProtocolError("bad-config", "category: \(error)")
        }
        application = Application(configuration: ApplicationConfiguration(suspensionGracePeriod: config.backgroundGrace))
        player = QueuePlayer(configuration: EngineConfiguration(
            output: OutputSettings(device: config.device, bufferMillis: config.bufferMilliseconds)),
            session: session, application: application)
        queue = PlayQueue(player: player)
        nowPlaying = NowPlayingInfoCenter()
        nowPlayingBinding = NowPlayingBinding(player: player, center: nowPlaying) { [queue] in
            queue.currentIndex.map { ($0, queue.entries.count) }
        }
        remote = RemoteCommandCenter()
        store = StateStore(path: config.stateFile)
        resolver = PathResolver(musicDirectory: config.musicDirectory, allowAbsolutePaths: config.allowAbsolutePaths)
        hooks = HookRunner(timeout: config.hookTimeout, logger: logger)
        bindRemoteCommands()
        remote.receiveCommands(for: session)
        observe()
        do { try restore() } catch {
            throw ProtocolError("state-file", "\(error): not starting, which would save over it (fix its owner or permissions, or move it away)")
        }
        if config.startInBackground {
            application.resignActive()
            application.enterBackground()
        }
    }

    // MARK: - Start-up and shutdown

    private func restore() throws(StateFileError) {
        for name in store.removeStaleTemporaries() {
            logger.info("removed a temporary file a killed save left", metadata: ["file": "\(name)"])
        }
        switch store.load() {
        case .none:
            logger.info("no saved state", metadata: ["file": "\(store.path)"])
        case .state(let saved):
            player.volume = saved.volume
            player.isMuted = saved.muted
            queue.restore(saved.queue, play: config.restorePlaying)
            tags.prefetch(saved.queue.entries.map(\.path))
            logger.info("state restored", metadata: [
                "items": "\(saved.queue.entries.count)", "current": "\(saved.queue.current.map(String.init) ?? "-")",
                "position": "\(saved.queue.position)", "file": "\(store.path)",
            ])
        case .movedAside(let reason, let aside):
            logger.warning("state file unusable, moved aside; starting empty",
                           metadata: ["file": "\(store.path)", "reason": "\(reason)", "movedTo": "\(aside)"])
        case .unreadable(let error):
            // Never overwrite what cannot be read (another owner's file, a directory, a FIFO):
            // starting would save an empty queue over it. Stop with the reason instead.
            throw error
        }
    }

    /// Saves the state now (on the caller's thread). Returns whether it worked.
    @discardableResult
    public func saveNow(_ why: String) -> Bool {
        let state = SavedState(queue: queue.snapshot(), volume: player.volume, muted: player.isMuted)
        do {
            try store.save(state)
            timers.withLock { $0.lastSave = Self.now() }
            logger.debug("state saved", metadata: ["why": "\(why)"])
            return true
        } catch {
            logger.error("cannot save state", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// Graceful stop: saves, pauses the output and lets go of the device.
    public func shutdown() {
        let first = timers.withLock { t -> Bool in
            defer { t.shuttingDown = true }
            t.ticker?.cancel()
            t.ticker = nil
            t.sleep?.timer?.cancel()
            t.fading?.cancel()
            return !t.shuttingDown
        }
        guard first else { return }
        saveNow("shutdown")
        hub.publish("shutdown")
        player.pause()
        player.engine.shutdown()
        application.terminate()
        logger.info("stopped")
    }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    // MARK: - Observing: events, saving, hooks

    private func observe() {
        _ = queue.addObserver(queue: work) { [weak self] e in self?.queueEvent(e) }
        _ = session.addObserver(queue: work) { [weak self] e in self?.sessionEvent(e) }
        _ = application.addObserver(queue: work) { [weak self] e in self?.applicationEvent(e) }
        application.addSuspensionHook { [weak self] _ in self?.suspending() }
    }

    private func queueEvent(_ e: PlayQueueEvent) {
        switch e {
        case .state(let s):
            hub.publish("state", [("state", .string(s.rawValue))])
            updateTicker(playing: s == .playing)
            if s == .stopped, timers.withLock({ $0.sleep?.endOfItem == true }) { sleepFired(fade: 0) }
        case .current(let entry):
            nowPlayingBinding.refresh()  // the index is the play queue's, which may settle after the player's event
            hub.publish("current", [("item", entry.map { .object(describe($0, index: queue.currentIndex, current: true)) } ?? .null)])
        case .queue(let version, let count):
            hub.publish("queue", [("version", .int(version)), ("count", .int(count))])
            nowPlayingBinding.refresh()
        case .modes(let r, let sh, let sac):
            hub.publish("modes", [("repeat", .string(r.rawValue)), ("shuffle", .bool(sh)), ("stopAfterCurrent", .bool(sac))])
        case .failed(let entry, let reason):
            logger.warning("item failed", metadata: ["id": "\(entry.id)", "path": "\(entry.path)", "reason": "\(reason)"])
            hub.publish("failed", [("item", .int(entry.id)), ("path", .string(entry.path)), ("reason", .string(reason))])
        case .seeked(let id, let time):
            hub.publish("seeked", [("item", .int(id)), ("time", Self.ms(time))])
        }
        scheduleSave()
    }

    private func sessionEvent(_ e: SessionEvent) {
        var fields: [(String, JSON)]
        switch e {
        case .interruptionBegan(let reason, let by):
            fields = [("kind", "interruptionBegan"), ("reason", .string("\(reason)")), ("by", by.map(JSON.string) ?? .null)]
        case .interruptionEnded(let shouldResume):
            fields = [("kind", "interruptionEnded"), ("shouldResume", .bool(shouldResume))]
        case .routeChanged(let reason):
            fields = [("kind", "routeChanged"), ("reason", .string("\(reason)"))]
        case .mediaServicesWereReset:
            fields = [("kind", "mediaServicesWereReset")]
        case .silencedChanged(let on):
            fields = [("kind", "silencedChanged"), ("silenced", .bool(on))]
        case .duckingChanged(let on):
            fields = [("kind", "duckingChanged"), ("ducked", .bool(on))]
        }
        hub.publish("session", fields)
    }

    private func applicationEvent(_ e: ApplicationEvent) {
        let kind: String
        switch e {
        case .willResignActive: kind = "willResignActive"
        case .didEnterBackground: kind = "didEnterBackground"
        case .willEnterForeground: kind = "willEnterForeground"
        case .didBecomeActive: kind = "didBecomeActive"
        case .willTerminate: kind = "willTerminate"
        case .didSuspend: kind = "didSuspend"
        case .didResume:
            kind = "didResume"
            runHook("on-resume", config.onResume)
        case .backgroundTaskExpiring: kind = "backgroundTaskExpiring"
        case .backgroundTaskLeaked: kind = "backgroundTaskLeaked"
        }
        hub.publish("lifecycle", [("kind", .string(kind)), ("state", .string(Self.name(application.applicationState)))])
    }

    /// The app is being suspended: save, run the on-suspend hook (the device is released after this returns).
    private func suspending() {
        saveNow("suspension")
        runHook("on-suspend", config.onSuspend)
    }

    private func runHook(_ name: String, _ command: String?) {
        guard let command else { return }
        let c = queue.current
        let info = c.map { tags.cached($0.path) } ?? nil
        var env: [String: String] = [
            "BACKLINE_EVENT": name == "on-suspend" ? "suspend" : "resume",
            "BACKLINE_STATE": queue.playbackState.rawValue,
            "BACKLINE_POSITION": String(format: "%.3f", queue.elapsed),
            "BACKLINE_QUEUE_LENGTH": String(queue.entries.count),
            "BACKLINE_SOCKET": config.socketPath,
            "BACKLINE_STATE_FILE": config.stateFile,
        ]
        if let c {
            env["BACKLINE_ITEM_ID"] = String(c.id)
            env["BACKLINE_ITEM_PATH"] = c.path
            env["BACKLINE_TITLE"] = info?.metadata.title ?? (c.path as NSString).lastPathComponent
            env["BACKLINE_ARTIST"] = info?.metadata.artist ?? ""
        }
        hooks.run(name, command: command, environment: env) { [hub] status in
            hub.publish("hook", [("hook", .string(name)), ("status", status.map { .int(Int($0)) } ?? .null)])
        }
    }

    /// Debounced save: at most 0.5 s after a change (the issue allows 2 s).
    private func scheduleSave() {
        let go = timers.withLock { t -> Bool in
            guard !t.saveScheduled, !t.shuttingDown else { return false }
            t.saveScheduled = true
            return true
        }
        guard go else { return }
        work.asyncAfter(deadline: .now() + 0.5) { [weak self] in
            guard let self else { return }
            timers.withLock { $0.saveScheduled = false }
            if !timers.withLock({ $0.shuttingDown }) { saveNow("change") }
        }
    }

    /// While playing: position events and periodic saves. Nothing runs while idle.
    private func updateTicker(playing: Bool) {
        timers.withLock { t in
            if !playing {
                t.ticker?.cancel()
                t.ticker = nil
                return
            }
            guard t.ticker == nil, !t.shuttingDown else { return }
            let interval = min(config.positionInterval, config.saveInterval)
            let timer = DispatchSource.makeTimerSource(queue: work)
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(20))
            timer.setEventHandler { [weak self] in self?.tick() }
            timer.resume()
            t.ticker = timer
        }
    }

    private func tick() {
        let now = Self.now()
        let (savedAt, positionAt) = timers.withLock { ($0.lastSave, $0.lastPosition) }
        if now - positionAt >= config.positionInterval - 0.01, let c = queue.current {
            timers.withLock { $0.lastPosition = now }
            hub.publish("position", [("item", .int(c.id)), ("elapsed", Self.ms(queue.elapsed)),
                                     ("duration", player.currentItem?.duration.map(Self.ms) ?? .null)])
        }
        if now - savedAt >= config.saveInterval - 0.01 { saveNow("periodic") }
    }

    // MARK: - Remote commands

    private func fail(_ e: PlayQueueError) -> RemoteCommandHandlerStatus {
        handlerFailure.withLock { $0 = ProtocolError(e.code.rawValue, e.message) }
        switch e.code {
        case .emptyQueue, .notPlaying: return .noActionableNowPlayingItem
        case .noSuchItem: return .noSuchContent
        case .outputUnavailable: return .deviceNotFound
        }
    }

    private func bindRemoteCommands() {
        let q = queue
        remote.skipForwardCommand.preferredIntervals = [15]
        remote.skipBackwardCommand.preferredIntervals = [15]
        remote.changePlaybackRateCommand.supportedPlaybackRates = [1]
        remote.seekForwardCommand.isEnabled = false
        remote.seekBackwardCommand.isEnabled = false
        remote.likeCommand.isEnabled = false
        remote.dislikeCommand.isEnabled = false
        remote.bookmarkCommand.isEnabled = false
        func on(_ c: RemoteCommand, _ h: @escaping @Sendable (RemoteCommandEvent) throws(PlayQueueError) -> Void) {
            _ = c.addTarget { [weak self] e in
                guard let self else { return .commandFailed }
                do throws(PlayQueueError) {
                    try h(e)
                    return .success
                } catch {
                    return fail(error)
                }
            }
        }
        on(remote.playCommand) { _ throws(PlayQueueError) in try q.play() }
        on(remote.pauseCommand) { _ in q.pause() }
        on(remote.togglePlayPauseCommand) { _ throws(PlayQueueError) in try q.toggle() }
        on(remote.stopCommand) { _ in q.stop() }
        on(remote.nextTrackCommand) { _ throws(PlayQueueError) in try q.next() }
        on(remote.previousTrackCommand) { _ throws(PlayQueueError) in try q.previous() }
        on(remote.changePlaybackPositionCommand) { e throws(PlayQueueError) in
            if case .position(let t) = e.payload { try q.seek(to: t) }
        }
        on(remote.skipForwardCommand) { e throws(PlayQueueError) in
            if case .skip(let i) = e.payload { try q.seek(to: q.elapsed + i) }
        }
        on(remote.skipBackwardCommand) { e throws(PlayQueueError) in
            if case .skip(let i) = e.payload { try q.seek(to: max(0, q.elapsed - i)) }
        }
        on(remote.changeRepeatModeCommand) { e in
            if case .repeatMode(let r, _) = e.payload { q.setRepeat(r == .one ? .one : r == .all ? .all : .off) }
        }
        on(remote.changeShuffleModeCommand) { e in
            if case .shuffleMode(let s, _) = e.payload { q.setShuffle(s != .off) }
        }
        _ = remote.changePlaybackRateCommand.addTarget { [weak self] e in
            guard let self, case .rate(let r) = e.payload else { return .commandFailed }
            do { try player.setRate(r) } catch {
                handlerFailure.withLock { $0 = ProtocolError("bad-argument", "\(error)") }
                return .commandFailed
            }
            return .success
        }
    }

    /// Dispatches a remote command and turns its status into a reply or an error.
    private func dispatch(_ kind: RemoteCommandKind, _ payload: RemoteCommandEvent.Payload = .none) throws(ProtocolError) {
        handlerFailure.withLock { $0 = nil }
        let result = remote.dispatch(RemoteCommandEvent(command: kind, payload: payload))
        if result.status == .success { return }
        if let f = handlerFailure.withLock({ $0 }) { throw f }
        switch result.status {
        case .noSuchContent: throw ProtocolError("no-such-item", result.reason ?? "no such content")
        case .noActionableNowPlayingItem: throw ProtocolError("not-playing", result.reason ?? "nothing to act on")
        case .deviceNotFound: throw ProtocolError("device-not-found", result.reason ?? "no audio device")
        default: throw ProtocolError("command-failed", result.reason ?? "the command failed")
        }
    }

    // MARK: - Protocol

    /// Each command's accepted member names (its arguments, `id` and `command`).
    static let argumentNames: [String: Set<String>] = Dictionary(uniqueKeysWithValues: commands.map {
        ($0.name, Set(["id", "command"] + $0.arguments.map(\.name)))
    })

    /// Commands that may take long (file system, tags): the server runs them off its event loop.
    public static let slowCommands: Set<String> = ["add", "insert", "list"]

    /// Executes one request; returns the reply (`{"id":…,"ok":…}`).
    public func execute(_ request: JSON, client: ClientContext) -> JSON {
        trimmer.noteActivity()
        let id = request["id"] ?? .null
        guard case .object = request else {
            return Self.errorReply(id, ProtocolError("invalid-request", "a request is a JSON object"))
        }
        guard let name = request["command"]?.string else {
            return Self.errorReply(id, ProtocolError("invalid-request", "missing \"command\" (a string)"))
        }
        if client.needsToken, !client.authenticated, name != "auth" {
            return Self.errorReply(id, ProtocolError("unauthorized", "send {\"command\":\"auth\",\"token\":…} first"))
        }
        // Any command wakes a suspended daemon (as a remote command wakes a suspended app).
        if application.applicationState == .suspended, !["ping", "version", "help", "subscribe", "unsubscribe", "auth"].contains(name) {
            application.resume(reason: "command \(name)")
        }
        do {
            let fields = try run(name, request, client)
            return .object([("id", id), ("ok", true)] + fields)
        } catch {
            return Self.errorReply(id, error)
        }
    }

    public static func errorReply(_ id: JSON, _ e: ProtocolError) -> JSON {
        .object([("id", id), ("ok", false), ("error", .object([("code", .string(e.code)), ("message", .string(e.message))]))])
    }

    private func run(_ name: String, _ r: JSON, _ client: ClientContext) throws(ProtocolError) -> [(String, JSON)] {
        guard let known = Self.argumentNames[name] else {
            throw ProtocolError("unknown-command", "unknown command \"\(name)\" (try \"help\")")
        }
        if case .object(let members) = r, let extra = members.first(where: { !known.contains($0.0) })?.0 {
            throw .badArgument("\(name): unknown argument \"\(extra)\"")
        }
        // Resolution of paths and reading of tags happen outside the command lock.
        switch name {
        case "add", "insert": return try add(r, requirePosition: name == "insert")
        case "list": return list()
        default: break
        }
        return try commandLock.withLock { _ throws(ProtocolError) in try runLocked(name, r, client) }
    }

    private func runLocked(_ name: String, _ r: JSON, _ client: ClientContext) throws(ProtocolError) -> [(String, JSON)] {
        switch name {
        case "ping": return [("pong", true)]
        case "version": return [("version", .string(version)), ("protocol", 1)]
        case "help": return [("commands", .array(Self.commands.map(\.json)))]
        case "auth":
            guard let token = try r.optionalString("token") else { throw .badArgument("auth: \"token\" is required") }
            guard let want = config.token, !want.isEmpty, Self.constantTimeEqual(token, want) else {
                throw ProtocolError("unauthorized", "wrong token")
            }
            client.authenticated = true
            return []
        case "subscribe":
            var kinds: Set<String>?
            if let list = try r.optionalStrings("events") {
                if let bad = list.first(where: { !EventHub.kinds.contains($0) }) {
                    throw .badArgument("subscribe: unknown event kind \"\(bad)\" (kinds: \(EventHub.kinds.joined(separator: ", ")))")
                }
                kinds = Set(list)
            }
            hub.subscribe(client.id, kinds: kinds, send: client.send)
            return [("events", .array((kinds.map { Array($0).sorted() } ?? EventHub.kinds).map(JSON.string)))]
        case "unsubscribe":
            hub.unsubscribe(client.id)
            return []

        case "play":
            if let id = try r.optionalInt("item") {
                do throws(PlayQueueError) { try queue.play(id: id) } catch { throw ProtocolError(error.code.rawValue, error.message) }
            } else {
                try dispatch(.play)
            }
            return [("state", .string(queue.playbackState.rawValue))]
        case "pause": try dispatch(.pause); return [("state", .string(queue.playbackState.rawValue))]
        case "toggle": try dispatch(.togglePlayPause); return [("state", .string(queue.playbackState.rawValue))]
        case "stop": try dispatch(.stop); return [("state", .string(queue.playbackState.rawValue))]
        case "next": try dispatch(.nextTrack); return currentFields()
        case "previous": try dispatch(.previousTrack); return currentFields()
        case "seek":
            let position = try r.optionalNumber("position")
            let offset = try r.optionalNumber("offset")
            guard (position == nil) != (offset == nil) else { throw .badArgument("seek: give \"position\" or \"offset\" (seconds)") }
            let target = position ?? (queue.elapsed + offset!)
            guard target.isFinite else { throw .badArgument("seek: not a number") }
            // Clamped to the item (a later time is its end: it ends, and the next one plays).
            let clamped = min(max(0, target), player.currentItem?.duration ?? .infinity)
            try dispatch(.changePlaybackPosition, .position(clamped))
            return [("position", Self.ms(clamped))]
        case "skip":
            let seconds = try r.optionalNumber("seconds") ?? 15
            guard seconds != 0, seconds.isFinite else { throw .badArgument("skip: \"seconds\" must be non-zero") }
            try dispatch(seconds > 0 ? .skipForward : .skipBackward, .skip(interval: abs(seconds)))
            return [("position", Self.ms(queue.elapsed))]
        case "repeat":
            guard let m = try r.optionalString("mode") else { return [("repeat", .string(queue.repeatMode.rawValue))] }
            guard let mode = RepeatMode(rawValue: m) else { throw .badArgument("repeat: mode is off, one or all") }
            try dispatch(.changeRepeatMode, .repeatMode(mode == .one ? .one : mode == .all ? .all : .off, preservesRepeatMode: false))
            return [("repeat", .string(queue.repeatMode.rawValue))]
        case "shuffle":
            let on = try r.optionalBool("on") ?? !queue.shuffle
            try dispatch(.changeShuffleMode, .shuffleMode(on ? .items : .off, preservesShuffleMode: false))
            return [("shuffle", .bool(queue.shuffle))]
        case "single":
            let on = try r.optionalBool("on") ?? !queue.stopAfterCurrent
            queue.setStopAfterCurrent(on)
            return [("stopAfterCurrent", .bool(on))]
        case "rate":
            guard let rate = try r.optionalNumber("rate") else { throw .badArgument("rate: \"rate\" is required") }
            guard rate == 0 || rate == 1 else {
                throw .badArgument("rate \(rate) is not supported: 1 plays, 0 pauses (no time-stretching yet)")
            }
            try dispatch(rate == 0 ? .pause : .play)
            return [("rate", .number(Double(player.rate)))]

        case "remove":
            var ids = try r.optionalInts("items")
            if ids == nil, let one = try r.optionalInt("item") { ids = [one] }
            guard let ids, !ids.isEmpty else { throw .badArgument("remove: \"items\" (array of ids) or \"item\" is required") }
            do throws(PlayQueueError) { try queue.remove(ids) } catch { throw ProtocolError(error.code.rawValue, error.message) }
            return [("count", .int(queue.entries.count))]
        case "move":
            guard let id = try r.optionalInt("item"), let to = try r.optionalInt("position") else {
                throw .badArgument("move: \"item\" and \"position\" are required")
            }
            guard to >= 0 else { throw .badArgument("move: position must be ≥ 0") }
            do throws(PlayQueueError) { try queue.move(id, to: to) } catch { throw ProtocolError(error.code.rawValue, error.message) }
            return [("index", .int(queue.entries.firstIndex { $0.id == id } ?? 0))]
        case "clear":
            queue.clear()
            return []

        case "status": return status()
        case "now-playing": return nowPlayingFields()
        case "volume":
            let level = try r.optionalNumber("volume")
            let change = try r.optionalNumber("change")
            if level != nil, change != nil { throw .badArgument("volume: give \"volume\" or \"change\", not both") }
            if let v = level ?? change.map({ Double(player.volume) * 100 + $0 }) {
                guard v.isFinite else { throw .badArgument("volume: not a number") }
                if level != nil, !(0...100).contains(v) { throw .badArgument("volume: 0 to 100") }
                player.volume = Float(min(100, max(0, v)) / 100)
                publishVolume()
            }
            return [("volume", Self.percent(player.volume)), ("muted", .bool(player.isMuted))]
        case "mute":
            player.isMuted = try r.optionalBool("on") ?? !player.isMuted
            publishVolume()
            return [("volume", Self.percent(player.volume)), ("muted", .bool(player.isMuted))]
        case "session":
            if let c = try r.optionalString("category") {
                guard let category = SessionCategory(rawValue: c) else {
                    throw .badArgument("session: category is ambient, soloAmbient or playback")
                }
                var options: SessionCategoryOptions = []
                for o in try r.optionalStrings("options") ?? [] {
                    switch o {
                    case "mixWithOthers": options.insert(.mixWithOthers)
                    case "duckOthers": options.insert(.duckOthers)
                    case "interruptSpokenAudioAndMixWithOthers": options.insert(.interruptSpokenAudioAndMixWithOthers)
                    default: throw .badArgument("session: unknown option \"\(o)\"")
                    }
                }
                do { try session.setCategory(category, options: options) } catch {
                    throw ProtocolError("session-error", "\(error)")
                }
            } else if r["options"] != nil {
                throw .badArgument("session: options need a category")
            }
            if let on = try r.optionalBool("silentSwitch") { session.silentSwitch = on }
            if let on = try r.optionalBool("screenLocked") { session.screenLocked = on }
            return sessionFields()
        case "lifecycle":
            if let s = try r.optionalString("state") {
                switch s {
                case "foreground":
                    application.enterForeground()
                    application.becomeActive()
                case "background":
                    application.resignActive()
                    application.enterBackground()
                default: throw .badArgument("lifecycle: state is foreground or background")
                }
            }
            return [("app", .string(Self.name(application.applicationState)))]
        case "sleep":
            return try sleep(r)
        default:
            throw ProtocolError("unknown-command", "unknown command \"\(name)\"")
        }
    }

    private func publishVolume() {
        hub.publish("volume", [("volume", Self.percent(player.volume)), ("muted", .bool(player.isMuted))])
        scheduleSave()
    }

    // MARK: Queue commands

    private func add(_ r: JSON, requirePosition: Bool) throws(ProtocolError) -> [(String, JSON)] {
        var requests = try r.optionalStrings("paths") ?? []
        if let p = try r.optionalString("path") { requests.append(p) }
        guard !requests.isEmpty else { throw .badArgument("add: \"paths\" (array of strings) or \"path\" is required") }
        let position = try r.optionalInt("position")
        if requirePosition, position == nil { throw .badArgument("insert: \"position\" is required") }
        if let position, position < 0 { throw .badArgument("add: position must be ≥ 0") }
        var files: [String] = []
        var skipped: [PathResolver.Refusal] = []
        for request in requests {
            do {
                let (f, s) = try resolver.resolve(request)
                files += f
                skipped += s
            } catch {
                // One path that cannot be used fails the request: nothing is added.
                throw ProtocolError(error.code.rawValue, error.description)
            }
        }
        if files.isEmpty, let first = skipped.first { throw ProtocolError(first.code.rawValue, first.description) }
        let ids = commandLock.withLock { _ in queue.add(files, at: position) }
        // Read tags ahead for `list`.
        tags.prefetch(files)
        return [("items", .array(ids.map(JSON.int))),
                ("skipped", .array(skipped.map { .object([("path", .string($0.path)), ("reason", .string($0.message))]) }))]
    }

    private func list() -> [(String, JSON)] {
        let (entries, current, version) = commandLock.withLock { _ in (queue.entries, queue.current?.id, queue.version) }
        let items = entries.enumerated().map { i, e in JSON.object(describe(e, index: i, current: e.id == current, read: true)) }
        return [("version", .int(version)), ("current", current.map(JSON.int) ?? .null), ("items", .array(items))]
    }

    /// An entry's fields: id, index, path, tags, duration, current, failure. With `read`, the
    /// file's tags are read if need be (off the network thread only); without, tags not read
    /// yet are left out (and fetched in the background).
    func describe(_ e: PlayQueueEntry, index: Int?, current: Bool, read: Bool = false) -> [(String, JSON)] {
        let info = read ? tags.info(e.path) : tags.lookup(e.path) ?? TagCache.Info(metadata: TrackMetadata(), duration: nil, error: nil)
        let m = info.metadata
        var f: [(String, JSON)] = [("id", .int(e.id))]
        if let index { f.append(("index", .int(index))) }
        f.append(("path", .string(e.path)))
        f.append(("title", .string(m.title ?? ((e.path as NSString).lastPathComponent))))
        if let a = m.artist { f.append(("artist", .string(a))) }
        if let a = m.album { f.append(("album", .string(a))) }
        if let n = m.trackNumber { f.append(("track", .int(n))) }
        f.append(("duration", info.duration.map(Self.ms) ?? .null))
        if index != nil { f.append(("current", .bool(current))) }
        if let failure = e.failure ?? info.error { f.append(("error", .string(failure))) }
        return f
    }

    private func currentFields() -> [(String, JSON)] {
        [("current", queue.current.map { .object(describe($0, index: queue.currentIndex, current: true)) } ?? .null)]
    }

    // MARK: Status

    private func status() -> [(String, JSON)] {
        let c = queue.current
        let info = c.flatMap { tags.lookup($0.path) }
        var f: [(String, JSON)] = [
            ("state", .string(queue.playbackState.rawValue)),
            ("current", c.map { .object(describe($0, index: queue.currentIndex, current: true)) } ?? .null),
            ("elapsed", Self.ms(queue.elapsed)),
            ("duration", info?.duration.map(Self.ms) ?? .null),
            ("volume", Self.percent(player.volume)),
            ("muted", .bool(player.isMuted)),
            ("rate", .number(Double(player.rate))),
            ("index", queue.currentIndex.map(JSON.int) ?? .null),
            ("count", .int(queue.entries.count)),
            ("queueVersion", .int(queue.version)),
            ("repeat", .string(queue.repeatMode.rawValue)),
            ("shuffle", .bool(queue.shuffle)),
            ("stopAfterCurrent", .bool(queue.stopAfterCurrent)),
            ("session", .object(sessionFields())),
            ("app", .string(Self.name(application.applicationState))),
            ("device", .string(config.device)),
            ("underruns", .int(player.engine.underrunCount)),
        ]
        f.append(("sleep", sleepFields()))
        return f
    }

    private func sessionFields() -> [(String, JSON)] {
        var options: [JSON] = []
        let o = session.categoryOptions
        if o.contains(.interruptSpokenAudioAndMixWithOthers) { options.append("interruptSpokenAudioAndMixWithOthers") }
        else if o.contains(.duckOthers) { options.append("duckOthers") }
        if o.contains(.mixWithOthers) { options.append("mixWithOthers") }
        return [
            ("category", .string(session.category.rawValue)), ("options", .array(options)),
            ("active", .bool(session.isActive)), ("interrupted", .bool(player.isInterrupted)),
            ("silentSwitch", .bool(session.silentSwitch)), ("screenLocked", .bool(session.screenLocked)),
            ("silenced", .bool(session.isOutputSilenced)), ("ducked", .bool(session.isDucked)),
            ("nowPlayingApp", .bool(session.isNowPlayingApp)),
        ]
    }

    private func nowPlayingFields() -> [(String, JSON)] {
        guard let i = nowPlaying.nowPlayingInfo, let c = queue.current else { return [("info", .null)] }
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
        add("playbackDuration", i.playbackDuration.map(Self.ms))
        add("elapsedPlaybackTime", nowPlaying.elapsed().map(Self.ms))
        add("playbackRate", i.playbackRate.map(JSON.number))
        add("defaultPlaybackRate", i.defaultPlaybackRate.map(JSON.number))
        add("playbackQueueIndex", i.playbackQueueIndex.map(JSON.int))
        add("playbackQueueCount", i.playbackQueueCount.map(JSON.int))
        add("mediaType", i.mediaType.map { .string($0.name) })
        if let a = i.artwork {
            f.append(("artwork", .object([("mimeType", .string(a.mimeType)), ("bytes", .int(a.data.count)),
                                          ("base64", .string(Data(a.data).base64EncodedString()))])))
        }
        return [("item", .int(c.id)), ("info", .object(f)), ("playbackState", .string("\(nowPlaying.playbackState)"))]
    }

    // MARK: Sleep timer

    private func sleepFields() -> JSON {
        timers.withLock { t in
            guard let s = t.sleep else { return .null }
            return .object([
                ("remaining", s.deadline.map { Self.ms(max(0, $0 - Self.now())) } ?? .null),
                ("endOfItem", .bool(s.endOfItem)), ("fade", .number(s.fade)),
            ])
        }
    }

    private func sleep(_ r: JSON) throws(ProtocolError) -> [(String, JSON)] {
        if try r.optionalBool("cancel") == true {
            cancelSleep()
            hub.publish("sleep", [("kind", "cancelled")])
            return [("sleep", .null)]
        }
        let minutes = try r.optionalNumber("minutes")
        let endOfItem = try r.optionalBool("endOfItem") ?? false
        let fade = try r.optionalNumber("fade") ?? 0
        guard fade >= 0, fade <= 600 else { throw .badArgument("sleep: fade is 0 to 600 seconds") }
        if minutes == nil, !endOfItem { return [("sleep", sleepFields())] }
        if minutes != nil, endOfItem { throw .badArgument("sleep: give \"minutes\" or \"endOfItem\", not both") }
        cancelSleep()
        if let minutes {
            guard minutes > 0, minutes <= 24 * 60 else { throw .badArgument("sleep: minutes is more than 0, at most 1440") }
            timers.withLock { t in
                let timer = DispatchSource.makeTimerSource(queue: work)
                // The fade ends at the deadline.
                timer.schedule(deadline: .now() + max(0, minutes * 60 - fade))
                timer.setEventHandler { [weak self] in self?.sleepFired(fade: fade) }
                t.sleep = SleepTimer(deadline: Self.now() + minutes * 60, endOfItem: false, fade: fade, timer: timer)
                timer.resume()
            }
        } else {
            queue.setStopAfterCurrent(true)
            timers.withLock { $0.sleep = SleepTimer(deadline: nil, endOfItem: true, fade: 0, timer: nil) }
        }
        hub.publish("sleep", [("kind", "set"), ("minutes", minutes.map(JSON.number) ?? .null), ("endOfItem", .bool(endOfItem))])
        return [("sleep", sleepFields())]
    }

    private func cancelSleep() {
        let endOfItem = timers.withLock { t -> Bool in
            t.sleep?.timer?.cancel()
            t.fading?.cancel()
            t.fading = nil
            defer { t.sleep = nil }
            return t.sleep?.endOfItem ?? false
        }
        if endOfItem { queue.setStopAfterCurrent(false) }
    }

    /// The sleep timer is due: fade the volume out over `fade` seconds, then pause (so play
    /// resumes where the listener fell asleep) and put the volume back.
    private func sleepFired(fade: Double) {
        guard timers.withLock({ $0.sleep != nil }) else { return }
        let volume = player.volume
        let finish: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            timers.withLock { t in
                t.fading?.cancel()
                t.fading = nil
                t.sleep = nil
            }
            queue.pause()
            player.volume = volume
            hub.publish("sleep", [("kind", "fired")])
            logger.info("sleep timer: paused")
        }
        guard fade > 0 else { return finish() }
        let steps = max(1, Int(fade / 0.05))
        timers.withLock { t in
            let timer = DispatchSource.makeTimerSource(queue: work)
            timer.schedule(deadline: .now(), repeating: fade / Double(steps))
            timer.setEventHandler { [weak self] in
                guard let self else { return }
                let k = timers.withLock { t in
                    t.fadeStep += 1
                    return t.fadeStep
                }
                if k >= steps { finish() } else { player.volume = volume * Float(steps - k) / Float(steps) }
            }
            t.fadeStep = 0
            t.fading = timer
            timer.resume()
        }
    }

    // MARK: Helpers

    static func ms(_ t: Double) -> JSON { .number((t * 1000).rounded() / 1000) }
    static func percent(_ v: Float) -> JSON { .number((Double(v) * 1000).rounded() / 10) }

    static func name(_ s: ApplicationState) -> String {
        switch s {
        case .active: "active"
        case .inactive: "inactive"
        case .background: "background"
        case .suspended: "suspended"
        }
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var d = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<min(x.count, y.count) { d |= x[i] ^ y[i] }
        return d == 0
    }
}

// MARK: - Typed access to request arguments

extension JSON {
    func optionalString(_ k: String) throws(ProtocolError) -> String? {
        guard let v = self[k], v != .null else { return nil }
        guard let s = v.string else { throw .badArgument("\"\(k)\" must be a string") }
        return s
    }

    func optionalNumber(_ k: String) throws(ProtocolError) -> Double? {
        guard let v = self[k], v != .null else { return nil }
        guard let n = v.number else { throw .badArgument("\"\(k)\" must be a number") }
        return n
    }

    func optionalInt(_ k: String) throws(ProtocolError) -> Int? {
        guard let v = self[k], v != .null else { return nil }
        guard let n = v.int else { throw .badArgument("\"\(k)\" must be an integer") }
        return n
    }

    func optionalBool(_ k: String) throws(ProtocolError) -> Bool? {
        guard let v = self[k], v != .null else { return nil }
        guard let b = v.bool else { throw .badArgument("\"\(k)\" must be true or false") }
        return b
    }

    func optionalStrings(_ k: String) throws(ProtocolError) -> [String]? {
        try optionalArray(k, "strings") { $0.string }
    }

    func optionalInts(_ k: String) throws(ProtocolError) -> [Int]? {
        try optionalArray(k, "integers") { $0.int }
    }

    /// The array member `k` with every element converted by `element` (nil: wrong type).
    private func optionalArray<T>(_ k: String, _ kind: String, _ element: (JSON) -> T?) throws(ProtocolError) -> [T]? {
        guard let v = self[k], v != .null else { return nil }
        guard let a = v.array else { throw .badArgument("\"\(k)\" must be an array of \(kind)") }
        var out: [T] = []
        for x in a {
            guard let e = element(x) else { throw .badArgument("\"\(k)\" must be an array of \(kind)") }
            out.append(e)
        }
        return out
    }
}
