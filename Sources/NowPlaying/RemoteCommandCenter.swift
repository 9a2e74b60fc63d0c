import Broadcast
import Dispatch
import FoundationEssentials
import Lifecycle
import Session
import Synchronization
import Locking

/// What a command handler reports (`MPRemoteCommandHandlerStatus`).
public enum RemoteCommandHandlerStatus: Int, Sendable {
    /// The command was carried out (`MPRemoteCommandHandlerStatus.success`).
    case success = 0
    /// The content the command asks for does not exist (`.noSuchContent`).
    case noSuchContent = 100
    /// There is nothing to act on: no current item (`.noActionableNowPlayingItem`).
    case noActionableNowPlayingItem = 110
    /// The output device the command needs is not there (`.deviceNotFound`).
    case deviceNotFound = 120
    /// The command could not be carried out (`.commandFailed`); also the answer of a disabled
    /// command, a command without a handler, or an unsupported rate.
    case commandFailed = 200
}

/// The commands (`MPRemoteCommandCenter`'s properties).
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum RemoteCommandKind: String, Sendable, CaseIterable {
    /// Start playing (`MPRemoteCommandCenter.playCommand`).
    case play
    /// Pause (`pauseCommand`).
    case pause
    /// Stop playing (`stopCommand`).
    case stop
    /// Play when paused, pause when playing (`togglePlayPauseCommand`).
    case togglePlayPause
    /// Go to the next item (`nextTrackCommand`).
    case nextTrack
    /// Go to the previous item, or restart this one (`previousTrackCommand`).
    case previousTrack
    /// Seek to a position, with ``RemoteCommandEvent/Payload-swift.enum/position(_:)``
    /// (`changePlaybackPositionCommand`).
    case changePlaybackPosition
    /// Jump forward by an interval, with ``RemoteCommandEvent/Payload-swift.enum/skip(interval:)``
    /// (`skipForwardCommand`).
    case skipForward
    /// Jump back by an interval, with ``RemoteCommandEvent/Payload-swift.enum/skip(interval:)``
    /// (`skipBackwardCommand`).
    case skipBackward
    /// Fast-forward while held, with ``RemoteCommandEvent/Payload-swift.enum/seek(_:)``
    /// (`seekForwardCommand`).
    case seekForward
    /// Rewind while held, with ``RemoteCommandEvent/Payload-swift.enum/seek(_:)``
    /// (`seekBackwardCommand`).
    case seekBackward
    /// Change the repeat mode, with
    /// ``RemoteCommandEvent/Payload-swift.enum/repeatMode(_:preservesRepeatMode:)``
    /// (`changeRepeatModeCommand`).
    case changeRepeatMode
    /// Change the shuffle mode, with
    /// ``RemoteCommandEvent/Payload-swift.enum/shuffleMode(_:preservesShuffleMode:)``
    /// (`changeShuffleModeCommand`).
    case changeShuffleMode
    /// Change the playback rate, with ``RemoteCommandEvent/Payload-swift.enum/rate(_:)``
    /// (`changePlaybackRateCommand`).
    case changePlaybackRate
    /// Like the item, with ``RemoteCommandEvent/Payload-swift.enum/feedback(isNegative:)``
    /// (`likeCommand`).
    case like
    /// Dislike the item, with ``RemoteCommandEvent/Payload-swift.enum/feedback(isNegative:)``
    /// (`dislikeCommand`).
    case dislike
    /// Bookmark the item, with ``RemoteCommandEvent/Payload-swift.enum/feedback(isNegative:)``
    /// (`bookmarkCommand`).
    case bookmark
}

