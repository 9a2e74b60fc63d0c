import Dispatch
import FoundationEssentials
import Glibc
import PlayQueue
import Player
import Synchronization
import Locking

/// An alarm: the sleep timer's twin. At a wall-clock time it starts playback (an item by id,
/// a stored playlist, or whatever is current), fading in; once or daily. Saved with the state.
public struct Alarm: Sendable, Codable, Equatable {
    public var id: Int
    public var hour: Int
    public var minute: Int
    public var second: Int
    public var daily: Bool
    /// Seconds of fade-in from silence to the volume set.
    public var fade: Double
    /// Play this queue item…
    public var item: Int?
    /// …or load this stored playlist (replacing the queue) and play it.
    public var playlist: String?
    /// When it fires next.
    public var next: Date

    public init(id: Int, hour: Int, minute: Int, second: Int = 0, daily: Bool = false, fade: Double = 0,
                item: Int? = nil, playlist: String? = nil, after now: Date = Date()) {
        (self.id, self.hour, self.minute, self.second, self.daily, self.fade) = (id, hour, minute, second, daily, fade)
        (self.item, self.playlist) = (item, playlist)
        next = Self.nextDate(hour: hour, minute: minute, second: second, after: now)
    }

    /// The time of day, `HH:MM:SS`.
    public var time: String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(two(hour)):\(two(minute)):\(two(second))"
    }

    /// The next moment after `now` at that local time of day.
    /// (The C library's local time, `TZ` and `/etc/localtime` as every program reads them; a time
    /// a daylight-saving change skips comes out as `mktime` moves it, that much later.)
    static func nextDate(hour: Int, minute: Int, second: Int, after now: Date) -> Date {
        var t = time_t(now.timeIntervalSince1970.rounded(.down))
        var today = tm()
        localtime_r(&t, &today)
        for days in 0...2 {
            var c = today
            (c.tm_mday, c.tm_hour, c.tm_min, c.tm_sec, c.tm_isdst) = (today.tm_mday + Int32(days), Int32(hour), Int32(minute), Int32(second), -1)
            let when = Double(mktime(&c))
            if when > now.timeIntervalSince1970 { return Date(timeIntervalSince1970: when) }
        }
        return now.addingTimeInterval(86400)
    }

    /// The latest `next` believed, seconds since 1970 (the year 2286); beyond it is damage.
    static let latestNext = 1e10

    /// The first field out of range, named (`hour: 1000000000000 is not within 0…23`), or nil
    /// when every one is valid: what a saved alarm must satisfy before it is armed.
    public var problem: String? {
        guard id > 0, id < Int(Int32.max) else { return "id: \(id) is not a valid id" }
        guard (0..<24).contains(hour) else { return "hour: \(hour) is not within 0…23" }
        guard (0..<60).contains(minute) else { return "minute: \(minute) is not within 0…59" }
        guard (0..<60).contains(second) else { return "second: \(second) is not within 0…59" }
        guard fade.isFinite, (0...Limits.fadeSeconds).contains(fade) else {
            return "fade: \(fade.isFinite ? "\(fade)" : "not finite") is not within 0…\(Int(Limits.fadeSeconds)) s"
        }
        let t = next.timeIntervalSince1970
        guard t.isFinite, (0...Self.latestNext).contains(t) else { return "next: \(t) s since 1970 is not a time before 2286" }
        if let item, !(1..<Int(Int32.max)).contains(item) { return "item: \(item) is not a valid id" }
        if let playlist {
            do throws(CommandError) { try PlaylistStore.check(playlist) } catch { return "playlist: \(error.message)" }
        }
        return nil
    }

    /// Parses `HH:MM` or `HH:MM:SS`.
    public static func parseTime(_ s: String) -> (hour: Int, minute: Int, second: Int)? {
        let parts = s.split(separator: ":").map { Int($0) }
        guard (2...3).contains(parts.count), parts.allSatisfy({ $0 != nil }) else { return nil }
        let (h, m, sec) = (parts[0]!, parts[1]!, parts.count == 3 ? parts[2]! : 0)
        guard (0..<24).contains(h), (0..<60).contains(m), (0..<60).contains(sec) else { return nil }
        return (h, m, sec)
    }
}

