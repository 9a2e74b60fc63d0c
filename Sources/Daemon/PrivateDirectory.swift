import Control
import FoundationEssentials
import Platform

#if canImport(Glibc)
import Glibc
#endif

/// The control socket's directory: created and verified before the daemon listens (what is
/// checked: ``SocketDirectory/problem(_:)``, which `ctl` checks too before it connects).
public enum PrivateDirectory {
    /// Why `path` cannot be trusted, or nil when it can.
    public static func problem(_ path: String) -> String? { SocketDirectory.problem(path) }

    /// Creates `path` (mode 0700; its missing parents too) unless it exists, then verifies it.
    /// - Throws: ``ServerError`` saying what is wrong with it.
    public static func prepare(_ path: String) throws(ServerError) {
        var st = stat()
        if lstat(path, &st) != 0 {
            let parent = Path.deletingLastComponent(path)
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