/// A repeat mode (`MPRepeatType`), for ``RemoteCommandKind/changeRepeatMode``.
public enum RepeatType: Int, Sendable {
    /// Play the queue once (`MPRepeatType.off`).
    case off = 0
    /// Repeat the current item (`MPRepeatType.one`).
    case one = 1
    /// Repeat the whole queue (`MPRepeatType.all`).
    case all = 2
}
/// A shuffle mode (`MPShuffleType`), for ``RemoteCommandKind/changeShuffleMode``.
public enum ShuffleType: Int, Sendable {
    /// Play in order (`MPShuffleType.off`).
    case off = 0
    /// Shuffle the items (`MPShuffleType.items`).
    case items = 1
    /// Shuffle whole collections, such as albums (`MPShuffleType.collections`).
    case collections = 2
}
/// The phase of a press-and-hold seek (`MPSeekCommandEventType`), for
/// ``RemoteCommandKind/seekForward`` and ``RemoteCommandKind/seekBackward``.
public enum SeekCommandEventType: Int, Sendable {
    /// The button was pressed: start seeking (`.beginSeeking`).
    case beginSeeking = 0
    /// The button was released: stop seeking (`.endSeeking`).
    case endSeeking = 1
}

/// A command event (`MPRemoteCommandEvent` and its subclasses' fields).
public struct RemoteCommandEvent: Sendable, Equatable {
    /// The command's argument: the fields of `MPSkipIntervalCommandEvent`,
    /// `MPChangePlaybackPositionCommandEvent` and the other event subclasses.
    ///
    /// Cases may be added in a minor version: `switch` over it with a `default:` case, as over
    /// Apple's non-frozen enums.
    public enum Payload: Sendable, Equatable {
        /// No argument (play, pause, next, …; a skip without one uses the command's first
        /// preferred interval).
        case none
        /// skipForward / skipBackward: seconds.
        case skip(interval: Double)
        /// seekForward / seekBackward: press and hold.
        case seek(SeekCommandEventType)
        /// changePlaybackPosition: seconds.
        case position(Double)
        /// changePlaybackRate: one of the command's supported rates.
        case rate(Float)
        /// changeRepeatMode: the new mode, and whether it should outlast the current queue
        /// (`MPChangeRepeatModeCommandEvent`).
        case repeatMode(RepeatType, preservesRepeatMode: Bool)
        /// changeShuffleMode: the new mode, and whether it should outlast the current queue
        /// (`MPChangeShuffleModeCommandEvent`).
        case shuffleMode(ShuffleType, preservesShuffleMode: Bool)
        /// like / dislike / bookmark: `isNegative` is "un-like", "remove bookmark".
        case feedback(isNegative: Bool)
    }

    /// The command to carry out (which of `MPRemoteCommandCenter`'s commands sent the event).
    public var command: RemoteCommandKind
    /// The command's argument, if it takes one.
    public var payload: Payload
    /// Monotonic seconds when it was dispatched.
    public var timestamp: Double

    /// An event for `command`, stamped now.
    /// - Parameters:
    ///   - command: The command to carry out.
    ///   - payload: Its argument (``Payload-swift.enum/none`` for commands that take none).
    ///   - timestamp: Monotonic seconds when it was dispatched (now by default).
    public init(command: RemoteCommandKind, payload: Payload = .none,
                timestamp: Double = Double(DispatchTime.now().uptimeNanoseconds) / 1e9) {
        self.command = command
        self.payload = payload
        self.timestamp = timestamp
    }
}

/// The answer to a dispatched command: the status and, unless success, why.
public struct RemoteCommandResult: Sendable, Equatable {
    /// What the handlers reported: the first status that is not `success`, else `success`.
    public var status: RemoteCommandHandlerStatus
    /// Why the command did not succeed (the command and the problem, for people); nil on success.
    public var reason: String?
    /// A result with a status and, unless it is a success, a reason.
    /// - Parameters:
    ///   - status: What the handlers reported.
    ///   - reason: Why, when the command did not succeed.
    public init(_ status: RemoteCommandHandlerStatus, _ reason: String? = nil) {
        self.status = status
        self.reason = reason
    }
}

/// One command (`MPRemoteCommand` and subclasses): enabled state, targets, and the extra
/// properties of its class.
public final class RemoteCommand: Sendable {
    /// Which command this is (``RemoteCommandCenter/command(_:)`` returns it for this kind).
    public let kind: RemoteCommandKind

    struct State {
        var enabled = true
        var targets: [(UInt64, @Sendable (RemoteCommandEvent) -> RemoteCommandHandlerStatus)] = []
        var preferredIntervals: [Double] = [15]
        var supportedPlaybackRates: [Float] = [1]
        var currentRepeatType = RepeatType.off
        var currentShuffleType = ShuffleType.off
        var isActive = false
        var localizedTitle = ""
    }

