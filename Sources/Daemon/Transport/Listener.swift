import Dispatch
import FoundationEssentials
import Logging
import NIOCore
import Synchronization
import Locking

/// One listening socket's own connections: its count and cap, and (on TCP) the connections
/// still waiting to authenticate. Each listener has its own, so the clients of one (300 idle
/// MPD connections from any local user) never take the slots of another (the owner's Unix
/// socket).
final class Listener: Sendable {
    /// How the log names it: `control socket`, `TCP 127.0.0.1:7000`, `MPD /run/…/mpd.sock`.
    let name: String
    /// Connections at once on this listener.
    let maxConnections: Int
    /// Connections waiting to authenticate at once (TCP with a token or password).
    let maxUnauthenticated: Int
    private let count = Atomic<Int>(0)
    /// Unauthenticated connections, oldest first.
    private let waiting = Lock<[(id: ObjectIdentifier, evict: @Sendable () -> Void)]>([])
    /// "connection refused" lines, at most one per 10 s with the count.
    let refusals: LogLimiter
    /// Unix-socket connections from another user, refused.
    let strangers: LogLimiter
    /// Connections closed for speaking HTTP.
    let crossProtocol: LogLimiter
    /// Unauthenticated connections closed to make room for a newer one.
    let evictions: LogLimiter
    /// HTTP requests from another site (a web page driving the user's browser), refused.
    let crossSite: LogLimiter

    init(name: String, maxConnections: Int, maxUnauthenticated: Int, logger: Logger) {
        self.name = name
        self.maxConnections = maxConnections
        self.maxUnauthenticated = maxUnauthenticated
        refusals = LogLimiter("connection refused: too many connections", logger: logger,
                              metadata: ["listener": "\(name)", "max": "\(maxConnections)"])
        strangers = LogLimiter("connection refused: another user", logger: logger, metadata: ["listener": "\(name)"])
        crossProtocol = LogLimiter("HTTP request on a command socket (a web page?); connection closed, nothing run", logger: logger,
                                   metadata: ["listener": "\(name)"])
        crossSite = LogLimiter("request from another site refused (a web page?)", logger: logger, metadata: ["listener": "\(name)"])
        evictions = LogLimiter("unauthenticated connection closed to make room for a newer one", logger: logger,
                               metadata: ["listener": "\(name)", "max-unauthenticated": "\(maxUnauthenticated)"])
    }

    /// Counts a new connection (released when `channel` closes); false when the listener is full.
    func admit(_ channel: any Channel) -> Bool {
        let n = count.wrappingAdd(1, ordering: .relaxed).newValue
        channel.closeFuture.whenComplete { [self] _ in count.wrappingSubtract(1, ordering: .relaxed) }
        return n <= maxConnections
    }

    /// Connections open now.
    var connections: Int { count.load(ordering: .relaxed) }

    /// Registers connection `id` as waiting to authenticate. When more than
    /// ``maxUnauthenticated`` wait, the oldest is closed (`evict`): held connections cannot keep
    /// out a client that brings the token, which needs its slot only for one line. Returns
    /// what to call once it authenticates or closes (idempotent).
    func waitForAuthentication(_ id: ObjectIdentifier, peer: String, evict: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        let oldest = waiting.withLock { w -> (@Sendable () -> Void)? in
            w.append((id, evict))
            return w.count > maxUnauthenticated ? w.removeFirst().evict : nil
        }
        if let oldest {
            evictions.record(from: peer)
            oldest()
        }
        return { [self] in waiting.withLock { w in w.removeAll { $0.id == id } } }
    }
}

