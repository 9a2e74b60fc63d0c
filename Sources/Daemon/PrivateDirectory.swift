import BacklineWire
import Control
import FoundationEssentials
import MediaCore
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

    /// Why the directory of an MPD socket (`mpd-listen = /path`) cannot hold it, or nil: it may
    /// be any directory that only its owner (you or root) can change entries of, so that nobody
    /// else can rename the socket and bind their own in its place for your clients to talk to.
    /// Not a symbolic link; owned by you or root; not writable by group or others, unless sticky
    /// (`/tmp`: others cannot rename what is yours).
    public static func socketDirectoryProblem(_ path: String) -> String? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return "\(path): \(String(cString: strerror(errno)))" }
        guard st.st_mode & S_IFMT != S_IFLNK else { return "\(path) is a symbolic link" }
        guard st.st_mode & S_IFMT == S_IFDIR else { return "\(path) is not a directory (\(fileKind(st.st_mode)))" }
        guard st.st_uid == geteuid() || st.st_uid == 0 else {
            return "\(path) is owned by uid \(st.st_uid), not by you (uid \(geteuid())) or root"
        }
        let mode = st.st_mode & 0o7777
        guard mode & 0o022 == 0 || mode & S_ISVTX != 0 else {
            return "\(path) has mode \(String(mode, radix: 8)): others may rename the socket (allow no group or other write, or set the sticky bit)"
        }
        return nil
    }
}
