import Control
import FoundationEssentials
import Logging
import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// What every HTTP listener shares: the page's files, the login password, the sessions that
/// logins open, and the rate limit on wrong passwords.
final class WebSite: Sendable {
    /// The page's directory (resolved), or nil when its files are not installed.
    let root: String?
    /// `http-password`; the TCP `token` is accepted too.
    let password: String?
    let token: String?
    /// Open sessions: cookie value → when it expires (uptime seconds).
    private let sessions = Lock<[String: Double]>([:])
    /// Wrong passwords per peer address in the current minute.
    private let failures = Lock<[String: (count: Int, since: Double)]>([:])

    /// How long a login lasts.
    static let sessionSeconds = 30.0 * 86400
    /// Sessions kept at most (the oldest go first).
    static let maxSessions = 1000
    /// Wrong passwords one address may give in a minute; past it every login is refused until
    /// the minute is over.
    static let maxFailuresPerMinute = 5
    /// The session cookie's name.
    static let cookieName = "backline_session"

    init(root: String?, password: String?, token: String?) {
        self.root = root
        self.password = password
        self.token = token
    }

    /// Whether logins are asked for at all.
    var needsLogin: Bool { password != nil || token != nil }

    /// The page's files: `web-root`, else `Resources/web` found walking up from the
    /// executable's directory (a source tree's build), else the installed copy.
    static func findRoot(configured: String?) -> String? {
        if let configured { return PathResolver.realPath(configured) }
        var dir = PathResolver.realPath("/proc/self/exe").map(Path.deletingLastComponent) ?? ""
        for _ in 0..<5 where !dir.isEmpty && dir != "/" {
            if let found = PathResolver.realPath(dir + "/Resources/web"), access(found + "/index.html", R_OK) == 0 { return found }
            dir = Path.deletingLastComponent(dir)
        }
        for installed in ["/usr/local/share/backline/web", "/usr/share/backline/web"] where access(installed + "/index.html", R_OK) == 0 {
            return PathResolver.realPath(installed)  // (resolved: files are checked against the resolved root)
        }
        return nil
    }

    // MARK: - Credentials

    /// Whether `given` is the password or the token (compared in constant time).
    func accepts(_ given: String) -> Bool {
        var ok = false
        if let password, !password.isEmpty { ok = DaemonCore.constantTimeEqual(given, password) || ok }
        if let token, !token.isEmpty { ok = DaemonCore.constantTimeEqual(given, token) || ok }
        return ok
    }

    /// Whether `peer` may try a password now (fewer than ``maxFailuresPerMinute`` wrong ones
    /// in the last minute).
    func mayTry(_ peer: String) -> Bool {
        let now = Self.now()
        return failures.withLock { f in
            guard let entry = f[peer] else { return true }
            if now - entry.since >= 60 { f[peer] = nil; return true }
            return entry.count < Self.maxFailuresPerMinute
        }
    }

    /// Counts a wrong password from `peer`.
    func failed(_ peer: String) {
        let now = Self.now()
        failures.withLock { f in
            if f.count > 10_000 { f = f.filter { now - $0.value.since < 60 } }
            if let e = f[peer], now - e.since < 60 { f[peer] = (e.count + 1, e.since) } else { f[peer] = (1, now) }
        }
    }

    /// Opens a session; its cookie value.
    func openSession() -> String {
        // 256 bits from the system's generator (getrandom: cryptographically secure).
        var generator = SystemRandomNumberGenerator()
        let value = (0..<4).map { _ in
            let word = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - word.count) + word
        }.joined()
        let now = Self.now()
        sessions.withLock { s in
            if s.count >= Self.maxSessions {
                s = s.filter { $0.value > now }
                while s.count >= Self.maxSessions, let oldest = s.min(by: { $0.value < $1.value })?.key { s[oldest] = nil }
            }
            s[value] = now + Self.sessionSeconds
        }
        return value
    }

    /// Whether `value` is an open session's cookie.
    func isSession(_ value: String) -> Bool {
        let now = Self.now()
        return sessions.withLock { s in
            guard let expiry = s.first(where: { DaemonCore.constantTimeEqual($0.key, value) })?.value else { return false }
            if expiry <= now { s[value] = nil; return false }
            return true
        }
    }

    func closeSession(_ value: String) {
        _ = sessions.withLock { $0.removeValue(forKey: value) }
    }

    static func now() -> Double { ProcessInfo.processInfo.systemUptime }
}
