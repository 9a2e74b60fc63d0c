import Control
import Dispatch
import FoundationEssentials
import Logging
import NIOCore
import NIOPosix
import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
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
    private let channels = Mutex<[any Channel]>([])
    private let clients = Mutex<[UInt64: any Channel]>([:])
    /// Wrong TCP tokens and MPD passwords, logged at most once per 10 s.
    private let tokenFailures: LogLimiter
    private let nextClient = Atomic<UInt64>(1)
    private let lockFD = Mutex<Int32>(-1)

    public init(config: DaemonConfig, logger: Logger) {
        self.config = config
        self.logger = logger
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
        let path = config.socketPath
        // TCP first: the Unix socket appearing is what says "ready".
        if let tcp = config.tcpListen {
            let (host, port) = try Self.split(tcp)
            let t = try bootstrap(tcp: true, core: core, listener: listener("TCP \(tcp)")).bind(host: host, port: port).wait()
            channels.withLock { $0.append(t) }
            logger.info("listening", metadata: ["tcp": "\(t.localAddress.map { "\($0)" } ?? tcp)"])
        }
        _ = MPDProtocol.started  // `stats` counts uptime from here
        for addr in config.mpdListen {
            let c: any Channel
            if addr.hasPrefix("/") {
                if let problem = PrivateDirectory.socketDirectoryProblem(Path.deletingLastComponent(addr)) {
                    throw ServerError(code: 0, message: "refusing the MPD socket \(addr): \(problem)")
                }
                if Self.someoneListens(addr) { throw ServerError(code: 0, message: "another program is already listening on \(addr)") }
                unlink(addr)
                let old = umask(0o177)
                defer { umask(old) }
                c = try bootstrap(tcp: false, core: core, listener: listener("MPD \(addr)"), mpd: true).bind(unixDomainSocketPath: addr).wait()
                chmod(addr, 0o600)
            } else {
                let (host, port) = try Self.split(addr)
                c = try bootstrap(tcp: true, core: core, listener: listener("MPD \(addr)"), mpd: true).bind(host: host, port: port).wait()
            }
            channels.withLock { $0.append(c) }
            logger.info("listening (MPD protocol)", metadata: ["address": "\(c.localAddress.map { "\($0)" } ?? addr)"])
        }
        let old = umask(0o177)  // the socket is born 0600
        let unix: any Channel
        do {
            unix = try bootstrap(tcp: false, core: core, listener: listener("control socket")).bind(unixDomainSocketPath: path).wait()
        } catch {
            umask(old)
            throw error
        }
        umask(old)
        chmod(path, 0o600)
        channels.withLock { $0.append(unix) }
        logger.info("listening", metadata: ["socket": "\(path)"])
    }

    /// Stops accepting, closes every connection and the event loop. Blocks until they are closed.
    public func stop() {
        for c in channels.withLock({ $0 }) { try? c.close().wait() }
        for c in clients.withLock({ Array($0.values) }) { try? c.close().wait() }
        unlink(config.socketPath)
        for addr in config.mpdListen where addr.hasPrefix("/") { unlink(addr) }
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

    private func listener(_ name: String) -> Listener {
        Listener(name: name, maxConnections: config.maxConnections, maxUnauthenticated: config.maxUnauthenticated, logger: logger)
    }

    private func bootstrap(tcp: Bool, core: DaemonCore, listener: Listener, mpd: Bool = false) -> ServerBootstrap {
        let high = config.maxOutputBytes
        return ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: high / 2, high: high))
            .childChannelInitializer { [self] channel in
                let peer = channel.remoteAddress.map { "\($0)" } ?? ""
                guard listener.admit(channel) else {
                    listener.refusals.record(from: peer)
                    if mpd { return channel.close() }  // mpd closes too: its clients expect no JSON
                    return refuse(channel, ProtocolError("too-many-connections", "the daemon serves at most \(listener.maxConnections) connections here"))
                }
                if mpd, tcp, config.mpdPassword == nil {
                    return accept(channel, core: core, listener: listener, needsToken: false, mpd: true)  // loopback only (validated)
                }
                if tcp {
                    // Unauthenticated TCP connections have their own, small number of places:
                    // past it the oldest waiting is closed, so held connections never keep out
                    // one that brings the token.
                    let release = listener.waitForAuthentication(ObjectIdentifier(channel), peer: peer) {
                        channel.eventLoop.execute {
                            guard channel.isActive else { return }
                            if mpd { channel.close(promise: nil); return }
                            let line = DaemonCore.errorReply(.null, ProtocolError(
                                "too-many-connections", "closed unauthenticated: a newer connection took its place")).text + "\n"
                            var buf = channel.allocator.buffer(capacity: line.utf8.count)
                            buf.writeString(line)
                            channel.writeAndFlush(buf).whenComplete { _ in channel.close(promise: nil) }
                        }
                    }
                    channel.closeFuture.whenComplete { _ in release() }
                    return accept(channel, core: core, listener: listener, needsToken: true, mpd: mpd, authenticated: release)
                }
                guard let provider = channel as? any SocketOptionProvider else {
                    return accept(channel, core: core, listener: listener, needsToken: false)
                }
                let peerCredentials: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
                    level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(PeerCredentials.option))
                return peerCredentials.flatMap { [self] cred in
                    guard cred.uid == getuid() else {
                        listener.strangers.record(from: "uid \(cred.uid) pid \(cred.pid)")
                        if mpd { return channel.close() }
                        return refuse(channel, ProtocolError("forbidden", "only uid \(getuid()) may use this daemon"))
                    }
                    return accept(channel, core: core, listener: listener, needsToken: false, mpd: mpd)
                }
            }
            .childChannelOption(.autoRead, value: true)
            // A client that closes its write side after its requests (`echo … | socat`, a
            // script's shutdown(SHUT_WR)) still gets every reply; the connection closes after.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
    }

    /// Answers the connection with `e` as soon as it is active, then closes it.
    private func refuse(_ channel: any Channel, _ e: ProtocolError) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(RefuseHandler(error: e))
        }
    }

    private func accept(_ channel: any Channel, core: DaemonCore, listener: Listener, needsToken: Bool, mpd: Bool = false,
                        authenticated: @escaping @Sendable () -> Void = {}) -> EventLoopFuture<Void> {
        let id = nextClient.wrappingAdd(1, ordering: .relaxed).oldValue
        let hub = core.hub
        let logger = self.logger
        let client = ClientContext(id: id, needsToken: needsToken, hub: hub) { line in
            channel.eventLoop.execute {
                guard channel.isActive else { return }
                guard channel.isWritable else {
                    // A subscriber that does not read: drop it rather than buffer without end.
                    logger.warning("subscriber not reading; connection dropped", metadata: ["client": "\(id)"])
                    hub.unsubscribe(id)
                    channel.close(promise: nil)
                    return
                }
                var buf = channel.allocator.buffer(capacity: line.utf8.count)
                buf.writeString(line)
                channel.writeAndFlush(buf, promise: nil)
            }
        }
        clients.withLock { $0[id] = channel }
        if !mpd {
            // Client-to-client messages reach a JSON client as `message` events once it
            // subscribed to them; until then they wait for `channel-read`.
            let messages = core.messages
            messages.register(id) { changed in
                guard changed.contains(.message), hub.wants(id, "message") else { return }
                for m in messages.read(id) {
                    hub.deliver(to: id, "message", [("channel", .string(m.channel)), ("message", .string(m.text))])
                }
            }
        }
        channel.closeFuture.whenComplete { [self] _ in
            if !mpd { core.messages.remove(id) }
            hub.unsubscribe(id)
            _ = clients.withLock { $0.removeValue(forKey: id) }
        }
        do {
            try channel.pipeline.syncOperations.addHandler(RequestDeadline(seconds: config.requestTimeout, logger: logger, client: id,
                                                                           silent: mpd))
            try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder(maximum: config.maxRequestBytes)))
            try channel.pipeline.syncOperations.addHandler(CrossProtocolGuard(listener: listener))
            if mpd {
                let local = channel.localAddress?.protocol == .unix
                let failures = tokenFailures
                let peer = channel.remoteAddress.map { "\($0)" } ?? "?"
                let codec = MPDProtocol(core: core, wrongPassword: { failures.record(from: peer) },
                                        passwordAccepted: authenticated)
                try channel.pipeline.syncOperations.addHandler(MPDConnectionHandler(
                    codec: codec, client: client, local: local, logger: logger, blocking: blocking,
                    authTimeout: needsToken ? config.authTimeout : nil))
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            try channel.pipeline.syncOperations.addHandler(ConnectionHandler(core: core, client: client, logger: logger, blocking: blocking,
                                                                             tokenFailures: tokenFailures, authenticated: authenticated))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return channel.eventLoop.makeSucceededVoidFuture()
    }
}