    let state = Lock(State())

    init(_ kind: RemoteCommandKind) { self.kind = kind }

    /// Whether the command is enabled (a disabled command answers `commandFailed`).
    public var isEnabled: Bool {
        get { state.withLock { $0.enabled } }
        set { state.withLock { $0.enabled = newValue } }
    }

    /// A token for a handler of a ``RemoteCommand`` (unique across all commands).
    public typealias Target = ObservationToken<RemoteCommand>
    private static let tokens = Atomic<UInt64>(0)

    /// Adds a handler, called on the center's handler queue (the main queue for
    /// ``RemoteCommandCenter/shared``); returns a token for ``removeTarget(_:)``.
    @discardableResult
    public func addTarget(handler: @escaping @Sendable (RemoteCommandEvent) -> RemoteCommandHandlerStatus) -> Target {
        let t = Self.tokens.wrappingAdd(1, ordering: .relaxed).newValue
        state.withLock { $0.targets.append((t, handler)) }
        return Target(t)
    }

    /// Removes one handler, or all of them with nil (`removeTarget(nil)`). A token of another
    /// command removes nothing.
    public func removeTarget(_ token: Target?) {
        state.withLock { s in
            if let token { s.targets.removeAll { $0.0 == token.id } } else { s.targets = [] }
        }
    }

    /// Whether any handler is registered.
    public var hasTargets: Bool { state.withLock { !$0.targets.isEmpty } }

    /// skipForward/skipBackward (`MPSkipIntervalCommand`): the intervals offered, seconds.
    public var preferredIntervals: [Double] {
        get { state.withLock { $0.preferredIntervals } }
        set { state.withLock { $0.preferredIntervals = newValue } }
    }

    /// changePlaybackRate (`MPChangePlaybackRateCommand`): the rates offered.
    public var supportedPlaybackRates: [Float] {
        get { state.withLock { $0.supportedPlaybackRates } }
        set { state.withLock { $0.supportedPlaybackRates = newValue } }
    }

    /// changeRepeatMode: the mode shown now.
    public var currentRepeatType: RepeatType {
        get { state.withLock { $0.currentRepeatType } }
        set { state.withLock { $0.currentRepeatType = newValue } }
    }

    /// changeShuffleMode: the mode shown now.
    public var currentShuffleType: ShuffleType {
        get { state.withLock { $0.currentShuffleType } }
        set { state.withLock { $0.currentShuffleType = newValue } }
    }

    /// like/dislike/bookmark (`MPFeedbackCommand.isActive`): whether the feedback is on (the
    /// item is liked, disliked or bookmarked).
    public var isActive: Bool {
        get { state.withLock { $0.isActive } }
        set { state.withLock { $0.isActive = newValue } }
    }

    /// like/dislike/bookmark (`MPFeedbackCommand.localizedTitle`): the title shown for the
    /// feedback (empty by default).
    public var localizedTitle: String {
        get { state.withLock { $0.localizedTitle } }
        set { state.withLock { $0.localizedTitle = newValue } }
    }

    /// Runs the handlers (on the caller's thread: the center calls this on its handler queue).
    /// Several handlers: each runs, in the order added; the answer is the first status that is
    /// not `success` (so any handler can veto), else `success`.
    func runHandlers(_ event: RemoteCommandEvent) -> RemoteCommandResult {
        let (enabled, targets, rates) = state.withLock { s in (s.enabled, s.targets.map(\.1), s.supportedPlaybackRates) }
        guard enabled else { return RemoteCommandResult(.commandFailed, "\(kind.rawValue) is disabled") }
        guard !targets.isEmpty else { return RemoteCommandResult(.commandFailed, "\(kind.rawValue) has no handler") }
        if case .rate(let r) = event.payload, !rates.contains(r) {
            return RemoteCommandResult(.commandFailed, "playback rate \(r) is not supported (supported: \(rates.map { "\($0)" }.joined(separator: ", ")))")
        }
        var result = RemoteCommandResult(.success)
        for handler in targets {
            let status = handler(event)
            if status != .success && result.status == .success {
                result = RemoteCommandResult(status, "\(kind.rawValue): \(Self.describe(status))")
            }
        }
        return result
    }

