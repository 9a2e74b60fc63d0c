import BacklineWire
import Control
import Logging
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// The web remote on the transport: HTTP/1.1 for the page, cover art, `GET /status` and the
/// login (``WebHandler``), and the WebSocket at `/ws`, which carries the JSON protocol
/// unchanged — one request, reply or event per text message — through the JSON codec's own
/// handler (``WebSocketLines`` turns messages into its lines and back). No command code here.
struct HTTPProtocol: WireProtocol {
    let site: WebSite
    /// The listener is on a loopback address: every request must name this machine (`Host`),
    /// login or not (a DNS-rebinding page can neither drive it nor lock its user out).
    let loopback: Bool
    var framing: Framing { .http }

    /// An HTTP response that says why, then the connection is closed.
    func refusal(_ error: ProtocolError) -> String? {
        let status = switch error.code {
        case "forbidden": "403 Forbidden"
        case "timeout": "408 Request Timeout"
        default: "503 Service Unavailable"
        }
        let body = error.message + "\n"
        return "HTTP/1.1 \(status)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
    }

    func serve(_ connection: AdmittedConnection, on channel: any Channel) throws {
        let config = connection.core.config
        let web = WebHandler(site: site, connection: connection, loopback: loopback, peerAddress: channel.remoteAddress?.ipAddress)
        let deadline = HTTPDeadline(seconds: config.requestTimeout)
        let aggregator = NIOHTTPServerRequestAggregator(maxContentLength: config.maxRequestBytes)
        let maxBytes = config.maxRequestBytes
        let bound = NIOLoopBound(web, eventLoop: channel.eventLoop)
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: maxBytes, automaticErrorHandling: false,  // (WebSocketLines answers errors: one close at most)
            shouldUpgrade: { channel, head in
                // The same checks as every request (Host, Origin, session): a page from
                // elsewhere gets no WebSocket (the request then reaches the handler: 403).
                channel.eventLoop.makeSucceededFuture(bound.value.mayOpenWebSocket(head) ? HTTPHeaders() : nil)
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    if connection.client.needsToken, !connection.client.authenticated {
                        connection.client.authenticated = true  // (a session was checked above)
                        connection.authenticated()
                    }
                    try channel.pipeline.syncOperations.addHandlers(HTTPProtocol.webSocketMessages(maxBytes: maxBytes))
                    try JSONLineProtocol().serve(connection, on: channel)
                }
            })
        let handlers = NIOLoopBound((deadline, aggregator, web), eventLoop: channel.eventLoop)
        let ops = channel.pipeline.syncOperations
        try ops.configureHTTPServerPipeline(
            withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in
                // A WebSocket now: the HTTP handlers go (a subscriber may be idle for hours).
                let ops = context.pipeline.syncOperations
                let (deadline, aggregator, web) = handlers.value
                _ = ops.removeHandler(deadline)
                _ = ops.removeHandler(aggregator)
                _ = ops.removeHandler(web)
            }),
            withErrorHandling: true)
        try ops.addHandler(deadline)
        try ops.addHandler(aggregator)
        try ops.addHandler(web)
    }

    /// What this protocol puts after NIO's frame decoder and encoder once a connection is a
    /// WebSocket, before the JSON codec's handler: RFC 6455's checks of each client frame
    /// (``WebSocketFrameCheck``), whole messages from frames (at most `maxBytes`), then each
    /// message as a line and each line as a message (``WebSocketLines``).
    static func webSocketMessages(maxBytes: Int) -> [any ChannelHandler] {
        [WebSocketFrameCheck(),
         NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1024, maxAccumulatedFrameSize: maxBytes),
         WebSocketLines()]
    }

    /// Events reach a WebSocket as the JSON codec's lines (``WebSocketLines`` frames them).
    func send(_ event: PublishedEvent, on channel: any Channel) {
        JSONLineProtocol().send(event, on: channel)
    }
}

