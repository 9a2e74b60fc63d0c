import Broadcast
import Dispatch
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// The audio session (`AVAudioSession`): category, mode and options, activation, and the
/// coordination with every other Backline session of this user on this machine.
///
/// - Activating a non-mixable session interrupts every other active non-mixable session (their
///   players pause; they get ``SessionEvent/interruptionBegan(reason:by:)``). Deactivating with
///   ``SetActiveOptions/notifyOthersOnDeactivation`` ends those interruptions with
///   `shouldResume`; deactivating without it ends them without (they stay paused).
/// - `duckOthers` lowers every other active session while this one is active.
/// - If the interrupting or ducking process dies (even `kill -9`), the others notice within
///   about 200 ms: ducking is undone and the interruption ends with `shouldResume` (the other
///   side can never send it any more; decision recorded in docs/GUIDE.md).
/// - The silent switch and the screen lock silence `ambient` and `soloAmbient` sessions in
///   every process; `playback` ignores both.
public final class AudioSession: Sendable {
    /// A token for an observer of an ``AudioSession``.
    public typealias SessionObserverToken = ObservationToken<AudioSession>

    /// The process's session (the registry from `$XDG_RUNTIME_DIR`).
    public static let shared = AudioSession()

    /// This session's id in the registry (`PID-N`).
    public let id: String
    let registry: SessionRegistry?
    private let registryError: AudioSessionError?
    private let queue = DispatchQueue(label: "backline.session")
    private static let counter = Atomic<Int>(0)

    struct Weak { weak var participant: (any AudioSessionParticipant)? }

    struct State {
        var category = SessionCategory.soloAmbient
        var mode = SessionMode.default
        var options: SessionCategoryOptions = []
        var active = false
        var listenFD: Int32 = -1
        /// Who interrupted us (while interrupted), whom we interrupted, who ducks us, whom we duck.
        var interruptedBy: String?
        var interruptedOthers: Set<String> = []
        var duckedBy: Set<String> = []
        var duckingOthers: Set<String> = []
        var system = SessionRegistry.SystemInputs()
        var participants: [Weak] = []
        var lastGain: Float = 1
        var remoteReceiver: RemoteReceiver?
        /// Requests to the now-playing app waiting for its answer, by sequence number.
        var pendingRequests: [UInt64: @Sendable (RemoteAnswer) -> Void] = [:]
        var nextRequest: UInt64 = 1
    }

    /// Receives a remote-command message and answers it (once) through the reply function.
    package typealias RemoteReceiver = @Sendable (_ message: String, _ reply: @escaping @Sendable (String) -> Void) -> Void

    /// What a request to the now-playing app came back with.
    package enum RemoteAnswer: Sendable {
        case noNowPlayingApp
        case timedOut(String)
        case answer(String)
    }

    private let state = Lock(State())
    private let broadcaster = Broadcaster<SessionEvent>()

    /// The socket's read source and the peer-watch timer, created once by `startListening`.
    private final class Sources: @unchecked Sendable {
        // @unchecked Sendable: set once under the session lock (listenFD guards it), cancelled in deinit.
        var read: (any DispatchSourceRead)?
    }
    /// Whether the peer watch runs (only while someone interrupts or ducks us, or we them).
    private let watching = Atomic<Bool>(false)
    private let sources = Sources()

    /// A session registered in `registryDirectory` (default: `$XDG_RUNTIME_DIR/backline/sessions`).
    /// Several sessions in one process behave like separate apps (tests use this).
    public init(registryDirectory: String? = nil) {
        id = "\(getpid())-\(Self.counter.wrappingAdd(1, ordering: .relaxed).newValue)"
        do {
            let r = try SessionRegistry(directory: registryDirectory ?? SessionRegistry.defaultDirectory)
            registry = r
            registryError = nil
            let system = r.readSystem()
            state.withLock { $0.system = system }
        } catch {
            registry = nil
            registryError = error
        }
    }

    deinit {
        sources.read?.cancel()
        registry?.remove(id)
    }

    // MARK: - Configuration

    /// The category (default `soloAmbient`).
    public var category: SessionCategory { state.withLock { $0.category } }
    /// The mode (default `.default`).
    public var mode: SessionMode { state.withLock { $0.mode } }
    /// The options in effect (for `ambient` always `mixWithOthers`).
    public var categoryOptions: SessionCategoryOptions { state.withLock { $0.options } }
    /// Whether the session is active.
    public var isActive: Bool { state.withLock { $0.active } }

