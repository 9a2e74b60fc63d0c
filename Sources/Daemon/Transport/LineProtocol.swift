import Control
import Logging
import NIOCore
import NIOPosix

/// A protocol of request lines that a package adds to the daemon: each line a client sends is
/// answered with text, in order. Registered as a ``ListenerKind`` (``ListenerKind/init(name:configKey:protocol:)``)
/// in a ``ListenerRegistry``, it listens on the addresses the configuration's
/// `listen-KEY = ADDRESS` lines give it.
///
/// The transport does everything else, as for the daemon's own protocols: listening, the
/// connection cap, the peer-uid check on Unix sockets, the request size and deadline,
/// back-pressure and request order. A registered protocol listens on Unix sockets (the daemon's
/// user only) and loopback TCP addresses (``DaemonConfig/validate()`` refuses others: such a
/// protocol asks for no credentials). It is sent no events.
public protocol LineProtocol: Sendable {
    /// What a new connection is told first (nil, the default: nothing).
    func greeting() -> String?
    /// The answer to `line` (without its `\n` or `\r\n`), written as given: end it with a
    /// newline. Runs off the event loop, one line of a connection at a time, so it may run
    /// commands that read files or wait (``LineRequest/execute(_:)``).
    func answer(_ line: String, _ request: LineRequest) -> String
    /// What a connection refused before it is served is told (too many connections, a line
    /// too long or too slow): `code` and `message` say why. Nil, the default: closed without
    /// a word.
    func refusal(code: String, message: String) -> String?
}

extension LineProtocol {
    public func greeting() -> String? { nil }
    public func refusal(code: String, message: String) -> String? { nil }
}

/// What a ``LineProtocol`` answers one line with: the commands of the daemon, run for the
/// connection (its partition; the owner's permissions, as every registered listener is the
/// owner's or loopback).
public struct LineRequest: Sendable {
    let client: ClientContext
    let dispatcher: CommandDispatcher

    /// Runs `command` for this connection, as the JSON protocol runs it.
    public func execute(_ command: any ControlCommand) -> Result<Reply, CommandError> {
        dispatcher.execute(command, from: client)
    }

    /// The connection, unique while it is open (for a protocol's own per-connection state).
    public var connectionID: UInt64 { client.id }
}

/// A ``LineProtocol`` on the transport.
struct LineProtocolCodec: WireProtocol {
    let lines: any LineProtocol
    var framing: Framing { .lines }

    func refusal(_ error: ProtocolError) -> String? { lines.refusal(code: error.code, message: error.message) }

    func serve(_ connection: AdmittedConnection, on channel: any Channel) throws {
        try channel.pipeline.syncOperations.addHandler(LineProtocolHandler(connection, lines))
    }

    /// A line protocol is sent no events (its commands may subscribe; nothing is written).
    func send(_ event: PublishedEvent, on channel: any Channel) {}
}

/// One connection of a ``LineProtocol``: its greeting, then each line answered off the event
/// loop (on the server's shared threads), one at a time, so answers keep request order.
final class LineProtocolHandler: ChannelDuplexHandler, OrderedLinesHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let lines: any LineProtocol
    let request: LineRequest
    let blocking: NIOThreadPool
    let remote: RemoteWaits
    let logger: Logger
    var order = RequestOrder<ByteBuffer>()
    var closing = false
    private var greeted = false
    private(set) var lastWrite: EventLoopFuture<Void>?

    init(_ c: AdmittedConnection, _ lines: any LineProtocol) {
        self.lines = lines
        request = LineRequest(client: c.client, dispatcher: c.core.dispatcher)
        (blocking, remote, logger) = (c.blocking, c.remote, c.logger)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { greet(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        greet(context)
        context.fireChannelActive()
    }

    private func greet(_ context: ChannelHandlerContext) {
        guard !greeted else { return }
        greeted = true
        if let text = lines.greeting() { write(text, context: context) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        arrive(unwrapInboundIn(data), context: context)
    }

    /// Nothing more is read while a line is answered (``RequestOrder``).
    func read(context: ChannelHandlerContext) {
        context.read(unless: &order)
    }

    func handle(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        var bytes = buffer.readableBytesView
        if bytes.last == UInt8(ascii: "\r") { bytes = bytes.dropLast() }
        let text = String(decoding: bytes, as: UTF8.self)
        order.suspend()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let (lines, request) = (self.lines, self.request)
        remote.run(.offLoop, pool: blocking, { lines.answer(text, request) }, answerOn: context.eventLoop) { answer in
            let (handler, context) = bound.value
            handler.order.resume()
            handler.write(answer, context: context)
            handler.drain(context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !inputClosed(event, context: context) { context.fireUserInboundEventTriggered(event) }
    }

    private func write(_ text: String, context: ChannelHandlerContext) {
        guard context.channel.isActive, !text.isEmpty else { return }
        var buf = context.channel.allocator.buffer(capacity: text.utf8.count)
        buf.writeString(text)
        lastWrite = context.writeAndFlush(wrapOutboundOut(buf))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !closing else { return }
        closing = true
        if error is RequestTooLarge || (error as? ByteToMessageDecoderError) != nil {
            logger.warning("request too large; connection closed", metadata: ["client": "\(request.client.id)"])
            writeThenClose(context, lines.refusal(code: "request-too-large", message: "a request line is too long; closing"))
            return
        }
        logger.debug("connection error", metadata: ["client": "\(request.client.id)", "error": "\(error)"])
        context.close(promise: nil)
    }
}