/// A warning that can come in floods (refused connections, wrong tokens, HTTP requests, a
/// state file that cannot be saved): the first is logged at once; the rest within `interval`
/// are counted and logged as one line with the count when the interval is over (so a burst's
/// end is never left out, and 64 threads connecting in a loop make one line per 10 s, not 5,000
/// a second).
final class LogLimiter: Sendable {
    private struct State {
        var count = 0
        var since = 0.0
        var lastLog = -Double.infinity
        var lastPeer = ""
        var flushScheduled = false
    }
    private let state = Lock(State())
    private let message: String
    private let logger: Logger
    private let metadata: Logger.Metadata
    private let interval: Double
    private static let flushQueue = DispatchQueue(label: "backline.log-limiter")

    init(_ message: String, logger: Logger, metadata: Logger.Metadata = [:], interval: Double = 10) {
        (self.message, self.logger, self.metadata, self.interval) = (message, logger, metadata, interval)
    }

    /// Logs at once when nothing was logged in the last interval; otherwise counts, and the
    /// count is logged when the interval is over.
    func record(from peer: String) {
        let now = ProcessInfo.processInfo.systemUptime
        let (report, flushIn) = state.withLock { s -> ((Int, Double, String)?, Double?) in
            if s.count == 0 { s.since = now }
            s.count += 1
            s.lastPeer = peer
            if now - s.lastLog >= interval { return (take(&s, now), nil) }
            guard !s.flushScheduled else { return (nil, nil) }
            s.flushScheduled = true
            return (nil, s.lastLog + interval - now)
        }
        if let report { log(report) }
        if let flushIn {
            Self.flushQueue.asyncAfter(deadline: .now() + flushIn) { [self] in
                let now = ProcessInfo.processInfo.systemUptime
                let report = state.withLock { s -> (Int, Double, String)? in
                    s.flushScheduled = false
                    return s.count > 0 ? take(&s, now) : nil
                }
                if let report { log(report) }
            }
        }
    }

    private func take(_ s: inout State, _ now: Double) -> (Int, Double, String) {
        defer { (s.count, s.lastLog) = (0, now) }
        return (s.count, now - s.since, s.lastPeer)
    }

    private func log(_ r: (count: Int, span: Double, peer: String)) {
        var m = metadata
        m["attempts"] = "\(r.count)"
        m["seconds"] = "\(Int(r.span.rounded()))"
        if !r.peer.isEmpty { m["last-from"] = "\(r.peer)" }
        logger.warning("\(message)", metadata: m)
    }
}

/// The cross-protocol guard, on every line listener: a connection whose line is an HTTP request
/// line (`POST / HTTP/1.1`) or a header line (`Host: …`) is closed at once, and nothing it
/// sends is passed on. A web page can make the browser send an HTTP request to any local port
/// (`fetch(…, {mode: "no-cors", body})`); the body's lines would otherwise run as commands
/// (mpd closes such a connection too). No line of either protocol looks like
/// one: JSON requests start with `{`, and no MPD command name holds `:` or is upper case.
final class CrossProtocolGuard: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private let listener: Listener
    private var refused = false

    init(listener: Listener) { self.listener = listener }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        if Self.isHTTP(unwrapInboundIn(data).readableBytesView) {
            refused = true
            listener.crossProtocol.record(from: context.remoteAddress.map { "\($0)" } ?? "")
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    /// Whether `line` is an HTTP/1.x request line (`METHOD TARGET HTTP/d.d`, also `PRI * HTTP/2.0`)
    /// or a header line (`token:` then a blank or the end).
    static func isHTTP<C: Collection<UInt8>>(_ line: C) -> Bool {
        var bytes = Array(line)
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        let words = bytes.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        if words.count == 3, (1...20).contains(words[0].count),
           words[0].allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }),
           words[2].starts(with: Array("HTTP/".utf8)) {
            return true
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return false }
        guard bytes[..<colon].allSatisfy(isTokenCharacter) else { return false }
        return colon + 1 == bytes.count || bytes[colon + 1] == UInt8(ascii: " ") || bytes[colon + 1] == UInt8(ascii: "\t")
    }

    /// RFC 9110's `tchar`.
    private static func isTokenCharacter(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(b)
        }
    }
}
