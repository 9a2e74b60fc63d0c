#if canImport(Glibc)
import Glibc
#endif

/// Where the control socket is and whether its directory can be trusted: what the daemon
/// checks before it listens and `ctl` before it connects.
///
/// The directory decides who can take the daemon's place: it must be a real directory (not a
/// symbolic link), owned by this user, mode exactly 0700. `/tmp/backline-UID` (the fallback
/// without `XDG_RUNTIME_DIR`) is a name anyone can take first: without the check another user
/// could create it 0777, move the socket aside and answer in the daemon's place.
public enum SocketDirectory {
    /// `$XDG_RUNTIME_DIR/backline` (`/tmp/backline-UID` without it): the socket's directory.
    public static func runtimeDirectory(xdgRuntimeDir: String?) -> String {
        xdgRuntimeDir.flatMap { $0.isEmpty ? nil : $0 }.map { $0 + "/backline" } ?? "/tmp/backline-\(getuid())"
    }

    /// The default control socket, from this process's environment.
    public static var defaultSocketPath: String {
        runtimeDirectory(xdgRuntimeDir: getenv("XDG_RUNTIME_DIR").map { String(cString: $0) }) + "/control.sock"
    }

    /// Why `path` cannot be trusted, or nil when it can.
    public static func problem(_ path: String) -> String? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return "\(path): \(String(cString: strerror(errno)))" }
        let kind = st.st_mode & S_IFMT
        guard kind != S_IFLNK else { return "\(path) is a symbolic link" }
        guard kind == S_IFDIR else { return "\(path) is not a directory (\(fileKind(st.st_mode)))" }
        guard st.st_uid == geteuid() else { return "\(path) is owned by uid \(st.st_uid), not by you (uid \(geteuid()))" }
        let mode = st.st_mode & 0o7777
        guard mode == 0o700 else { return "\(path) has mode \(String(mode, radix: 8)), not 700" }
        return nil
    }

    /// The directory part of `path`, as `NSString.deletingLastPathComponent` gives it: `/a/b`
    /// for `/a/b/c` (and `/a/b/c/`), `/` for `/c`, empty for `c`.
    public static func parent(of path: String) -> String {
        var p = Substring(path)
        while p.count > 1, p.hasSuffix("/") { p = p.dropLast() }
        guard let slash = p.lastIndex(of: "/") else { return "" }
        if slash == p.startIndex { return "/" }
        var dir = p[..<slash]
        while dir.count > 1, dir.hasSuffix("/") { dir = dir.dropLast() }
        return String(dir)
    }
}

/// What kind of file `mode` describes, in words.
public func fileKind(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFDIR: "a directory"
    case S_IFIFO: "a FIFO"
    case S_IFSOCK: "a socket"
    case S_IFCHR: "a character device"
    case S_IFBLK: "a block device"
    case S_IFLNK: "a symbolic link"
    default: "a regular file"
    }
}

/// The kinds of event the daemon sends (`subscribe`'s `events`, `ctl watch KIND…`): the one
/// list. The command layer's events name their kind with it (a new event is a new case here,
/// or the daemon does not compile), the JSON codec writes its raw value, `ctl` checks and
/// prints by it.
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum EventKind: String, CaseIterable, Sendable {
    case state, buffering, current, queue, modes, failed, seeked, chapter, position, volume
    case session, lifecycle, sleep, alarm, hook, shutdown, playlists, sticker, update, partitions, message
}

/// The kinds' names, in ``EventKind``'s order.
public enum EventKinds {
    /// Every event kind's name, as `subscribe` takes them.
    public static let all: [String] = EventKind.allCases.map(\.rawValue)
}
