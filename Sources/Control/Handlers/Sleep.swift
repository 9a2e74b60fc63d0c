// The sleep timer.

/// Pauses after some minutes (with an optional fade) or at the end of the item; cancels; or reads it.
public struct SleepCommand: ControlCommand {
    public enum Action: Sendable, Equatable {
        case read
        case cancel
        case after(minutes: Double, fade: Double)
        case endOfItem
    }
    public static let descriptor = CommandDescriptor(
        Self.self, "sleep", .sleep,
        "Sleep timer: pause after N minutes (with an optional fade) or at the end of the item; cancel; or read it.",
        [("minutes", .number, ""), ("endOfItem", .boolean, ""), ("fade", .number, "fade-out seconds before the deadline"), ("cancel", .boolean, "")])
    public var action: Action
    public init(action: Action) { self.action = action }
    public init(_ a: Arguments) throws(CommandError) {
        if a.bool("cancel") == true { action = .cancel; return }
        let minutes = a.number("minutes")
        let endOfItem = a.bool("endOfItem") ?? false
        let fade = a.number("fade") ?? 0
        guard fade >= 0, fade <= 600 else { throw .badArgument("sleep: fade is 0 to 600 seconds") }
        switch (minutes, endOfItem) {
        case (nil, false): action = .read
        case (_?, true): throw .badArgument("sleep: give \"minutes\" or \"endOfItem\", not both")
        case (nil, true): action = .endOfItem
        case (let m?, false):
            guard m > 0, m <= 24 * 60 else { throw .badArgument("sleep: minutes is more than 0, at most 1440") }
            action = .after(minutes: m, fade: fade)
        }
    }
    public var arguments: Arguments {
        switch action {
        case .read: Arguments()
        case .cancel: Arguments(["cancel": .boolean(true)])
        case .endOfItem: Arguments(["endOfItem": .boolean(true)])
        case .after(let m, let f): Arguments(["minutes": .number(m), "fade": .number(f)])
        }
    }
    public func run(_ x: CommandContext) -> Reply {
        let p = x.playback
        switch action {
        case .read: break
        case .cancel:
            p.cancelSleep()
            p.post(.sleep(.cancelled))
            return .sleep(nil)
        case .endOfItem: p.setSleepAtEndOfItem()
        case .after(let m, let f): p.setSleep(minutes: m, fade: f)
        }
        return .sleep(p.sleepSnapshot)
    }
}
