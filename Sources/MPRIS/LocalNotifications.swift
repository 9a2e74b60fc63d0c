import DBus
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import Locking

/// A desktop notification to deliver now or later (UILocalNotification's shape): shown through
/// `org.freedesktop.Notifications` on the session bus when it is due.
public struct LocalNotification: Sendable, Equatable {
    /// How often it repeats after its first delivery.
    public enum RepeatInterval: Sendable, Equatable {
        case minute, hour, day, week
        var seconds: Double {
            switch self {
            case .minute: 60
            case .hour: 3600
            case .day: 86400
            case .week: 604_800
            }
        }
    }

    /// When it is delivered (nil: as soon as it is scheduled).
    public var fireDate: Date?
    public var repeatInterval: RepeatInterval?
    /// The summary line.
    public var alertTitle: String
    public var alertBody: String
    /// An image file shown with it (a cover, written by MPRIS's artwork cache), or an icon name.
    public var icon: String?
    /// Replaces the notification this one was delivered as last time (now playing: one at a time).
    public var replacesPrevious: Bool
    /// Whatever the app wants to find again.
    public var userInfo: [String: String]

    public init(fireDate: Date? = nil, repeatInterval: RepeatInterval? = nil, alertTitle: String, alertBody: String = "",
                icon: String? = nil, replacesPrevious: Bool = false, userInfo: [String: String] = [:]) {
        self.fireDate = fireDate
        self.repeatInterval = repeatInterval
        self.alertTitle = alertTitle
        self.alertBody = alertBody
        self.icon = icon
        self.replacesPrevious = replacesPrevious
        self.userInfo = userInfo
    }
}

/// Why a notification was not scheduled.
public struct LocalNotificationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Schedules ``LocalNotification``s and delivers them through the session bus's notification
/// server when due (UIApplication's `scheduleLocalNotification`, `cancelLocalNotification`,
/// `scheduledLocalNotifications`). At most ``limit`` may be pending at once, as the iOS 4
/// guide states; one more is refused.
public final class LocalNotificationCenter: Sendable {
    /// Pending notifications at most: 128, as the guide above states (current iOS keeps 64 per app).
    public static let limit = 128
    private let connection: DBusConnection
    private let appName: String
    private let queue = DispatchQueue(label: "backline.notifications")

    private struct State {
        var pending: [UInt64: LocalNotification] = [:]
        var nextID: UInt64 = 1
        /// The server's id of what was delivered last (for `replacesPrevious`).
        var lastDelivered: UInt32 = 0
        var delivered: [UInt32] = []
    }
    private let state = Lock(State())
    /// The timers of pending notifications: touched only on `queue`.
    private final class Timers: @unchecked Sendable {
        var all: [UInt64: any DispatchSourceTimer] = [:]
    }
    private let timers = Timers()

    /// A center on the session bus (or the bus at `address`), delivering as `appName`.
    public init(appName: String, address: String? = nil) throws(DBusError) {
        if let address {
            connection = try DBusConnection.connect(address: address)
        } else {
            connection = try DBusConnection.session()
        }
        self.appName = appName
    }

    deinit { connection.close() }

    /// Schedules `n`; returns its id (for ``cancel(_:)``). Throws past ``limit`` pending.
    @discardableResult
    public func schedule(_ n: LocalNotification) throws(LocalNotificationError) -> UInt64 {
        let id = try state.withLock { s throws(LocalNotificationError) -> UInt64 in
            guard s.pending.count < Self.limit else {
                throw LocalNotificationError(message: "at most \(Self.limit) notifications may be pending; cancel one first")
            }
            defer { s.nextID += 1 }
            s.pending[s.nextID] = n
            return s.nextID
        }
        arm(id, at: n.fireDate ?? Date())
        return id
    }

    /// Delivers `n` now (not counted as pending).
    public func present(_ n: LocalNotification) {
        queue.async { [self] in deliver(n) }
    }

    /// Cancels a pending notification (a delivered one stays on screen).
    public func cancel(_ id: UInt64) {
        _ = state.withLock { $0.pending.removeValue(forKey: id) }
        queue.async { [timers] in timers.all.removeValue(forKey: id)?.cancel() }
    }

    public func cancelAll() {
        state.withLock { $0.pending = [:] }
        queue.async { [timers] in
            for t in timers.all.values { t.cancel() }
            timers.all = [:]
        }
    }

    /// The pending notifications, by id.
    public var scheduled: [(id: UInt64, notification: LocalNotification)] {
        state.withLock { s in s.pending.map { ($0.key, $0.value) }.sorted { $0.id < $1.id } }
    }

    /// Server ids of the notifications delivered, oldest first.
    public var deliveredIDs: [UInt32] { state.withLock { $0.delivered } }

    private func arm(_ id: UInt64, at date: Date) {
        queue.async { [self] in
            guard state.withLock({ $0.pending[id] != nil }) else { return }
            let timer = DispatchSource.makeTimerSource(queue: queue)
            // Wall-clock time: a fire date stays right across a suspend of the machine.
            let t = date.timeIntervalSince1970
            timer.schedule(wallDeadline: DispatchWallTime(timespec: timespec(tv_sec: Int(t.rounded(.down)),
                                                                              tv_nsec: Int((t - t.rounded(.down)) * 1e9))))
            timer.setEventHandler { [weak self] in self?.fire(id) }
            timers.all.removeValue(forKey: id)?.cancel()
            timers.all[id] = timer
            timer.resume()
        }
    }

    /// On `queue`.
    private func fire(_ id: UInt64) {
        timers.all.removeValue(forKey: id)?.cancel()
        guard let n = state.withLock({ $0.pending[id] }) else { return }
        deliver(n)
        if let r = n.repeatInterval {
            let next = max(Date(), (n.fireDate ?? Date()).addingTimeInterval(r.seconds))
            state.withLock { $0.pending[id]?.fireDate = next }
            arm(id, at: next)
        } else {
            _ = state.withLock { $0.pending.removeValue(forKey: id) }
        }
    }

    /// `Notify` on `org.freedesktop.Notifications` (on this center's queue: it waits for the reply).
    private func deliver(_ n: LocalNotification) {
        let replaces = n.replacesPrevious ? state.withLock { $0.lastDelivered } : 0
        let appName = self.appName
        let answer = Lock<UInt32?>(nil)
        let done = DispatchSemaphore(value: 0)
        let queued = connection.perform { c in
            let icon = n.icon ?? ""
            var hints: [(String, DBusValue)] = [("category", .string("x-backline.nowplaying"))]
            if icon.hasPrefix("/") { hints.append(("image-path", .string(icon))) }
            let reply = try? c.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                    interface: "org.freedesktop.Notifications", method: "Notify",
                                    [.string(appName), .uint32(replaces), .string(icon), .string(n.alertTitle), .string(n.alertBody),
                                     .strings([]), .dictionary(hints), .int32(-1)], timeout: 2)
            if case .uint32(let id)? = reply?.first { answer.withLock { $0 = id } }
            done.signal()
        }
        guard queued, done.wait(timeout: .now() + 5) == .success else { return }  // (the bus is gone)
        if let id = answer.withLock({ $0 }) {
            state.withLock { s in
                s.lastDelivered = id
                s.delivered.append(id)
                if s.delivered.count > 256 { s.delivered.removeFirst() }
            }
        }
    }
}
