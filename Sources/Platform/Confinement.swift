#if canImport(Glibc)
import Glibc
#endif

/// Files opened on a client's behalf are confined to a directory by checking the *opened
/// descriptor*, not the path: what the kernel opened is read back from `/proc/self/fd/N` (every
/// link resolved, as the open followed them) and must lie beneath the directory. A link swapped
/// in between a check of the path and the open (`mv -T link-to-outside.mp3 a.mp3`, or a
/// directory of the path replaced by a link) therefore cannot lead out: whatever the path
/// said, the file read is the one checked.
public enum Confinement {
    /// The absolute path of what `fd` refers to, as the kernel names it (links resolved; a file
    /// deleted since it was opened ends in ` (deleted)`), or nil when it cannot be read.
    public static func path(ofDescriptor fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `path` is `root` itself or inside it (both absolute and free of links).
    public static func isBeneath(_ path: String, root: String) -> Bool {
        root == "/" || path == root || path.hasPrefix(root + "/")
    }

    /// Nil when the open descriptor `fd` lies beneath `root` (nil: anywhere); otherwise why not,
    /// in words to follow a file name (`leads outside /music`).
    public static func problem(descriptor fd: Int32, beneath root: String?) -> String? {
        guard let root else { return nil }
        guard let real = path(ofDescriptor: fd) else { return "cannot be checked against \(root)" }
        return isBeneath(real, root: root) ? nil : "leads outside \(root)"
    }
}
