import BacklineWire
import Control
import Dispatch
import FoundationEssentials
import Logging
import MediaCore
import NIOCore
import NIOPosix
import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// Why the server could not start.
public struct ServerError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let message: String
    public var description: String { message + (code != 0 ? " (\(String(cString: strerror(code))))" : "") }
}

/// The control socket (and the optional loopback TCP listener): newline-delimited JSON, one
/// reply per request in request order, events to subscribers.
///
/// Limits: ``DaemonConfig/maxConnections`` at once; a request line longer than
/// ``DaemonConfig/maxRequestBytes`` gets an error and the connection is closed; a client whose
/// unread output passes ``DaemonConfig/maxOutputBytes`` stops being read (requests) or is dropped
/// (events), so a stuck client costs bounded memory and never blocks anyone else.
public final class ControlServer: Sendable {
    let config: DaemonConfig
    let logger: Logger
    let group: MultiThreadedEventLoopGroup
    /// Where requests that touch files (tags, directories, playlists) run, off the event loop:
    /// ``blockingThreads`` threads shared by every connection, each connection's requests one
    /// at a time and in order. A fixed pool, not a Dispatch queue per connection: those ran on
    /// libdispatch's overcommit threads, whose number grew under load (15 → 17 in a 10-minute
    /// soak) and whose continuations kept ~80 bytes per MPD `currentsong` while playing
    /// (heaptrack; 17.2 → 18.2 MiB in 10 minutes).
    let blocking: NIOThreadPool
    /// Threads in ``blocking``: a request that reads a slow disk delays at most this many
    /// others' file work (everyone's `status`, `play`, `next` run on the event loop regardless).
    static let blockingThreads = 2
    /// Where requests that name a playlist URL run (an `add` of one fetches it, which may wait
    /// on a remote server): threads of their own, never ``blocking``'s. Every other request
    /// that reads files, an `add` of files or directories included, runs on ``blocking``
    /// (``Control/CommandExecutor/expanding(_:)``).
    let remote = RemoteWaits()
    private let channels = Lock<[any Channel]>([])
    private let clients = Lock<[UInt64: any Channel]>([:])
    /// Wrong TCP tokens and MPD passwords, logged at most once per 10 s.
    private let tokenFailures: LogLimiter
    private let nextClient = Atomic<UInt64>(1)
    private let lockFD = Lock<Int32>(-1)
    /// ``stop()`` has run.
    private let stopped = Atomic<Bool>(false)
    /// The Unix sockets bound (removed again by ``stop()``).
    private let boundPaths = Lock<[String]>([])

    /// The kinds of listener it binds, beside its control socket.
    let listeners: ListenerRegistry

    /// A server for `config`, binding the kinds of listener ``ListenerRegistry/shared`` holds.
    public convenience init(config: DaemonConfig, logger: Logger) {
        self.init(config: config, logger: logger, listeners: .shared)
    }

    /// A server for `config`, binding the kinds of listener `listeners` holds.
    public init(config: DaemonConfig, logger: Logger, listeners: ListenerRegistry) {
        self.config = config
        self.logger = logger
        self.listeners = listeners
        tokenFailures = LogLimiter("wrong TCP token", logger: logger)
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        blocking = NIOThreadPool(numberOfThreads: Self.blockingThreads)
        blocking.start()
    }

    /// Takes the socket's lock: throws when another daemon owns the socket. Call before
    /// building the core, so a second daemon touches nothing.
    public func claim() throws {
        try claimSocket(config.socketPath)
    }

    /// Starts listening (after ``claim()``), serving `core`. Blocks until every listener is
    /// bound (call it from a thread that is not the server's event loop).
    public func start(core: DaemonCore) throws {
        _ = MPDProtocol.started  // `stats` counts uptime from here
        for endpoint in endpoints(core: core) {
            let c = try listen(endpoint, core: core)
            channels.withLock { $0.append(c) }
            logger.info("\(endpoint.announcement)", metadata: [endpoint.logKey: "\(c.localAddress.map { "\($0)" } ?? endpoint.address)"])
        }
    }

    /// Every address the daemon listens on, with its protocol and admission, in the order they
    /// are bound: each registered listener's (``ListenerRegistry``), then the control socket,
    /// last (its appearing is what says "ready").
    func endpoints(core: DaemonCore) -> [Endpoint] {
        let setup = ListenerSetup(config: config, core: core, logger: logger)
        return listeners.kinds.flatMap { $0.endpoints(setup) }
            + [Endpoint(name: "control socket", address: config.socketPath, admission: .owner, codec: JSONLineProtocol(), logKey: "socket")]
    }