    static func describe(_ s: RemoteCommandHandlerStatus) -> String {
        switch s {
        case .success: "done"
        case .noSuchContent: "no such content"
        case .noActionableNowPlayingItem: "nothing is playing"
        case .deviceNotFound: "device not found"
        case .commandFailed: "command failed"
        }
    }
}

/// The remote commands (`MPRemoteCommandCenter`). ``dispatch(_:completion:)`` (or `dispatch(_:)`, waiting or awaited) delivers a command as the
/// system would to the now-playing app, and returns the handlers' answer.
///
/// Handlers run on the center's ``handlerQueue``: the main queue unless the center was made
/// with another, as MediaPlayer calls them on the main thread. So an ordinary `@MainActor`
/// controller can use `MainActor.assumeIsolated` in a handler of ``shared``, whichever thread
/// or process sent the command. (A program whose main thread does not run the main queue, such
/// as one blocked in a loop of its own, makes its center with a queue of its own.)
public final class RemoteCommandCenter: Sendable {
    /// The process's command center (handlers on the main queue).
    public static let shared = RemoteCommandCenter()

    /// The serial queue the handlers run on.
    public let handlerQueue: DispatchQueue
    /// The app a command received from another process wakes when it is suspended.
    let application: Application
    /// Marks ``handlerQueue`` so that a dispatch from it runs the handlers in place.
    private let onHandlerQueue = DispatchSpecificKey<Bool>()

    /// Start playing (`MPRemoteCommandCenter.playCommand`).
    public let playCommand = RemoteCommand(.play)
    /// Pause (`MPRemoteCommandCenter.pauseCommand`).
    public let pauseCommand = RemoteCommand(.pause)
    /// Stop playing (`MPRemoteCommandCenter.stopCommand`).
    public let stopCommand = RemoteCommand(.stop)
    /// Play when paused, pause when playing (`MPRemoteCommandCenter.togglePlayPauseCommand`).
    public let togglePlayPauseCommand = RemoteCommand(.togglePlayPause)
    /// Go to the next item (`MPRemoteCommandCenter.nextTrackCommand`).
    public let nextTrackCommand = RemoteCommand(.nextTrack)
    /// Go to the previous item, or restart the current one (`MPRemoteCommandCenter.previousTrackCommand`).
    public let previousTrackCommand = RemoteCommand(.previousTrack)
    /// Seek to a position (`MPRemoteCommandCenter.changePlaybackPositionCommand`).
    public let changePlaybackPositionCommand = RemoteCommand(.changePlaybackPosition)
    /// Jump forward by an interval (see ``RemoteCommand/preferredIntervals``) (`MPRemoteCommandCenter.skipForwardCommand`).
    public let skipForwardCommand = RemoteCommand(.skipForward)
    /// Jump back by an interval (see ``RemoteCommand/preferredIntervals``) (`MPRemoteCommandCenter.skipBackwardCommand`).
    public let skipBackwardCommand = RemoteCommand(.skipBackward)
    /// Fast-forward while held (`MPRemoteCommandCenter.seekForwardCommand`).
    public let seekForwardCommand = RemoteCommand(.seekForward)
    /// Rewind while held (`MPRemoteCommandCenter.seekBackwardCommand`).
    public let seekBackwardCommand = RemoteCommand(.seekBackward)
    /// Change the repeat mode (see ``RemoteCommand/currentRepeatType``) (`MPRemoteCommandCenter.changeRepeatModeCommand`).
    public let changeRepeatModeCommand = RemoteCommand(.changeRepeatMode)
    /// Change the shuffle mode (see ``RemoteCommand/currentShuffleType``) (`MPRemoteCommandCenter.changeShuffleModeCommand`).
    public let changeShuffleModeCommand = RemoteCommand(.changeShuffleMode)
    /// Change the playback rate (see ``RemoteCommand/supportedPlaybackRates``) (`MPRemoteCommandCenter.changePlaybackRateCommand`).
    public let changePlaybackRateCommand = RemoteCommand(.changePlaybackRate)
    /// Like the item (`MPRemoteCommandCenter.likeCommand`).
    public let likeCommand = RemoteCommand(.like)
    /// Dislike the item (`MPRemoteCommandCenter.dislikeCommand`).
    public let dislikeCommand = RemoteCommand(.dislike)
    /// Bookmark the item (`MPRemoteCommandCenter.bookmarkCommand`).
    public let bookmarkCommand = RemoteCommand(.bookmark)

