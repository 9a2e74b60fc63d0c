import Dispatch
import FoundationEssentials
import Locking
import MediaCore
import PlayQueue
import Platform
import Player
import Synchronization

/// Where the listener left a podcast or an audiobook.
public struct Bookmark: Sendable, Equatable, Codable {
    /// The heard position when it was left, seconds into the item.
    public var position: Double
    /// The item's length, when known.
    public var duration: Double?
    /// When it was left (seconds since 1970).
    public var saved: Double

    public init(position: Double, duration: Double?, saved: Double) {
        (self.position, self.duration, self.saved) = (position, duration, saved)
    }
}

/// Which items remember where they were left, and how far back they start: Apple Books' and
/// Podcasts' rules. An item is remembered when it is at least ``minimumLength`` long, or its
/// genre names it spoken word (a podcast or an audiobook), or it is an `.m4b`.
public struct ResumeSettings: Sendable, Equatable {
    /// Items at least this long (seconds) are remembered (10 minutes).
    public var minimumLength: Double = 600
    /// Played again, an item starts this many seconds before where it was left (5), as
    /// Apple Books does, so the listener hears the last words again.
    public var rewind: Double = 5
    /// Whether positions are remembered at all.
    public var enabled = true

    public init(minimumLength: Double = 600, rewind: Double = 5, enabled: Bool = true) {
        (self.minimumLength, self.rewind, self.enabled) = (minimumLength, rewind, enabled)
    }

    /// Genres (case-insensitive) that make an item spoken word whatever its length.
    public static let spokenGenres: Set<String> = SpokenWord.genres

    /// Whether an item at `path` with `duration` and `genre` is remembered.
    public func remembers(path: String, duration: Double?, genre: String?) -> Bool {
        guard enabled else { return false }
        if let duration, duration >= minimumLength { return true }
        return SpokenWord.matches(path: path, genre: genre)
    }
}

/// The resume positions of one daemon (or player): kept per item path (a file's path as queued,
/// or a stream's URL), at most ``limit`` of them (the oldest go first). The queue asks them where
/// an item starts and tells them where one was left (`ResumePositions`); an item heard to its
/// end is forgotten.
public final class Bookmarks: ResumePositions, Sendable {
    private let entries = Lock<[String: Bookmark]>([:])
    private let settingsLock = Lock(ResumeSettings())

    /// How many items are remembered.
    public static let limit = 1000

    public init() {}

    /// The rules (``ResumeSettings``).
    public var settings: ResumeSettings {
        get { settingsLock.withLock { $0 } }
        set { settingsLock.withLock { $0 = newValue } }
    }

    /// Every remembered item.
    public var all: [String: Bookmark] { entries.withLock { $0 } }

    /// Replaces every remembered item (a saved state restored).
    public func restore(_ saved: [String: Bookmark]) { entries.withLock { $0 = saved } }

    /// Where `path` was left, if it is remembered.
    public func bookmark(for path: String) -> Bookmark? { entries.withLock { $0[path] } }

    /// Remembers `path` left at `position`.
    public func set(_ path: String, position: Double, duration: Double?) {
        entries.withLock { e in
            e[path] = Bookmark(position: position, duration: duration, saved: Self.now())
            if e.count > Self.limit, let oldest = e.min(by: { $0.value.saved < $1.value.saved })?.key { e[oldest] = nil }
        }
    }

    /// Forgets `paths` (nil: all); returns how many were forgotten.
    @discardableResult
    public func forget(_ paths: [String]?) -> Int {
        entries.withLock { e -> Int in
            guard let paths else {
                defer { e = [:] }
                return e.count
            }
            return paths.reduce(0) { n, p in n + (e.removeValue(forKey: p) != nil ? 1 : 0) }
        }
    }

    /// The remembered positions and where the current item is now, if it is remembered too:
    /// what a save keeps, so a kill loses at most the time since the last save.
    public func withCurrent(_ item: PlayerItem?, at time: Double) -> [String: Bookmark] {
        var all = self.all
        if let item, time > 0, remembers(item), let d = item.duration, time < d {
            all[item.path] = Bookmark(position: time, duration: d, saved: Self.now())
        }
        return all
    }

    private func remembers(_ item: PlayerItem) -> Bool {
        settings.remembers(path: item.path, duration: item.duration, genre: item.metadata.genre)
    }

    static func now() -> Double { Date().timeIntervalSince1970 }

    // MARK: ResumePositions

    public func start(for entry: PlayQueueEntry) -> Double? {
        guard entry.clip == nil, let b = bookmark(for: entry.path) else { return nil }
        return max(0, b.position - settings.rewind)
    }

    public func left(_ entry: PlayQueueEntry, item: PlayerItem, at time: Double) {
        guard entry.clip == nil, remembers(item) else { return }
        set(entry.path, position: time, duration: item.duration)
    }
}