/// Writes one reply to a connection that is not served, and closes it.
final class RefuseHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let error: ProtocolError
    init(error: ProtocolError) { self.error = error }

    func channelActive(context: ChannelHandlerContext) { writeThenClose(context, error) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}  // nothing it sends is read
}

/// Closes a connection whose request line, once begun, does not end within `seconds` (a client
/// dripping a byte a second would otherwise hold its slot for ever). An idle connection (no
/// partial line: a subscriber waiting for events) has no deadline.
final class RequestDeadline: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let seconds: Double
    let logger: Logger
    let client: UInt64
    private var timer: Scheduled<Void>?
    /// A line has begun and not ended.
    private var partial = false

    /// Close without a reply (an MPD client expects no JSON; mpd closes timed-out clients silently).
    let silent: Bool

    init(seconds: Double, logger: Logger, client: UInt64, silent: Bool = false) {
        (self.seconds, self.logger, self.client, self.silent) = (seconds, logger, client, silent)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        if bytes.readableBytes > 0 {
            if bytes.readableBytesView.last == UInt8(ascii: "\n") {
                partial = false
                timer?.cancel()  // every line so far is complete
                timer = nil
            } else {
                // A new line begun in this chunk restarts the clock; a line going on keeps it.
                let begun = bytes.readableBytesView.lastIndex(of: UInt8(ascii: "\n")).map { $0 >= bytes.readerIndex } ?? false
                partial = true
                if begun || timer == nil { restart(context) }
            }
        }
        context.fireChannelRead(data)
    }

    /// Back-pressure stops reading while the client does not read its replies: the rest of a
    /// begun line cannot arrive meanwhile, so its clock stops too, and starts afresh when
    /// reading does.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if !context.channel.isWritable {
            timer?.cancel()
            timer = nil
        } else if partial {
            restart(context)
        }
        context.fireChannelWritabilityChanged()
    }

    private func restart(_ context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        guard context.channel.isWritable else { return }  // not reading: no clock (see above)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(seconds * 1e9))) {
            let (handler, context) = bound.value
            handler.logger.warning("request not completed in time; connection closed",
                                   metadata: ["client": "\(handler.client)", "seconds": "\(handler.seconds)"])
            if handler.silent { context.close(promise: nil); return }
            writeThenClose(context, ProtocolError("timeout", "a request line must arrive within \(handler.seconds) s of its first byte; closing"))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Half-closed: whatever arrived is the last request (answered however long it takes).
        if case ChannelEvent.inputClosed = event {
            timer?.cancel()
            timer = nil
        }
        context.fireUserInboundEventTriggered(event)
    }
}

