import MediaCore
import Control
import FoundationEssentials
import Platform
import PlayQueue

#if canImport(Glibc)
import Glibc
#endif

/// What the daemon saves: the play queue (entries, current item, position, modes, history),
/// volume and mute.
/// A partition as saved: its name, output, queue and volume.
public struct SavedPartition: Codable, Sendable, Equatable {
    public var name: String
    public var output: String?
    public var queue: PlayQueueSnapshot
    public var volume: Float
    public var muted: Bool
    public init(name: String, output: String?, queue: PlayQueueSnapshot, volume: Float, muted: Bool) {
        (self.name, self.output, self.queue, self.volume, self.muted) = (name, output, queue, volume, muted)
    }
}

public struct SavedState: Codable, Sendable, Equatable {
    /// Marks the file as ours ("backline-state"); anything else is foreign.
    public var format = SavedState.formatName
    public var version = 1
    public var queue: PlayQueueSnapshot
    /// 0…1.
    public var volume: Float
    public var muted: Bool
    /// Alarms set (absent in files from before alarms).
    public var alarms: [Alarm]?
    /// ReplayGain (absent in files from before it: the configuration's stands).
    public var replayGain: ReplayGainSettings?
    /// Crossfade, seconds (absent in files from before it, or while the configuration's stands).
    public var crossfade: Double?
    /// The rate items play at (absent in files from before it, or at 1).
    public var speed: Double?
    /// Where podcasts and audiobooks were left, by path (``Bookmarks``).
    public var bookmarks: [String: Bookmark]?
    /// The partitions but the default (absent in files from before them, or when there are none).
    public var partitions: [SavedPartition]?

    public static let formatName = "backline-state"

    /// The largest saved position believed (seconds): about 115 days. Anything beyond is damage.
    public static let maximumPosition = 10_000_000.0

    /// The first field that is out of range, named, or nil when every one is valid: volume
    /// within 0…1, position finite within 0…``maximumPosition``, at most ``Limits/queueLength``
    /// entries, ids within 1…``PlayQueue/maximumID`` and unique, `nextID` within 1…2³¹−1,
    /// priorities 0…255, paths absolute ones of at most `PATH_MAX` bytes (or http(s) URLs of at
    /// most 8 KiB), the current item,
    /// shuffle order and history only ids of the queue (at most once each in the shuffle
    /// order), the version not negative, and every alarm's fields (``Alarm/problem``), at most
    /// ``Limits/alarms`` of them with unique ids.
    public var problem: String? {
        guard volume.isFinite, (0...1).contains(volume) else { return "volume: \(volume.isFinite ? "\(volume)" : "out of range") (not within 0…1)" }
        if let rg = replayGain {
            for (name, v) in [("preamp", rg.preamp), ("missingPreamp", rg.missingPreamp)] where !(v.isFinite && (-60...60).contains(v)) {
                return "replayGain.\(name): not within -60…60 dB"
            }
        }
        if let c = crossfade, !(c.isFinite && (0...3600).contains(c)) { return "crossfade: not within 0…3600 s" }
        if let r = speed, !(r.isFinite && (0.5...3).contains(r)) { return "speed: not within 0.5…3" }
        if let bad = bookmarks?.first(where: { !($0.value.position.isFinite && (0...Self.maximumPosition).contains($0.value.position)) }) {
            return "bookmarks[\(bad.key)].position: not within 0…\(Int(Self.maximumPosition)) s"
        }
        if let problem = Self.problem(queue, "queue") { return problem }
        if let partitions {
            guard partitions.count < Partitions.limit else { return "partitions: more than \(Partitions.limit - 1)" }
            var names = Set<String>()
            for (n, p) in partitions.enumerated() {
                guard Partitions.isValidName(p.name), p.name != Partitions.defaultName else { return "partitions[\(n)].name: not a partition name" }
                guard names.insert(p.name).inserted else { return "partitions[\(n)].name: \(p.name) appears twice" }
                guard p.volume.isFinite, (0...1).contains(p.volume) else { return "partitions[\(n)].volume: not within 0…1" }
                if let problem = Self.problem(p.queue, "partitions[\(n)].queue") { return problem }
            }
        }
        if let alarms {
            guard alarms.count <= Limits.alarms else { return "alarms: \(alarms.count) alarms, more than \(Limits.alarms)" }
            var alarmIDs = Set<Int>()
            for (n, a) in alarms.enumerated() {
                if let problem = a.problem { return "alarms[\(n)].\(problem)" }
                guard alarmIDs.insert(a.id).inserted else { return "alarms[\(n)].id: \(a.id) appears twice" }
            }
        }
        return nil
    }

