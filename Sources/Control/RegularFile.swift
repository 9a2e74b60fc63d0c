import BacklineWire
import FoundationEssentials
import Platform

#if canImport(Glibc)
import Glibc
#endif

// Everything the daemon opens by name (state file, config, playlists; music files through
// MPG123Decoder) is opened with O_NONBLOCK and checked before it is read: a FIFO, a socket or a
// device in its place is refused with its kind named, never waited on, and sizes are bounded.

/// A file that could not be read or written: its path, the errno (0: none) and what failed.
public struct FileError: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let code: Int32
    public let message: String
    public init(path: String, code: Int32, message: String) {
        (self.path, self.code, self.message) = (path, code, message)
    }
    public var description: String { "\(path): \(message)" + (code != 0 ? " (\(String(cString: strerror(code))))" : "") }
}

/// Reads `path` whole if it is a regular file of at most `limit` bytes; opened with
/// `O_NONBLOCK` so that a FIFO or a device in its place is refused, never waited on.
/// With `root`, the file opened must lie beneath that directory (absolute, links resolved),
/// checked on the opened descriptor (``Confinement``): a link swapped in after the path was
/// checked cannot lead out of it.
public func readRegularFile(_ path: String, limit: Int, beneath root: String? = nil) -> Result<Data, FileError> {
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
    guard fd >= 0 else { return .failure(FileError(path: path, code: errno, message: "cannot open")) }
    defer { close(fd) }
    if let problem = Confinement.problem(descriptor: fd, beneath: root) {
        return .failure(FileError(path: path, code: 0, message: problem))
    }
    var st = stat()
    guard fstat(fd, &st) == 0 else { return .failure(FileError(path: path, code: errno, message: "cannot stat")) }
    guard st.st_mode & S_IFMT == S_IFREG else {
        return .failure(FileError(path: path, code: 0, message: "not a regular file (\(fileKind(st.st_mode)))"))
    }
    guard Int(st.st_size) <= limit else {
        return .failure(FileError(path: path, code: 0, message: "larger than \(limit >> 20) MiB (\(st.st_size) bytes)"))
    }
    var data = Data(count: Int(st.st_size))
    var off = 0
    let ok = data.withUnsafeMutableBytes { raw -> Bool in
        while off < raw.count {
            let n = read(fd, raw.baseAddress! + off, raw.count - off)
            if n < 0 { if errno == EINTR { continue }; return false }
            if n == 0 { break }
            off += n
        }
        return true
    }
    guard ok else { return .failure(FileError(path: path, code: errno, message: "cannot read")) }
    return .success(data.prefix(off))
}

/// Writes `data` to `path` so that a crash at any moment leaves either the old file or the new
/// one, never a torn one: a temporary file in the same directory (mode 0600), fsync'ed, renamed
/// over `path`, and the directory fsync'ed.
public func writeFileAtomically(_ data: Data, to path: String) throws(FileError) {
    let dir = Path.deletingLastComponent(path)
    let tmp = path + ".tmp-\(getpid())"
    let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw FileError(path: tmp, code: errno, message: "cannot create") }
    var ok = data.withUnsafeBytes { raw -> Bool in
        var off = 0
        while off < raw.count {
            let n = write(fd, raw.baseAddress! + off, raw.count - off)
            if n < 0 { if errno == EINTR { continue }; return false }
            off += n
        }
        return true
    }
    let writeErrno = errno
    if ok, fsync(fd) != 0 { ok = false }
    close(fd)
    guard ok else {
        unlink(tmp)
        throw FileError(path: tmp, code: writeErrno, message: "cannot write")
    }
    guard rename(tmp, path) == 0 else {
        let e = errno
        unlink(tmp)
        throw FileError(path: path, code: e, message: "cannot rename into place")
    }
    let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if dfd >= 0 {
        fsync(dfd)
        close(dfd)
    }
}

/// Creates `dir` and its missing parents (mode 0700), reporting the errno of the step that
/// failed (`ENOTDIR` when a part is a file).
public func makeDirectories(_ dir: String) throws(FileError) {
    var path = dir.hasPrefix("/") ? "" : "."
    for part in dir.split(separator: "/") {
        path += "/" + part
        if mkdir(path, 0o700) == 0 { continue }
        let e = errno
        var st = stat()
        guard e == EEXIST, stat(path, &st) == 0 else { throw FileError(path: path, code: e, message: "cannot create the directory") }
        guard st.st_mode & S_IFMT == S_IFDIR else { throw FileError(path: path, code: ENOTDIR, message: "cannot create the directory") }
    }
}