/// Answers `error` (a reply without an id), then closes the connection.
func writeThenClose(_ context: ChannelHandlerContext, _ error: ProtocolError) {
    let line = DaemonCore.errorReply(.null, error).text + "\n"
    var buf = context.channel.allocator.buffer(capacity: line.utf8.count)
    buf.writeString(line)
    let channel = context.channel
    context.writeAndFlush(NIOAny(buf)).whenComplete { _ in channel.close(promise: nil) }
}

/// A request line was longer than allowed.
struct RequestTooLarge: Error {}

/// Splits the byte stream into lines (without the newline); a line longer than `maximum` is an error.
struct LineDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer
    let maximum: Int

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if let nl = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
            let length = nl - buffer.readerIndex
            guard length <= maximum else { throw RequestTooLarge() }
            let line = buffer.readSlice(length: length)!
            buffer.moveReaderIndex(forwardBy: 1)
            context.fireChannelRead(wrapInboundOut(line))
            return .continue
        }
        if buffer.readableBytes > maximum { throw RequestTooLarge() }
        return .needMoreData
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0, let line = buffer.readSlice(length: buffer.readableBytes) {
            context.fireChannelRead(wrapInboundOut(line))  // a last request without its newline
        }
        return .needMoreData
    }
}

/// One connection: parses each line, runs it (slow commands off the event loop, one at a time,
/// so replies keep request order), writes the reply.
final class ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let core: DaemonCore
    let client: ClientContext
    let logger: Logger
    private var busy = false
    /// Where this connection's off-loop requests run, one at a time (in request order anyway):
    /// the server's shared pool (see ``ControlServer/blocking``).
    let blocking: NIOThreadPool
    private var pending: [ByteBuffer] = []
    private var closing = false
    /// The client closed its write side: close once every reply is written.
    private var inputClosed = false
    /// The last reply's write, for closing after it.
    private var lastWrite: EventLoopFuture<Void>?

    let tokenFailures: LogLimiter
    /// Called once when a TCP client authenticates.
    let authenticated: @Sendable () -> Void
    private var authDeadline: Scheduled<Void>?

    init(core: DaemonCore, client: ClientContext, logger: Logger, blocking: NIOThreadPool, tokenFailures: LogLimiter,
         authenticated: @escaping @Sendable () -> Void) {
        self.core = core
        self.blocking = blocking
        self.client = client
        self.logger = logger
        self.tokenFailures = tokenFailures
        self.authenticated = authenticated
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard client.needsToken else { return }
        // A TCP client authenticates within `auth-timeout` or is closed.
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let seconds = core.config.authTimeout
        authDeadline = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(seconds * 1e9))) {
            let (handler, context) = bound.value
            guard !handler.client.authenticated, !handler.closing else { return }
            handler.closing = true
            handler.logger.info("TCP client did not authenticate in time; closed", metadata: ["client": "\(handler.client.id)"])
            handler.write(DaemonCore.errorReply(.null, ProtocolError("unauthorized", "authenticate within \(seconds) s; closing")), context: context)
            handler.closeAfterLastWrite(context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        authDeadline?.cancel()
        core.trimmer.noteActivity()  // its buffers are free now
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let line = unwrapInboundIn(data)
        if busy { pending.append(line); return }
        handle(line, context: context)
    }

    private func handle(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        var bytes = buffer.readableBytesView
        if bytes.last == UInt8(ascii: "\r") { bytes = bytes.dropLast() }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }  // blank lines are ignored
        let request: JSON
        do {
            request = try JSON.parse(bytes)
        } catch {
            write(DaemonCore.errorReply(.null, ProtocolError("invalid-json", "not valid JSON: \(error)")), context: context)
            return
        }
        let prepared = core.prepare(request, client: client)
        if prepared.offLoop {
            busy = true
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let loop = context.eventLoop
            blocking.submit { _ in
                let reply = prepared.run()
                loop.execute {
                    let (handler, context) = bound.value
                    handler.busy = false
                    handler.write(reply, context: context)
                    handler.drain(context: context)
                }
            }
            return
        }
        let reply = prepared.run()
        if client.needsToken, prepared.presentsToken {
            if client.authenticated {
                authDeadline?.cancel()
                authenticated()
            } else {
                // A wrong token: answered after a second, then the connection closes; nothing
                // else is read meanwhile. A guessing loop gets one try per second per
                // connection, and few connections (`max-unauthenticated`).
                tokenFailures.record(from: context.remoteAddress.map { "\($0)" } ?? "?")
                busy = true
                closing = true
                context.channel.setOption(.autoRead, value: false).whenFailure { _ in }
                let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: .seconds(1)) {
                    let (handler, context) = bound.value
                    handler.write(reply, context: context)
                    handler.closeAfterLastWrite(context)
                }
                return
            }
        }
        write(reply, context: context)
    }

    private func drain(context: ChannelHandlerContext) {
        while !busy, !pending.isEmpty, context.channel.isActive {
            handle(pending.removeFirst(), context: context)
        }
        closeIfDone(context: context)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            // (The decoder has passed on a last line without its newline before this.)
            inputClosed = true
            closeIfDone(context: context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// After a half-close: once nothing is left to answer, closes when the last reply is out.
    private func closeIfDone(context: ChannelHandlerContext) {
        guard inputClosed, !busy, pending.isEmpty, !closing else { return }
        closing = true
        closeAfterLastWrite(context)
    }

    /// Closes the connection once the last reply written has gone out.
    private func closeAfterLastWrite(_ context: ChannelHandlerContext) {
        let channel = context.channel
        (lastWrite ?? context.eventLoop.makeSucceededVoidFuture()).whenComplete { _ in channel.close(promise: nil) }
    }

    private func write(_ reply: JSON, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        var s = ""
        reply.write(into: &s)
        s += "\n"
        var buf = context.channel.allocator.buffer(capacity: s.utf8.count)
        buf.writeString(s)
        lastWrite = context.writeAndFlush(wrapOutboundOut(buf))
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // Back-pressure: a client that does not read its replies is not read from either.
        context.channel.setOption(.autoRead, value: context.channel.isWritable).whenFailure { _ in }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !closing else { return }
        closing = true
        if error is RequestTooLarge || (error as? ByteToMessageDecoderError) != nil {
            let e = ProtocolError("request-too-large", "a request line may be at most \(core.config.maxRequestBytes) bytes; closing")
            logger.warning("request too large; connection closed", metadata: ["client": "\(client.id)"])
            writeThenClose(context, e)
            return
        }
        logger.debug("connection error", metadata: ["client": "\(client.id)", "error": "\(error)"])
        context.close(promise: nil)
    }
}