    /// The first field of a saved queue that is out of range, named under `field`.
    static func problem(_ q: PlayQueueSnapshot, _ field: String) -> String? {
        guard q.position.isFinite, (0...Self.maximumPosition).contains(q.position) else {
            return "\(field).position: \(q.position) s is not within 0…\(Int(Self.maximumPosition))"
        }
        guard q.entries.count <= Limits.queueLength else {
            return "\(field).entries: \(q.entries.count) entries, more than \(Limits.queueLength)"
        }
        var ids = Set<Int>()
        for (n, e) in q.entries.enumerated() {
            guard (1...PlayQueue.maximumID).contains(e.id) else { return "\(field).entries[\(n)].id: \(e.id) is not a valid id" }
            guard ids.insert(e.id).inserted else { return "\(field).entries[\(n)].id: \(e.id) appears twice" }
            // An absolute path, or a stream's URL (http, https).
            let stream = e.path.hasPrefix("http://") || e.path.hasPrefix("https://")
            guard e.path.hasPrefix("/") || stream, !e.path.contains("\0"), e.path.utf8.count <= (stream ? 8192 : Int(PATH_MAX)) else {
                return "\(field).entries[\(n)].path: not an absolute path or an http(s) URL"
            }
            guard (0...255).contains(e.priority) else { return "\(field).entries[\(n)].priority: \(e.priority) is not within 0…255" }
        }
        guard (1...Int(Int32.max)).contains(q.nextID) else { return "\(field).nextID: \(q.nextID) is not within 1…\(Int32.max)" }
        if let c = q.current, !ids.contains(c) { return "\(field).current: \(c) is not in the queue" }
        if let bad = q.shuffleOrder.first(where: { !ids.contains($0) }) { return "\(field).shuffleOrder: \(bad) is not in the queue" }
        guard Set(q.shuffleOrder).count == q.shuffleOrder.count else { return "\(field).shuffleOrder: an id appears twice" }
        if let bad = q.history.first(where: { !ids.contains($0) }) { return "\(field).history: \(bad) is not in the queue" }
        guard q.history.count <= Limits.queueLength else { return "\(field).history: more than \(Limits.queueLength) entries" }
        guard q.version >= 0 else { return "\(field).version: \(q.version) is negative" }
        return nil
    }

    public init(queue: PlayQueueSnapshot, volume: Float, muted: Bool, alarms: [Alarm]? = nil, replayGain: ReplayGainSettings? = nil,
                crossfade: Double? = nil) {
        self.queue = queue
        self.volume = volume
        self.muted = muted
        self.alarms = alarms
        self.replayGain = replayGain
        self.crossfade = crossfade
    }

    private enum CodingKeys: String, CodingKey { case format, version, queue, volume, muted, alarms, replayGain, crossfade, speed, bookmarks, partitions }

    /// Reads the volume as a Double (then range-checked by ``problem``): a number too large for a
    /// Float is then reported as the volume out of range, not as a file that is not JSON.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        format = try c.decode(String.self, forKey: .format)
        version = try c.decode(Int.self, forKey: .version)
        queue = try c.decode(PlayQueueSnapshot.self, forKey: .queue)
        let v = try c.decode(Double.self, forKey: .volume)
        volume = (0...1).contains(v) ? Float(v) : (v.isNaN ? .nan : v < 0 ? -.infinity : .infinity)
        muted = try c.decode(Bool.self, forKey: .muted)
        alarms = try c.decodeIfPresent([Alarm].self, forKey: .alarms)
        replayGain = try c.decodeIfPresent(ReplayGainSettings.self, forKey: .replayGain)
        crossfade = try c.decodeIfPresent(Double.self, forKey: .crossfade)
        speed = try c.decodeIfPresent(Double.self, forKey: .speed)
        bookmarks = try c.decodeIfPresent([String: Bookmark].self, forKey: .bookmarks)
        partitions = try c.decodeIfPresent([SavedPartition].self, forKey: .partitions)
    }
}

