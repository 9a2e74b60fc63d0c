#if canImport(Glibc)
import Glibc
#endif

/// A blocking client for the control socket (what `backline ctl`, the tests and the benchmark
/// use): one request at a time; events that arrive meanwhile are kept for ``nextEvent(timeout:)``.
public final class ControlClient {
    /// Connection failures, with the C error number.
    public struct ConnectError: Error, CustomStringConvertible {
        /// The socket path connected to.
        public let path: String
        /// The C error number (`errno`) of the failed call.
        public let code: Int32
        /// Why the connection was refused on this side, when it was.
        public var reason: String?

        /// A failure to connect to `path`, with its error number and, when this side refused, why.
        public init(path: String, code: Int32, reason: String? = nil) {
            self.path = path
            self.code = code
            self.reason = reason
        }

        /// Why, for people: no daemon running, another user's socket, or the C library's words.
        public var description: String {
            if let reason { return "\(path): \(reason)" }
            switch code {
            case ENOENT, ECONNREFUSED: return "no daemon is running on \(path) (start one with `backline daemon`)"
            case EACCES: return "permission denied: \(path) belongs to another user"
            default: return "cannot connect to \(path): \(String(cString: strerror(code)))"
            }
        }
    }

    /// The connection closed, or a reply was not JSON.
    public struct ProtocolFailure: Error, CustomStringConvertible {
        /// What went wrong, for people.
        public let message: String
        /// Why, for people: no daemon running, another user's socket, or the C library's words.
        public var description: String { message }
    }

    private let fd: Int32
    private var buffer: [UInt8] = []
    private var events: [JSON] = []
    private var nextID = 1

    /// Connects to the Unix socket at `path`.
    public init(socketPath path: String) throws {
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw ConnectError(path: path, code: errno) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            close(s)
            throw ConnectError(path: path, code: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 else {
            let e = errno
            close(s)
            throw ConnectError(path: path, code: e)
        }
        fd = s
    }

    /// Connects to the daemon at `path` only if it is this user's: the socket's directory is
    /// checked first (``SocketDirectory/problem(_:)``), then, before anything is sent, the uid of the process
    /// that answers (`SO_PEERCRED`). Either failing throws ``ConnectError`` with `EPERM` and the
    /// reason: nothing of the request reaches another user.
    public convenience init(verifiedSocketPath path: String) throws {
        let dir = SocketDirectory.parent(of: path)
        var st = stat()
        if lstat(dir, &st) != 0, errno == ENOENT || errno == EACCES {
            throw ConnectError(path: path, code: errno)  // no daemon ever ran there; another user's directory
        }
        if let problem = SocketDirectory.problem(dir) {
            throw ConnectError(path: path, code: EPERM, reason: "refusing the socket directory: \(problem)")
        }
        try self.init(socketPath: path)
        var cred = PeerCredentials()
        var len = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, PeerCredentials.option, &cred, &len) == 0 else {
            throw ConnectError(path: path, code: errno, reason: "cannot tell who answers")
        }
        guard cred.uid == geteuid() else {
            throw ConnectError(path: path, code: EPERM, reason: "answered by uid \(cred.uid) (pid \(cred.pid)), not by you (uid \(geteuid())): refusing to talk to it")
        }
    }

    deinit { close(fd) }

    /// Sends raw bytes (a test's malformed input, say).
    public func sendRaw(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }  // EPIPE, not SIGPIPE
            if n < 0 {
                if errno == EINTR { continue }
                throw ProtocolFailure(message: "write failed: \(String(cString: strerror(errno)))")
            }
            off += n
        }
    }

    /// Closes the write side (the daemon still answers what it was sent, then closes).
    public func closeWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Sends `{"id": n, "command": name, …arguments}` and waits for its reply (events that come
    /// first are kept).
    public func request(_ command: String, _ arguments: [(String, JSON)] = [], timeout: Double = 30) throws -> JSON {
        let id = nextID
        nextID += 1
        let line = JSON.object([("id", .int(id)), ("command", .string(command))] + arguments).text + "\n"
        try sendRaw(Array(line.utf8))
        while true {
            let v = try readLine(timeout: timeout)
            if v["event"] != nil { events.append(v); continue }
            if v["id"]?.int == id { return v }
        }
    }

    /// The next line that is a reply (not an event), for raw exchanges.
    public func nextReply(timeout: Double = 30) throws -> JSON {
        while true {
            let v = try readLine(timeout: timeout)
            if v["event"] != nil { events.append(v); continue }
            return v
        }
    }

    /// The next event, waiting up to `timeout` seconds (nil when none came).
    public func nextEvent(timeout: Double) throws -> JSON? {
        if !events.isEmpty { return events.removeFirst() }
        do {
            let v = try readLine(timeout: timeout)
            if v["event"] != nil { return v }
            return try nextEvent(timeout: timeout)
        } catch let e as ProtocolFailure where e.message == "timeout" {
            return nil
        }
    }

    /// Reads one line and parses it.
    public func readLine(timeout: Double) throws -> JSON {
        let line = try readRawBytes(timeout: timeout)
        do { return try JSON.parse(line) } catch {
            throw ProtocolFailure(message: "the daemon sent something that is not JSON: \(error)")
        }
    }

    /// Reads one line as text, without its newline (a test speaking another protocol).
    public func readRawLine(timeout: Double) throws -> String {
        String(decoding: try readRawBytes(timeout: timeout), as: UTF8.self)
    }

    private func readRawBytes(timeout: Double) throws -> [UInt8] {
        let deadline = monotonicSeconds() + timeout
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<nl])
                buffer.removeFirst(nl + 1)
                return line
            }
            let left = deadline - monotonicSeconds()
            guard left > 0 else { throw ProtocolFailure(message: "timeout") }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&p, 1, Int32(min(left, 3600) * 1000) + 1)
            if r < 0, errno == EINTR { continue }
            if r == 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw ProtocolFailure(message: "the daemon closed the connection") }
            buffer += chunk[..<n]
        }
    }
}

/// Seconds on the monotonic clock.
func monotonicSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// Linux's `struct ucred` (SO_PEERCRED), which Glibc's module does not export: who is at the
/// other end of a Unix socket.
public struct PeerCredentials: Sendable {
    /// The peer's process id.
    public var pid: Int32 = 0
    /// The peer's user id.
    public var uid: UInt32 = 0
    /// The peer's group id.
    public var gid: UInt32 = 0
    /// SO_PEERCRED on Linux.
    public static let option: Int32 = 17
    /// Zeroes, for `getsockopt` to fill.
    public init() {}
}
