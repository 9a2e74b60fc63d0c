import Control
import Daemon
import Glibc
import Logging
import NIOCore
import NIOEmbedded

/// The web remote's front door, fed raw bytes as a browser (or anyone) sends them to its port.
enum WebTargets {
    /// Bytes on the HTTP port, through the pipeline its listener builds for a connection (NIO's
    /// HTTP/1.1 parser and upgrader, the request deadline, the aggregator, `WebHandler`), into a
    /// daemon whose remote asks for a password no input can guess. Whatever comes in, what goes
    /// out is a sequence of well-formed responses (a status line, headers the remote sends and
    /// no others, the body its `Content-Length` says), each a redirect to the login or a refusal:
    /// nothing is served and no WebSocket opens without credentials, and no request is an
    /// internal error.
    static let httpRequest = FuzzTarget("http-request", "the web remote's HTTP pipeline, logged out; well-formed responses, each a redirect to the login or a refusal",
                                        prepare: { _ = WebRig.shared }) { input throws(InvariantFailure) in
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        guard InMemoryEndpoints(server: WebRig.shared.server, core: WebRig.shared.core).connect(channel, to: "HTTP", peer: "127.0.0.1") else {
            throw InvariantFailure("http-request", "no HTTP endpoint")
        }
        _ = try? channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        feedInTwoReads(channel, input)
        // A wrong password is answered after a second; the request deadline (10 s) not reached.
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        try checkResponses(output(channel))
    }

