import MediaCore
import Synchronization
import Locking

/// Where an item's bytes come from, by its location: a path or a `file:` URI (the
/// ``FileSource``), or a URL of a scheme an ``Input`` was registered for (the HTTP input's
/// `http` and `https`, registered by the programs that play streams). A location with any other
/// scheme fails with its name.
public enum InputSources {
    /// Opens `location`: an absolute or relative path, `file:///…` (percent-escapes decoded), or
    /// a URL of a registered input (`http://…`).
    /// - Parameters:
    ///   - location: The path or URI.
    ///   - root: When given, a file must lie beneath this directory.
    ///   - register: Given, by an input that may wait on a network, a way to end its waits from
    ///     another thread, before it first waits (the decoder thread's flush uses it).
    public static func open(_ location: String, beneath root: String? = nil,
                            register: (@escaping @Sendable () -> Void) -> Void = { _ in }) throws(MediaError) -> any ByteSource {
        if let scheme = scheme(of: location) {
            if scheme == "file" { return try FileSource(path: filePath(location), beneath: root) }
            guard let input = registered.withLock({ $0[scheme] }) else {
                throw MediaError(.unsupportedFormat, "no input for \(scheme): URLs", item: location)
            }
            return try input.open(location, register)
        }
        return try FileSource(path: location, beneath: root)
    }

    /// A way in for URLs of some schemes, registered by the program that wants it (the HTTP
    /// input: the engine and this module know nothing of networking).
    public struct Input: Sendable {
        /// Its name (`curl`), as MPD's `urlhandlers` and logs show it.
        public var name: String
        /// The URL schemes it opens, lower case (`http`, `https`).
        public var schemes: [String]
        /// Opens a URL (on the decoder thread). It may wait on the network: it first gives the
        /// second argument a way to end its waits from another thread.
        public var open: @Sendable (String, (@escaping @Sendable () -> Void) -> Void) throws(MediaError) -> any ByteSource
        /// Fetches a URL whole, a small document rather than a stream (``InputSources/fetch(_:limit:deadline:)``),
        /// or nil: this input fetches nothing.
        public var fetch: (@Sendable (_ url: String, _ limit: Int, _ deadline: Int) throws(MediaError) -> [UInt8])?
        /// Ends every fetch in flight at once (``InputSources/cancelFetches()``).
        public var cancelFetches: @Sendable () -> Void

        /// An input from its parts.
        public init(name: String, schemes: [String],
                    open: @escaping @Sendable (String, (@escaping @Sendable () -> Void) -> Void) throws(MediaError) -> any ByteSource,
                    fetch: (@Sendable (_ url: String, _ limit: Int, _ deadline: Int) throws(MediaError) -> [UInt8])? = nil,
                    cancelFetches: @escaping @Sendable () -> Void = {}) {
            (self.name, self.schemes, self.open, self.fetch, self.cancelFetches) = (name, schemes, open, fetch, cancelFetches)
        }
    }

    /// Fetches the URL `location` whole, as a document rather than a stream (a playlist): its
    /// body read to its end however the server frames it (a length, chunks, or the connection's
    /// close; never taken for a live stream and fetched again), decoded when the server
    /// compressed it, at most `limit` bytes, before `deadline` (`monotonicNanos()`, monotonic nanoseconds).
    /// - Throws: `MediaError` with the reason: no input for its scheme, the HTTP status, too
    ///   large, too slow, cancelled (``cancelFetches()``), or the network's failure.
    public static func fetch(_ location: String, limit: Int, deadline: Int) throws(MediaError) -> [UInt8] {
        let scheme = scheme(of: location) ?? ""
        guard let input = registered.withLock({ $0[scheme] }) else {
            throw MediaError(.unsupportedFormat, "no input for \(scheme): URLs", item: location)
        }
        guard let fetch = input.fetch else {
            throw MediaError(.unsupportedFormat, "\(input.name) cannot fetch a document", item: location)
        }
        return try fetch(location, limit, deadline)
    }

    /// Ends every fetch in flight, of every input, at once: each throws (a daemon told to stop).
    public static func cancelFetches() {
        for input in registered.withLock({ Array($0.values) }) { input.cancelFetches() }
    }

    private static let registered = Lock<[String: Input]>([:])

    /// Registers `input` for its schemes (once, at start-up).
    public static func register(_ input: Input) {
        registered.withLock { for s in input.schemes { $0[s] = input } }
    }

    /// The schemes a registered input opens, sorted (`file` not included).
    public static var schemes: [String] { registered.withLock { $0.keys.sorted() } }

    /// Whether `location` is a URL a registered input opens (not a path, not `file:`).
    public static func isStream(_ location: String) -> Bool {
        guard let s = scheme(of: location) else { return false }
        return registered.withLock { $0[s] != nil }
    }

    /// The URI scheme of `location` (lower case), or nil for a path.
    public static func scheme(of location: String) -> String? {
        guard let colon = location.firstIndex(of: ":"), location[colon...].hasPrefix("://") else { return nil }
        let s = location[..<colon]
        guard let first = s.first, first.isLetter, s.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) else { return nil }
        return s.lowercased()
    }

    /// The path of a `file://[host]/path` URI, percent-escapes decoded.
    static func filePath(_ uri: String) -> String {
        var rest = uri.dropFirst("file://".count)
        if let slash = rest.firstIndex(of: "/") { rest = rest[slash...] }  // (a host, `localhost`, is dropped)
        var bytes: [UInt8] = []
        var it = Array(rest.utf8)[...]
        while let b = it.popFirst() {
            if b == UInt8(ascii: "%"), it.count >= 2, let v = UInt8(String(decoding: it.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(v)
                it = it.dropFirst(2)
            } else {
                bytes.append(b)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
