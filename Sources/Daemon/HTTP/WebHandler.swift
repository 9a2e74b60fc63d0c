import BacklineWire
import Control
import FoundationEssentials
import Logging
import MediaCore
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Platform

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP connection's requests (before any upgrade to a WebSocket): the page's files, cover
/// art (`/art/ID`), `GET /status`, the login. Every request is checked the same way first:
///
/// - `Host`: on a listener that asks for no login (loopback), it must name this machine
///   (`localhost`, `127.x`, `[::1]`), so a page from elsewhere cannot reach it through DNS
///   rebinding;
/// - cross-site requests (`Sec-Fetch-Site: cross-site`, an `Origin` that is not the page's own)
///   get 403, except a top-level navigation to a page;
/// - everything but the login page and its style sheet needs a session (or `Authorization:
///   Bearer` with the password or token) when logins are asked for.
final class WebHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOHTTPServerRequestFull
    typealias OutboundOut = HTTPServerResponsePart

    let site: WebSite
    let connection: AdmittedConnection
    /// Whether requests need a session here.
    let needsLogin: Bool
    /// The listener is on a loopback address: requests must name this machine (`Host`).
    let loopback: Bool
    /// The peer's IP address (the login rate limit's key).
    private var peerAddress: String
    /// Its requests in order (files and art are read off the event loop), and its half-close.
    private var order = RequestOrder<NIOHTTPServerRequestFull>()
    /// The last response's write, for closing after it.
    private var lastWrite: EventLoopFuture<Void>?

    init(site: WebSite, connection: AdmittedConnection, loopback: Bool, peerAddress: String?) {
        self.site = site
        self.connection = connection
        self.loopback = loopback
        self.peerAddress = peerAddress ?? connection.peer
        needsLogin = connection.client.needsToken
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        connection.core.trimmer.noteActivity()  // what its files and pictures used is free now: given back soon
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let request = unwrapInboundIn(data)
        guard order.arrive(request) else { return }
        handle(request, context: context)
    }

    // MARK: - Routing

    private func handle(_ request: NIOHTTPServerRequestFull, context: ChannelHandlerContext) {
        let head = request.head
        let path = String(head.uri.prefix { $0 != "?" && $0 != "#" })
        guard head.method == .GET || head.method == .HEAD || head.method == .POST else {
            return respond(context, head, .methodNotAllowed, text: "method not allowed", extra: [("Allow", "GET, HEAD, POST")])
        }
        if let refusal = refusal(head) {
            connection.listener.crossSite.record(from: connection.peer)
            return respond(context, head, refusal.status, text: refusal.reason)
        }
        let given = credentials(head)
        if given == .wrong {
            // A wrong bearer is a wrong password: counted, logged, answered after a second.
            return refuseCredentials(context, head)
        }
        let signedIn = given == .valid
        if signedIn, !connection.client.authenticated, needsLogin {
            connection.client.authenticated = true
            connection.authenticated()
        }
        switch (head.method, path) {
        case (.POST, "/login"): return login(request, context: context)
        case (.POST, "/logout"):
            if let c = Self.cookie(head, WebSite.cookieName) { site.closeSession(c) }
            return redirect(context, head, "/login.html", cookie: "\(WebSite.cookieName)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
        case (.POST, _): return respond(context, head, .notFound, text: "not found")
        // The login page and what it loads (static, nothing of the daemon in them).
        case (_, "/login.html"), (_, "/app.css"), (_, "/app.js"), (_, "/favicon.svg"): return file(path, context: context, head: head)
        default: break
        }
        guard signedIn else {
            // A person gets the login page; a script, a status it can read.
            if path == "/" || path == "/index.html" { return redirect(context, head, "/login.html") }
            return respond(context, head, .unauthorized, text: "log in first (POST /login), or send Authorization: Bearer")
        }
        if path == "/status" { return status(context, head) }
        if path == "/schema" {
            return respond(context, head, .ok, body: Self.schema, type: "application/json", extra: [("Cache-Control", "no-store")])
        }
        if path.hasPrefix("/art/") { return art(String(path.dropFirst(5)), context: context, head: head) }
        if path == "/ws" { return respond(context, head, .badRequest, text: "a WebSocket: send Upgrade: websocket") }
        file(path == "/" ? "/index.html" : path, context: context, head: head)
    }

    /// The pages a link from another site may open (a top-level navigation): nothing else
    /// answers a cross-site request, cover art included.
    static let navigable: Set<String> = ["/", "/index.html", "/login.html"]

    /// Why `head` is refused before it is looked at (and with which status), or nil. Two
    /// `Host` headers, or one that is not a host as the URL grammar has it, are a bad request
    /// (RFC 9112 §3.2: which one would count is anyone's guess).
    private func refusal(_ head: HTTPRequestHead) -> (status: HTTPResponseStatus, reason: String)? {
        let hosts = head.headers["host"]
        guard hosts.count <= 1 else { return (.badRequest, "more than one Host header") }
        let host = hosts.first ?? ""
        let parsed = HTTPHost(host)
        if !host.isEmpty, parsed == nil {
            return (.badRequest, "the Host header is not a host[:port]")
        }
        if loopback, parsed?.isLoopback != true {
            return (.forbidden, "this address answers only to localhost (Host: \(host))")
        }
        if let origin = head.headers.first(name: "origin"), !Self.sameOrigin(origin, host: host) {
            return (.forbidden, "requests from another site are refused (Origin: \(origin))")
        }
        let site = head.headers.first(name: "sec-fetch-site")
        let navigation = head.headers.first(name: "sec-fetch-mode") == "navigate" && head.method == .GET
            && Self.navigable.contains(String(head.uri.prefix { $0 != "?" && $0 != "#" }))
        if site == "cross-site" || site == "same-site", !navigation {
            return (.forbidden, "requests from another site are refused")
        }
        return nil
    }

    /// What a request brings.
    enum Credentials { case none, valid, wrong }

    /// A session cookie, or the password or token as a bearer (when logins are asked for; a
    /// bearer from an address locked out by wrong passwords is wrong whatever it is).
    private func credentials(_ head: HTTPRequestHead) -> Credentials {
        guard needsLogin else { return .valid }
        if let c = Self.cookie(head, WebSite.cookieName), site.isSession(c) { return .valid }
        guard let auth = head.headers.first(name: "authorization"), auth.hasPrefix("Bearer ") else { return .none }
        guard site.mayTry(peerAddress) else { return .wrong }
        return site.accepts(String(auth.dropFirst(7))) ? .valid : .wrong
    }

    /// Whether the WebSocket may open for `head` (the upgrader asks before upgrading): at
    /// `/ws` only, with every request's checks.
    func mayOpenWebSocket(_ head: HTTPRequestHead) -> Bool {
        head.uri.prefix { $0 != "?" } == "/ws" && refusal(head) == nil && credentials(head) == .valid
    }

    /// A wrong bearer: counted against the address like a wrong login, logged, answered 401
    /// after a second, then closed.
    private func refuseCredentials(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        wrongCredentials(context) { handler, context in handler.respond(context, head, .unauthorized, text: "wrong credentials") }
    }

    /// A wrong password or bearer: counted against the address (the lockout), logged
    /// (rate-limited), and answered with `answer` after a second, as a wrong token is; nothing
    /// else on the connection is answered meanwhile.
    private func wrongCredentials(_ context: ChannelHandlerContext,
                                  _ answer: @escaping (WebHandler, ChannelHandlerContext) -> Void) {
        site.failed(peerAddress)
        connection.credentialFailures.record(from: connection.peer)
        order.suspend()
        let bound = NIOLoopBound((self, context, answer), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .seconds(1)) {
            let (handler, context, answer) = bound.value
            handler.order.resume()
            answer(handler, context)
            handler.drain(context)
        }
    }

    // MARK: - Login

    private func login(_ request: NIOHTTPServerRequestFull, context: ChannelHandlerContext) {
        let head = request.head
        let peer = peerAddress
        guard site.needsLogin else { return redirect(context, head, "/") }
        guard site.mayTry(peer) else {
            connection.credentialFailures.record(from: connection.peer)
            return redirect(context, head, "/login.html?limited=1")
        }
        let body = request.body.map { String(buffer: $0) } ?? ""
        let given = Self.form(body)["password"] ?? ""
        if site.accepts(given) {
            let session = site.openSession()
            connection.client.authenticated = true
            connection.authenticated()
            let secure = ""  // (plain HTTP: a `Secure` cookie would never be sent back)
            return redirect(context, head, "/", cookie: "\(WebSite.cookieName)=\(session); Path=/; HttpOnly; SameSite=Strict; Max-Age=\(Int(WebSite.sessionSeconds))\(secure)")
        }
        wrongCredentials(context) { handler, context in handler.redirect(context, head, "/login.html?failed=1") }
    }

    // MARK: - Resources

    /// The protocol's commands and event kinds (the page sends only these names).
    static let schema: [UInt8] = Array((JSONCodec.schema().text + "\n").utf8)

    private func status(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        let dispatcher = connection.core.dispatcher
        let reply: JSON
        switch dispatcher.execute(StatusCommand(), from: connection.client) {
        case .success(let r): reply = .object(JSONCodec.fields(r))
        case .failure(let e): reply = JSONCodec.failure(.null, JSONCodec.protocolError(e))
        }
        respond(context, head, .ok, body: Array((reply.text + "\n").utf8), type: "application/json",
                extra: [("Cache-Control", "no-store")])
    }

    /// Cover art of queue item `id` (read off the event loop), with an `ETag`.
    private func art(_ id: String, context: ChannelHandlerContext, head: HTTPRequestHead) {
        guard let item = Int(id) else { return respond(context, head, .notFound, text: "no such item") }
        let playback = connection.core.playback
        offLoop(context, head) {
            guard let art = playback.artwork(forItem: item) else { return (.notFound, Array("no artwork\n".utf8), "text/plain; charset=utf-8", []) }
            // A picture's type as its tag says it is the file's word, not ours: only an image
            // type is sent as such (never `text/html` from a crafted file), and the answer is
            // sandboxed whatever it holds.
            let type = Self.imageTypes.contains(art.mimeType.lowercased()) ? art.mimeType.lowercased() : Playback.imageType(art.data)
            return (.ok, art.data, type, [("Cache-Control", "private, no-cache"),
                                          ("Content-Security-Policy", "default-src 'none'; sandbox")])
        }
    }

    /// A file of the page (read off the event loop): confined to the web root, regular files
    /// only (no directory listings, no hidden names), with an `ETag`.
    private func file(_ path: String, context: ChannelHandlerContext, head: HTTPRequestHead) {
        guard let root = site.root else {
            return respond(context, head, .notFound, text: "the web remote's files are not installed (set web-root)")
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        guard !parts.isEmpty, parts.allSatisfy({ p in !p.hasPrefix(".") && p.utf8.allSatisfy(Self.isNameByte) }) else {
            return respond(context, head, .notFound, text: "not found")
        }
        let full = root + "/" + parts.joined(separator: "/")
        offLoop(context, head) {
            guard let real = PathResolver.realPath(full), real.hasPrefix(root + "/"),
                  case .success(let data) = readRegularFile(real, limit: 8 << 20, beneath: root)
            else { return (.notFound, Array("not found\n".utf8), "text/plain; charset=utf-8", []) }
            return (.ok, [UInt8](data), Self.contentType(real), [("Cache-Control", "no-cache")])
        }
    }

    /// Runs `body` on the server's pool (files), then answers with what it returns; later
    /// requests on this connection wait, so answers keep their order.
    private func offLoop(_ context: ChannelHandlerContext, _ head: HTTPRequestHead,
                         _ body: @escaping @Sendable () -> (HTTPResponseStatus, [UInt8], String, [(String, String)])) {
        order.suspend()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let loop = context.eventLoop
        connection.blocking.submit { _ in
            let (status, bytes, type, extra) = body()
            let tag = "\"" + Self.etag(bytes) + "\""  // (here, not on the event loop: a cover may be megabytes)
            loop.execute {
                let (handler, context) = bound.value
                handler.order.resume()
                if status == .ok {
                    if head.headers["if-none-match"].contains(where: { $0.split(separator: ",").contains { $0.trimmingWhitespace() == tag } }) {
                        handler.respond(context, head, .notModified, body: [], type: nil, extra: extra + [("ETag", tag)])
                    } else {
                        handler.respond(context, head, .ok, body: bytes, type: type, extra: extra + [("ETag", tag)])
                    }
                } else {
                    handler.respond(context, head, status, body: bytes, type: type, extra: extra)
                }
                handler.drain(context)
            }
        }
    }

    private func drain(_ context: ChannelHandlerContext) {
        while context.channel.isActive, let next = order.next() { handle(next, context: context) }
        closeIfDone(context)
    }

    /// A client that closed its side (`curl … | …`, `nc -N`) is answered, then closed (not left
    /// in CLOSE-WAIT until the deadline).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            order.closeInput()
            closeIfDone(context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func closeIfDone(_ context: ChannelHandlerContext) {
        guard order.done else { return }
        let channel = context.channel
        (lastWrite ?? context.eventLoop.makeSucceededVoidFuture()).whenComplete { _ in channel.close(promise: nil) }
    }

    /// A request the HTTP handlers refused (too large: answered 413 by the aggregator; not
    /// HTTP: 400) ends the connection: the rest of what it sends is not read. (A WebSocket
    /// upgrade refused by ``mayOpenWebSocket(_:)`` is not one: its request comes here next and
    /// is answered with why.)
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is NIOWebSocketUpgradeError { return }
        context.close(promise: nil)
    }

    // MARK: - Responses

    private func redirect(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ location: String, cookie: String? = nil) {
        var extra = [("Location", location)]
        if let cookie { extra.append(("Set-Cookie", cookie)) }
        respond(context, head, .seeOther, body: [], type: nil, extra: extra)
    }

    private func respond(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ status: HTTPResponseStatus, text: String,
                         extra: [(String, String)] = []) {
        respond(context, head, status, body: Array((text + "\n").utf8), type: "text/plain; charset=utf-8", extra: extra)
    }

    private func respond(_ context: ChannelHandlerContext, _ request: HTTPRequestHead, _ status: HTTPResponseStatus, body: [UInt8],
                         type: String?, extra: [(String, String)] = []) {
        guard context.channel.isActive else { return }
        var headers = HTTPHeaders()
        if let type { headers.add(name: "Content-Type", value: type) }
        headers.add(name: "Content-Length", value: String(status == .notModified ? 0 : body.count))
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        if !extra.contains(where: { $0.0 == "Content-Security-Policy" }) {
            headers.add(name: "Content-Security-Policy",
                        value: "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'")
        }
        for (k, v) in extra { headers.add(name: k, value: v) }
        // (A refusal closes the connection; a missing file does not.)
        let keepAlive = request.isKeepAlive && ![400, 401, 403, 405, 408, 413].contains(status.code)
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        var head = HTTPResponseHead(version: request.version, status: status, headers: headers)
        head.version = .http1_1
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if request.method != .HEAD, status != .notModified, !body.isEmpty {
            var buf = context.channel.allocator.buffer(capacity: body.count)
            buf.writeBytes(body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buf))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        lastWrite = done
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    // MARK: - Parsing

    /// A cookie's value from the request's `Cookie` headers.
    static func cookie(_ head: HTTPRequestHead, _ name: String) -> String? {
        for line in head.headers["cookie"] {
            for pair in line.split(separator: ";") {
                let kv = pair.trimmingWhitespace().split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if kv.count == 2, kv[0] == name { return String(kv[1]) }
            }
        }
        return nil
    }

    /// An `application/x-www-form-urlencoded` body's fields.
    static func form(_ body: String) -> [String: String] {
        var out: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            out[percentDecoded(kv[0])] = kv.count == 2 ? percentDecoded(kv[1]) : ""
        }
        return out
    }

    static func percentDecoded(_ s: Substring) -> String {
        var bytes: [UInt8] = []
        var u = Array(s.utf8)[...]
        while let b = u.popFirst() {
            if b == UInt8(ascii: "+") { bytes.append(0x20); continue }
            if b == UInt8(ascii: "%"), u.count >= 2, let v = UInt8(String(decoding: u.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(v)
                u = u.dropFirst(2)
                continue
            }
            bytes.append(b)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `origin` (`http://host:port`) is the page's own (the request's `Host`).
    static func sameOrigin(_ origin: String, host: String) -> Bool {
        origin == "http://" + host || origin == "https://" + host
    }

    static func isNameByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"): true
        default: false
        }
    }

    /// The picture types cover art is sent as.
    static let imageTypes: Set<String> = ["image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "image/tiff"]

    static func contentType(_ path: String) -> String {
        switch Path.extension(path).lowercased() {
        case "html": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "json", "webmanifest": "application/json"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "ico": "image/x-icon"
        case "woff2": "font/woff2"
        case "txt": "text/plain; charset=utf-8"
        default: "application/octet-stream"
        }
    }

    /// A strong validator for `bytes` (FNV-1a, 64 bits).
    static func etag(_ bytes: [UInt8]) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return String(h, radix: 16) + "-" + String(bytes.count, radix: 16)
    }
}