    /// A center whose handlers run on `handlerQueue` (serial; the main queue by default), and
    /// whose commands from other processes wake `application` when it is suspended.
    public init(handlerQueue: DispatchQueue = .main, application: Application = .shared) {
        self.handlerQueue = handlerQueue
        self.application = application
        handlerQueue.setSpecific(key: onHandlerQueue, value: true)
    }

    /// The command object for `kind`.
    public func command(_ kind: RemoteCommandKind) -> RemoteCommand {
        switch kind {
        case .play: playCommand
        case .pause: pauseCommand
        case .stop: stopCommand
        case .togglePlayPause: togglePlayPauseCommand
        case .nextTrack: nextTrackCommand
        case .previousTrack: previousTrackCommand
        case .changePlaybackPosition: changePlaybackPositionCommand
        case .skipForward: skipForwardCommand
        case .skipBackward: skipBackwardCommand
        case .seekForward: seekForwardCommand
        case .seekBackward: seekBackwardCommand
        case .changeRepeatMode: changeRepeatModeCommand
        case .changeShuffleMode: changeShuffleModeCommand
        case .changePlaybackRate: changePlaybackRateCommand
        case .like: likeCommand
        case .dislike: dislikeCommand
        case .bookmark: bookmarkCommand
        }
    }

    /// Delivers `event` to its command's handlers on ``handlerQueue`` and waits for their
    /// answer (in place when called on that queue). A disabled command, or one without a
    /// handler, answers `commandFailed` with the reason; so does a rate the command does not
    /// support. A skip without an interval uses the command's first preferred interval.
    ///
    /// Waiting blocks the caller: never call this form where the handler queue waits for the
    /// caller (use ``dispatch(_:completion:)`` or `await` ``dispatch(_:)`` there).
    @discardableResult
    public func dispatch(_ event: RemoteCommandEvent) -> RemoteCommandResult {
        if DispatchQueue.getSpecific(key: onHandlerQueue) == true { return run(event) }
        return handlerQueue.sync { run(event) }
    }

    /// Delivers `event` as `dispatch(_:)` does and calls `completion` with the answer, on the
    /// handler queue, without blocking the caller.
    public func dispatch(_ event: RemoteCommandEvent, completion: @escaping @Sendable (RemoteCommandResult) -> Void) {
        handlerQueue.async { [self] in completion(run(event)) }
    }

    /// Delivers `event` as ``dispatch(_:)`` does and returns the handlers' answer.
    @discardableResult
    public func dispatch(_ event: RemoteCommandEvent) async -> RemoteCommandResult {
        await withCheckedContinuation { (c: CheckedContinuation<RemoteCommandResult, Never>) in
            dispatch(event) { c.resume(returning: $0) }
        }
    }

    private func run(_ event: RemoteCommandEvent) -> RemoteCommandResult {
        let c = command(event.command)
        var e = event
        if (event.command == .skipForward || event.command == .skipBackward), event.payload == .none {
            e.payload = .skip(interval: c.preferredIntervals.first ?? 15)
        }
        return c.runHandlers(e)
    }

    // MARK: - Across processes

    /// Makes this center receive the commands sent to `session` while it is the now-playing app
    /// (the last non-mixable session that played) from any process. A command wakes the app when
    /// it is suspended (as iOS wakes an audio app for a remote command), then runs on the
    /// handler queue; the sender gets the handlers' answer.
    public func receiveCommands(for session: AudioSession) {
        session.setRemoteCommandReceiver { [weak self] text, reply in
            guard let self else { return reply(RemoteCommandResult(.commandFailed, "the command center is gone").wire) }
            guard let event = RemoteCommandEvent(wire: text) else {
                return reply(RemoteCommandResult(.commandFailed, "unknown command \"\(text)\"").wire)
            }
            if application.applicationState == .suspended {
                application.resume(reason: "remote command \(event.command.rawValue)")
            }
            dispatch(event) { reply($0.wire) }
        }
    }

