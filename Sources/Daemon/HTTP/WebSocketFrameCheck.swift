import NIOCore
import NIOWebSocket

/// RFC 6455's rules for what a client sends, checked on every frame as it arrives (NIO's
/// decoder takes any frame): a client's frame is masked (§5.1), no reserved bit is set, as no
/// extension was agreed on (§5.2), and its opcode is one the protocol defines (§5.2: 3–7 and
/// B–F are reserved). A frame that breaks one fails the connection (§7.1.7):
/// ``WebSocketLines`` answers ``WebSocketFrameCheck/Violation`` with close code 1002 and
/// closes; nothing after that frame is passed on.
final class WebSocketFrameCheck: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame

    /// The rule a client's frame broke.
    enum Violation: Error, Equatable {
        case unmasked, reservedBits, reservedOpcode
    }

    private var failed = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let frame = unwrapInboundIn(data)
        let violation: Violation? = frame.maskKey == nil ? .unmasked
            : frame.rsv1 || frame.rsv2 || frame.rsv3 ? .reservedBits
            : Self.defined.contains(frame.opcode) ? nil : .reservedOpcode
        guard let violation else { return context.fireChannelRead(data) }
        failed = true
        context.fireErrorCaught(violation)
    }

    /// The opcodes RFC 6455 defines.
    private static let defined: [WebSocketOpcode] = [.continuation, .text, .binary, .connectionClose, .ping, .pong]
}