    /// Sets category, mode and options. Options do not survive a category change: pass them
    /// every time. Invalid combinations throw `incompatibleCategory`: any option with
    /// `soloAmbient`; `duckOthers` or `interruptSpokenAudioAndMixWithOthers` with `ambient`.
    /// `duckOthers` and `interruptSpokenAudioAndMixWithOthers` imply `mixWithOthers`; `ambient`
    /// always mixes.
    public func setCategory(_ category: SessionCategory, mode: SessionMode = .default,
                            options: SessionCategoryOptions = []) throws(AudioSessionError) {
        var effective = options
        switch category {
        case .soloAmbient:
            guard options.isEmpty else {
                throw AudioSessionError(.incompatibleCategory, "soloAmbient accepts no category options (got \(options.names.joined(separator: ", ")))")
            }
        case .ambient:
            guard options.subtracting(.mixWithOthers).isEmpty else {
                throw AudioSessionError(.incompatibleCategory,
                                        "ambient accepts only mixWithOthers (duckOthers and interruptSpokenAudioAndMixWithOthers need playback)")
            }
            effective = .mixWithOthers
        case .playback:
            if !options.isDisjoint(with: [.duckOthers, .interruptSpokenAudioAndMixWithOthers]) {
                effective.insert(.mixWithOthers)
            }
        }
        let changed = state.withLock { s -> Bool in
            let changed = s.category != category
            s.category = category
            s.mode = mode
            s.options = effective
            return changed
        }
        publishEntry()
        applyGain()
        if changed { post(.routeChanged(reason: .categoryChange)) }
    }

    // MARK: - Activation

    /// Activates or deactivates the session.
    ///
    /// Activation interrupts the other active non-mixable sessions (a non-mixable session),
    /// the others' spoken audio (`interruptSpokenAudioAndMixWithOthers`), and ducks the others
    /// (`duckOthers`). Deactivation ends the interruptions this session caused (with
    /// `shouldResume` under `notifyOthersOnDeactivation`) and undoes its ducking. As on iOS,
    /// deactivating while a player of this session is running stops that player, deactivates
    /// the session all the same, and then throws `isBusy` (pause first to avoid it).
    public func setActive(_ active: Bool, options: SetActiveOptions = []) throws(AudioSessionError) {
        if let registryError { throw registryError }
        guard let registry else { return }
        if active {
            try startListening()
            let (options, wasActive) = state.withLock { s -> (SessionCategoryOptions, Bool) in
                defer { s.active = true; s.interruptedBy = nil }
                return (s.options, s.active)
            }
            if wasActive { return }  // play() on an active session touches no file
            publishEntry()
            let others = registry.entries().filter { $0.id != id && $0.active }
            var interrupted: Set<String> = [], ducked: Set<String> = []
            for e in others {
                let interrupt = options.contains(.interruptSpokenAudioAndMixWithOthers)
                    ? e.spoken : (!options.contains(.mixWithOthers) && !e.mixable)
                if interrupt, registry.send("began \(id)", to: e.id) { interrupted.insert(e.id) }
                if options.contains(.duckOthers), !interrupt, registry.send("duck \(id)", to: e.id) { ducked.insert(e.id) }
            }
            state.withLock { s in
                s.interruptedOthers.formUnion(interrupted)
                s.duckingOthers.formUnion(ducked)
            }
            if !interrupted.isEmpty || !ducked.isEmpty { watchPeers() }
        } else {
            // As AVAudioSession: running players are stopped, the session is deactivated all the
            // same, and the call reports `isBusy` (Apple logs "Deactivating an audio session
            // that has running I/O").
            let running = participants.filter(\.isRunningIO)
            for p in running { p.sessionDeactivatedWhileRunning() }
            let (interrupted, ducked) = state.withLock { s -> (Set<String>, Set<String>) in
                defer {
                    s.active = false
                    s.interruptedOthers = []
                    s.duckingOthers = []
                }
                return (s.interruptedOthers, s.duckingOthers)
            }
            publishEntry()
            let resume = options.contains(.notifyOthersOnDeactivation) ? 1 : 0
            for other in interrupted { registry.send("ended \(id) \(resume)", to: other) }
            for other in ducked { registry.send("unduck \(id)", to: other) }
            if !running.isEmpty {
                throw AudioSessionError(.isBusy, "deactivated an audio session that had running I/O: its players were stopped (pause them first)")
            }
        }
    }

    /// ``setActive(_:options:)`` with `true`, for async code: the work (the registry's files
    /// and the messages to other sessions) runs off the caller's thread.
    public func activate() async throws(AudioSessionError) {
        try await runOffThread { session throws(AudioSessionError) in try session.setActive(true) }
    }