/// What an alarm did.
public enum AlarmEvent: Sendable, Equatable {
    case set(Alarm)
    case cancelled(id: Int)
    case fired(Alarm)
}

/// The alarms and their timers.
struct AlarmBook {
    var alarms: [Alarm] = []
    var nextID = 1
    var timers: [Int: any DispatchSourceTimer] = [:]
    /// The fade-in under way, and the volume it rises to (a second alarm firing meanwhile
    /// takes over the fade and keeps that volume, instead of reading the faded one).
    var fading: TimerHolder?
    var fadeTarget: Float?
}

extension Playback {
    /// The volume to save: during an alarm's fade-in, the volume it rises to (a kill mid-fade
    /// must not come back nearly silent).
    public var volumeToSave: Float { alarmBook.withLock { $0.fadeTarget } ?? player.volume }

    /// The alarms, soonest first.
    public var alarms: [Alarm] { alarmBook.withLock { $0.alarms.sorted { $0.next < $1.next } } }

    /// Sets an alarm; returns it.
    /// - Throws: ``CommandError/tooLarge(_:)`` when ``Limits/alarms`` are set already;
    ///   ``CommandError/badArgument(_:)`` for a time or fade out of range.
    @discardableResult
    public func setAlarm(hour: Int, minute: Int, second: Int = 0, daily: Bool, fade: Double,
                         item: Int?, playlist: String?) throws(CommandError) -> Alarm {
        guard (0..<24).contains(hour), (0..<60).contains(minute), (0..<60).contains(second) else {
            throw .badArgument("alarm: the time is HH:MM:SS within a day")
        }
        guard fade >= 0, fade <= Limits.fadeSeconds else { throw .badArgument("alarm: fade is 0 to \(Int(Limits.fadeSeconds)) seconds") }
        let alarm = try alarmBook.withLock { b throws(CommandError) -> Alarm in
            guard b.alarms.count < Limits.alarms else {
                throw .tooLarge("alarm: at most \(Limits.alarms) alarms may be set; cancel one first")
            }
            // Ids stay below 2³¹ (the saved state's range): past it, the lowest free one.
            if b.nextID >= Int(Int32.max) { b.nextID = (1...).first { id in !b.alarms.contains { $0.id == id } }! }
            defer { b.nextID += 1 }
            let a = Alarm(id: b.nextID, hour: hour, minute: minute, second: second, daily: daily, fade: fade, item: item, playlist: playlist)
            b.alarms.append(a)
            return a
        }
        arm(alarm)
        post(.alarm(.set(alarm)))
        return alarm
    }

    /// Cancels alarm `id`; false when there is none.
    @discardableResult
    public func cancelAlarm(_ id: Int) -> Bool {
        let found = alarmBook.withLock { b -> Bool in
            b.timers.removeValue(forKey: id)?.cancel()
            guard let i = b.alarms.firstIndex(where: { $0.id == id }) else { return false }
            b.alarms.remove(at: i)
            return true
        }
        if found { post(.alarm(.cancelled(id: id))) }
        return found
    }

    /// Restores saved alarms (one whose time passed while the daemon was not running is moved
    /// to its next occurrence when daily, dropped otherwise; one more than two days ahead, as
    /// after the clock was set back, is moved to its next occurrence). Check them first
    /// (``Alarm/problem``): this one trusts its fields.
    public func restoreAlarms(_ saved: [Alarm]) {
        let now = Date()
        let kept = saved.compactMap { a -> Alarm? in
            if a.next > now.addingTimeInterval(2 * 86400) {
                var b = a
                b.next = Alarm.nextDate(hour: a.hour, minute: a.minute, second: a.second, after: now)
                return b
            }
            guard a.next <= now else { return a }
            guard a.daily else { return nil }
            var b = a
            b.next = Alarm.nextDate(hour: a.hour, minute: a.minute, second: a.second, after: now)
            return b
        }
        alarmBook.withLock { b in
            b.alarms = kept
            b.nextID = (kept.map(\.id).max() ?? 0) + 1
        }
        for a in kept { arm(a) }
    }

