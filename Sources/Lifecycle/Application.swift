import Broadcast
import Dispatch
import FoundationEssentials
import Synchronization
import Locking

/// Something that can keep an app running in the background, or needs to know about the app's
/// state (QueuePlayer conforms).
package protocol ApplicationParticipant: AnyObject, Sendable {
    /// Whether this keeps the app running in the background (playing audio in `playback`).
    var keepsAppRunningInBackground: Bool { get }
    /// The app entered the background: stop what may not continue there (e.g. a player whose
    /// session category is not `playback`).
    func applicationDidEnterBackground()
    /// The app is being suspended: release devices, save state.
    func applicationWillSuspend()
    /// The app resumed from suspension.
    func applicationDidResume()
}

/// App states (`UIApplication.State`, plus the suspended state iOS does not expose).
public enum ApplicationState: Int, Sendable {
    /// In the foreground and receiving events (`UIApplication.State.active`; the terminal's
    /// foreground for `backline play`).
    case active = 0
    /// In the foreground but not receiving events, during a transition or a transient
    /// interruption (`UIApplication.State.inactive`).
    case inactive = 1
    /// Running in the background (`UIApplication.State.background`): only a player in
    /// `playback` or an open background task keeps it from being suspended.
    case background = 2
    /// In memory, running no code of its own: players released their devices.
    case suspended = 3
}

/// Application notifications, in Apple's order for each transition.
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum ApplicationEvent: Sendable, Equatable {
    /// The app is leaving the active state (`UIApplication.willResignActiveNotification`).
    case willResignActive
    /// The app is now in the background (`UIApplication.didEnterBackgroundNotification`).
    case didEnterBackground
    /// The app is about to return to the foreground (`UIApplication.willEnterForegroundNotification`).
    case willEnterForeground
    /// The app is active again (`UIApplication.didBecomeActiveNotification`).
    case didBecomeActive
    /// The app is quitting while running (`UIApplication.willTerminateNotification`); not sent
    /// to a suspended app.
    case willTerminate
    /// The app was suspended (after the suspension hooks ran). `reason` says why.
    case didSuspend(reason: String)
    /// The app resumed from suspension (into the background or the foreground).
    case didResume
    /// A background task's expiration handler was called.
    case backgroundTaskExpiring(name: String?)
    /// A background task was still open when the budget ran out; it was ended by force and the
    /// app suspended anyway (Apple would terminate it).
    case backgroundTaskLeaked(name: String?)
}

/// Identifies a background task (`UIBackgroundTaskIdentifier`).
public struct BackgroundTaskIdentifier: Hashable, Sendable {
    /// The task's number; 0 is ``invalid``.
    public let rawValue: Int
    /// Returned when background running is not possible.
    public static let invalid = BackgroundTaskIdentifier(rawValue: 0)
}

/// Timing of background execution.
public struct ApplicationConfiguration: Sendable {
    /// Background time for tasks after entering the background (iOS 13+: about 30 s).
    public var backgroundTaskBudget: Double
    /// How long before the budget ends the expiration handlers run.
    public var expirationWarning: Double
    /// How long the app may stay in the background with nothing keeping it running before it is
    /// suspended (undocumented on iOS; "shortly").
    public var suspensionGracePeriod: Double
    /// The smallest keep-alive timeout ``Application/setKeepAliveTimeout(_:handler:)`` accepts
    /// (`UIMinimumKeepAliveTimeout`: 600 s).
    public var minimumKeepAliveTimeout: Double
    /// How long a keep-alive handler may run before the app is evaluated for suspension again
    /// (iOS: at most 10 s).
    public var keepAliveHandlerTime: Double

