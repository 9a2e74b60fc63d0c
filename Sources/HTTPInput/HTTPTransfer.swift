import CCurl
import MediaCore
import Platform
#if canImport(Glibc)
import Glibc
#endif

/// How the HTTP input behaves: its buffer, timeouts, redirects and reconnects.
public struct HTTPOptions: Sendable, Equatable {
    /// The network buffer between the transfer and the decoder, bytes. The transfer pauses when
    /// it is full (as mpd's 512 KiB: about 13 s of a 320 kbit/s stream, far more than the
    /// decoder's own 2 s ahead, in a fixed amount of memory).
    public var bufferBytes = 512 * 1024
    /// A file from a server without ranges is kept whole in memory up to this many bytes, so
    /// that it seeks as a file (16 MiB: a 9-minute AAC at 256 kbit/s); a larger one is read
    /// front to back only.
    public var wholeFileLimit = 16 << 20
    /// Connecting (name lookup, TCP, TLS) may take this long, seconds.
    public var connectTimeout = 10.0
    /// No bytes for this long while the buffer has room: the connection is dead, seconds.
    public var readTimeout = 15.0
    /// Redirects followed at most.
    public var maxRedirects = 5
    /// A live stream that drops is connected again after 1, 2, 4 … seconds, at most this long apart.
    public var reconnectMaxDelay = 30.0
    /// Attempts in a row without audio before the item fails.
    public var reconnectAttempts = 10

    /// The defaults above.
    public init() {}
}

/// A small mutex and condition variable (pthread's), for the transfer thread and its reader.
final class Monitor: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func locked<T>(_ body: () throws(MediaError) -> T) throws(MediaError) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// Waits (the mutex held) until signalled or `seconds` pass.
    func wait(seconds: Double) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nanos = Int(now.tv_nsec) + Int(seconds * 1e9)
        var deadline = timespec(tv_sec: now.tv_sec + nanos / 1_000_000_000, tv_nsec: nanos % 1_000_000_000)
        pthread_cond_timedwait(condition, mutex, &deadline)
    }

    func broadcast() { pthread_cond_broadcast(condition) }
}

/// The transfer threads. Each is joined after it ends (by the next transfer's start, or by
/// ``cancelAllAndJoin(until:)``) rather than detached: before the process exits every transfer
/// is cancelled and its thread joined (`HTTPInput.shutdown()`), since a thread still inside
/// libcurl, or running OpenSSL's per-thread clean-up as it ends, while `exit` runs OpenSSL's
/// global clean-up crashes on its freed locks (seen: SIGSEGV in libcrypto at a daemon's exit).
enum TransferThreads {
    private static let monitor = Monitor()
    nonisolated(unsafe) private static var running: [ObjectIdentifier: (transfer: HTTPTransfer, thread: PlatformThread)] = [:]
    nonisolated(unsafe) private static var ended: [PlatformThread] = []

    /// Runs `body` on a new thread for `transfer`; threads that have ended are joined first.
    static func start(_ transfer: HTTPTransfer, _ body: @escaping @Sendable () -> Void) {
        let finished = monitor.locked { () -> [PlatformThread] in
            defer { ended = [] }
            return ended
        }
        for t in finished { t.join() }
        let id = ObjectIdentifier(transfer)
        monitor.locked {
            // The lock is held until the thread is recorded: its end, which takes it, comes after.
            let thread = PlatformThread.start(name: "bl-http") {
                body()
                monitor.locked {
                    if let t = running.removeValue(forKey: id)?.thread { ended.append(t) }
                    monitor.broadcast()
                }
            }
            running[id] = (transfer, thread)
        }
    }

    /// Cancels every transfer, waits (until `deadline`, monotonic ns) until their requests have
    /// ended (cancelling ends one within libcurl's progress interval, 1 s at most; each thread
    /// signals as it ends), and joins the threads that have.
    static func cancelAllAndJoin(until deadline: Int) {
        for entry in monitor.locked({ Array(running.values) }) { entry.transfer.cancel() }
        let finished = monitor.locked { () -> [PlatformThread] in
            while !running.isEmpty {
                let left = deadline - monotonicNanos()
                if left <= 0 { break }
                monitor.wait(seconds: Double(left) / 1e9)
            }
            defer { ended = [] }
            return ended
        }
        for t in finished { t.join() }
    }
}