    /// Sends `event` to the now-playing app of `session`'s registry (which may be another
    /// process) without waiting for its answer. Returns the receiving session's id, or nil when
    /// no app is now playing.
    @discardableResult
    public static func send(_ event: RemoteCommandEvent, via session: AudioSession) -> String? {
        session.sendToNowPlayingApp(event.wire)
    }

    /// Sends `event` to the now-playing app of `session`'s registry (which may be another
    /// process) and returns its handlers' answer: `commandFailed` with the reason when no app is
    /// now playing or it does not answer within `timeout` seconds.
    public static func send(_ event: RemoteCommandEvent, via session: AudioSession, timeout: Double) async -> RemoteCommandResult {
        let answer = await withCheckedContinuation { (c: CheckedContinuation<AudioSession.RemoteAnswer, Never>) in
            session.requestNowPlayingApp(event.wire, timeout: timeout) { c.resume(returning: $0) }
        }
        switch answer {
        case .noNowPlayingApp: return RemoteCommandResult(.commandFailed, "no app is now playing")
        case .timedOut(let id): return RemoteCommandResult(.commandFailed, "the now-playing app (\(id)) did not answer within \(timeout) s")
        case .answer(let text):
            return RemoteCommandResult(wire: text) ?? RemoteCommandResult(.commandFailed, "unreadable answer \"\(text)\"")
        }
    }
}

extension RemoteCommandResult {
    /// `status [reason]`: the answer sent back between processes.
    var wire: String { reason.map { "\(status.rawValue) \($0)" } ?? "\(status.rawValue)" }

    init?(wire: String) {
        let parts = wire.split(separator: " ", maxSplits: 1).map(String.init)
        guard let first = parts.first, let raw = Int(first), let status = RemoteCommandHandlerStatus(rawValue: raw) else { return nil }
        self.init(status, parts.count > 1 ? parts[1] : nil)
    }
}

extension RemoteCommandEvent {
    /// `kind [argument]`: the one-line form sent between processes.
    var wire: String {
        switch payload {
        case .none: command.rawValue
        case .skip(let i): "\(command.rawValue) \(i)"
        case .seek(let t): "\(command.rawValue) \(t.rawValue)"
        case .position(let p): "\(command.rawValue) \(p)"
        case .rate(let r): "\(command.rawValue) \(r)"
        case .repeatMode(let r, let keep): "\(command.rawValue) \(r.rawValue) \(keep)"
        case .shuffleMode(let s, let keep): "\(command.rawValue) \(s.rawValue) \(keep)"
        case .feedback(let negative): "\(command.rawValue) \(negative)"
        }
    }

    init?(wire: String) {
        let parts = wire.split(separator: " ").map(String.init)
        guard let first = parts.first, let kind = RemoteCommandKind(rawValue: first) else { return nil }
        let a = parts.count > 1 ? parts[1] : nil
        let b = parts.count > 2 ? parts[2] == "true" : false
        var payload = Payload.none
        switch kind {
        case .skipForward, .skipBackward: if let a, let v = Double(a) { payload = .skip(interval: v) }
        case .seekForward, .seekBackward: payload = .seek(SeekCommandEventType(rawValue: Int(a ?? "0") ?? 0) ?? .beginSeeking)
        case .changePlaybackPosition:
            guard let a, let v = Double(a) else { return nil }
            payload = .position(v)
        case .changePlaybackRate:
            guard let a, let v = Float(a) else { return nil }
            payload = .rate(v)
        case .changeRepeatMode: payload = .repeatMode(RepeatType(rawValue: Int(a ?? "0") ?? 0) ?? .off, preservesRepeatMode: b)
        case .changeShuffleMode: payload = .shuffleMode(ShuffleType(rawValue: Int(a ?? "0") ?? 0) ?? .off, preservesShuffleMode: b)
        case .like, .dislike, .bookmark: payload = .feedback(isNegative: a == "true")
        default: break
        }
        self.init(command: kind, payload: payload)
    }
}