    /// Timing as on iOS unless given: a 30 s task budget, expiration handlers 5 s before it ends,
    /// suspension 5 s after nothing keeps the app running, keep-alive timeouts from 600 s with
    /// 10 s for the handler.
    public init(backgroundTaskBudget: Double = 30, expirationWarning: Double = 5, suspensionGracePeriod: Double = 5,
                minimumKeepAliveTimeout: Double = 600, keepAliveHandlerTime: Double = 10) {
        self.backgroundTaskBudget = backgroundTaskBudget
        self.expirationWarning = min(expirationWarning, backgroundTaskBudget)
        self.suspensionGracePeriod = suspensionGracePeriod
        self.minimumKeepAliveTimeout = minimumKeepAliveTimeout
        self.keepAliveHandlerTime = keepAliveHandlerTime
    }
}

/// The app's life cycle (`UIApplication`): states and their notifications, background tasks,
/// and suspension once nothing keeps the app running in the background.
///
/// In the background the app keeps running only while a participant keeps it (a player playing
/// in the `playback` category) or a background task is open; otherwise, after
/// ``ApplicationConfiguration/suspensionGracePeriod``, the suspension hooks run (exactly once per
/// suspension), participants release their devices, and the state becomes `.suspended`.
/// ``resume(reason:)`` (a remote command), ``beginBackgroundTask(name:expirationHandler:)`` or
/// ``enterForeground()`` reverse it.
public final class Application: Sendable {
    /// The process's application object.
    public static let shared = Application()

    /// The background timing this application follows: task budget, expiration warning,
    /// suspension grace period and keep-alive limits.
    public let configuration: ApplicationConfiguration
    /// The serial queue expiration and keep-alive handlers run on: the main queue unless the
    /// application was made with another, as UIKit calls them on the main thread.
    public let handlerQueue: DispatchQueue
    private let queue = DispatchQueue(label: "backline.application")

    struct Task {
        var name: String?
        var expiration: (@Sendable () -> Void)?
        var warned = false
    }

    struct Weak { weak var participant: (any ApplicationParticipant)? }

    struct State {
        var state = ApplicationState.active
        var backgroundSince: Double?
        /// Since when nothing has kept the app running in the background.
        var idleSince: Double?
        var tasks: [Int: Task] = [:]
        var nextTask = 1
        var participants: [Weak] = []
        var hooks: [UInt64: @Sendable (ApplicationState) -> Void] = [:]
        var nextToken: UInt64 = 1
        var keepAlive: KeepAlive?
    }

    struct KeepAlive {
        var timeout: Double
        var handler: @Sendable () -> Void
        /// When the handler last ran (or was set): it runs again before `last + timeout`.
        var last: Double
        /// Distinguishes this setting from a later one (a replaced handler's timer does nothing).
        var generation: UInt64
        /// While the handler runs: until when it holds suspension off.
        var runningUntil: Double?
    }

    private let state = Lock(State())
    private let broadcaster = Broadcaster<ApplicationEvent>()
    /// Whether the background evaluation loop is scheduled (it runs only in the background, so
    /// a foreground app costs no wake-ups).
    private let evaluating = Atomic<Bool>(false)

    /// An application with `configuration`'s timing whose expiration and keep-alive handlers
    /// run on `handlerQueue` (serial; the main queue by default).
    public init(configuration: ApplicationConfiguration = ApplicationConfiguration(), handlerQueue: DispatchQueue = .main) {
        self.configuration = configuration
        self.handlerQueue = handlerQueue
    }