    /// ``setActive(_:options:)`` with `false`, for async code (running players are stopped and
    /// `isBusy` thrown, as the synchronous form does).
    public func deactivate(options: SetActiveOptions = []) async throws(AudioSessionError) {
        try await runOffThread { session throws(AudioSessionError) in try session.setActive(false, options: options) }
    }

    private func runOffThread(_ work: @escaping @Sendable (AudioSession) throws(AudioSessionError) -> Void) async throws(AudioSessionError) {
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<Void, AudioSessionError>, Never>) in
            DispatchQueue.global().async { [self] in
                do throws(AudioSessionError) {
                    try work(self)
                    c.resume(returning: .success(()))
                } catch {
                    c.resume(returning: .failure(error))
                }
            }
        }
        try result.get()
    }

    // MARK: - System inputs

    /// The silent switch (machine-wide for this user): silences `ambient` and `soloAmbient`.
    public var silentSwitch: Bool {
        get { state.withLock { $0.system.silentSwitch } }
        set { updateSystem { $0.silentSwitch = newValue } }
    }

    /// The screen lock (machine-wide for this user): silences `ambient` and `soloAmbient`.
    public var screenLocked: Bool {
        get { state.withLock { $0.system.screenLocked } }
        set { updateSystem { $0.screenLocked = newValue } }
    }

    /// Whether this session's output is silenced now (switch or lock, and a silenceable category).
    public var isOutputSilenced: Bool {
        state.withLock { s in s.category != .playback && (s.system.silentSwitch || s.system.screenLocked) }
    }

    /// Whether another session is ducking this one.
    public var isDucked: Bool { state.withLock { !$0.duckedBy.isEmpty } }

    private func updateSystem(_ change: (inout SessionRegistry.SystemInputs) -> Void) {
        guard let registry else { return }
        var system = registry.readSystem()
        change(&system)
        registry.writeSystem(system)
        state.withLock { $0.system = system }
        applyGain()
        for e in registry.entries() where e.id != id { registry.send("system \(id)", to: e.id) }
    }

    /// Reports a route change seen by a player (e.g. its device disappeared): observers get
    /// ``SessionEvent/routeChanged(reason:)``.
    package func reportRouteChange(_ reason: RouteChangeReason) {
        post(.routeChanged(reason: reason))
    }

    /// Reports that the media services (the sound server) restarted: observers get
    /// ``SessionEvent/mediaServicesWereReset``; nothing restarts by itself.
    package func reportMediaServicesReset() {
        post(.mediaServicesWereReset)
    }

    // MARK: - Now-playing app

    /// Called by a player that starts playing: a non-mixable session becomes the now-playing app
    /// (the one remote commands reach); a `mixWithOthers` session never does.
    package func claimNowPlaying() {
        guard let registry, !categoryOptions.contains(.mixWithOthers), registry.nowPlaying() != id else { return }
        registry.setNowPlaying(id)
    }

    /// Whether this session is the now-playing app of its registry.
    public var isNowPlayingApp: Bool { registry?.nowPlaying() == id }

    /// The id of the now-playing app in the registry (this session's registry by default).
    public func nowPlayingApp() -> String? { registry?.nowPlaying() }

    /// Receives remote-command messages sent to this session (the now-playing app) by
    /// ``sendToNowPlayingApp(_:)`` or ``requestNowPlayingApp(_:timeout:completion:)`` in any
    /// process. The NowPlaying module installs it.
    package func setRemoteCommandReceiver(_ receiver: RemoteReceiver?) {
        state.withLock { $0.remoteReceiver = receiver }
        if receiver != nil { try? startListening() }
    }

    /// Sends a remote-command message to the now-playing app of this session's registry
    /// without waiting for an answer.
    /// - Returns: the receiving session's id, or nil when there is no now-playing app.
    @discardableResult
    package func sendToNowPlayingApp(_ message: String) -> String? {
        guard let registry, let target = registry.nowPlaying() else { return nil }
        if target == id {
            let receiver = state.withLock { $0.remoteReceiver }
            queue.async { receiver?(message) { _ in } }
            return target
        }
        return registry.send("remote \(id) \(message)", to: target) ? target : nil
    }

    /// Sends a remote-command message to the now-playing app and calls `completion` (once, on
    /// the session's queue) with its answer, or with `.timedOut` after `timeout` seconds.
    package func requestNowPlayingApp(_ message: String, timeout: Double, completion: @escaping @Sendable (RemoteAnswer) -> Void) {
        guard let registry, let target = registry.nowPlaying() else { return queue.async { completion(.noNowPlayingApp) } }
        try? startListening()  // the answer comes to this session's socket
        let seq = state.withLock { s -> UInt64 in
            defer { s.nextRequest += 1 }
            s.pendingRequests[s.nextRequest] = completion
            return s.nextRequest
        }
        queue.asyncAfter(deadline: .now() + timeout) { [weak self] in
            if let c = self?.state.withLock({ $0.pendingRequests.removeValue(forKey: seq) }) { c(.timedOut(target)) }
        }
        if target == id {
            let receiver = state.withLock { $0.remoteReceiver }
            queue.async { [weak self] in
                guard let session = self else { return }
                guard let receiver else { return session.answered(seq, Self.noReceiverAnswer) }
                receiver(message) { [weak session] answer in session?.answered(seq, answer) }
            }
        } else if !registry.send("request \(id) \(seq) \(message)", to: target) {
            if let c = state.withLock({ $0.pendingRequests.removeValue(forKey: seq) }) { queue.async { c(.noNowPlayingApp) } }
        }
    }

    /// The answer of a session with no receiver: `commandFailed` (200) and the reason, in the
    /// form the NowPlaying module reads (`STATUS REASON`).
    private static let noReceiverAnswer = "200 this app receives no remote commands"

    private func answered(_ seq: UInt64, _ text: String) {
        guard let c = state.withLock({ $0.pendingRequests.removeValue(forKey: seq) }) else { return }
        queue.async { c(.answer(text)) }
    }

    // MARK: - Participants and events

    /// Registers a player: it is paused on interruption, resumed on `.ended` + shouldResume if
    /// it was playing, silenced and ducked as the session is.
    package func register(_ participant: any AudioSessionParticipant) {
        let gain = state.withLock { s -> Float in
            s.participants.removeAll { $0.participant == nil }
            s.participants.append(Weak(participant: participant))
            return s.lastGain
        }
        participant.sessionGainChanged(gain)
    }

    /// Calls `handler` on `queue` for every event, in order; returns a token.
    @discardableResult
    public func addObserver(queue: DispatchQueue, _ handler: @escaping @Sendable (SessionEvent) -> Void) -> SessionObserverToken {
        broadcaster.addObserver(for: AudioSession.self, queue: queue, handler)
    }

    /// ``addObserver(queue:_:)`` on the main queue for main-actor code (no
    /// `MainActor.assumeIsolated` needed in the handler).
    @discardableResult
    public func addObserver(_ handler: @escaping @MainActor @Sendable (SessionEvent) -> Void) -> SessionObserverToken {
        addObserver(queue: .main) { e in MainActor.assumeIsolated { handler(e) } }
    }

    /// Removes a handler added with ``addObserver(queue:_:)``.
    public func removeObserver(_ token: SessionObserverToken) { broadcaster.removeObserver(token) }

    /// Every event from now on.
    public func events() -> AsyncStream<SessionEvent> { broadcaster.events() }

    private func post(_ event: SessionEvent) { broadcaster.post(event) }

    private var participants: [any AudioSessionParticipant] {
        state.withLock { s in s.participants.compactMap(\.participant) }
    }

    /// Recomputes the output gain (silenced 0, ducked 0.3, else 1) and tells players and observers.
    private func applyGain() {
        let (gain, old, silenced, wasSilenced) = state.withLock { s -> (Float, Float, Bool, Bool) in
            let silenced = s.category != .playback && (s.system.silentSwitch || s.system.screenLocked)
            let gain: Float = silenced ? 0 : (s.duckedBy.isEmpty ? 1 : 0.3)
            let old = s.lastGain
            s.lastGain = gain
            return (gain, old, silenced, old == 0)
        }
        guard gain != old else { return }
        for p in participants { p.sessionGainChanged(gain) }
        if silenced != wasSilenced { post(.silencedChanged(silenced)) }
    }

    private func publishEntry() {
        guard let registry else { return }
        let e = state.withLock { s in
            SessionRegistry.Entry(id: id, pid: getpid(), active: s.active, mixable: s.options.contains(.mixWithOthers),
                                  spoken: s.mode == .spokenAudio, category: s.category.rawValue)
        }
        registry.write(e)
    }

    // MARK: - Messages from other sessions

    private func startListening() throws(AudioSessionError) {
        guard let registry, state.withLock({ s -> Bool in
            guard s.listenFD == -1 else { return false }
            s.listenFD = -2  // reserved: one caller binds
            return true
        }) else { return }
        let fd = try registry.listen(id)
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in self?.receive(fd) }
        source.setCancelHandler { close(fd) }
        state.withLock { $0.listenFD = fd }
        sources.read = source
        source.resume()
    }

    private func receive(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard n > 0 else { return }
            let text = String(decoding: buffer[..<n], as: UTF8.self)
            let parts = text.split(separator: " ", maxSplits: 2).map(String.init)
            guard parts.count >= 2 else { continue }
            handle(parts[0], from: parts[1], argument: parts.count > 2 ? parts[2] : nil)
        }
    }

    private func handle(_ message: String, from other: String, argument: String?) {
        switch message {
        case "began":
            let wasActive = state.withLock { s -> Bool in
                defer { s.active = false; s.interruptedBy = other }
                return s.active
            }
            watchPeers()
            guard wasActive else { return }
            publishEntry()
            for p in participants { p.sessionInterrupted() }
            post(.interruptionBegan(reason: .default, by: other))
        case "ended":
            endInterruption(from: other, shouldResume: argument == "1")
        case "duck":
            state.withLock { _ = $0.duckedBy.insert(other) }
            watchPeers()
            applyGain()
            post(.duckingChanged(true))
        case "unduck":
            undo(duckBy: other)
        case "remote":
            if let argument, let receiver = state.withLock({ $0.remoteReceiver }) { receiver(argument) { _ in } }
        case "request":
            // `request FROM SEQ MESSAGE`: the answer goes back as `answer ME SEQ RESULT`.
            guard let argument, let registry else { return }
            let parts = argument.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2, let seq = UInt64(parts[0]) else { return }
            let me = id
            let reply: @Sendable (String) -> Void = { answer in _ = registry.send("answer \(me) \(seq) \(answer)", to: other) }
            if let receiver = state.withLock({ $0.remoteReceiver }) {
                receiver(parts[1], reply)
            } else {
                reply(Self.noReceiverAnswer)
            }
        case "answer":
            guard let argument else { return }
            let parts = argument.split(separator: " ", maxSplits: 1).map(String.init)
            if let seq = parts.first.flatMap({ UInt64($0) }) { answered(seq, parts.count > 1 ? parts[1] : "") }
        case "system":
            if let registry {
                let system = registry.readSystem()
                state.withLock { $0.system = system }
                applyGain()
            }
        default:
            break
        }
    }

    private func endInterruption(from other: String, shouldResume: Bool) {
        let mine = state.withLock { s -> Bool in
            guard s.interruptedBy == other else { return false }
            s.interruptedBy = nil
            return true
        }
        guard mine else { return }
        post(.interruptionEnded(shouldResume: shouldResume))
        for p in participants { p.sessionInterruptionEnded(shouldResume: shouldResume) }
    }

    private func undo(duckBy other: String) {
        let changed = state.withLock { s -> Bool in s.duckedBy.remove(other) != nil && s.duckedBy.isEmpty }
        guard changed else { return }
        applyGain()
        post(.duckingChanged(false))
    }

    /// Starts the 200 ms peer watch if it is not running; it stops by itself when there is
    /// nobody left to watch.
    private func watchPeers() {
        guard !watching.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.asyncAfter(deadline: .now() + .milliseconds(200)) { [weak self] in self?.watchTick() }
    }

    private func watchTick() {
        checkPeers()
        let more = state.withLock { s in
            s.interruptedBy != nil || !s.duckedBy.isEmpty || !s.interruptedOthers.isEmpty || !s.duckingOthers.isEmpty
        }
        if more {
            queue.asyncAfter(deadline: .now() + .milliseconds(200)) { [weak self] in self?.watchTick() }
        } else {
            watching.store(false, ordering: .releasing)
            // A relationship that began meanwhile found the watch still running: restart it.
            let began = state.withLock { s in
                s.interruptedBy != nil || !s.duckedBy.isEmpty || !s.interruptedOthers.isEmpty || !s.duckingOthers.isEmpty
            }
            if began { watchPeers() }
        }
    }

    /// A peer that interrupted or ducks us and has died (or left the registry) can no longer
    /// end what it started: end it for it.
    private func checkPeers() {
        guard let registry else { return }
        let (by, ducks, mine) = state.withLock { s in (s.interruptedBy, s.duckedBy, s.interruptedOthers.union(s.duckingOthers)) }
        if let by, !registry.isLive(by) { endInterruption(from: by, shouldResume: true) }
        for d in ducks where !registry.isLive(d) { undo(duckBy: d) }
        let gone = mine.filter { !registry.isLive($0) }
        if !gone.isEmpty {
            state.withLock { s in
                s.interruptedOthers.subtract(gone)
                s.duckingOthers.subtract(gone)
            }
        }
    }
}
