import AudioEngine
import BacklineWire
import Control
import Library
import Dispatch
import FoundationEssentials
import Lifecycle
import Logging
import MPRIS
import MediaCore
import NowPlaying
import Platform
import PlayQueue
import Player
import Session
import Synchronization
import Locking

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
public final class ClientContext: ConnectionContext {
    /// Unique per connection.
    public let id: UInt64
    /// TCP clients must `auth` first; Unix-socket clients are the owner (peer uid checked).
    public let needsToken: Bool
    private let authed = Atomic<Bool>(false)
    private let choice = PartitionChoice()
    /// Enqueues an event for this client (its transport renders and frames it).
    public let send: @Sendable (PublishedEvent) -> Void
    private let hub: EventHub

    public init(id: UInt64, needsToken: Bool, hub: EventHub, send: @escaping @Sendable (PublishedEvent) -> Void) {
        self.id = id
        self.needsToken = needsToken
        self.hub = hub
        self.send = send
    }

    public var authenticated: Bool {
        get { authed.load(ordering: .acquiring) }
        set { authed.store(newValue, ordering: .releasing) }
    }

    public var partition: String {
        get { choice.value }
        set { choice.value = newValue }
    }

    public func subscribe(kinds: Set<String>?) { hub.subscribe(id, kinds: kinds, partition: choice, send: send) }
    public func unsubscribe() { hub.unsubscribe(id) }
}

/// The daemon without its sockets: the playback façade and its command dispatcher, the JSON
/// protocol over them (``prepare(_:client:)``), and what only a daemon does: persistence, hooks,
/// the position ticker and its log.
public final class DaemonCore: Sendable {
    public let config: DaemonConfig
    let logger: Logger
    /// Everything playback: queue, player, session, app, now-playing, sleep timer.
    public let playback: Playback
    /// Runs the typed commands every protocol and the remote command center send.
    public let dispatcher: CommandDispatcher
    let store: StateStore
    let hooks: HookRunner
    /// Subscribers' event fan-out.
    public let hub = EventHub()
    /// The client-to-client channels (MPD's `subscribe`/`sendmessage`, the JSON `channel-…`).
    public var messages: ClientMessages { dispatcher.messages }
    /// Timers, saving, observers.
    private let work = DispatchQueue(label: "backline.daemon")
    /// Returns what bursts of requests used to the system, a few seconds after them.
    let trimmer: MemoryTrimmer
    /// The player on the session bus, when published.
    let mpris = Lock<MPRISService?>(nil)
    /// Where MPRIS `OpenUri` of a playlist URL runs (it fetches it), off the bus's thread: one
    /// thread, the URIs opened in the order asked.
    let mprisOpens = RemoteWaits(maxThreads: 1)
    /// "Now playing" notifications, when turned on.
    let notifications = Lock<LocalNotificationCenter?>(nil)
    /// The music directory's watcher (`auto-update`), while the daemon runs.
    let watcher = Lock<LibraryWatcher?>(nil)

    public var session: AudioSession { playback.session }
    public var application: Application { playback.application }
    public var player: QueuePlayer { playback.player }
    public var queue: PlayQueue { playback.queue }
    public var remote: RemoteCommandCenter { playback.remote }

    private struct Timers {
        var saveScheduled = false
        var ticker: (any DispatchSourceTimer)?
        var lastSave = 0.0
        var lastPosition = 0.0
        var shuttingDown = false
        /// The error the last save failed with (logged once, not at every save).
        var saveError: String?
    }

    private let timers = Lock(Timers())

