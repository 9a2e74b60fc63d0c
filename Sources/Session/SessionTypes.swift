/// Audio session category (`AVAudioSession.Category`): the basic behaviour.
public enum SessionCategory: String, Sendable, CaseIterable, Codable {
    /// Mixes with others; silenced by the silent switch and the screen lock; no background audio.
    case ambient
    /// The default: interrupts other non-mixable sessions; silenced by switch and lock.
    case soloAmbient
    /// Music playback: interrupts others unless mixable; ignores switch and lock; plays in the background.
    case playback
}

/// Session mode (`AVAudioSession.Mode`), the two that mean something here.
public enum SessionMode: String, Sendable, Codable {
    /// The default mode (`AVAudioSession.Mode.default`): music and other content that is not
    /// spoken word.
    case `default`
    /// Spoken content (podcasts, audio books): paused by others'
    /// ``SessionCategoryOptions/interruptSpokenAudioAndMixWithOthers``.
    case spokenAudio
}

/// Category options (`AVAudioSession.CategoryOptions`), with Apple's raw values.
public struct SessionCategoryOptions: OptionSet, Sendable, Hashable, Codable {
    /// The options' bits, with Apple's values (`mixWithOthers` is `0x1`).
    public let rawValue: UInt
    /// Options from their bits (Apple's raw values).
    /// - Parameter rawValue: The bits, as `AVAudioSession.CategoryOptions(rawValue:)` takes them.
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// Mix with other active sessions instead of interrupting them.
    public static let mixWithOthers = SessionCategoryOptions(rawValue: 0x1)
    /// Lower other sessions' volume while active (implies ``mixWithOthers``).
    public static let duckOthers = SessionCategoryOptions(rawValue: 0x2)
    /// Interrupt others' spoken audio, mix with the rest (includes ``mixWithOthers``).
    public static let interruptSpokenAudioAndMixWithOthers = SessionCategoryOptions(rawValue: 0x11)

    /// The options' names, as Apple spells them (`interruptSpokenAudioAndMixWithOthers` covers
    /// the `mixWithOthers` it includes); unknown bits as a hexadecimal number.
    public var names: [String] {
        var rest = self
        var found: [(Int, String)] = []
        let known: [(Int, String, SessionCategoryOptions)] = [
            (2, "interruptSpokenAudioAndMixWithOthers", .interruptSpokenAudioAndMixWithOthers),
            (1, "duckOthers", .duckOthers), (0, "mixWithOthers", .mixWithOthers),
        ]
        for (order, name, option) in known where rest.isSuperset(of: option) {
            found.append((order, name))
            rest.subtract(option)
        }
        var names = found.sorted { $0.0 < $1.0 }.map(\.1)
        if !rest.isEmpty { names.append("0x" + String(rest.rawValue, radix: 16)) }
        return names
    }
}

/// Options for ``AudioSession/setActive(_:options:)`` (`AVAudioSession.SetActiveOptions`).
public struct SetActiveOptions: OptionSet, Sendable {
    /// The options' bits, with Apple's values.
    public let rawValue: UInt
    /// Options from their bits.
    /// - Parameter rawValue: The bits, as `AVAudioSession.SetActiveOptions(rawValue:)` takes them.
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// On deactivation, tell the sessions we interrupted that they may resume.
    public static let notifyOthersOnDeactivation = SetActiveOptions(rawValue: 1)
}

/// An audio-session error, with AVAudioSession's four-character codes: ``message`` is for
/// people, ``description`` adds the code (as `NSError` shows it), ``code`` is the code.
public struct AudioSessionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error's code (`AVAudioSession.ErrorCode`), with Apple's four-character values.
    ///
    /// Cases may be added in a minor version: `switch` over it with a `default:` case, as over
    /// Apple's non-frozen enums.
    public enum Code: Int, Sendable {
        /// `'!int'`: another session could not be interrupted.
        case cannotInterruptOthers = 560557684
        /// `'!act'`: deactivating while players are running.
        case isBusy = 560030580
        /// `'!cat'`: an option the category does not accept.
        case incompatibleCategory = 560161140
        /// `'msrv'`: the session registry could not be used.
        case mediaServicesFailed = 1836282486
    }
    /// What went wrong, as AVAudioSession's error code.
    public var code: Code
    /// What went wrong, for people (the category and options involved, what to do instead).
    public var message: String
    /// An error with a code and an explanation.
    /// - Parameters:
    ///   - code: The AVAudioSession error code.
    ///   - message: What went wrong, for people.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { "\(message) (AVAudioSession error \(code.rawValue))" }
}

/// Interruption reasons (`AVAudioSession.InterruptionReason`).
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum InterruptionReason: Int, Sendable {
    /// Another session activated.
    case `default` = 0
    /// The app was suspended.
    case appWasSuspended = 1
    /// The output route went away.
    case routeDisconnected = 4
}

/// Route-change reasons (`AVAudioSession.RouteChangeReason`).
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum RouteChangeReason: Int, Sendable {
    /// The reason is not known (`AVAudioSession.RouteChangeReason.unknown`).
    case unknown = 0
    /// The output device is available again after it was lost
    /// (`AVAudioSession.RouteChangeReason.newDeviceAvailable`); nothing plays by itself.
    case newDeviceAvailable = 1
    /// The output device failed or disappeared and the players paused
    /// (`AVAudioSession.RouteChangeReason.oldDeviceUnavailable`).
    case oldDeviceUnavailable = 2
    /// The session's category changed (`AVAudioSession.RouteChangeReason.categoryChange`).
    case categoryChange = 3
}

/// Session notifications, with Apple's payloads.
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum SessionEvent: Sendable, Equatable {
    /// `.began`: the session is already inactive and its players paused. `by` is the session
    /// that interrupted (its registry id), when known.
    case interruptionBegan(reason: InterruptionReason, by: String?)
    /// `.ended`: the interruption is over; resume only with `shouldResume`.
    case interruptionEnded(shouldResume: Bool)
    /// The output route changed.
    case routeChanged(reason: RouteChangeReason)
    /// The sound server restarted: players were reset; nothing restarts by itself.
    case mediaServicesWereReset
    /// Whether this session's output is silenced (silent switch or screen lock, for
    /// `ambient`/`soloAmbient`).
    case silencedChanged(Bool)
    /// Whether another session is ducking this one.
    case duckingChanged(Bool)
}

/// What a session tells the players using it (QueuePlayer implements it).
package protocol AudioSessionParticipant: AnyObject, Sendable {
    /// Whether the participant is producing sound (rate ≠ 0): running I/O.
    var isRunningIO: Bool { get }
    /// The session was interrupted: stop playing (remember whether it was playing).
    func sessionInterrupted()
    /// The interruption ended; `shouldResume` says whether to resume if it was playing.
    func sessionInterruptionEnded(shouldResume: Bool)
    /// Output gain from the session: 0 silenced, < 1 ducked, 1 normal.
    func sessionGainChanged(_ gain: Float)
    /// The app deactivated the session while this participant was running I/O: stop it.
    func sessionDeactivatedWhileRunning()
}
