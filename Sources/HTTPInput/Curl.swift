import CCurl
import Glibc
import MediaCore

/// libcurl, opened with `dlopen` the first time an HTTP item plays (see `CCurl`).
enum Curl {
    /// The functions (loaded once, for the life of the process), or why they could not be loaded.
    nonisolated(unsafe) static let api: Result<UnsafePointer<bl_curl_api>, MediaError> = {
        let api = UnsafeMutablePointer<bl_curl_api>.allocate(capacity: 1)
        api.initialize(to: bl_curl_api())
        if let failure = bl_curl_load(api) {
            return .failure(MediaError(.io, "libcurl is not installed (\(String(cString: failure)))", library: "libcurl"))
        }
        // At exit, before OpenSSL's own clean-up (registered as libcurl started it; `atexit`
        // runs the last registered first): every transfer cancelled and its thread joined, in a
        // program that did not call `HTTPInput.shutdown()` (a test process; ThreadSanitizer
        // reported the ended threads not yet joined as leaked).
        atexit { HTTPInput.shutdown(seconds: 3) }
        return .success(UnsafePointer(api))
    }()

    /// libcurl's text for `code`.
    static func message(_ api: UnsafePointer<bl_curl_api>, _ code: CURLcode) -> String {
        api.pointee.curl_easy_strerror(code).map { String(cString: $0) } ?? "error \(code.rawValue)"
    }
}

/// One easy handle's settings, each a typed call (libcurl's own are variadic).
struct CurlHandle {
    let api: UnsafePointer<bl_curl_api>
    let handle: UnsafeMutableRawPointer

    func set(_ option: CURLoption, _ value: Int) { _ = bl_curl_set_long(api, handle, option, value) }
    func set(_ option: CURLoption, pointer value: UnsafeRawPointer?) { _ = bl_curl_set_ptr(api, handle, option, value) }
    /// (libcurl copies string options.)
    func set(_ option: CURLoption, _ value: String) { _ = value.withCString { bl_curl_set_ptr(api, handle, option, $0) } }
    /// The settings every request of ours starts from: `url`, no signals, HTTP and HTTPS only,
    /// at most `options.maxRedirects` redirects followed, `connectTimeout` milliseconds to
    /// connect, our user agent, an error status's body received rather than refused, and the
    /// progress callback called.
    func setRequest(_ url: String, options: HTTPOptions, connectTimeout: Int) {
        set(CURLOPT_URL, url)
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_FOLLOWLOCATION, 1)
        set(CURLOPT_MAXREDIRS, options.maxRedirects)
        set(CURLOPT_PROTOCOLS_STR, "http,https")
        set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        set(CURLOPT_CONNECTTIMEOUT_MS, connectTimeout)
        set(CURLOPT_USERAGENT, "Backline/1 (Linux)")
        set(CURLOPT_FAILONERROR, 0)
        set(CURLOPT_NOPROGRESS, 0)
    }

    /// The body, header and progress callbacks, each given `target` (the object they report to).
    func setCallbacks(body: bl_curl_data_callback, header: bl_curl_data_callback, progress: bl_curl_progress_callback,
                      target: UnsafeMutableRawPointer) {
        _ = bl_curl_set_data_callback(api, handle, CURLOPT_WRITEFUNCTION, body)
        set(CURLOPT_WRITEDATA, pointer: target)
        _ = bl_curl_set_data_callback(api, handle, CURLOPT_HEADERFUNCTION, header)
        set(CURLOPT_HEADERDATA, pointer: target)
        _ = bl_curl_set_progress_callback(api, handle, progress)
        set(CURLOPT_XFERINFODATA, pointer: target)
    }

    /// Runs the request to its end (`curl_easy_perform`): libcurl's code, and for any code but
    /// `CURLE_OK` the failure in libcurl's words (its error buffer's detail, else the code's
    /// text), naming `item`.
    func perform(item: String) -> (code: CURLcode, failure: MediaError?) {
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code = errorBuffer.withUnsafeMutableBufferPointer { eb -> CURLcode in
            set(CURLOPT_ERRORBUFFER, pointer: eb.baseAddress)
            // (The buffer is gone after this call: libcurl must not keep it.)
            defer { set(CURLOPT_ERRORBUFFER, pointer: nil) }
            return api.pointee.curl_easy_perform(handle)
        }
        guard code != CURLE_OK else { return (code, nil) }
        let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let message = detail.isEmpty ? Curl.message(api, code) : detail
        return (code, MediaError(.io, message, library: "libcurl", code: Int32(code.rawValue), item: item))
    }
}
