import Control
import Logging
import NIOCore
import NIOPosix

/// One protocol the daemon speaks, as the transport sees it: a codec that turns a connection's
/// requests into typed commands and their replies and events back into bytes. The transport
/// (``ControlServer``) owns everything else, once for every protocol: listening, the
/// connection cap, the unauthenticated cap and `auth-timeout`, the peer-uid check, request size
/// and deadline, the cross-protocol guard, back-pressure and dropping subscribers that do not
/// read. A new protocol is one type conforming to this plus one endpoint in
/// ``ControlServer/endpoints(core:)``.
protocol WireProtocol: Sendable {
    /// How its requests are framed: lines (the transport splits, times and guards them) or HTTP
    /// (its handlers parse them; the transport still admits, caps and back-pressures).
    var framing: Framing { get }
    /// What a connection refused before it is served is told (too many connections, another
    /// uid, a request that did not arrive in time, one too long), or nil: closed without a word
    /// (an MPD client expects no JSON; mpd closes such connections too).
    func refusal(_ error: ProtocolError) -> String?
    /// Adds the handlers that serve one admitted connection at the end of its pipeline.
    func serve(_ connection: AdmittedConnection, on channel: any Channel) throws
    /// Writes `event` to a subscriber (called on its event loop; the transport has checked that
    /// the connection is active and keeps up).
    func send(_ event: PublishedEvent, on channel: any Channel)
}

/// How a protocol's requests arrive.
enum Framing: Sendable {
    /// One request per line (`\n`; a trailing `\r` is the codec's to drop).
    case lines
    /// HTTP/1.1 (and what it upgrades to).
    case http
}

/// How a listener's connections get in.
enum Admission: Sendable, Equatable {
    /// A Unix socket: the connecting process must be the daemon's user (`SO_PEERCRED`).
    case owner
    /// Credentials first (a token, a password, a session cookie): until then the connection
    /// counts among ``DaemonConfig/maxUnauthenticated`` and has `auth-timeout` to give them.
    case credentials
    /// Nothing asked (loopback MPD without `mpd-password`, loopback HTTP without `http-password`).
    case open
}

/// One listening address and the protocol spoken there.
struct Endpoint: Sendable {
    /// How logs name it: `control socket`, `TCP 127.0.0.1:7000`, `MPD /run/…/mpd.sock`, `HTTP 127.0.0.1:8080`.
    let name: String
    /// A Unix socket path (starts with `/`) or `HOST:PORT`.
    let address: String
    let admission: Admission
    let codec: any WireProtocol
    /// Refuses to replace a socket file whose directory is not private (the MPD sockets, whose
    /// directory the user names; the control socket's is made private by ``ControlServer/claim()``).
    var checkDirectory = false
    /// Log line when bound, and the metadata key naming the address.
    var announcement = "listening"
    var logKey = "address"
    /// The partition its clients start in (nil: the default).
    var partition: String?

    var isUnix: Bool { address.hasPrefix("/") }
}

/// What the transport hands a protocol for one admitted connection.
struct AdmittedConnection: Sendable {
    let client: ClientContext
    let core: DaemonCore
    let listener: Listener
    /// A Unix socket (the owner's: `config` and absolute paths for MPD clients).
    let local: Bool
    /// Call once the client has authenticated: it no longer counts as unauthenticated.
    let authenticated: @Sendable () -> Void
    /// Wrong tokens and passwords, logged rate-limited.
    let credentialFailures: LogLimiter
    /// Where commands that touch files run (see ``ControlServer/blocking``).
    let blocking: NIOThreadPool
    /// Where commands that name a playlist URL to fetch run (see ``ControlServer/remote``).
    let remote: RemoteWaits
    let logger: Logger
    /// The peer's address, for logs.
    let peer: String
}

/// Back-pressure, for every protocol: a client that does not read its replies is not read
/// from either (its requests wait in the kernel), so it costs at most the write buffer's high
/// water mark (``DaemonConfig/maxOutputBytes``).
final class BackPressure: ChannelInboundHandler {
    typealias InboundIn = NIOAny

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        context.channel.setOption(.autoRead, value: context.channel.isWritable).whenFailure { _ in }
        context.fireChannelWritabilityChanged()
    }
}

/// Writes one refusal to a connection that is not served, and closes it (or closes it at once
/// when the protocol says nothing).
final class RefuseHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let text: String?
    init(text: String?) { self.text = text }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { respond(context) }
    }

    func channelActive(context: ChannelHandlerContext) { respond(context) }

    private var done = false
    private func respond(_ context: ChannelHandlerContext) {
        guard !done else { return }
        done = true
        writeThenClose(context, text)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}  // nothing it sends is read
}

