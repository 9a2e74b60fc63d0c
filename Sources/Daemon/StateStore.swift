import Foundation
import PlayQueue

#if canImport(Glibc)
import Glibc
#endif

/// What the daemon saves: the play queue (entries, current item, position, modes, history),
/// volume and mute.
public struct SavedState: Codable, Sendable, Equatable {
    /// Marks the file as ours ("backline-state"); anything else is foreign.
    public var format = SavedState.formatName
    public var version = 1
    public var queue: PlayQueueSnapshot
    /// 0…1.
    public var volume: Float
    public var muted: Bool

    public static let formatName = "backline-state"

    public init(queue: PlayQueueSnapshot, volume: Float, muted: Bool) {
        self.queue = queue
        self.volume = volume
        self.muted = muted
    }
}

/// A saving or loading error, with the file, the C error number when there is one, and what failed.
public struct StateFileError: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let code: Int32
    public let message: String
    public var description: String { "\(path): \(message)" + (code != 0 ? " (\(String(cString: strerror(code))))" : "") }
}

/// Saves and loads ``SavedState`` atomically: the new contents go to a temporary file in the
/// same directory, which is fsync'ed, renamed over the old one, and the directory fsync'ed. A
/// crash at any moment leaves either the old or the new file, never a torn one.
public struct StateStore: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// Writes `state` atomically.
    public func save(_ state: SavedState) throws(StateFileError) {
        let dir = (path as NSString).deletingLastPathComponent
        try Self.makeDirectory(dir)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do { data = try encoder.encode(state) } catch { throw StateFileError(path: path, code: 0, message: "cannot encode: \(error)") }
        let tmp = path + ".tmp-\(getpid())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StateFileError(path: tmp, code: errno, message: "cannot create") }
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
            throw StateFileError(path: tmp, code: writeErrno, message: "cannot write")
        }
        guard rename(tmp, path) == 0 else {
            let e = errno
            unlink(tmp)
            throw StateFileError(path: path, code: e, message: "cannot rename into place")
        }
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            fsync(dfd)
            close(dfd)
        }
    }

    /// The outcome of ``load()``.
    public enum Loaded: Sendable {
        /// No file yet.
        case none
        case state(SavedState)
        /// The file was corrupt or foreign: it was moved to `movedTo`, and here is why.
        case movedAside(reason: String, movedTo: String)
    }

    /// Reads the saved state. A file that does not parse, or is not ours, is renamed
    /// `<file>.corrupt-<time>` (kept for inspection, never overwritten) and reported.
    public func load() -> Loaded {
        guard let data = FileManager.default.contents(atPath: path) else { return .none }
        let reason: String
        do {
            let s = try JSONDecoder().decode(SavedState.self, from: data)
            if s.format == SavedState.formatName, s.version == 1 { return .state(s) }
            reason = "not a backline state file (format \(s.format) version \(s.version))"
        } catch {
            reason = data.isEmpty ? "empty file" : "unreadable: \(Self.describe(error))"
        }
        let aside = path + ".corrupt-\(Int(Date().timeIntervalSince1970))"
        _ = rename(path, aside)
        return .movedAside(reason: reason, movedTo: aside)
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let c): return c.debugDescription
        case DecodingError.keyNotFound(let k, _): return "missing \(k.stringValue)"
        case DecodingError.typeMismatch(_, let c): return "wrong type at \(c.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.valueNotFound(_, let c): return "missing value at \(c.codingPath.map(\.stringValue).joined(separator: "."))"
        default: return "\(error)"
        }
    }

    /// Creates `dir` and its parents (mode 0700 for the ones it creates).
    static func makeDirectory(_ dir: String) throws(StateFileError) {
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw StateFileError(path: dir, code: errno, message: "cannot create the directory")
        }
    }
}