/// What the response said about itself (the last response, after redirects).
package struct ResponseHead: Sendable {
    package var status = 0
    package var reason = ""
    package var contentType: String?
    package var contentLength: Int?
    /// `Content-Range: bytes A-B/TOTAL`: the resource's whole length.
    package var totalLength: Int?
    package var acceptsRanges = false
    package var icyMetaInterval: Int?
    /// `icy-name`, `icy-genre`, `icy-url`, `icy-description`, `icy-br`.
    package var icy: [String: String] = [:]

    package init() {}

    /// What a line of a response head was.
    package enum Line: Sendable { case status, field, end }

    /// Takes one line of a head as libcurl hands it (with its line end): a status line starts a
    /// new response (after a redirect), a field is read into this head, a blank line ends it.
    package mutating func take(_ line: UnsafeRawBufferPointer) -> Line {
        var end = line.count
        while end > 0, line[end - 1] == 10 || line[end - 1] == 13 { end -= 1 }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: line[..<end]), as: UTF8.self).trimmingBlanks()
        if text.hasPrefix("HTTP/") {
            self = ResponseHead()
            let parts = text.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            reason = parts.count > 2 ? String(parts[2]) : ""
            return .status
        }
        if text.hasPrefix("ICY ") {  // SHOUTcast v1's status line
            self = ResponseHead()
            status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
            return .status
        }
        if text.isEmpty { return .end }
        guard let colon = text.firstIndex(of: ":") else { return .field }
        let name = text[..<colon].lowercased()
        let value = String(text[text.index(after: colon)...]).trimmingBlanks()
        switch name {
        case "content-type": contentType = value.lowercased()
        case "content-length": contentLength = Int(value)
        case "accept-ranges": acceptsRanges = value.lowercased().contains("bytes")
        case "content-range":
            if let slash = value.lastIndex(of: "/") { totalLength = Int(value[value.index(after: slash)...]) }
        case "icy-metaint": icyMetaInterval = Int(value).flatMap { $0 > 0 ? $0 : nil }
        case let n where n.hasPrefix("icy-"): icy[n] = value
        default: break
        }
        return .field
    }

    /// Why this final response is not the body asked for, or nil when it is: a status that is
    /// no success (with its reason phrase), or an HTML page (an error or login page sent as
    /// `200`). `expecting` names what was wanted instead of a page (`not audio: …`).
    package func refusal(from host: String, expecting: String? = nil) -> String? {
        if !(200..<300).contains(status) { return "HTTP \(status)\(reason.isEmpty ? "" : " \(reason)") from \(host)" }
        if let type = contentType, type.hasPrefix("text/html") || type.hasPrefix("application/xhtml") {
            return "\(expecting.map { "not \($0): " } ?? "")\(host) sent an HTML page"
        }
        return nil
    }
}

/// One HTTP GET on its own thread (libcurl's easy interface), feeding a bounded byte buffer the
/// decoder thread reads from; for a live stream, connected again with back-off when it drops.
///
/// The thread blocks in libcurl (connect, TLS, reads) and in the buffer when it is full (the
/// transfer pauses: TCP's window holds the server back); nothing else ever waits on the
/// network. ``cancel()`` ends every wait at once, from any thread.
final class HTTPTransfer: @unchecked Sendable {
    // @unchecked Sendable: every var below is touched under `monitor` only.
    let url: String
    let options: HTTPOptions
    /// The stream offset the request starts at (a `Range` request after a seek).
    let startOffset: Int
    private let monitor = Monitor()

