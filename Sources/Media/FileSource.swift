import MediaCore
import Platform

#if canImport(Glibc)
import Glibc
#endif

/// A regular file as a `ByteSource`, opened as the hardening rules say: without blocking (a
/// FIFO, socket or device named like a music file is refused with its kind, never waited on),
/// checked to be a regular file, and, with a root, checked on the open descriptor to lie
/// beneath it (a link swapped in after the path was checked cannot lead out).
public final class FileSource: ByteSource {
    /// The path it was opened by.
    public let name: String
    /// The open descriptor (closed with the source).
    public let descriptor: Int32
    public let length: Int?
    public var isSeekable: Bool { true }
    /// The open descriptor (reads here are positioned, so a library may move its offset).
    public var fileDescriptor: Int32? { descriptor }
    public private(set) var position = 0

    /// Opens `path`.
    /// - Parameters:
    ///   - path: The file.
    ///   - root: When given, the file must lie beneath this directory (links resolved).
    /// - Throws: `MediaError` (`.io`) naming the file when it is missing, unreadable, not a
    ///   regular file, or outside `root`.
    public init(path: String, beneath root: String? = nil) throws(MediaError) {
        name = path
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else {
            let e = errno
            throw MediaError(.io, e == ENOENT ? "no such file" : String(cString: strerror(e)), code: e, item: path)
        }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            let kind = switch st.st_mode & S_IFMT {
            case S_IFDIR: "a directory"
            case S_IFIFO: "a FIFO"
            case S_IFSOCK: "a socket"
            case S_IFCHR, S_IFBLK: "a device"
            default: "not a regular file"
            }
            Glibc.close(fd)
            throw MediaError(.io, "is \(kind), not a regular file", item: path)
        }
        if let problem = Confinement.problem(descriptor: fd, beneath: root) {
            Glibc.close(fd)
            throw MediaError(.io, problem, item: path)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        descriptor = fd
        length = Int(st.st_size)
    }

    private init(descriptor: Int32, name: String, length: Int?) {
        self.descriptor = descriptor
        self.name = name
        self.length = length
    }

    deinit { Glibc.close(descriptor) }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(MediaError) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        while true {
            let n = Glibc.pread(descriptor, base, buffer.count, off_t(position))
            if n >= 0 {
                position += n
                return n
            }
            if errno == EINTR { continue }
            let e = errno
            throw MediaError(.io, String(cString: strerror(e)), code: e, item: name)
        }
    }

    public func seek(to offset: Int) throws(MediaError) {
        guard offset >= 0 else { throw MediaError(.io, "seek to a negative offset", item: name) }
        position = offset
    }

    /// A second reader of the same open file (a duplicate descriptor, its own position).
    public func reopened() throws(MediaError) -> any ByteSource {
        let fd = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard fd >= 0 else {
            let e = errno
            throw MediaError(.io, String(cString: strerror(e)), code: e, item: name)
        }
        return FileSource(descriptor: fd, name: name, length: length)
    }
}