    /// Binds `endpoint`: a Unix socket is born 0600 (its directory checked when the user named
    /// it), a TCP one listens on its host.
    private func listen(_ endpoint: Endpoint, core: DaemonCore) throws -> any Channel {
        let bootstrap = bootstrap(endpoint, core: core, listener: listener(endpoint.name))
        guard endpoint.isUnix else {
            let (host, port) = try Self.split(endpoint.address)
            // An IP address is bound as it is: resolving it (NIO's resolver, getaddrinfo) would
            // only cost code pages (measured: 0.6 MiB of resident memory for one TCP listener).
            if let address = try? SocketAddress(ipAddress: host, port: port) { return try bootstrap.bind(to: address).wait() }
            return try bootstrap.bind(host: host, port: port).wait()
        }
        let path = endpoint.address
        if endpoint.checkDirectory {
            if let problem = PrivateDirectory.socketDirectoryProblem(Path.deletingLastComponent(path)) {
                throw ServerError(code: 0, message: "refusing the MPD socket \(path): \(problem)")
            }
            if Self.someoneListens(path) { throw ServerError(code: 0, message: "another program is already listening on \(path)") }
            unlink(path)
        }
        let old = umask(0o177)  // the socket is born 0600
        defer { umask(old) }
        let c = try bootstrap.bind(unixDomainSocketPath: path).wait()
        chmod(path, 0o600)
        boundPaths.withLock { $0.append(path) }
        return c
    }

    /// Stops accepting, closes every connection and the event loop. Blocks until they are closed.
    /// Calling it again does nothing.
    public func stop() {
        // Once: a second call would wait for ever on closes scheduled on the stopped event loop.
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for c in channels.withLock({ $0 }) { try? c.close().wait() }
        for c in clients.withLock({ Array($0.values) }) { try? c.close().wait() }
        // Fetches in flight are ended (each would take up to its time limit), before the event
        // loop their answers go to is shut down.
        remote.finish(seconds: 3)
        // Only the sockets this daemon bound: a daemon refused at the start (another one owns
        // the socket) removes nothing of the running one's.
        for path in boundPaths.withLock({ $0 }) { unlink(path) }
        try? group.syncShutdownGracefully()
        try? blocking.syncShutdownGracefully()
        lockFD.withLock { fd in
            if fd >= 0 { close(fd); fd = -1 }
        }
    }

    static func split(_ hostPort: String) throws -> (String, Int) {
        guard let colon = hostPort.lastIndex(of: ":"), let port = Int(hostPort[hostPort.index(after: colon)...]),
              (0...65535).contains(port)
        else { throw ServerError(code: 0, message: "tcp: expected HOST:PORT, got '\(hostPort)'") }
        var host = String(hostPort[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }

    /// Creates the socket's directory (0700) or verifies it (``PrivateDirectory``), takes
    /// `PATH.lock` (flock), and removes a stale socket.
    private func claimSocket(_ path: String) throws {
        try PrivateDirectory.prepare(Path.deletingLastComponent(path))
        let fd = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ServerError(code: errno, message: "cannot open \(path).lock") }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            close(fd)
            if e == EWOULDBLOCK {
                throw ServerError(code: 0, message: "another backline daemon is already running on \(path)")
            }
            throw ServerError(code: e, message: "cannot lock \(path).lock")
        }
        lockFD.withLock { $0 = fd }
        if Self.someoneListens(path) {
            lockFD.withLock { $0 = -1 }
            close(fd)
            throw ServerError(code: 0, message: "another program is already listening on \(path)")
        }
        unlink(path)  // stale: its daemon is gone (we hold the lock)
    }

    static func someoneListens(_ path: String) -> Bool {
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { return false }
        defer { close(s) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return false }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return r == 0
    }

    func listener(_ name: String) -> Listener {
        Listener(name: name, maxConnections: config.maxConnections, maxUnauthenticated: config.maxUnauthenticated, logger: logger)
    }

