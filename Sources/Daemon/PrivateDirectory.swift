import Control
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The control socket's directory, which decides who can take the daemon's place: it must be a
/// real directory (not a symbolic link), owned by this user, mode exactly 0700. `/tmp/backline-UID`
/// (the fallback without `XDG_RUNTIME_DIR`) is a name anyone can take first: without the check
/// another user could create it 0777, move the socket aside and answer in the daemon's place.
public enum PrivateDirectory {
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

    /// Creates `path` (mode 0700; its missing parents too) unless it exists, then verifies it.
    /// - Throws: ``ServerError`` saying what is wrong with it.
    public static func prepare(_ path: String) throws(ServerError) {
        var st = stat()
        if lstat(path, &st) != 0 {
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty, !FileManager.default.fileExists(atPath: parent) {
                try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true,
                                                         attributes: [.posixPermissions: 0o700])
            }
            if mkdir(path, 0o700) == 0 {
                chmod(path, 0o700)  // ours, just made: whatever the umask (never through a link)
            } else if errno != EEXIST {
                throw ServerError(code: errno, message: "cannot create \(path)")
            }
        }
        if let problem = problem(path) {
            throw ServerError(code: 0, message: "refusing the socket directory: \(problem) (it must be yours, mode 700, not a link)")
        }
    }
}
