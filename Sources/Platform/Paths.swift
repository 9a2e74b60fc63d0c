#if canImport(Glibc)
import Glibc
#endif

/// Path-string operations with `NSString`'s results for the paths Backline handles: plain
/// `/`-separated strings, no file system access (but ``expandingTilde(_:)``'s home lookup and ``realPath(_:)``).
public enum Path {
    /// `p` with its symbolic links resolved (`realpath`); nil when it does not exist.
    public static func realPath(_ p: String) -> String? {
        guard let r = realpath(p, nil) else { return nil }
        defer { free(r) }
        return String(cString: r)
    }

    /// The last component: `"/a/b.mp3"` → `"b.mp3"`, `"/a/b/"` → `"b"`, `"/"` → `"/"`, `""` → `""`.
    public static func lastComponent(_ path: String) -> String {
        let trimmed = withoutTrailingSlashes(path)
        if trimmed == "/" { return "/" }
        guard let slash = trimmed.lastIndex(of: "/") else { return trimmed }
        return String(trimmed[trimmed.index(after: slash)...])
    }

    /// The path without its last component: `"/a/b"` → `"/a"`, `"/a"` → `"/"`, `"a"` → `""`,
    /// `"a/b/"` → `"a"`, `"/"` → `"/"`.
    public static func deletingLastComponent(_ path: String) -> String {
        let trimmed = withoutTrailingSlashes(path)
        if trimmed == "/" { return "/" }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        let parent = withoutTrailingSlashes(String(trimmed[..<slash]))
        return parent.isEmpty ? "/" : parent
    }

    /// The last component's extension, without the dot: `"a/b.MP3"` → `"MP3"`; `""` when the
    /// name has no dot, or only a leading one (`".mp3"`, a hidden file).
    public static func `extension`(_ path: String) -> String {
        let name = lastComponent(path)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return String(name[name.index(after: dot)...])
    }

    /// `~` and `~/…` with the user's home directory (`$HOME`, else the password database);
    /// any other path unchanged.
    public static func expandingTilde(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        return homeDirectory() + path.dropFirst()
    }

    /// `$HOME`, else the password database's home directory for this user, else `/`.
    public static func homeDirectory() -> String {
        if let h = getenv("HOME"), h[0] != 0 { return String(cString: h) }
        if let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir { return String(cString: dir) }
        return "/"
    }

    private static func withoutTrailingSlashes(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1, p.hasSuffix("/") { p = p.dropLast() }
        return String(p)
    }
}