    /// One listen loop for every protocol: admission (the connection cap, the peer's uid on a
    /// Unix socket, the unauthenticated cap on credentials), then the transport's handlers for
    /// the protocol's framing, then the protocol's own.
    private func bootstrap(_ endpoint: Endpoint, core: DaemonCore, listener: Listener) -> ServerBootstrap {
        let high = config.maxOutputBytes
        let codec = endpoint.codec
        return ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: high / 2, high: high))
            .childChannelInitializer { [self] channel in
                let peer = channel.remoteAddress.map { "\($0)" } ?? ""
                guard listener.admit(channel) else {
                    listener.refusals.record(from: peer)
                    return refuse(channel, codec.refusal(ProtocolError(
                        "too-many-connections", "the daemon serves at most \(listener.maxConnections) connections here")))
                }
                switch endpoint.admission {
                case .open:
                    return accept(channel, endpoint, core: core, listener: listener, peer: peer, needsToken: false)
                case .credentials:
                    // Unauthenticated connections have their own, small number of places:
                    // past it the oldest waiting is closed, so held connections never keep out
                    // one that brings the credentials.
                    let release = listener.waitForAuthentication(ObjectIdentifier(channel), peer: peer) {
                        channel.eventLoop.execute {
                            closeRefused(channel, codec, ProtocolError("too-many-connections", "closed unauthenticated: a newer connection took its place"))
                        }
                    }
                    channel.closeFuture.whenComplete { _ in release() }
                    return accept(channel, endpoint, core: core, listener: listener, peer: peer, needsToken: true, authenticated: release)
                case .owner:
                    guard let provider = channel as? any SocketOptionProvider else {
                        return accept(channel, endpoint, core: core, listener: listener, peer: peer, needsToken: false)
                    }
                    let peerCredentials: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
                        level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(PeerCredentials.option))
                    return peerCredentials.flatMap { [self] cred in
                        guard cred.uid == getuid() else {
                            listener.strangers.record(from: "uid \(cred.uid) pid \(cred.pid)")
                            return refuse(channel, codec.refusal(ProtocolError("forbidden", "only uid \(getuid()) may use this daemon")))
                        }
                        return accept(channel, endpoint, core: core, listener: listener, peer: peer, needsToken: false)
                    }
                }
            }
            .childChannelOption(.autoRead, value: true)
            // A client that closes its write side after its requests (`echo … | socat`, a
            // script's shutdown(SHUT_WR)) still gets every reply; the connection closes after.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
    }

    /// Answers the connection with `text` as soon as it is active (nil: nothing), then closes it.
    private func refuse(_ channel: any Channel, _ text: String?) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(RefuseHandler(text: text))
        }
    }

    /// Serves an admitted connection: its client (events reach it through the hub, framed by
    /// its protocol; a subscriber that stops reading is dropped), the transport's handlers, the
    /// protocol's.
    func accept(_ channel: any Channel, _ endpoint: Endpoint, core: DaemonCore, listener: Listener, peer: String,
                        needsToken: Bool, authenticated: @escaping @Sendable () -> Void = {}) -> EventLoopFuture<Void> {
        let id = nextClient.wrappingAdd(1, ordering: .relaxed).oldValue
        let hub = core.hub
        let logger = self.logger
        let codec = endpoint.codec
        let client = ClientContext(id: id, needsToken: needsToken, hub: hub) { event in
            channel.eventLoop.execute {
                guard channel.isActive else { return }
                guard channel.isWritable else {
                    // A subscriber that does not read: drop it rather than buffer without end.
                    logger.warning("subscriber not reading; connection dropped", metadata: ["client": "\(id)"])
                    hub.unsubscribe(id)
                    channel.close(promise: nil)
                    return
                }
                codec.send(event, on: channel)
            }
        }
        if let partition = endpoint.partition { client.partition = partition }
        clients.withLock { $0[id] = channel }
        channel.closeFuture.whenComplete { [self] _ in
            hub.unsubscribe(id)
            _ = clients.withLock { $0.removeValue(forKey: id) }
        }
        let connection = AdmittedConnection(
            client: client, core: core, listener: listener, local: channel.localAddress?.protocol == .unix,
            authenticated: authenticated, credentialFailures: tokenFailures, blocking: blocking, remote: remote,
            logger: logger, peer: peer)
        if needsToken {
            // Credentials within `auth-timeout`, whatever the protocol (a token, a password, a
            // session cookie), or the connection is refused and closed.
            let seconds = config.authTimeout
            let deadline = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(seconds * 1e9))) {
                guard channel.isActive, !client.authenticated else { return }
                logger.info("client did not authenticate in time; closed", metadata: ["listener": "\(listener.name)", "client": "\(id)"])
                closeRefused(channel, codec, ProtocolError("unauthorized", "authenticate within \(seconds) s; closing"))
            }
            channel.closeFuture.whenComplete { _ in deadline.cancel() }
        }
        do {
            let pipeline = channel.pipeline.syncOperations
            if codec.framing == .lines {
                try pipeline.addHandler(RequestDeadline(seconds: config.requestTimeout, logger: logger, client: id, codec: codec))
                try pipeline.addHandler(ByteToMessageHandler(LineDecoder(maximum: config.maxRequestBytes)))
                try pipeline.addHandler(CrossProtocolGuard(listener: listener))
            }
            try pipeline.addHandler(BackPressure())
            try codec.serve(connection, on: channel)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return channel.eventLoop.makeSucceededVoidFuture()
    }
}

/// Connections driven in memory over channels the caller makes (an `EmbeddedChannel`): each
/// endpoint's pipelines exactly as its listener builds them, nothing bound. Made per use, so
/// each has its own listeners and web site (sessions, the login rate limit). For the web
/// remote's fuzz target.
package struct InMemoryEndpoints {
    private let server: ControlServer
    private let core: DaemonCore
    private let endpoints: [Endpoint]

    /// The endpoints `server`'s configuration names, serving `core`.
    package init(server: ControlServer, core: DaemonCore) {
        self.server = server
        self.core = core
        endpoints = server.endpoints(core: core)
    }

    /// Serves `channel` as a new connection on the endpoint whose name starts with `prefix`
    /// (asked for credentials where that endpoint asks for them); false when there is none.
    package func connect(_ channel: any Channel, to prefix: String, peer: String) -> Bool {
        guard let endpoint = endpoints.first(where: { $0.name.hasPrefix(prefix) }) else { return false }
        let credentials = if case .credentials = endpoint.admission { true } else { false }
        _ = server.accept(channel, endpoint, core: core, listener: server.listener(endpoint.name), peer: peer,
                          needsToken: credentials)
        return true
    }
}
