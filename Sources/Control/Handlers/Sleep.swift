import BacklineSchema
import PlayQueue

// The sleep timer.

/// Pauses after some minutes (with an optional fade), at the end of the item or of the chapter;
/// cancels; or reads it.
public struct SleepCommand: ControlCommand {
    public enum Action: Sendable, Equatable {
        case read
        case cancel
        case after(minutes: Double, fade: Double)
        case endOfItem
        /// Pause where the next chapter starts (at the item's end when it has none).
        case endOfChapter
    }
    public static let descriptor = CommandDescriptor(Self.self, .sleep, .sleep)
    public var action: Action
    public init(action: Action) { self.action = action }
    public init(_ a: Arguments) throws(CommandError) {
        if a.bool("cancel") == true { action = .cancel; return }
        let minutes = a.number("minutes")
        let endOfItem = a.bool("endOfItem") ?? false
        if a.bool("endOfChapter") == true {
            guard minutes == nil, !endOfItem else { throw .badArgument("sleep: give \"minutes\", \"endOfItem\" or \"endOfChapter\", one of them") }
            action = .endOfChapter
            return
        }
        let fade = a.number("fade") ?? 0
        guard fade >= 0, fade <= Limits.fadeSeconds else { throw .badArgument("sleep: fade is 0 to \(Int(Limits.fadeSeconds)) seconds") }
        switch (minutes, endOfItem) {
        case (nil, false): action = .read
        case (_?, true): throw .badArgument("sleep: give \"minutes\" or \"endOfItem\", not both")
        case (nil, true): action = .endOfItem
        case (let m?, false):
            guard m > 0, m <= 24 * 60 else {
                throw .badArgument("sleep: minutes must be more than 0 and at most 1440 (24 hours); to turn the timer off, cancel it")
            }
            action = .after(minutes: m, fade: fade)
        }
    }
    public var arguments: Arguments {
        switch action {
        case .read: Arguments()
        case .cancel: Arguments(["cancel": .boolean(true)])
        case .endOfItem: Arguments(["endOfItem": .boolean(true)])
        case .endOfChapter: Arguments(["endOfChapter": .boolean(true)])
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
        case .endOfChapter: p.setSleepAtEndOfItem(orChapter: true)
        case .after(let m, let f): p.setSleep(minutes: m, fade: f)
        }
        return .sleep(p.sleepSnapshot)
    }
}

/// Alarms: start playback at a wall-clock time (fading in), once or daily; list; cancel.
public struct AlarmCommand: ControlCommand {
    public enum Action: Sendable, Equatable {
        case list
        case cancel(id: Int)
        case set(hour: Int, minute: Int, second: Int, daily: Bool, fade: Double, item: Int?, playlist: String?)
    }
    public static let descriptor = CommandDescriptor(Self.self, .alarm, .sleep)
    public var action: Action
    public init(action: Action) { self.action = action }
    public init(_ a: Arguments) throws(CommandError) {
        if let id = a.integer("cancel") { action = .cancel(id: id); return }
        guard let time = a.string("time") else { action = .list; return }
        guard let (h, m, s) = Alarm.parseTime(time) else { throw .badArgument("alarm: time is HH:MM or HH:MM:SS (got \(time))") }
        let fade = a.number("fade") ?? 0
        guard fade >= 0, fade <= Limits.fadeSeconds else { throw .badArgument("alarm: fade is 0 to \(Int(Limits.fadeSeconds)) seconds") }
        if a.integer("item") != nil, a.string("playlist") != nil { throw .badArgument("alarm: give \"item\" or \"playlist\", not both") }
        action = .set(hour: h, minute: m, second: s, daily: a.bool("daily") ?? false, fade: fade,
                      item: a.integer("item"), playlist: a.string("playlist"))
    }
    public var arguments: Arguments {
        switch action {
        case .list: return Arguments()
        case .cancel(let id): return Arguments(["cancel": .integer(id)])
        case .set(let h, let m, let s, let daily, let fade, let item, let playlist):
            var v: [String: ArgumentValue] = ["time": .string(Alarm(id: 0, hour: h, minute: m, second: s).time), "daily": .boolean(daily), "fade": .number(fade)]
            if let item { v["item"] = .integer(item) }
            if let playlist { v["playlist"] = .string(playlist) }
            return Arguments(v)
        }
    }
    public func run(_ x: CommandContext) throws(CommandError) -> Reply {
        let p = x.dispatcher.playback  // alarms are the default partition's (saved and fired there)
        switch action {
        case .list: break
        case .cancel(let id):
            guard p.cancelAlarm(id) else { throw .notFound("alarm: no alarm \(id)") }
        case .set(let h, let m, let s, let daily, let fade, let item, let playlist):
            if let item, !p.queue.entries.contains(where: { $0.id == item }) { throw .noSuchItem("alarm: no item with id \(item) in the queue") }
            if let playlist, p.playlists?.all().contains(where: { $0.name == playlist }) != true {
                throw .notFound("alarm: no stored playlist \"\(playlist)\"")
            }
            try p.setAlarm(hour: h, minute: m, second: s, daily: daily, fade: fade, item: item, playlist: playlist)
        }
        return .alarms(p.alarms)
    }
}