    /// Evaluates now and every 50 ms while the app is in the background.
    private func startEvaluating() {
        guard !evaluating.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [weak self] in self?.evaluationTick() }
    }

    private func evaluationTick() {
        evaluate()
        guard applicationState == .background else {
            evaluating.store(false, ordering: .releasing)
            // A transition back to the background may have raced with this stop.
            if applicationState == .background { startEvaluating() }
            return
        }
        queue.asyncAfter(deadline: .now() + .milliseconds(50)) { [weak self] in self?.evaluationTick() }
    }

    private static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// The current state.
    public var applicationState: ApplicationState { state.withLock { $0.state } }

    // MARK: - Transitions

    /// active → inactive (a transient interruption): `willResignActive`.
    public func resignActive() {
        transition { s in
            guard s.state == .active else { return [] }
            s.state = .inactive
            return [.willResignActive]
        }
    }

    /// inactive → active: `didBecomeActive`.
    public func becomeActive() {
        transition { s in
            guard s.state == .inactive else { return [] }
            s.state = .active
            return [.didBecomeActive]
        }
    }

    /// To the background (home, app switch, lock): `willResignActive` (if active), `didEnterBackground`.
    public func enterBackground() {
        var entered = false
        transition { s in
            var events: [ApplicationEvent] = []
            if s.state == .active { events.append(.willResignActive) }
            guard s.state == .active || s.state == .inactive else { return [] }
            s.state = .background
            s.backgroundSince = Self.now()
            s.idleSince = nil
            entered = true
            events.append(.didEnterBackground)
            return events
        }
        if entered { for p in participants { p.applicationDidEnterBackground() } }
        startEvaluating()
    }

    /// Back to the foreground: `willEnterForeground`, `didBecomeActive` (resuming first if suspended).
    public func enterForeground() {
        if applicationState == .suspended { resume(reason: "foreground") }
        transition { s in
            guard s.state == .background else { return [] }
            s.state = .active
            s.backgroundSince = nil
            s.idleSince = nil
            return [.willEnterForeground, .didBecomeActive]
        }
    }

    /// The app is quitting while running: `willTerminate` (not sent when suspended, as on iOS).
    public func terminate() {
        transition { s in
            guard s.state != .suspended else { return [] }
            return [.willTerminate]
        }
    }

    /// Wakes a suspended app into the background (a remote command, a timer): participants
    /// take their devices back; the app is suspended again if nothing keeps it running.
    public func resume(reason: String) {
        var resumed = false
        transition { s in
            guard s.state == .suspended else { return [] }
            s.state = .background
            s.backgroundSince = Self.now()
            s.idleSince = nil
            resumed = true
            return [.didResume]
        }
        if resumed {
            for p in participants { p.applicationDidResume() }
            runKeepAliveIfDueSoon()
        }
        startEvaluating()
    }

    private func transition(_ change: (inout State) -> [ApplicationEvent]) {
        let events = state.withLock { s in change(&s) }
        for e in events { post(e) }
    }

    // MARK: - Background tasks

    /// Asks for time to finish work in the background. Returns `.invalid` when the budget is
    /// spent. Every identifier must be passed to ``endBackgroundTask(_:)``; the expiration
    /// handler runs shortly before the budget ends and must end the task. Beginning a task while
    /// suspended resumes the app.
    public func beginBackgroundTask(name: String? = nil, expirationHandler: (@Sendable () -> Void)? = nil)
        -> BackgroundTaskIdentifier
    {
        if applicationState == .suspended { resume(reason: "background task \(name ?? "")") }
        return state.withLock { s in
            if s.state == .background, let since = s.backgroundSince,
               Self.now() - since >= configuration.backgroundTaskBudget {
                return .invalid
            }
            let id = s.nextTask
            s.nextTask += 1
            s.tasks[id] = Task(name: name, expiration: expirationHandler)
            return BackgroundTaskIdentifier(rawValue: id)
        }
    }

    /// Ends a background task (any thread). Unknown identifiers are ignored.
    public func endBackgroundTask(_ id: BackgroundTaskIdentifier) {
        _ = state.withLock { $0.tasks.removeValue(forKey: id.rawValue) }
        queue.async { [self] in evaluate() }
    }

    /// Seconds of background time left: huge (`Double.greatestFiniteMagnitude`) in the
    /// foreground; the budget minus the time spent in the background otherwise.
    public var backgroundTimeRemaining: Double {
        state.withLock { s in
            guard s.state == .background || s.state == .suspended, let since = s.backgroundSince else {
                return .greatestFiniteMagnitude
            }
            return max(0, configuration.backgroundTaskBudget - (Self.now() - since))
        }
    }

    // MARK: - Keep-alive handler

    /// Asks for `handler` to be called at least once every `timeout` seconds, even while the app
    /// is suspended (`UIApplication.setKeepAliveTimeout(_:handler:)`): the app is woken for it
    /// (`didResume`, background), the handler runs on ``handlerQueue`` and has
    /// ``ApplicationConfiguration/keepAliveHandlerTime`` before the app is evaluated for
    /// suspension again. The call may come early, grouped with another wake-up (a remote
    /// command, playing) in the last tenth of the timeout. A new call replaces the handler and
    /// timeout; nil clears them.
    /// - Returns: false, and nothing changes, when `timeout` is below
    ///   ``ApplicationConfiguration/minimumKeepAliveTimeout`` (600 s unless configured).
    @discardableResult
    public func setKeepAliveTimeout(_ timeout: Double, handler: (@Sendable () -> Void)?) -> Bool {
        guard let handler else {
            clearKeepAliveTimeout()
            return true
        }
        guard timeout >= configuration.minimumKeepAliveTimeout else { return false }
        let generation = state.withLock { s -> UInt64 in
            let g = (s.keepAlive?.generation ?? 0) + 1
            s.keepAlive = KeepAlive(timeout: timeout, handler: handler, last: Self.now(), generation: g)
            return g
        }
        scheduleKeepAlive(generation, after: timeout)
        return true
    }

    /// Removes the keep-alive handler (`clearKeepAliveTimeout()`).
    public func clearKeepAliveTimeout() {
        state.withLock { $0.keepAlive = nil }
    }

    /// Arms the timer for the keep-alive of `generation`: it fires a little before the timeout.
    private func scheduleKeepAlive(_ generation: UInt64, after seconds: Double) {
        queue.asyncAfter(deadline: .now() + max(0, seconds * 0.95)) { [weak self] in
            self?.runKeepAlive(generation)
        }
    }

    /// A wake-up for another reason: the keep-alive runs now when it is due within the last
    /// tenth of its timeout, so the app is not woken again for it shortly after.
    private func runKeepAliveIfDueSoon() {
        let due = state.withLock { s -> UInt64? in
            guard let k = s.keepAlive, k.runningUntil == nil, Self.now() - k.last >= k.timeout * 0.9 else { return nil }
            return k.generation
        }
        if let due { queue.async { [weak self] in self?.runKeepAlive(due) } }
    }

    private func runKeepAlive(_ generation: UInt64) {
        let now = Self.now()
        let due = state.withLock { s -> KeepAlive? in
            guard var k = s.keepAlive, k.generation == generation, k.runningUntil == nil else { return nil }
            if now - k.last < k.timeout * 0.9 { return nil }  // ran early meanwhile: its own timer is armed
            k.runningUntil = now + configuration.keepAliveHandlerTime
            k.last = now
            k.generation += 1
            s.keepAlive = k
            return k
        }
        guard let due else { return }
        if applicationState == .suspended { resume(reason: "keep-alive") }
        scheduleKeepAlive(due.generation, after: due.timeout)
        let handler = due.handler
        handlerQueue.async { [weak self] in
            handler()
            self?.queue.async { [weak self] in self?.keepAliveFinished(due.generation) }
        }
        // The handler's time is up whether or not it returned.
        queue.asyncAfter(deadline: .now() + configuration.keepAliveHandlerTime) { [weak self] in
            self?.keepAliveFinished(due.generation)
        }
    }

    private func keepAliveFinished(_ generation: UInt64) {
        state.withLock { s in
            if s.keepAlive?.generation == generation { s.keepAlive?.runningUntil = nil }
        }
        evaluate()
    }

    // MARK: - Participants, hooks, events

    /// Registers a participant (players do this themselves).
    package func register(_ participant: any ApplicationParticipant) {
        state.withLock { s in
            s.participants.removeAll { $0.participant == nil }
            s.participants.append(Weak(participant: participant))
        }
    }

    private var participants: [any ApplicationParticipant] {
        state.withLock { $0.participants.compactMap(\.participant) }
    }

    /// Adds a suspension hook: called (on the app's queue, with `.suspended`) once each time the
    /// app is suspended, before participants release their devices. Returns a token.
    @discardableResult
    public func addSuspensionHook(_ hook: @escaping @Sendable (ApplicationState) -> Void) -> SuspensionHookToken {
        state.withLock { s in
            let t = s.nextToken
            s.nextToken += 1
            s.hooks[t] = hook
            return ObservationToken(t)
        }
    }

    /// Removes a hook added with ``addSuspensionHook(_:)``.
    public func removeSuspensionHook(_ token: SuspensionHookToken) {
        _ = state.withLock { $0.hooks.removeValue(forKey: token.id) }
    }

    /// What a suspension hook's token is typed for (tokens of observers and hooks do not mix).
    public enum SuspensionHook {}
    /// A token for an observer of an ``Application``.
    public typealias ObserverToken = ObservationToken<Application>
    /// A token for a suspension hook.
    public typealias SuspensionHookToken = ObservationToken<SuspensionHook>

    /// Calls `handler` on `queue` for every event, in order; returns a token.
    @discardableResult
    public func addObserver(queue: DispatchQueue, _ handler: @escaping @Sendable (ApplicationEvent) -> Void) -> ObserverToken {
        broadcaster.addObserver(for: Application.self, queue: queue, handler)
    }

    /// ``addObserver(queue:_:)`` on the main queue for main-actor code (no
    /// `MainActor.assumeIsolated` needed in the handler).
    @discardableResult
    public func addObserver(_ handler: @escaping @MainActor @Sendable (ApplicationEvent) -> Void) -> ObserverToken {
        addObserver(queue: .main) { e in MainActor.assumeIsolated { handler(e) } }
    }

    /// Removes a handler added with ``addObserver(queue:_:)``.
    public func removeObserver(_ token: ObserverToken) { broadcaster.removeObserver(token) }

    /// Every event from now on.
    public func events() -> AsyncStream<ApplicationEvent> { broadcaster.events() }

    private func post(_ event: ApplicationEvent) { broadcaster.post(event) }

    // MARK: - Background execution (on `queue`, every 50 ms while in the background)

    private func evaluate() {
        let now = Self.now()
        let (current, since, tasks) = state.withLock { s in (s.state, s.backgroundSince, s.tasks) }
        guard current == .background, let since else { return }
        let elapsed = now - since
        // Expiration handlers, shortly before the budget ends.
        if elapsed >= configuration.backgroundTaskBudget - configuration.expirationWarning {
            for (id, task) in tasks where !task.warned {
                state.withLock { $0.tasks[id]?.warned = true }
                post(.backgroundTaskExpiring(name: task.name))
                if let handler = task.expiration { handlerQueue.async(execute: handler) }
            }
        }
        // Budget spent: tasks still open are reported and ended.
        if elapsed >= configuration.backgroundTaskBudget {
            let leaked = state.withLock { s -> [Task] in
                defer { s.tasks = [:] }
                return Array(s.tasks.values)
            }
            for t in leaked { post(.backgroundTaskLeaked(name: t.name)) }
        }
        let audio = participants.contains { $0.keepsAppRunningInBackground }
        let busy = audio || state.withLock { s in !s.tasks.isEmpty || (s.keepAlive?.runningUntil.map { now < $0 } ?? false) }
        let idleSince = state.withLock { s -> Double? in
            if busy { s.idleSince = nil } else if s.idleSince == nil { s.idleSince = now }
            return s.idleSince
        }
        if let idleSince, now - idleSince >= configuration.suspensionGracePeriod {
            suspend(reason: "nothing keeps the app running in the background")
        }
    }

    private func suspend(reason: String) {
        let hooks = state.withLock { s -> [@Sendable (ApplicationState) -> Void]? in
            guard s.state == .background else { return nil }
            s.state = .suspended
            s.idleSince = nil
            return Array(s.hooks.values)
        }
        guard let hooks else { return }
        for h in hooks { h(.suspended) }
        for p in participants { p.applicationWillSuspend() }
        post(.didSuspend(reason: reason))
    }
}