    /// Builds the daemon's player and state (restoring the saved state) without opening sockets.
    public init(config: DaemonConfig, logger: Logger, version: String, registryDirectory: String? = nil) throws(ProtocolError) {
        MemoryTrimmer.limitArenas()
        self.config = config
        self.logger = logger
        let library = Lock<MusicLibrary?>(nil)
        trimmer = MemoryTrimmer(queue: work) { library.withLock { $0 }?.releaseMemory() }
        do {
            var configuration = PlaybackConfiguration(
                device: config.device, bufferMilliseconds: config.bufferMilliseconds,
                category: SessionCategory(rawValue: config.category) ?? .playback, backgroundGrace: config.backgroundGrace,
                musicDirectory: config.musicDirectory, allowAbsolutePaths: config.allowAbsolutePaths,
                registryDirectory: registryDirectory,
                playlistDirectory: config.playlistDirectory
                    ?? (Path.deletingLastComponent(config.stateFile) + "/playlists"))
            configuration.maxChannels = config.maxChannels
            configuration.allowStreams = config.allowStreams
            configuration.libraryPath = config.library
            if let l = config.library {
                try? FileManager.default.createDirectory(atPath: Path.deletingLastComponent(l), withIntermediateDirectories: true,
                                                         attributes: [.posixPermissions: 0o700])
            }
            let made = try Playback(configuration: configuration)
            library.withLock { $0 = made.library }
            playback = made
            playback.replayGain = config.replayGain
            playback.crossfade = config.crossfade
            playback.skipIntervals = (config.skipForward, config.skipBackward)
            playback.silenceTrimming = config.trimSilence
            playback.bookmarks.settings = config.resume
        } catch {
            throw ProtocolError("bad-config", error.message)
        }
        let token = config.token
        dispatcher = CommandDispatcher(playback: playback, version: version,
                                       outputs: config.outputs, checkToken: { given in
            guard let token, !token.isEmpty else { return false }
            return DaemonCore.constantTimeEqual(given, token)
        })
        store = StateStore(path: config.stateFile)
        hooks = HookRunner(timeout: config.hookTimeout, logger: logger)
        playback.remote.receiveCommands(for: playback.session)
        // Subscribers see each event as it is posted (before the reply of the command that
        // caused it); saving, hooks and logging follow on the work queue.
        // A partition's player and queue reach the clients in that partition.
        dispatcher.partitions.tap { [hub] name, e in hub.publish(.control(e), partition: e.isPartitionScoped ? name : nil) }
        playback.addObserver(queue: work) { [weak self] e in self?.event(e) }
        dispatcher.partitions.addObserver(queue: work) { [weak self] name, e in
            guard name != Partitions.defaultName else { return }
            self?.partitionEvent(e)
        }
        playback.application.addSuspensionHook { [weak self] _ in self?.suspending() }
        do { try restore() } catch {
            throw ProtocolError("state-file", "\(error): not starting, which would save over it (fix its owner or permissions, or move it away)")
        }
        // The partitions MPD listeners start their clients in.
        for name in Set(config.mpdListenPartition.values).sorted() where dispatcher.partitions.playback(named: name) == nil {
            do { try dispatcher.partitions.create(name) } catch {
                throw ProtocolError("bad-config", "mpd-listen: partition \(name): \(error.message)")
            }
        }
        if config.startInBackground {
            application.resignActive()
            application.enterBackground()
        }
        startLibrary()
    }