    /// What runs an alarm's playback (the command dispatcher, so a suspended daemon wakes as
    /// for any command): set by whoever owns the commands.
    public func onAlarm(_ action: @escaping @Sendable (Alarm) -> Void) {
        alarmAction.withLock { $0 = action }
    }

    private func arm(_ a: Alarm) {
        alarmBook.withLock { b in
            b.timers.removeValue(forKey: a.id)?.cancel()
            let timer = DispatchSource.makeTimerSource(queue: work)
            let t = a.next.timeIntervalSince1970
            // Wall-clock: right across a suspend of the machine.
            timer.schedule(wallDeadline: DispatchWallTime(timespec: timespec(tv_sec: Int(t.rounded(.down)),
                                                                              tv_nsec: Int((t - t.rounded(.down)) * 1e9))))
            timer.setEventHandler { [weak self] in self?.alarmFired(a.id) }
            b.timers[a.id] = timer
            timer.resume()
        }
    }

    private func alarmFired(_ id: Int) {
        let fired = alarmBook.withLock { b -> Alarm? in
            b.timers.removeValue(forKey: id)?.cancel()
            guard let i = b.alarms.firstIndex(where: { $0.id == id }) else { return nil }
            let a = b.alarms[i]
            if a.daily {
                b.alarms[i].next = Alarm.nextDate(hour: a.hour, minute: a.minute, second: a.second, after: Date().addingTimeInterval(1))
            } else {
                b.alarms.remove(at: i)
            }
            return a
        }
        guard let fired else { return }
        if fired.daily, let again = alarmBook.withLock({ b in b.alarms.first { $0.id == id } }) { arm(again) }
        let target = alarmBook.withLock { b -> Float in
            let t = b.fadeTarget ?? player.volume
            b.fading?.cancel()
            b.fading = nil
            b.fadeTarget = nil
            return t
        }
        player.volume = fired.fade > 0 ? 0 : target
        alarmAction.withLock { $0 }?(fired)
        post(.alarm(.fired(fired)))
        if fired.fade > 0 { fadeIn(to: target, over: fired.fade) }
    }

    /// Raises the volume from where it is to `target` over `seconds` (at most ``Limits/fadeSeconds``).
    private func fadeIn(to target: Float, over requested: Double) {
        let seconds = requested.isFinite ? min(max(requested, 0.05), Limits.fadeSeconds) : 0.05
        let steps = max(1, Int(seconds / 0.05))
        let step = Lock(0)
        let timer = DispatchSource.makeTimerSource(queue: work)
        timer.schedule(deadline: .now() + seconds / Double(steps), repeating: seconds / Double(steps))
        let holder = TimerHolder(timer)
        alarmBook.withLock { b in
            b.fading = holder
            b.fadeTarget = target
        }
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            let k = step.withLock { s -> Int in
                s += 1
                return s
            }
            player.volume = target * Float(min(k, steps)) / Float(steps)
            if k >= steps {
                holder.cancel()
                alarmBook.withLock { b in
                    if b.fading === holder { (b.fading, b.fadeTarget) = (nil, nil) }
                }
            }
        }
        timer.resume()
    }
}

/// Keeps a timer alive until it cancels itself.
final class TimerHolder: @unchecked Sendable {
    // @unchecked: the timer is only cancelled (thread-safe) after being set in init.
    private let timer: any DispatchSourceTimer
    private let keep: Lock<TimerHolder?>
    init(_ timer: any DispatchSourceTimer) {
        self.timer = timer
        keep = Lock(nil)
        keep.withLock { $0 = self }
    }
    func cancel() {
        timer.cancel()
        keep.withLock { $0 = nil }
    }
}
