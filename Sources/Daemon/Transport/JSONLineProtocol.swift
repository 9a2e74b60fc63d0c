import BacklineWire
import Control
import Logging
import MediaCore
import NIOCore
import NIOPosix

/// The JSON protocol on the transport: newline-delimited requests, replies and events
/// (``JSONCodec`` renders them; ``DaemonCore/prepare(_:client:)`` turns a request into a
/// command for the dispatcher). The WebSocket carries the same lines, one per message
/// (``WebSocketLines``), so it is this codec too.
struct JSONLineProtocol: WireProtocol {
    var framing: Framing { .lines }

    func refusal(_ error: ProtocolError) -> String? { Self.line(DaemonCore.errorReply(.null, error)) }

    func serve(_ connection: AdmittedConnection, on channel: any Channel) throws {
        let (client, core) = (connection.client, connection.core)
        // Client-to-client messages reach a JSON client as `message` events once it
        // subscribed to them; until then they wait for `channel-read`.
        let messages = core.messages
        let hub = core.hub
        messages.register(client.id) { changed in
            guard changed.contains(.message), hub.wants(client.id, .message) else { return }
            for m in messages.read(client.id) { hub.deliver(to: client.id, .message(channel: m.channel, text: m.text)) }
        }
        channel.closeFuture.whenComplete { _ in messages.remove(client.id) }
        try channel.pipeline.syncOperations.addHandler(ConnectionHandler(connection))
    }

    func send(_ event: PublishedEvent, on channel: any Channel) {
        let line = Self.line(JSONCodec.event(event))
        var buf = channel.allocator.buffer(capacity: line.utf8.count)
        buf.writeString(line)
        channel.writeAndFlush(buf, promise: nil)
    }

    /// `value` as one line.
    static func line(_ value: JSON) -> String { value.text + "\n" }
}

/// One connection: parses each line, runs it (slow commands off the event loop, one at a time,
/// so replies keep request order), writes the reply.
final class ConnectionHandler: ChannelDuplexHandler, OrderedLinesHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let core: DaemonCore
    let client: ClientContext
    let logger: Logger
    var order = RequestOrder<ByteBuffer>()
    /// Where this connection's off-loop requests run, one at a time (in request order anyway):
    /// the server's shared pool (see ``ControlServer/blocking``), or, for those that name a
    /// playlist URL to fetch, threads of their own (``RemoteWaits``).
    let blocking: NIOThreadPool
    let remote: RemoteWaits
    var closing = false
    private(set) var lastWrite: EventLoopFuture<Void>?

    let tokenFailures: LogLimiter
    /// Called once when a TCP client authenticates.
    let authenticated: @Sendable () -> Void

    init(_ c: AdmittedConnection) {
        core = c.core
        blocking = c.blocking
        remote = c.remote
        client = c.client
        logger = c.logger
        tokenFailures = c.credentialFailures
        authenticated = c.authenticated
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        core.trimmer.noteActivity()  // its buffers are free now
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        arrive(unwrapInboundIn(data), context: context)
    }

    /// Nothing more is read while a request is answered off the event loop (``RequestOrder``).
    func read(context: ChannelHandlerContext) {
        context.read(unless: &order)
    }

    func handle(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
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
        if prepared.executor != .loop {
            order.suspend()
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let loop = context.eventLoop
            let deliver: @Sendable (JSON) -> Void = { reply in
                let (handler, context) = bound.value
                handler.order.resume()
                handler.write(reply, context: context)
                handler.drain(context: context)
            }
            remote.run(prepared.executor, pool: blocking, prepared.run, answerOn: loop, deliver)
            return
        }
        let reply = prepared.run()
        if client.needsToken, prepared.presentsToken {
            if client.authenticated {
                authenticated()
            } else {
                // A wrong token: answered after a second, then the connection closes; nothing
                // else is read meanwhile. A guessing loop gets one try per second per
                // connection, and few connections (`max-unauthenticated`).
                tokenFailures.record(from: context.remoteAddress.map { "\($0)" } ?? "?")
                order.suspend()
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

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !inputClosed(event, context: context) { context.fireUserInboundEventTriggered(event) }
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

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !closing else { return }
        closing = true
        if error is RequestTooLarge || (error as? ByteToMessageDecoderError) != nil {
            let e = ProtocolError("request-too-large", "a request line may be at most \(core.config.maxRequestBytes) bytes; closing")
            logger.warning("request too large; connection closed", metadata: ["client": "\(client.id)"])
            writeThenClose(context, JSONLineProtocol.line(DaemonCore.errorReply(.null, e)))
            return
        }
        logger.debug("connection error", metadata: ["client": "\(client.id)", "error": "\(error)"])
        context.close(promise: nil)
    }
}