    // State under `monitor`.
    /// Audio bytes (ICY blocks removed) from `bufferStart` on.
    private var buffer: [UInt8] = []
    private var bufferRead = 0
    private var bufferStart: Int
    private var head: ResponseHead?
    private var headError: MediaError?
    private var ended = false
    private var failure: MediaError?
    private var cancelled = false
    /// ICY metadata blocks by the audio offset they sat at, not yet reached by the reader (a
    /// bounded number: ``ICYMarks``).
    private var marks = ICYMarks()
    /// Told of the reader's waits and of bytes arriving (``observe(_:)``).
    private var observer: (@Sendable (InputProgress) -> Void)?
    /// The reader waits for bytes now; after this moment (monotonic ns) any byte wakes it.
    private var readerWaiting = false
    private var readerBatchDeadline = 0
    /// When bytes arriving were last reported (monotonic ns).
    private var lastReport = 0

    // The transfer thread's own (no lock).
    private var demuxer: ICYDemuxer?
    private var pendingHead = ResponseHead()
    private var lastByte = 0
    private var receivedThisConnection = 0
    /// Why this connection was given up by us (a refused response on a reconnect, no data).
    private var abortReason: MediaError?
    /// Bytes of the body to drop: a server that ignored a `Range` request sent them from 0.
    private var skipBytes = 0

    init(url: String, options: HTTPOptions, startOffset: Int = 0) {
        self.url = url
        self.options = options
        self.startOffset = startOffset
        bufferStart = startOffset
    }

    /// Starts the transfer thread. It holds the transfer until its request ends (so the last
    /// reference may go on that thread); ``TransferThreads`` joins it once it has ended.
    func start() {
        TransferThreads.start(self) { [self] in run() }
    }

    /// A reader that had to wait returns once this much is buffered, or after ``batchNanos``
    /// with whatever came (16 KiB: 0.4 s of 320 kbit/s; 200 ms bounds what a slow stream
    /// adds to its first sound).
    static let batchBytes = 16384
    static let batchNanos = 200_000_000

    /// Ends the transfer and every wait on it (thread-safe; idempotent).
    func cancel() {
        monitor.locked {
            cancelled = true
            monitor.broadcast()
        }
    }

    deinit { cancel() }

    /// Reports the reader's waits and the bytes received to `observer` from now on (called
    /// under the transfer's lock; the length is left to the source, which knows it).
    func observe(_ observer: @escaping @Sendable (InputProgress) -> Void) {
        monitor.locked {
            self.observer = observer
            report()
        }
    }

    /// Reports nothing more (a transfer set aside, ``HTTPSource``'s parked one).
    func stopObserving() {
        monitor.locked { observer = nil }
    }

    /// Whether reading on can still succeed: not cancelled, not failed.
    var isUsable: Bool { monitor.locked { !cancelled && failure == nil && headError == nil } }

    /// Tells the observer what is held now (the lock held).
    private func report() {
        guard let observer else { return }
        lastReport = monotonicNanos()
        let end = bufferStart + (buffer.count - bufferRead)
        observer(InputProgress(waiting: readerWaiting, loaded: startOffset..<max(startOffset, end), length: nil))
    }

    /// Marks the reader waiting or not (the lock held), telling the observer of a change.
    private func setReaderWaiting(_ on: Bool) {
        guard on != readerWaiting else { return }
        readerWaiting = on
        report()
    }

    /// Waits for the response's head (after redirects): its status and headers, or the error.
    func waitForHead() throws(MediaError) -> ResponseHead {
        try monitor.locked { () throws(MediaError) -> ResponseHead in
            while head == nil && headError == nil && failure == nil && !ended && !cancelled { monitor.wait(seconds: 0.5) }
            if cancelled { throw MediaError(.io, "cancelled", item: url) }
            if let e = headError ?? failure { throw e }
            guard let head else { throw MediaError(.io, "no response from \(Self.host(url))", item: url) }
            return head
        }
    }

    // MARK: - The reader (the decoder thread)

