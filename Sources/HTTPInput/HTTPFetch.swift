import CCurl
import Locking
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
/// `500`) is given up at its body's first bytes with its status, whatever its error page is.
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
        /// The response's status, read at its body's first bytes: one that is no success ends
        /// the transfer there (its error page is not read, however large or slow).
        var failedStatus: Int?
        /// The transfer, for its status (set before it begins).
        var handle: CurlHandle?
        init(url: String, limit: Int) { (self.url, self.limit) = (url, limit) }
    }

    private static let inFlight = Lock<[ObjectIdentifier: Request]>([:])

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
        inFlight.withLock { $0[id] = request }
        defer { inFlight.withLock { _ = $0.removeValue(forKey: id) } }

        guard let raw = api.pointee.curl_easy_init() else { throw MediaError(.io, "out of memory", library: "libcurl", item: url) }
        defer { api.pointee.curl_easy_cleanup(raw) }
        let h = CurlHandle(api: api, handle: raw)
        request.handle = h
        let me = Unmanaged.passUnretained(request).toOpaque()
        h.setRequest(url, options: options, connectTimeout: min(left, Int(options.connectTimeout * 1000)))
        h.set(CURLOPT_TIMEOUT_MS, left)  // the whole request, body included
        h.set(CURLOPT_ACCEPT_ENCODING, "")  // every encoding this libcurl decodes
        _ = bl_curl_set_data_callback(api, raw, CURLOPT_WRITEFUNCTION, fetchWrite)
        h.set(CURLOPT_WRITEDATA, pointer: me)
        _ = bl_curl_set_progress_callback(api, raw, fetchProgress)
        h.set(CURLOPT_XFERINFODATA, pointer: me)
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code = errorBuffer.withUnsafeMutableBufferPointer { eb -> CURLcode in
            h.set(CURLOPT_ERRORBUFFER, pointer: eb.baseAddress)
            return api.pointee.curl_easy_perform(raw)
        }
        if request.cancelled.load(ordering: .relaxed) { throw MediaError(.io, "cancelled", item: url) }
        if let status = request.failedStatus { throw MediaError(.io, "HTTP \(status) from \(host)", item: url) }
        if request.tooLarge { throw MediaError(.io, "larger than \(limit) bytes", item: url) }
        if code == CURLE_OPERATION_TIMEDOUT {
            throw MediaError(.io, "\(host) did not send all of it in time (\(request.body.count) bytes so far)", item: url)
        }
        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw MediaError(.io, detail.isEmpty ? Curl.message(api, code) : detail, library: "libcurl", code: Int32(code.rawValue), item: url)
        }
        let status = h.long(CURLINFO_RESPONSE_CODE) ?? 0
        guard (200..<300).contains(status) else { throw MediaError(.io, "HTTP \(status) from \(host)", item: url) }
        var type: UnsafeMutablePointer<CChar>?
        if bl_curl_get_string(api, raw, CURLINFO_CONTENT_TYPE, &type) == CURLE_OK, let type,
           String(cString: type).lowercased().hasPrefix("text/html") {
            throw MediaError(.io, "\(host) sent an HTML page", item: url)
        }
        return request.body
    }

    /// Ends every fetch in flight (each throws "cancelled" within libcurl's progress interval).
    static func cancelAll() {
        for r in inFlight.withLock({ Array($0.values) }) { r.cancelled.store(true, ordering: .relaxed) }
    }

    /// Cancels every fetch and waits (at most `seconds`) until none is inside libcurl.
    static func cancelAllAndWait(seconds: Double) {
        let deadline = monotonicNanos() + Int(seconds * 1e9)
        repeat {
            cancelAll()
            if inFlight.withLock({ $0.isEmpty }) { return }
            sleepThread(seconds: 0.01)
        } while monotonicNanos() < deadline
    }
}

private func fetchWrite(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ me: UnsafeMutableRawPointer?) -> Int {
    guard let data, let me else { return 0 }
    let r = Unmanaged<HTTPFetch.Request>.fromOpaque(me).takeUnretainedValue()
    let n = size * count
    if r.cancelled.load(ordering: .relaxed) { return 0 }
    // The status is known once the body begins (libcurl passes on no body of a redirect it
    // follows): an error page ends the transfer at once, reported as its status rather than as
    // too large or too slow, as a 404 page of 2 MB or one that dripped was.
    if r.body.isEmpty, let status = r.handle?.long(CURLINFO_RESPONSE_CODE), !(200..<300).contains(status) {
        r.failedStatus = status
        return 0
    }
    guard r.body.count + n <= r.limit else {
        r.tooLarge = true
        return 0
    }
    r.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: n))
    return n
}

private func fetchProgress(_ me: UnsafeMutableRawPointer?, _: curl_off_t, _: curl_off_t, _: curl_off_t, _: curl_off_t) -> Int32 {
    guard let me else { return 1 }
    return Unmanaged<HTTPFetch.Request>.fromOpaque(me).takeUnretainedValue().cancelled.load(ordering: .relaxed) ? 1 : 0
}