    /// Bytes on an open WebSocket, through the handlers an upgraded connection has (NIO's frame
    /// decoder and encoder, the message aggregator, `WebSocketLines`),
    /// with a line handler standing for the JSON codec that answers each line with one reply.
    /// What goes out is well-formed server frames only (final, unmasked, lengths minimal and
    /// within the output): one text message per line received, pongs of at most 125 bytes, at
    /// most one close, last; no line over the size limit reaches the codec.
    static let webSocket = FuzzTarget("websocket", "WebSocket frames to the JSON codec's lines; well-formed server frames, one reply per message, at most one close") { input throws(InvariantFailure) in
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish(acceptAlreadyClosed: true) }
        let lines = LineRecorder()
        do {
            try channel.pipeline.syncOperations.addHandlers(WebSocketConnection.handlers(maxBytes: WebRig.maxBytes))
            try channel.pipeline.syncOperations.addHandler(lines)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        } catch {
            throw InvariantFailure("websocket", "the pipeline was not built: \(error)")
        }
        feedInTwoReads(channel, input)
        let frames = try serverFrames(output(channel))
        try check(lines.longest <= WebRig.maxBytes, "websocket", "a line of \(lines.longest) bytes reached the codec (limit \(WebRig.maxBytes))")
        let texts = frames.filter { $0.opcode == 0x1 }
        try check(texts.count == lines.count, "websocket", "\(lines.count) lines received, \(texts.count) text messages sent")
        try check(texts.allSatisfy { $0.payload == LineRecorder.reply }, "websocket", "a reply changed on its way out")
        let closes = frames.indices.filter { frames[$0].opcode == 0x8 }
        try check(closes.count <= 1 && closes.allSatisfy { $0 == frames.count - 1 }, "websocket", "a close that is not the one last frame: \(frames.map(\.opcode))")
        for f in frames {
            try check([0x1, 0x8, 0xA].contains(f.opcode), "websocket", "the server sent opcode \(f.opcode)")
            if f.opcode != 0x1 { try check(f.payload.count <= 125, "websocket", "a control frame of \(f.payload.count) bytes") }
        }
    }

    /// Writes `input` to the channel in two reads, cut where its first byte says (a request or
    /// frame split anywhere).
    private static func feedInTwoReads(_ channel: EmbeddedChannel, _ input: [UInt8]) {
        let cut = input.isEmpty ? 0 : Int(input[0]) % (input.count + 1)
        feed(channel, input[..<cut])
        feed(channel, input[cut...])
    }

    /// Writes `bytes` to the channel as one read and runs what it started.
    private static func feed(_ channel: EmbeddedChannel, _ bytes: ArraySlice<UInt8>) {
        guard !bytes.isEmpty, channel.isActive else { return }
        var b = channel.allocator.buffer(capacity: bytes.count)
        b.writeBytes(bytes)
        _ = try? channel.writeInbound(b)  // (an error fired down the pipeline is thrown here: the connection's end)
        channel.embeddedEventLoop.run()
    }

    /// Everything the connection wrote.
    private static func output(_ channel: EmbeddedChannel) -> [UInt8] {
        var out: [UInt8] = []
        while let b = try? channel.readOutbound(as: ByteBuffer.self) { out += b.readableBytesView }
        return out
    }

    /// The header names the remote's responses carry (lowercased): `WebHandler`'s and NIO's
    /// error responses'.
    static let headerNames: Set<String> = [
        "content-type", "content-length", "connection", "location", "set-cookie", "allow", "cache-control",
        "content-security-policy", "etag", "x-content-type-options", "referrer-policy",
    ]

    /// Checks that `out` is whole responses, each a redirect or a refusal.
    static func checkResponses(_ out: [UInt8]) throws(InvariantFailure) {
        let crlf2: [UInt8] = [13, 10, 13, 10]
        var i = 0
        while i < out.count {
            guard let end = out[i...].firstRange(of: crlf2)?.lowerBound else {
                throw InvariantFailure("http-request", "a response head with no end: \(shown(String(decoding: out[i...], as: UTF8.self)))")
            }
            let head = out[i..<end]
            try check(!head.contains { ($0 < 0x20 && $0 != 13 && $0 != 10 && $0 != 9) || $0 == 0x7F }, "http-request", "a control character in a response head")
            let lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
            let status = lines[0]
            // HTTP/1.1, or 1.0 to a 1.0 request (NIO's aggregator answers a request too large in its version).
            let code = status.hasPrefix("HTTP/1.1 ") || status.hasPrefix("HTTP/1.0 ") ? Int(status.dropFirst(9).prefix(3)) : nil
            guard let code, status.count == 12 || status.dropFirst(12).hasPrefix(" ") else {
                throw InvariantFailure("http-request", "not a status line: \(shown(status))")
            }
            try check([302, 303].contains(code) || (400..<500).contains(code) || code == 503, "http-request",
                      "HTTP \(code) to a client with no credentials: \(shown(status))")
            var length: Int?
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":"), line[line.index(after: colon)...].hasPrefix(" ") else {
                    throw InvariantFailure("http-request", "not a header line: \(shown(line))")
                }
                let name = line[..<colon].lowercased()
                try check(headerNames.contains(name), "http-request", "a header the remote does not send: \(shown(line))")
                try check(!line.contains("\r") && !line.contains("\n"), "http-request", "a line break inside a header: \(shown(line))")
                if name == "content-length" {
                    guard length == nil, let n = Int(line[line.index(colon, offsetBy: 2)...]), n >= 0 else {
                        throw InvariantFailure("http-request", "Content-Length: \(shown(line))")
                    }
                    length = n
                }
            }
            guard let length else { throw InvariantFailure("http-request", "a response with no Content-Length: \(shown(status))") }
            // Its body, or none (the answer to a HEAD): the next response or the end follows.
            let next = [end + 4 + length, end + 4].first { $0 == out.count || ($0 < out.count && out[$0...].starts(with: Array("HTTP/1.".utf8))) }
            guard let next else {
                throw InvariantFailure("http-request", "a body that is not the \(length) bytes Content-Length says: \(shown(status))")
            }
            i = next
        }
    }

    /// A frame the server sent.
    struct Frame { var opcode: UInt8; var payload: [UInt8] }

    /// Splits `out` into server frames, checking each.
    static func serverFrames(_ out: [UInt8]) throws(InvariantFailure) -> [Frame] {
        var frames: [Frame] = []
        var i = 0
        while i < out.count {
            try check(i + 2 <= out.count, "websocket", "a frame cut short")
            let b0 = out[i], b1 = out[i + 1]
            try check(b0 & 0x80 != 0, "websocket", "a server frame that is not final")
            try check(b0 & 0x70 == 0, "websocket", "reserved bits set in a server frame")
            try check(b1 & 0x80 == 0, "websocket", "a masked server frame")
            var n = Int(b1 & 0x7F), at = i + 2
            if n == 126 {
                try check(at + 2 <= out.count, "websocket", "a frame length cut short")
                n = Int(out[at]) << 8 | Int(out[at + 1])
                try check(n >= 126, "websocket", "a 16-bit length of \(n)")
                at += 2
            } else if n == 127 {
                try check(at + 8 <= out.count, "websocket", "a frame length cut short")
                n = out[at..<at + 8].reduce(0) { $0 << 8 | Int($1) }
                try check(n > 0xFFFF && n <= out.count, "websocket", "a 64-bit length of \(n)")
                at += 8
            }
            try check(at + n <= out.count, "websocket", "a frame of \(n) bytes with \(out.count - at) left")
            frames.append(Frame(opcode: b0 & 0x0F, payload: Array(out[at..<at + n])))
            i = at + n
        }
        return frames
    }
}