    /// Copies up to `into.count` bytes at `offset` (≥ `bufferStart`, else an error) into `into`,
    /// waiting for them; 0 at the end of the stream. Bytes before `offset` are dropped. A read stops at an
    /// ICY block's offset, which `takeMark` then returns.
    func read(at offset: Int, into: UnsafeMutableRawBufferPointer) throws(MediaError) -> Int {
        try monitor.locked { () throws(MediaError) -> Int in
            defer { setReaderWaiting(false) }
            // Once it had to wait, the reader waits for a batch (or a moment): a stream arriving
            // a packet at a time then wakes the decoder a few times a second, not per packet.
            var waitedSince: Int?
            // Bytes before `bufferStart` are gone: a reader asking for them would wait forever
            // (or take the end of the body for the end of the resource).
            guard offset >= bufferStart else {
                throw MediaError(.io, "read at byte \(offset), behind the transfer at \(bufferStart)", item: url)
            }
            while true {
                if cancelled { throw MediaError(.io, "cancelled", item: url) }
                // Drop what lies before the offset.
                let available = buffer.count - bufferRead
                let skip = min(available, max(0, offset - bufferStart))
                if skip > 0 {
                    bufferRead += skip
                    bufferStart += skip
                    compact()
                    monitor.broadcast()
                }
                let batched = waitedSince.map { buffer.count - bufferRead >= Self.batchBytes || monotonicNanos() - $0 >= Self.batchNanos } ?? true
                if offset == bufferStart, buffer.count > bufferRead, batched || ended || failure != nil {
                    var n = min(into.count, buffer.count - bufferRead)
                    if let next = marks.nextOffset, next > offset { n = min(n, next - offset) }
                    buffer.withUnsafeBytes { b in
                        into.baseAddress!.copyMemory(from: b.baseAddress! + bufferRead, byteCount: n)
                    }
                    bufferRead += n
                    bufferStart += n
                    compact()
                    monitor.broadcast()  // room for the transfer
                    return n
                }
                if let failure = failure ?? headError { throw failure }
                if ended, buffer.count == bufferRead { return 0 }
                setReaderWaiting(true)
                let since = waitedSince ?? monotonicNanos()
                waitedSince = since
                readerBatchDeadline = since + Self.batchNanos
                // Until the batch's moment is up, then for any byte (the transfer wakes it).
                let left = readerBatchDeadline - monotonicNanos()
                monitor.wait(seconds: left > 0 ? Double(left) / 1e9 : 0.5)
            }
        }
    }

    /// The ICY block sitting at or before `offset` (the reader has passed it), once.
    func takeMark(at offset: Int) -> [UInt8]? {
        monitor.locked { marks.take(through: offset) }
    }

    /// The offset of the next byte the transfer gives (every byte before it was read or
    /// dropped), and how many bytes from there it holds now.
    var window: (next: Int, buffered: Int) { monitor.locked { (bufferStart, buffer.count - bufferRead) } }

    private func compact() {
        if bufferRead > 65536, bufferRead * 2 > buffer.count {
            buffer.removeFirst(bufferRead)
            bufferRead = 0
        }
    }

    // MARK: - The transfer thread

    private func run() {
        let api: UnsafePointer<bl_curl_api>
        switch Curl.api {
        case .success(let a): api = a
        case .failure(let e):
            finish(head: nil, error: e.about(url))
            return
        }
        var attempt = 0
        var delay = 1.0
        var everPlayed = false
        while true {
            let outcome = perform(api)
            if monitor.locked({ cancelled }) { return }
            let live = monitor.locked { head.map { $0.contentLength == nil || $0.icyMetaInterval != nil } ?? false }
            switch outcome {
            case .success where !live:
                monitor.locked {
                    ended = true
                    report()  // all of it loaded
                    monitor.broadcast()
                }
                return
            case .failure(let e) where !everPlayed && receivedThisConnection == 0:
                // Never played: the item fails with the reason (nothing to reconnect to).
                finish(head: nil, error: e)
                return
            case .failure(let e) where !live:
                monitor.locked { failure = e; monitor.broadcast() }
                return
            default:
                break
            }
            // A live stream ended or dropped: connect again, with back-off.
            if receivedThisConnection > 0 { everPlayed = true; attempt = 0; delay = 1 }
            attempt += 1
            if attempt > options.reconnectAttempts {
                let why = outcome.failureValue?.message ?? "the server ended the stream"
                monitor.locked {
                    failure = MediaError(.io, "gave up after \(options.reconnectAttempts) reconnects (\(why))", item: url)
                    monitor.broadcast()
                }
                return
            }
            let wait = monitor.locked { () -> Bool in
                let until = monotonicNanos() + Int(delay * 1e9)
                while !cancelled, monotonicNanos() < until { monitor.wait(seconds: Double(until - monotonicNanos()) / 1e9) }
                return !cancelled
            }
            if !wait { return }
            delay = min(delay * 2, options.reconnectMaxDelay)
        }
    }

