import CCurl
import MediaCore
import Platform
import Synchronization

/// A small document fetched whole over HTTP (a playlist named by a URL), on the calling thread,
/// unlike a stream (``HTTPSource``): the body is read to its end however it is framed (a
/// `Content-Length`, chunks, or the connection's close: a body without a length is no live
/// stream here, never fetched again), decoded when the server compressed it (libcurl's
/// `Accept-Encoding`: gzip, deflate and what else it was built with; another encoding is
/// refused with libcurl's reason), at most a limit of bytes and before a deadline (one that
/// drips, or never ends, is given up with the reason). A response that is no success (`404`,
/// `500`), or an HTML page, is given up at the end of its head with its status and reason (as a
/// stream's is, ``ResponseHead/refusal(from:expecting:)``), whatever its error page is.
///
/// Fetches in flight are known (``cancelAll()``): a daemon told to stop ends them at once, and
/// ``HTTPInput/shutdown(seconds:)`` waits until none is inside libcurl before the process exits.
enum HTTPFetch {
    /// One fetch: its body so far and why it was given up (the calling thread's own; the flag
    /// is set from any thread).
    final class Request: @unchecked Sendable {
        let url: String
        let limit: Int
        let cancelled = Atomic<Bool>(false)
        var body: [UInt8] = []
        var tooLarge = false
        /// The head of the response being read (after a redirect, the next one's).
        var head = ResponseHead()
        /// Why the final response was refused at the end of its head: the transfer ends there
        /// (its error page is not read, however large or slow).
        var refusal: String?
        init(url: String, limit: Int) { (self.url, self.limit) = (url, limit) }
    }

    /// The fetches in flight, under `monitor`, which is signalled as each starts and ends.
    private static let monitor = Monitor()
    nonisolated(unsafe) private static var inFlight: [ObjectIdentifier: Request] = [:]

    /// `url`'s body, at most `limit` bytes, before `deadline` (monotonic ns).
    static func fetch(_ url: String, limit: Int, deadline: Int, options: HTTPOptions) throws(MediaError) -> [UInt8] {
        let api: UnsafePointer<bl_curl_api>
        switch Curl.api {
        case .success(let a): api = a
        case .failure(let e): throw e.about(url)
        }
        let host = HTTPTransfer.host(url)
        let left = (deadline - monotonicNanos()) / 1_000_000
        guard left > 0 else { throw MediaError(.io, "no time left to fetch it from \(host)", item: url) }
        let request = Request(url: url, limit: limit)
        let id = ObjectIdentifier(request)
        monitor.locked {
            inFlight[id] = request
            monitor.broadcast()
        }
        defer {
            monitor.locked {
                inFlight[id] = nil
                monitor.broadcast()
            }
        }

        guard let raw = api.pointee.curl_easy_init() else { throw MediaError(.io, "out of memory", library: "libcurl", item: url) }
        defer { api.pointee.curl_easy_cleanup(raw) }
        let h = CurlHandle(api: api, handle: raw)
        let me = Unmanaged.passUnretained(request).toOpaque()
        h.setRequest(url, options: options, connectTimeout: min(left, Int(options.connectTimeout * 1000)))
        h.set(CURLOPT_TIMEOUT_MS, left)  // the whole request, body included
        h.set(CURLOPT_ACCEPT_ENCODING, "")  // every encoding this libcurl decodes
        h.setCallbacks(body: fetchWrite, header: fetchHeader, progress: fetchProgress, target: me)
        let (code, failure) = h.perform(item: url)
        if request.cancelled.load(ordering: .relaxed) { throw MediaError(.io, "cancelled", item: url) }
        if let refusal = request.refusal { throw MediaError(.io, refusal, item: url) }
        if request.tooLarge { throw MediaError(.io, "larger than \(limit) bytes", item: url) }
        if code == CURLE_OPERATION_TIMEDOUT {
            throw MediaError(.io, "\(host) did not send all of it in time (\(request.body.count) bytes so far)", item: url)
        }
        if let failure { throw failure }
        // (A redirect that led nowhere ends on its own `3xx` head, which the callback lets by.)
        if let refusal = request.head.refusal(from: host) { throw MediaError(.io, refusal, item: url) }
        return request.body
    }

    /// Ends every fetch in flight (each throws "cancelled" within libcurl's progress interval).
    static func cancelAll() {
        monitor.locked { for r in inFlight.values { r.cancelled.store(true, ordering: .relaxed) } }
    }

    /// Cancels every fetch, and each that starts meanwhile, and waits until none is inside
    /// libcurl or `deadline` (monotonic ns) has passed, woken as each starts or ends.
    static func cancelAllAndWait(until deadline: Int) {
        monitor.locked {
            while true {
                for r in inFlight.values { r.cancelled.store(true, ordering: .relaxed) }
                let left = deadline - monotonicNanos()
                if inFlight.isEmpty || left <= 0 { return }
                monitor.wait(seconds: Double(left) / 1e9)
            }
        }
    }
}

private func fetchWrite(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ me: UnsafeMutableRawPointer?) -> Int {
    guard let data, let me else { return 0 }
    let r = Unmanaged<HTTPFetch.Request>.fromOpaque(me).takeUnretainedValue()
    let n = size * count
    if r.cancelled.load(ordering: .relaxed) { return 0 }
    guard r.body.count + n <= r.limit else {
        r.tooLarge = true
        return 0
    }
    r.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: n))
    return n
}

private func fetchHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ me: UnsafeMutableRawPointer?) -> Int {
    guard let data, let me else { return 0 }
    let r = Unmanaged<HTTPFetch.Request>.fromOpaque(me).takeUnretainedValue()
    let n = size * count
    // The end of a head: a redirect's is followed by another; the last one is checked before
    // any of its body is read, so an error page (one of 2 MB, one that drips) is refused as its
    // status rather than as too large or too slow.
    if r.head.take(UnsafeRawBufferPointer(start: data, count: n)) == .end, !(300..<400).contains(r.head.status),
       let refusal = r.head.refusal(from: HTTPTransfer.host(r.url)) {
        r.refusal = refusal
        return 0
    }
    return n
}

private func fetchProgress(_ me: UnsafeMutableRawPointer?, _: curl_off_t, _: curl_off_t, _: curl_off_t, _: curl_off_t) -> Int32 {
    guard let me else { return 1 }
    return Unmanaged<HTTPFetch.Request>.fromOpaque(me).takeUnretainedValue().cancelled.load(ordering: .relaxed) ? 1 : 0
}
