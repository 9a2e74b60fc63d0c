import BacklineSchema
import Lifecycle
import Session

// Session and life cycle.

/// Changes the audio session (category and options, silent switch, screen lock); answers it.
public struct SessionCommand: ControlCommand {
    public static let descriptor = CommandDescriptor(Self.self, .session, .session)
    public var category: SessionCategory?
    public var options: SessionCategoryOptions
    public var silentSwitch: Bool?
    public var screenLocked: Bool?
    public init(category: SessionCategory? = nil, options: SessionCategoryOptions = [], silentSwitch: Bool? = nil, screenLocked: Bool? = nil) {
        (self.category, self.options, self.silentSwitch, self.screenLocked) = (category, options, silentSwitch, screenLocked)
    }
    static let optionNames: [(String, SessionCategoryOptions)] = [
        ("mixWithOthers", .mixWithOthers), ("duckOthers", .duckOthers),
        ("interruptSpokenAudioAndMixWithOthers", .interruptSpokenAudioAndMixWithOthers),
    ]
    public init(_ a: Arguments) throws(CommandError) {
        if let c = a.string("category") {
            guard let category = SessionCategory(rawValue: c) else {
                throw .badArgument("session: category is ambient, soloAmbient or playback")
            }
            self.category = category
        } else if a.strings("options") != nil {
            throw .badArgument("session: options need a category")
        }
        options = []
        for o in a.strings("options") ?? [] {
            guard let option = Self.optionNames.first(where: { $0.0 == o })?.1 else { throw .badArgument("session: unknown option \"\(o)\"") }
            options.insert(option)
        }
        silentSwitch = a.bool("silentSwitch")
        screenLocked = a.bool("screenLocked")
    }
    public var arguments: Arguments {
        var v: [String: ArgumentValue] = [:]
        if let category {
            v["category"] = .string(category.rawValue)
            v["options"] = .strings(Self.optionNames.filter { options.contains($0.1) }.map(\.0))
        }
        if let silentSwitch { v["silentSwitch"] = .boolean(silentSwitch) }
        if let screenLocked { v["screenLocked"] = .boolean(screenLocked) }
        return Arguments(v)
    }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let s = x.playback.session
        if let category {
            // The message for people; the library keeps the code (`AudioSessionError.code`).
            do { try s.setCategory(category, options: options) } catch { throw .sessionError("session: \(error.message)") }
        }
        if let silentSwitch { s.silentSwitch = silentSwitch }
        if let screenLocked { s.screenLocked = screenLocked }
        return .session(x.playback.sessionSnapshot)
    }
}

/// Moves the daemon to the foreground or the background; answers the app state.
public struct LifecycleCommand: ControlCommand {
    public enum Target: String, Sendable { case foreground, background }
    public static let descriptor = CommandDescriptor(Self.self, .lifecycle, .session)
    /// nil: read it.
    public var target: Target?
    public init(target: Target?) { self.target = target }
    public init(_ a: Arguments) throws(CommandError) {
        guard let s = a.string("state") else { target = nil; return }
        guard let t = Target(rawValue: s) else { throw .badArgument("lifecycle: state is foreground or background") }
        target = t
    }
    public var arguments: Arguments { Arguments(target.map { ["state": .string($0.rawValue)] } ?? [:]) }
    public func run(_ x: CommandContext) -> Reply {
        let app = x.playback.application
        switch target {
        case .foreground?:
            app.enterForeground()
            app.becomeActive()
        case .background?:
            app.resignActive()
            app.enterBackground()
        case nil: break
        }
        return .app(app.applicationState)
    }
}