    private func finish(head h: ResponseHead?, error: MediaError) {
        monitor.locked {
            if head == nil { headError = error } else { failure = error }
            monitor.broadcast()
        }
    }

    /// One request to its end: `.success` when the server ended the body, else why it stopped.
    private func perform(_ api: UnsafePointer<bl_curl_api>) -> Result<Void, MediaError> {
        guard let raw = api.pointee.curl_easy_init() else { return .failure(MediaError(.io, "out of memory", library: "libcurl", item: url)) }
        defer { api.pointee.curl_easy_cleanup(raw) }
        let h = CurlHandle(api: api, handle: raw)
        receivedThisConnection = 0
        abortReason = nil
        skipBytes = 0
        demuxer = nil
        pendingHead = ResponseHead()
        lastByte = monotonicNanos()
        let me = Unmanaged.passUnretained(self).toOpaque()
        h.setRequest(url, options: options, connectTimeout: Int(options.connectTimeout * 1000))
        h.set(CURLOPT_BUFFERSIZE, 16384)
        let resume = monitor.locked { bufferStart + (buffer.count - bufferRead) }
        let live = monitor.locked { head.map { $0.contentLength == nil || $0.icyMetaInterval != nil } ?? false }
        if resume > 0 && !live { h.set(CURLOPT_RANGE, "\(resume)-") }
        let headers = api.pointee.curl_slist_append(nil, "Icy-MetaData: 1")
        defer { api.pointee.curl_slist_free_all(headers) }
        h.set(CURLOPT_HTTPHEADER, pointer: headers)
        h.setCallbacks(body: httpWrite, header: httpHeader, progress: httpProgress, target: me)
        // A body that was not audio (an error page) was refused in the header callback.
        guard let libcurlFailure = h.perform(item: url).failure else { return .success(()) }
        return .failure(abortReason ?? monitor.locked({ headError ?? failure }) ?? libcurlFailure)
    }

    // Callbacks (the transfer thread).

    fileprivate func header(_ line: UnsafeRawBufferPointer) -> Bool {
        switch pendingHead.take(line) {
        // The end of a head: a redirect's is followed by another; the last one decides.
        case .end: return (300..<400).contains(pendingHead.status) ? true : acceptHead(pendingHead)
        case .status, .field: return true
        }
    }

    /// Checks the final response: a success with audio, or the item's failure.
    private func acceptHead(_ h: ResponseHead) -> Bool {
        let host = Self.host(url)
        var problem = h.refusal(from: host, expecting: "audio")
        if problem == nil, let type = h.contentType,
           type.contains("mpegurl") && !type.contains("audio/x-mpegurl") || type.contains("vnd.apple.mpegurl") {
            problem = "HLS is not supported (\(host) sent an HLS playlist)"
        }
        if problem == nil, let interval = h.icyMetaInterval, interval < ICYDemuxer.minimumInterval {
            problem = "icy-metaint \(interval) from \(host) is below \(ICYDemuxer.minimumInterval) bytes: refused (metadata that often only costs the listener)"
        }
        return monitor.locked {
            if let problem {
                // The first response: the item fails with it. A reconnect's: that attempt fails.
                let e = MediaError(.io, problem, item: url)
                if head == nil { headError = e } else { abortReason = e }
                monitor.broadcast()
                return false
            }
            if head == nil || startOffset > 0 { head = h }
            // A `Range` request answered with the whole body: its first bytes are skipped.
            if startOffset > 0, h.status == 200 { skipBytes = startOffset }
            demuxer = h.icyMetaInterval.map(ICYDemuxer.init(interval:))
            monitor.broadcast()
            return true
        }
    }