/// A WebSocket's handlers from the bytes up to the JSON codec's lines, as an upgraded
/// connection has them: NIO's frame encoder and decoder (in the order its upgrader adds them,
/// with the web remote's settings), then
/// ``HTTPProtocol/webSocketMessages(maxBytes:)``. For the `websocket` fuzz target, which puts
/// its own line handler after them.
package enum WebSocketConnection {
    /// The handlers, for messages of at most `maxBytes`.
    package static func handlers(maxBytes: Int) -> [any ChannelHandler] {
        [WebSocketFrameEncoder(), ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maxBytes))]
            + HTTPProtocol.webSocketMessages(maxBytes: maxBytes)
    }
}

/// HTTP's request deadline: a request must arrive whole within `seconds` of the connection
/// opening or of the previous response having been sent (a client dripping its headers, or
/// holding a keep-alive connection idle, is closed; one reading a large answer slowly is not:
/// the clock starts when the answer is out). Removed once the connection is a WebSocket.
final class HTTPDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart
    let seconds: Double
    private var timer: Scheduled<Void>?

    init(seconds: Double) { self.seconds = seconds }

    func handlerAdded(context: ChannelHandlerContext) { restart(context) }
    func handlerRemoved(context: ChannelHandlerContext) { timer?.cancel() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) {
            timer?.cancel()  // whole: it is being answered
            timer = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else { return context.write(data, promise: promise) }
        let written = promise ?? context.eventLoop.makePromise()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        written.futureResult.whenSuccess {
            let (handler, context) = bound.value
            if context.channel.isActive { handler.restart(context) }
        }
        context.write(data, promise: written)
    }

    private func restart(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(seconds * 1e9))) { channel.close(promise: nil) }
    }
}

/// The WebSocket as lines for the JSON codec's handler: each text message in is one request
/// line; each line out (a reply, an event) is one text message. Pings are answered; a close
/// is answered and closes; a protocol error below (a frame NIO's decoder refuses, a frame
/// ``WebSocketFrameCheck`` refuses, a message the aggregator refuses) is answered with a close
/// saying why (1002, or 1009 for one too large) and closes. At most one close is ever sent, and nothing after it (RFC 6455 §5.5.1:
/// NIO's own error handler sent a second close for a bad frame read with the client's close,
/// found by the `websocket` fuzz target).
final class WebSocketLines: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = WebSocketFrame
    private var closing = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        // Once the close is sent, what the client still sends is not answered (the close it
        // sends back ends the connection at once).
        if closing, frame.opcode != .connectionClose { return }
        switch frame.opcode {
        case .text, .binary:
            context.fireChannelRead(wrapInboundOut(frame.unmaskedData))
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            sendClose(context, .normalClosure)
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let e = error as? NIOWebSocketError {
            sendClose(context, e == .invalidFrameLength ? .messageTooLarge : .protocolError)
        } else if error is WebSocketFrameCheck.Violation {
            sendClose(context, .protocolError)
        } else if let e = error as? NIOWebSocketFrameAggregator.Error {
            sendClose(context, e == .accumulatedFrameSizeIsTooLarge || e == .tooManyFragments ? .messageTooLarge : .protocolError)
        } else {
            context.fireErrorCaught(error)
        }
    }

    /// Sends the one close frame, with `code`, then closes; once closing, closes at once.
    private func sendClose(_ context: ChannelHandlerContext, _ code: WebSocketErrorCode) {
        guard !closing else { return context.close(promise: nil) }
        closing = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)))
            .whenComplete { _ in channel.close(promise: nil) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // A reply or event after the close: not sent (no data frame follows a close).
        guard !closing else { promise?.fail(ChannelError.outputClosed); return }
        var line = unwrapOutboundIn(data)
        if line.readableBytesView.last == UInt8(ascii: "\n") { line.moveWriterIndex(to: line.writerIndex - 1) }
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: line)), promise: promise)
    }
}