/// The JSON codec's place in the `websocket` target: counts the lines it is given, answers each
/// with one reply line.
private final class LineRecorder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    static let reply = Array(#"{"ok":true}"#.utf8)
    private(set) var count = 0
    private(set) var longest = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let line = unwrapInboundIn(data)
        count += 1
        longest = max(longest, line.readableBytes)
        var out = context.channel.allocator.buffer(capacity: Self.reply.count + 1)
        out.writeBytes(Self.reply)
        out.writeInteger(UInt8(ascii: "\n"))
        context.writeAndFlush(wrapOutboundOut(out), promise: nil)
    }
}

/// One daemon core for every input (device `null`, no library, no MPRIS), listening nowhere:
/// its HTTP endpoint, on loopback, asks for a password and takes a token no input can guess.
final class WebRig: Sendable {
    let core: DaemonCore
    let server: ControlServer
    /// The request and message size limit (the default is 64 KiB: smaller, so inputs reach it).
    static let maxBytes = 4096

    static let shared = WebRig()

    private init() {
        let dir = FuzzScratch.path("web")
        for d in [dir, dir + "/music"] { mkdir(d, 0o700) }
        var config = DaemonConfig.defaults(environment: [
            "HOME": dir, "XDG_RUNTIME_DIR": dir + "/run", "XDG_STATE_HOME": dir + "/state", "XDG_CONFIG_HOME": dir + "/config",
        ])
        config.device = "null"
        config.mpris = false
        config.musicDirectory = dir + "/music"
        do { try config.set("library", "off") } catch { fatalError("the fuzz targets' daemon: \(error)") }
        config.httpListen = ["127.0.0.1:8080"]
        // Unguessable, and different each run.
        let secret = (0..<4).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 36) }.joined()
        config.httpPassword = "p" + secret
        config.token = "t" + secret
        config.webRoot = dir + "/no-web-root"  // (not there: pages answer 404 on the event loop, never read off it)
        config.maxRequestBytes = Self.maxBytes
        var logger = Logger(label: "fuzz-web")
        logger.logLevel = .critical  // (a refusal is logged as a warning: millions of lines)
        do {
            core = try DaemonCore(config: config, logger: logger, version: "fuzz", registryDirectory: dir + "/sessions")
        } catch {
            fatalError("the fuzz targets' daemon: \(error.message)")
        }
        server = ControlServer(config: config, logger: logger)
    }
}