/// Tells an admitted connection why it is refused, in its protocol's words (nothing for MPD;
/// an HTTP connection, whose pipeline takes responses rather than bytes, is just closed), and
/// closes it. On the connection's event loop.
func closeRefused(_ channel: any Channel, _ codec: any WireProtocol, _ error: ProtocolError) {
    guard channel.isActive else { return }
    guard codec.framing == .lines, let text = codec.refusal(error) else { return channel.close(promise: nil) }
    var buf = channel.allocator.buffer(capacity: text.utf8.count)
    buf.writeString(text)
    channel.writeAndFlush(buf).whenComplete { _ in channel.close(promise: nil) }
}

/// Writes `text` (when there is one), then closes the connection.
func writeThenClose(_ context: ChannelHandlerContext, _ text: String?) {
    let channel = context.channel
    guard let text else { return channel.close(promise: nil) }
    var buf = channel.allocator.buffer(capacity: text.utf8.count)
    buf.writeString(text)
    context.writeAndFlush(NIOAny(buf)).whenComplete { _ in channel.close(promise: nil) }
}

/// Closes a connection whose request line, once begun, does not end within `seconds` (a client
/// dripping a byte a second would otherwise hold its slot for ever). An idle connection (no
/// partial line: a subscriber waiting for events) has no deadline.
final class RequestDeadline: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let seconds: Double
    let logger: Logger
    let client: UInt64
    /// What the client is told (nil: closed without a word).
    let refusal: String?
    private var timer: Scheduled<Void>?
    /// A line has begun and not ended.
    private var partial = false
    /// The codec's handler holds the connection's reads (``ReadHold``).
    private var held = false

    init(seconds: Double, logger: Logger, client: UInt64, codec: any WireProtocol) {
        (self.seconds, self.logger, self.client) = (seconds, logger, client)
        refusal = codec.refusal(ProtocolError("timeout", "a request line must arrive within \(seconds) s of its first byte; closing"))
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

    /// While the codec's handler holds the reads (a request is being answered), the rest of a
    /// begun line cannot arrive either: its clock stops, and starts afresh when reading does.
    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let hold = event as? ReadHold else { return context.triggerUserOutboundEvent(event, promise: promise) }
        held = hold == .held
        if held {
            timer?.cancel()
            timer = nil
        } else if partial {
            restart(context)
        }
        promise?.succeed(())
    }

    private func restart(_ context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        guard context.channel.isWritable, !held else { return }  // not reading: no clock (see above)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(seconds * 1e9))) {
            let (handler, context) = bound.value
            handler.logger.warning("request not completed in time; connection closed",
                                   metadata: ["client": "\(handler.client)", "seconds": "\(handler.seconds)"])
            writeThenClose(context, handler.refusal)
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

/// A connection's requests in their order, for every codec's handler: one is answered at a
/// time (some off the event loop, on the server's pool), later ones wait, so replies keep
/// request order; after the client's half-close, the connection is done once the last one is
/// answered. Used on the connection's event loop only.
///
/// While a request is answered off the event loop, or requests wait their turn, the connection
/// is not read from (back-pressure, as mpd reads no further while a command runs): the channel's
/// reads are held (``allowsRead()``) and go on once everything read has been answered
/// (``releaseRead()``). The requests waiting are then at most those of the last read (one
/// read event takes at most NIO's `maxMessagesPerRead` buffers of 64 KiB), never everything
/// a client sends behind a request that takes long (a playlist URL that drips, with `ping`
/// after it: read and queued without end, it grew the daemon by gigabytes).
struct RequestOrder<Request> {
    /// A request is being answered off the event loop.
    private(set) var busy = false
    /// The requests waiting, from `first` on (a position rather than `removeFirst`, which
    /// moved every other waiting request each time).
    private var waiting: [Request] = []
    private var first = 0
    /// The client closed its side (`echo … | socat`, `mpc`): nothing more will come.
    private(set) var inputClosed = false
    /// A read the channel asked for while requests were being answered, not passed on yet.
    private var heldRead = false

    /// Takes `request`: whether it may be answered now (else it waits its turn).
    mutating func arrive(_ request: Request) -> Bool {
        guard busy else { return true }
        waiting.append(request)
        return false
    }

    /// The request being answered goes off the event loop: later ones wait.
    mutating func suspend() { busy = true }
    /// Its answer is written: the next may run.
    mutating func resume() { busy = false }

    /// The next waiting request, when none is being answered.
    mutating func next() -> Request? {
        guard !busy, first < waiting.count else { return nil }
        let r = waiting[first]
        first += 1
        if first == waiting.count {
            waiting.removeAll(keepingCapacity: waiting.count <= 64)
            first = 0
        }
        return r
    }

    /// Takes a read the channel asks for: true when it may go on now; false when it is held,
    /// because a request is being answered off the event loop or requests wait their turn
    /// (then ``releaseRead()`` says when it may go on).
    mutating func allowsRead() -> Bool {
        guard busy || first < waiting.count else { return true }
        heldRead = true
        return false
    }

    /// After requests were answered: true when a held read may go on now (and is no longer held).
    mutating func releaseRead() -> Bool {
        guard heldRead, !busy, first == waiting.count else { return false }
        heldRead = false
        return true
    }

    mutating func closeInput() { inputClosed = true }

    /// Everything the client sent before closing its side is answered.
    var done: Bool { inputClosed && !busy && first == waiting.count }
}

/// A connection's handler that answers its request lines one at a time, in order (some off the
/// event loop), and closes once the client closed its side and the last answer is out: the
/// JSON protocol's and every ``LineProtocol``'s. The handler keeps the state; this is the logic.
protocol OrderedLinesHandler: AnyObject {
    /// Its requests in order (some run off the event loop), and its half-close.
    var order: RequestOrder<ByteBuffer> { get set }
    /// Closing (after an error, a refusal or the half-close): nothing more is answered.
    var closing: Bool { get set }
    /// The last answer's write, for closing after it.
    var lastWrite: EventLoopFuture<Void>? { get }
    /// Answers one request line (it may `order.suspend()` and answer later, then `drain`).
    func handle(_ line: ByteBuffer, context: ChannelHandlerContext)
}

extension OrderedLinesHandler {
    /// A request line arrived: answered now, or when those before it are.
    func arrive(_ line: ByteBuffer, context: ChannelHandlerContext) {
        guard order.arrive(line) else { return }
        handle(line, context: context)
    }

    /// After an answer: the lines that waited, then the half-close, then reading again.
    func drain(context: ChannelHandlerContext) {
        while context.channel.isActive, let next = order.next() { handle(next, context: context) }
        closeIfDone(context: context)
        if context.channel.isActive { context.releaseRead(&order) }
    }

    /// `event` is the client's half-close: true (taken) when it is.
    func inputClosed(_ event: Any, context: ChannelHandlerContext) -> Bool {
        guard case ChannelEvent.inputClosed = event else { return false }
        // (The line decoder has passed on a last line without its newline before this.)
        order.closeInput()
        closeIfDone(context: context)
        return true
    }

    /// After a half-close: once nothing is left to answer, closes when the last answer is out.
    func closeIfDone(context: ChannelHandlerContext) {
        guard order.done, !closing else { return }
        closing = true
        closeAfterLastWrite(context)
    }

    /// Closes the connection once the last answer written has gone out.
    func closeAfterLastWrite(_ context: ChannelHandlerContext) {
        let channel = context.channel
        (lastWrite ?? context.eventLoop.makeSucceededVoidFuture()).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// What a codec's handler tells the transport's handlers before it (an outbound user event)
/// when it holds the connection's reads while requests are answered (``RequestOrder``), and
/// when it lets them go on: ``RequestDeadline`` stops its clock meanwhile.
enum ReadHold: Sendable, Equatable {
    case held, released
}

extension ChannelHandlerContext {
    /// Passes a read on, or holds it while `order` answers requests (telling the handlers
    /// before: ``ReadHold/held``).
    func read<R>(unless order: inout RequestOrder<R>) {
        guard order.allowsRead() else { return triggerUserOutboundEvent(ReadHold.held, promise: nil) }
        read()
    }

    /// Once `order` has answered everything read, lets go of the read it held
    /// (``ReadHold/released``) and passes it on, unless the client is not reading its replies
    /// (the channel is not writable): then ``BackPressure`` has turned `autoRead` off, and its
    /// turning it on again when the replies drain asks for the next read. Passed on regardless,
    /// the read went past ``BackPressure`` and requests were read from a client whose replies
    /// piled up.
    func releaseRead<R>(_ order: inout RequestOrder<R>) {
        guard order.releaseRead() else { return }
        triggerUserOutboundEvent(ReadHold.released, promise: nil)
        if channel.isWritable { read() }
    }
}