/// A saving or loading error, with the file, the C error number when there is one, and what failed.
/// A state-file error: the file, the errno (0: none) and what failed.
public typealias StateFileError = FileError

/// Saves and loads ``SavedState`` atomically: the new contents go to a temporary file in the
/// same directory, which is fsync'ed, renamed over the old one, and the directory fsync'ed. A
/// crash at any moment leaves either the old or the new file, never a torn one.
public struct StateStore: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// Writes `state` atomically.
    public func save(_ state: SavedState) throws(StateFileError) {
        let dir = Path.deletingLastComponent(path)
        try makeDirectories(dir)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do { data = try encoder.encode(state) } catch { throw StateFileError(path: path, code: 0, message: "cannot encode: \(error)") }
        try writeFileAtomically(data, to: path)
    }

    /// The outcome of ``load()``.
    public enum Loaded: Sendable {
        /// No file yet.
        case none
        case state(SavedState)
        /// The file was corrupt, foreign or out of range: it was moved to `movedTo`, and here is why.
        case movedAside(reason: String, movedTo: String)
        /// The file is there but cannot be read (permissions, not a regular file, too large): it
        /// is left alone, and must not be overwritten either.
        case unreadable(StateFileError)
    }

    /// The largest state file read (a 100,000-item queue is ~4 MB).
    public static let maximumSize = 256 << 20

    /// Reads the saved state. A file that does not parse, is not ours, or holds a field out of
    /// range (``SavedState/problem``) is renamed `<file>.corrupt-<time>` (kept for inspection,
    /// never overwritten) and reported. One that cannot be read at all is reported as
    /// ``Loaded/unreadable(_:)`` and left in place. Opened without blocking (a FIFO in its
    /// place never hangs the daemon) and read only when it is a regular file.
    public func load() -> Loaded {
        let data: Data
        switch readRegularFile(path, limit: Self.maximumSize) {
        case .success(let d): data = d
        case .failure(let e) where e.code == ENOENT: return .none
        case .failure(let e): return .unreadable(e)
        }
        let reason: String
        do {
            let s = try JSONDecoder().decode(SavedState.self, from: data)
            if s.format != SavedState.formatName || s.version != 1 {
                reason = "not a backline state file (format \(s.format) version \(s.version))"
            } else if let problem = s.problem {
                reason = "out of range: \(problem)"
            } else {
                return .state(s)
            }
        } catch {
            reason = data.isEmpty ? "empty file" : "unreadable: \(Self.describe(error))"
        }
        let aside = path + ".corrupt-\(Int(Date().timeIntervalSince1970))"
        _ = rename(path, aside)
        return .movedAside(reason: reason, movedTo: aside)
    }

    /// Removes temporary files (`<file>.tmp-PID`) left by a save that was killed: those whose
    /// process is gone. Returns their names.
    @discardableResult
    public func removeStaleTemporaries() -> [String] {
        let dir = Path.deletingLastComponent(path)
        let prefix = Path.lastComponent(path) + ".tmp-"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return names.filter { name in
            guard name.hasPrefix(prefix), let pid = pid_t(name.dropFirst(prefix.count)) else { return false }
            // Still running (another daemon saving right now): not stale.
            if pid != getpid(), kill(pid, 0) == 0 || errno == EPERM { return false }
            return unlink(dir + "/" + name) == 0
        }
    }

    static func describe(_ error: any Error) -> String {
        /// `queue.entries[3].id`: where in the file.
        func at(_ path: [any CodingKey]) -> String {
            path.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().drop { $0 == "." }.description
        }
        switch error {
        case DecodingError.dataCorrupted(let c): return (c.codingPath.isEmpty ? "" : at(c.codingPath) + ": ") + c.debugDescription
        case DecodingError.keyNotFound(let k, let c): return "missing \(at(c.codingPath + [k]))"
        case DecodingError.typeMismatch(_, let c): return "wrong type at \(at(c.codingPath))"
        case DecodingError.valueNotFound(_, let c): return "missing value at \(at(c.codingPath))"
        default: return "\(error)"
        }
    }
}
