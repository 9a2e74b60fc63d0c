import MediaCore

/// Where an item's bytes come from, by its location: a path or a `file:` URI today (the
/// ``FileSource``); the HTTP input registers its schemes here next. A location with any other
/// scheme fails with its name.
public enum InputSources {
    /// Opens `location`: an absolute or relative path, or `file:///…` (percent-escapes decoded).
    /// - Parameters:
    ///   - location: The path or URI.
    ///   - root: When given, a file must lie beneath this directory.
    public static func open(_ location: String, beneath root: String? = nil) throws(MediaError) -> any ByteSource {
        if let scheme = scheme(of: location) {
            guard scheme == "file" else {
                throw MediaError(.unsupportedFormat, "no input for \(scheme): URLs (files only, for now)", item: location)
            }
            return try FileSource(path: filePath(location), beneath: root)
        }
        return try FileSource(path: location, beneath: root)
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
