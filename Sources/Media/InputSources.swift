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

        /// An input from its parts.
        public init(name: String, schemes: [String],
                    open: @escaping @Sendable (String, (@escaping @Sendable () -> Void) -> Void) throws(MediaError) -> any ByteSource) {
            (self.name, self.schemes, self.open) = (name, schemes, open)
        }
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
