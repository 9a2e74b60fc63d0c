import Control
import Dispatch
import Library
import Logging
import NIOCore
import NIOPosix

/// The MPD protocol on the transport: lines in, `key: value` responses out; its events are
/// the play queue's changes as `idle` reports them (``MPDConnectionHandler``), not the hub's.
struct MPDLineProtocol: WireProtocol {
    let shared: MPDShared
    var framing: Framing { .lines }

    /// MPD clients expect no JSON: refused connections are closed without a word, as mpd's are.
    func refusal(_ error: ProtocolError) -> String? { nil }

    func serve(_ connection: AdmittedConnection, on channel: any Channel) throws {
        let failures = connection.credentialFailures
        let peer = connection.peer
        let codec = MPDProtocol(dispatcher: connection.core.dispatcher, shared: shared, client: connection.client,
                                wrongPassword: { failures.record(from: peer) }, passwordAccepted: connection.authenticated)
        try channel.pipeline.syncOperations.addHandler(MPDConnectionHandler(
            codec: codec, client: connection.client, local: connection.local, logger: connection.logger,
            blocking: connection.blocking, remote: connection.remote))
    }

    func send(_ event: PublishedEvent, on channel: any Channel) {}  // (MPD clients never subscribe to the hub)
}

/// One MPD client's connection: the greeting, command lists, `idle`/`noidle` with the
/// connection's pending subsystems, and the order of replies. A command that touches no file
/// (``MPDCommand/inline``) runs on the event loop; the rest off it, one at a time per connection
/// (``RequestOrder``): on the server's shared pool (they read tags or the file system), or, for
/// one that names a playlist URL to fetch (``MPDCommand/executor(_:)``), on a thread of its own
/// (``RemoteWaits``). Replies are written on the event loop in request order.
final class MPDConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let codec: MPDProtocol
    private let client: ClientContext
    private let state: MPDClientState
    private let logger: Logger
    /// The server's pool for commands that touch files.
    private let blocking: NIOThreadPool
    /// Threads for commands that may wait on a remote server (``RemoteWaits``).
    private let remote: RemoteWaits
    private var observer: UInt64?

    /// The command list being collected: whether each success answers `list_OK`, and its lines.
    private var list: (ok: Bool, commands: [[String]])?
    /// Waiting in `idle` for these subsystems.
    private var idling: Subsystems?
    /// Changes not reported to this client yet (every client hears every change, its own included).
    private var pending: Subsystems = []
    /// Its lines in order: while a command runs on the pool, later lines wait, so replies keep
    /// their order. After the client's half-close (`mpc` closes first after its answer) the
    /// connection closes once every command it sent is answered (otherwise it would stay in
    /// CLOSE-WAIT for good, holding its slot and descriptor).
    private var order = RequestOrder<ByteBuffer>()
    private var closing = false
    /// The last write, for closing after it.
    private var lastWrite: EventLoopFuture<Void>?

    /// The most commands a list may hold (a list that never ends cannot grow without bound).
    static let maxListCommands = 10_000

    /// Where every MPD connection's change events arrive (and go straight on to its event loop).
    private static let events = DispatchQueue(label: "backline.mpd.events")

    init(codec: MPDProtocol, client: ClientContext, local: Bool, logger: Logger, blocking: NIOThreadPool, remote: RemoteWaits) {
        self.codec = codec
        self.client = client
        self.state = MPDClientState(local: local)
        self.logger = logger
        self.blocking = blocking
        self.remote = remote
    }

    func channelActive(context: ChannelHandlerContext) {
        write("OK MPD \(MPDProtocol.version)\n", context: context)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let loop = context.eventLoop
        let client = client
        // Every partition's events; those of one partition only while the client is in it.
        observer = codec.dispatcher.partitions.addObserver(queue: Self.events) { name, event in
            guard !event.isPartitionScoped || name == client.partition else { return }
            let changed = event.subsystems
            guard !changed.isEmpty else { return }
            loop.execute {
                let (handler, context) = bound.value
                handler.pending.formUnion(changed)
                handler.reportIdle(context: context)
            }
        }
        codec.dispatcher.messages.register(client.id) { changed in
            loop.execute {
                let (handler, context) = bound.value
                handler.pending.formUnion(changed)
                handler.reportIdle(context: context)
            }
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Nobody will read what a query still running for this client finds.
        state.cancellation.cancel()
        if let observer { codec.dispatcher.partitions.removeObserver(observer) }
        observer = nil
        codec.dispatcher.messages.remove(client.id)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let line = unwrapInboundIn(data)
        guard order.arrive(line) else { return }
        handle(line, context: context)
    }

    /// Nothing more is read while a command runs off the event loop (``RequestOrder``), as mpd
    /// reads no further while a command runs.
    func read(context: ChannelHandlerContext) {
        context.read(unless: &order)
    }

    private func handle(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        guard !closing else { return }
        var bytes = buffer.readableBytesView
        if bytes.last == UInt8(ascii: "\r") { bytes = bytes.dropLast() }
        let line = String(decoding: bytes, as: UTF8.self)
        let words: [String]
        do throws(MPDError) {
            words = try MPDProtocol.tokenize(line)
        } catch {
            if list != nil { list = nil }
            write("ACK [\(error.ack.rawValue)@0] {} \(error.message)\n", context: context)
            return
        }
        guard let name = words.first else { return }  // a blank line: nothing (as mpd)

        if let idle = idling {
            // In idle only `noidle` is allowed; anything else closes the connection, as mpd does.
            guard name == "noidle" else {
                logger.info("MPD client sent a command during idle; closed", metadata: ["client": "\(client.id)", "command": "\(name)"])
                close(context: context)
                return
            }
            let changed = pending.intersection(idle)
            pending.subtract(changed)
            idling = nil
            write(Self.changedLines(changed) + "OK\n", context: context)
            return
        }
        if var l = list {
            switch name {
            case "command_list_end":
                list = nil
                run(l.commands, listOK: l.ok, context: context)
            case "command_list_begin", "command_list_ok_begin", "idle", "noidle":
                list = nil
                write("ACK [\(MPDAck.unknown.rawValue)@\(l.commands.count)] {} unknown command \"\(name)\"\n", context: context)
            default:
                guard l.commands.count < Self.maxListCommands else {
                    list = nil
                    write("ACK [\(MPDAck.arg.rawValue)@\(l.commands.count)] {} command list too long (at most \(Self.maxListCommands))\n", context: context)
                    return
                }
                l.commands.append(words)
                list = l
            }
            return
        }
        switch name {
        case "command_list_begin": list = (false, [])
        case "command_list_ok_begin": list = (true, [])
        case "noidle": return  // not idling: no reply (as mpd)
        case "close": close(context: context)
        case "idle":
            var mask: Subsystems = []
            for w in words.dropFirst() {
                guard let s = MPDProtocol.subsystems.first(where: { $0.0 == w }) else {
                    write("ACK [\(MPDAck.arg.rawValue)@0] {idle} Unrecognized idle event: \(w)\n", context: context)
                    return
                }
                mask.formUnion(s.1)
            }
            idling = words.count > 1 ? mask : Subsystems(MPDProtocol.subsystems.map(\.1))
            reportIdle(context: context)
        default:
            run([words], listOK: nil, context: context)
        }
    }

    /// Answers `idle` when something it waits for has changed.
    private func reportIdle(context: ChannelHandlerContext) {
        guard let idle = idling else { return }
        let changed = pending.intersection(idle)
        guard !changed.isEmpty else { return }
        pending.subtract(changed)
        idling = nil
        write(Self.changedLines(changed) + "OK\n", context: context)
    }

    static func changedLines(_ s: Subsystems) -> MPDText {
        MPDProtocol.subsystems.filter { !$0.1.isEmpty && s.isSuperset(of: $0.1) }.map { "changed: \($0.0)\n" as MPDText }.joined()
    }

    /// Runs one command (`listOK` nil) or a list; writes the response in order. A single
    /// command that touches no file (``MPDCommand/inline``), or an unknown one, runs here on the event loop, as the
    /// JSON protocol's do (microseconds); the rest off it, on the server's pool or, when one
    /// names a playlist URL to fetch, on a thread of its own.
    private func run(_ commands: [[String]], listOK: Bool?, context: ChannelHandlerContext) {
        // (An unknown command is answered here too: there is nothing to run.)
        if listOK == nil, commands.count == 1, let name = commands[0].first, MPDCommandTable.command(name)?.inline ?? true {
            write(Self.respond(commands, listOK: nil, codec: codec, state: state, client: client), context: context)
            return
        }
        order.suspend()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let loop = context.eventLoop
        let (codec, state, client) = (codec, state, client)
        let respond: @Sendable () -> ByteBuffer = {
            let response = Self.respond(commands, listOK: listOK, codec: codec, state: state, client: client)
            // A big answer (a library listing, a search) leaves freed memory behind: given back soon.
            if response.readableBytes > 64 << 10 { codec.shared.bigAnswer() }
            return response
        }
        let deliver: @Sendable (ByteBuffer) -> Void = { response in
            let (handler, context) = bound.value
            handler.order.resume()
            handler.write(response, context: context)
            handler.drain(context: context)
        }
        // (A command that may wait on a remote server never holds the shared pool's threads.)
        let network = commands.contains { words in
            words.first.flatMap(MPDCommandTable.command)?.executor(words.dropFirst()) == .network
        }
        remote.run(network ? .network : .offLoop, pool: blocking, respond, answerOn: loop, deliver)
    }

    /// The response to `commands`: each one's lines (and `list_OK` in an `_ok_` list), then `OK`,
    /// or the first failure's `ACK [code@index] {command} message`.
    static func respond(_ commands: [[String]], listOK: Bool?, codec: MPDProtocol, state: MPDClientState,
                        client: ClientContext) -> ByteBuffer {
        var out = ByteBufferAllocator().buffer(capacity: 1024)
        for (i, words) in commands.enumerated() {
            do throws(MPDError) {
                try codec.execute(words, state: state, connection: client, into: &out)
                if listOK == true { out.writeStaticString("list_OK\n") }
            } catch {
                // mpd: `ACK [5@i] {} unknown command`; a known command's own failure names it.
                let name = error.ack == .unknown && MPDCommandTable.command(words[0]) == nil ? "" : words[0]
                out.writeMPD("ACK [\(error.ack.rawValue)@\(i)] {\(name)} \(error.message)\n")
                return out
            }
        }
        out.writeStaticString("OK\n")
        return out
    }

    private func drain(context: ChannelHandlerContext) {
        while !closing, let next = order.next() { handle(next, context: context) }
        closeIfDone(context: context)
        if !closing { context.releaseRead(&order) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            // (The line decoder has passed on a last line without its newline before this.)
            order.closeInput()
            closeIfDone(context: context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// After the client's half-close: once nothing is left to answer, closes when the last
    /// answer is out (a client in `idle` that closes its side is done: closed at once).
    private func closeIfDone(context: ChannelHandlerContext) {
        guard order.done, !closing else { return }
        close(context: context)
    }

    private func write(_ text: MPDText, context: ChannelHandlerContext) {
        guard !closing, text.byteCount > 0 else { return }
        var buf = context.channel.allocator.buffer(capacity: text.byteCount)
        buf.writeMPD(text)
        lastWrite = context.writeAndFlush(wrapOutboundOut(buf))
    }

    private func write(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        guard !closing, buffer.readableBytes > 0 else { return }
        lastWrite = context.writeAndFlush(wrapOutboundOut(buffer))
    }

    /// Closes the connection once what was written has gone out (or after 10 s, for a client
    /// that does not read it).
    private func close(context: ChannelHandlerContext) {
        closing = true
        let channel = context.channel
        guard let lastWrite else { return channel.close(promise: nil) }
        lastWrite.whenComplete { _ in channel.close(promise: nil) }
        let deadline = context.eventLoop.scheduleTask(in: .seconds(10)) { channel.close(promise: nil) }
        // (Cancelled once closed: pending, it would keep the channel for its 10 s, ~1,000 of
        // them at 100 connections a second.)
        channel.closeFuture.whenComplete { _ in deadline.cancel() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !closing else { return }
        if error is RequestTooLarge || (error as? ByteToMessageDecoderError) != nil {
            write("ACK [\(MPDAck.arg.rawValue)@0] {} line too long\n", context: context)
        }
        close(context: context)
    }
}