    /// Scans a new library (or every start with `update-on-start`), watches the music
    /// directory (`auto-update`), and logs what the scans did.
    private func startLibrary() {
        guard let library = playback.library else { return }
        if let moved = library.recovered {
            logger.warning("the library database was damaged: moved aside and rebuilt", metadata: [
                "moved-to": "\(moved)", "reason": "\(library.recoveredBecause ?? "damaged")"])
        }
        if !library.rebuiltIndexes.isEmpty {
            logger.warning("the library database lacked indexes: made again, its songs kept", metadata: [
                "indexes": "\(library.rebuiltIndexes.joined(separator: ", "))"])
        }
        library.observe { [logger, trimmer] u in
            guard u.done else { return }
            trimmer.noteActivity()  // what the scan read and wrote is freed: given back soon
            if let e = u.error {
                logger.error("library update failed", metadata: ["job": "\(u.job)", "error": "\(e)"])
            } else {
                logger.info("library updated", metadata: [
                    "job": "\(u.job)", "path": "\(u.path)", "scanned": "\(u.scanned)", "added": "\(u.added)", "updated": "\(u.updated)",
                    "removed": "\(u.removed)", "moved": "\(u.moved)", "failed": "\(u.failed)", "read": "\(u.read)"])
            }
        }
        // Scans in a process of their own: this executable's `library-scan`.
        if let me = PathResolver.realPath("/proc/self/exe"), config.scanInProcess == false {
            library.runScans(in: [me, "library-scan"])
        }
        let stats = try? library.stats()
        let interrupted = (try? library.interruptedScans()) ?? []
        if config.updateOnStart == "yes" || config.updateOnStart == "auto" && (stats?.updated ?? 0) == 0 && (stats?.songs ?? 0) == 0 {
            _ = try? library.update("")
        } else if !interrupted.isEmpty {
            // A scan killed or stopped before it completed (a first one leaves a library that
            // looks made): resumed, whatever update-on-start says, or the library stays partial.
            logger.info("resuming library scans that did not complete", metadata: ["paths": "\(interrupted.map { $0.isEmpty ? "/" : $0 })"])
            _ = try? library.resumeInterruptedScans()
        }
        if config.autoUpdate {
            let w = LibraryWatcher(library: library, delay: config.autoUpdateDelay) { [logger] m in logger.warning("\(m)") }
            watcher.withLock { $0 = w }
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
            if let rg = saved.replayGain { playback.replayGain = rg }
            if let seconds = saved.crossfade { playback.crossfade = seconds }
            if let speed = saved.speed { playback.speed = speed }
            if let bookmarks = saved.bookmarks { playback.bookmarks.restore(bookmarks) }
            queue.restore(saved.queue, play: config.restorePlaying)
            for p in saved.partitions ?? [] {
                do {
                    try dispatcher.partitions.create(p.name, output: p.output, namedOutput: false, restoring: p.queue, volume: p.volume,
                                                     muted: p.muted, play: config.restorePlaying)
                    playback.tags.prefetch(p.queue.entries.map(\.path))
                } catch {
                    logger.warning("partition not restored", metadata: ["partition": "\(p.name)", "reason": "\(error.message)"])
                }
            }
            playback.restoreAlarms(saved.alarms ?? [])
            playback.tags.prefetch(saved.queue.entries.map(\.path))
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
        let alarms = playback.alarms
        var state = SavedState(queue: queue.snapshot(), volume: playback.volumeToSave, muted: player.isMuted,
                               alarms: alarms.isEmpty ? nil : alarms,
                               // Saved once changed at run time: until then the config file's stand (edits to it apply).
                               replayGain: playback.replayGain == config.replayGain ? nil : playback.replayGain,
                crossfade: playback.crossfade == config.crossfade ? nil : playback.crossfade)
        state.speed = playback.speed == 1 ? nil : playback.speed
        let bookmarks = playback.bookmarks.withCurrent(player.currentItem, at: queue.elapsed)
        state.bookmarks = bookmarks.isEmpty ? nil : bookmarks
        let others = dispatcher.partitions.others
        state.partitions = others.isEmpty ? nil : others.map { o in
            SavedPartition(name: o.name, output: o.output, queue: o.playback.queue.snapshot(), volume: o.playback.player.volume,
                           muted: o.playback.player.isMuted)
        }
        do {
            try store.save(state)
            let failed = timers.withLock { t -> String? in
                t.lastSave = Self.now()
                defer { t.saveError = nil }
                return t.saveError
            }
            if failed != nil { logger.notice("state saved again", metadata: ["file": "\(store.path)"]) }
            logger.debug("state saved", metadata: ["why": "\(why)"])
            return true
        } catch {
            // Once per kind of failure (an unwritable directory fails every second while
            // playing); again when it changes, and "saved again" when it is over.
            let message = "\(error)"
            let first = timers.withLock { t -> Bool in
                defer { t.saveError = message }
                return t.saveError != message
            }
            if first { logger.error("cannot save state (said once until it changes)", metadata: ["error": "\(message)"]) }
            return false
        }
    }

    /// Graceful stop: saves, pauses the output and lets go of the device.
    public func shutdown() {
        let first = timers.withLock { t -> Bool in
            defer { t.shuttingDown = true }
            t.ticker?.cancel()
            t.ticker = nil
            return !t.shuttingDown
        }
        guard first else { return }
        saveNow("shutdown")
        hub.publish(.control(.shutdown))
        mpris.withLock { m in
            m?.stop()
            m = nil
        }
        mprisOpens.finish(seconds: 3)
        watcher.withLock { w in
            w?.stop()
            w = nil
        }
        playback.library?.stop()
        dispatcher.partitions.closeAll()
        playback.shutdown()
        logger.info("stopped")
    }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    // MARK: - The JSON protocol

    /// A parsed request, ready to run: the server runs it where its ``executor`` says (on its
    /// event loop, on its pool, or on a thread of its own). The server knows nothing else of commands.
    public struct PreparedRequest: Sendable {
        /// Where to run it (the command's ``Control/ControlCommand/executor``: chosen for this request).
        public let executor: CommandExecutor
        /// It presents a token (`auth`): the server delays a wrong one and closes.
        public let presentsToken: Bool
        /// Runs it; the reply line.
        public let run: @Sendable () -> JSON
    }

    /// Parses `request` for `client` into something to run.
    public func prepare(_ request: JSON, client: ClientContext) -> PreparedRequest {
        trimmer.noteActivity()
        let id = request["id"] ?? .null
        let command: any ControlCommand
        do throws(ProtocolError) {
            command = try JSONCodec.command(request)
        } catch {
            // Before authentication only `auth` is looked at (a malformed request is still said to be one).
            let refusal = error.code != "invalid-request" && client.needsToken && !client.authenticated
                && request["command"]?.string != "auth" ? Self.authFirst : error
            // A malformed `auth` still counts as a try (delayed, closed, logged).
            let presents = request["command"]?.string == "auth"
            return PreparedRequest(executor: .loop, presentsToken: presents) { Self.errorReply(id, refusal) }
        }
        let dispatcher = dispatcher
        return PreparedRequest(executor: command.executor, presentsToken: command is AuthCommand) {
            switch dispatcher.execute(command, from: client) {
            case .success(let reply): JSONCodec.success(id, reply)
            case .failure(.unauthorized) where !client.authenticated && !(command is AuthCommand): Self.errorReply(id, Self.authFirst)
            case .failure(let error): Self.errorReply(id, JSONCodec.protocolError(error))
            }
        }
    }

    /// Executes one request; returns the reply (`{"id":…,"ok":…}`).
    public func execute(_ request: JSON, client: ClientContext) -> JSON { prepare(request, client: client).run() }

    static let authFirst = ProtocolError("unauthorized", "send {\"command\":\"auth\",\"token\":…} first")

    public static func errorReply(_ id: JSON, _ e: ProtocolError) -> JSON { JSONCodec.failure(id, e) }

    // MARK: - Events: the subscribers, saving, hooks, logging

    private func event(_ e: ControlEvent) {
        switch e {
        case .state:
            updateTicker()
            scheduleSave()
        case .current(let item?):
            scheduleSave()
            mpris.withLock { $0 }?.refresh()
            notifyNowPlaying(item)
        case .current, .queue, .modes, .seeked, .volume, .partitions:
            scheduleSave()
            mpris.withLock { $0 }?.refresh()  // (what the now-playing info does not carry: modes, volume, the queue)
        case .failed(let item, let path, let reason):
            logger.warning("item failed", metadata: ["id": "\(item)", "path": "\(path)", "reason": "\(reason)"])
            scheduleSave()
        case .lifecycle(.didResume, _):
            runHook("on-resume", config.onResume)
        case .sleep(.fired):
            logger.info("sleep timer: paused")
        case .alarm(let a):
            saveNow("alarm")  // at once: an alarm set must survive a kill right after
            if case .fired(let alarm) = a {
                logger.info("alarm fired", metadata: ["id": "\(alarm.id)", "time": "\(alarm.time)"])
                notifications.withLock { $0 }?.present(LocalNotification(alertTitle: "Alarm \(alarm.time)",
                                                                         alertBody: alarm.playlist.map { "Playing \($0)" } ?? "Playing"))
            }
        default:
            break
        }
    }

    /// Another partition's event: saved as the default partition's are; its position ticks.
    private func partitionEvent(_ e: ControlEvent) {
        switch e {
        case .state:
            updateTicker()
            scheduleSave()
        case .current, .queue, .modes, .seeked, .volume, .failed, .partitions:
            scheduleSave()
        default:
            break
        }
    }

    /// The app is being suspended: save, run the on-suspend hook (the device is released after this returns).
    private func suspending() {
        saveNow("suspension")
        runHook("on-suspend", config.onSuspend)
    }

    private func runHook(_ name: String, _ command: String?) {
        guard let command else { return }
        let c = queue.current
        let info = c.map { playback.tags.cached($0.path) } ?? nil
        var env: [String: String] = [
            "BACKLINE_EVENT": name == "on-suspend" ? "suspend" : "resume",
            "BACKLINE_STATE": queue.playbackState.rawValue,
            "BACKLINE_POSITION": cFormat("%.3f", queue.elapsed),
            "BACKLINE_QUEUE_LENGTH": String(queue.entries.count),
            "BACKLINE_SOCKET": config.socketPath,
            "BACKLINE_STATE_FILE": config.stateFile,
        ]
        if let c {
            env["BACKLINE_ITEM_ID"] = String(c.id)
            env["BACKLINE_ITEM_PATH"] = c.path
            env["BACKLINE_TITLE"] = info?.metadata.title ?? Path.lastComponent(c.path)
            env["BACKLINE_ARTIST"] = info?.metadata.artist ?? ""
        }
        hooks.run(name, command: command, environment: env) { [playback] status in
            playback.post(.hook(name: name, status: status))
        }
    }

    /// Debounced save: at most 0.5 s after a change, well within the 2 s of position a kill may
    /// lose (ChaosTests' bound).
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

    /// While any partition plays: position events and periodic saves. Nothing runs while idle.
    private func updateTicker() {
        let playing = ([playback] + dispatcher.partitions.others.map(\.playback)).contains { $0.queue.playbackState == .playing }
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
        if now - positionAt >= config.positionInterval - 0.01 {
            timers.withLock { $0.lastPosition = now }
            for p in [playback] + dispatcher.partitions.others.map(\.playback) {
                guard let c = p.queue.current, p.queue.playbackState == .playing else { continue }
                p.post(.position(item: c.id, elapsed: p.queue.elapsed, duration: p.player.currentItem?.duration))
            }
        }
        if now - savedAt >= config.saveInterval - 0.01 { saveNow("periodic") }
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var d = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<min(x.count, y.count) { d |= x[i] ^ y[i] }
        return d == 0
    }
}