    fileprivate func write(_ whole: UnsafeRawBufferPointer) -> Bool {
        lastByte = monotonicNanos()
        receivedThisConnection += whole.count
        let skip = min(skipBytes, whole.count)
        skipBytes -= skip
        let bytes = UnsafeRawBufferPointer(rebasing: whole[skip...])
        if bytes.isEmpty { return true }
        if var d = demuxer {
            var failed = false
            d.feed(bytes, audio: { if !failed && !append($0) { failed = true } }, metadata: { block in
                monitor.locked { marks.add(block, at: bufferStart + buffer.count - bufferRead) }
            })
            demuxer = d
            return !failed
        }
        return append(bytes)
    }

    /// Appends audio, waiting while the buffer is full; false when cancelled.
    private func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var rest = bytes[...]
        while !rest.isEmpty {
            let ok = monitor.locked { () -> Bool in
                while !cancelled, buffer.count - bufferRead >= options.bufferBytes { monitor.wait(seconds: 0.5) }
                if cancelled { return false }
                let n = min(rest.count, options.bufferBytes - (buffer.count - bufferRead))
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest.prefix(n)))
                rest = rest.dropFirst(n)
                // A waiting reader is woken by a batch, or by any byte once its moment is up
                // (until then it wakes by itself at the moment's end).
                if !readerWaiting || buffer.count - bufferRead >= Self.batchBytes || monotonicNanos() >= readerBatchDeadline {
                    monitor.broadcast()
                }
                if monotonicNanos() - lastReport > 100_000_000 { report() }
                return true
            }
            if !ok { return false }
            lastByte = monotonicNanos()
        }
        return true
    }

    /// Every second or so: false aborts (cancelled, or nothing received for the read timeout).
    fileprivate func progress() -> Bool {
        if monitor.locked({ cancelled }) { return false }
        if monotonicNanos() - lastByte > Int(options.readTimeout * 1e9) {
            abortReason = MediaError(.io, "no data from \(Self.host(url)) for \(Int(options.readTimeout)) s", item: url)
            return false
        }
        return true
    }

    /// The host of `url`, for messages.
    static func host(_ url: String) -> String {
        var s = Substring(url)
        if let colon = s.firstIndex(of: ":"), s[colon...].hasPrefix("://") { s = s[s.index(colon, offsetBy: 3)...] }
        if let slash = s.firstIndex(of: "/") { s = s[..<slash] }
        if let at = s.lastIndex(of: "@") { s = s[s.index(after: at)...] }
        return String(s)
    }
}

extension Result {
    var failureValue: Failure? { if case .failure(let e) = self { e } else { nil } }
}

private func httpWrite(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ me: UnsafeMutableRawPointer?) -> Int {
    guard let data, let me else { return 0 }
    let t = Unmanaged<HTTPTransfer>.fromOpaque(me).takeUnretainedValue()
    return t.write(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
}

private func httpHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ me: UnsafeMutableRawPointer?) -> Int {
    guard let data, let me else { return 0 }
    let t = Unmanaged<HTTPTransfer>.fromOpaque(me).takeUnretainedValue()
    return t.header(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
}

private func httpProgress(_ me: UnsafeMutableRawPointer?, _: curl_off_t, _: curl_off_t, _: curl_off_t, _: curl_off_t) -> Int32 {
    guard let me else { return 1 }
    return Unmanaged<HTTPTransfer>.fromOpaque(me).takeUnretainedValue().progress() ? 0 : 1
}
