import MediaCore

/// One song of the library: a file of the music directory as the last scan read it.
public struct LibrarySong: Sendable, Equatable {
    /// A stable id: kept while the file stays (and when it moves within the music directory).
    public var id: Int
    /// Relative to the music directory (`Artist/Album/01 Song.flac`).
    public var path: String
    public var size: Int
    /// When the file was last modified, in seconds since 1970.
    public var modified: Int
    /// When the library first saw it, in seconds since 1970 (kept across moves).
    public var added: Int
    /// Seconds, when the file says.
    public var duration: Double?
    /// The decoder that reads it (`flac`, `mpg123`, `vorbis`, `opus`, `wave`, `aiff`, `ffmpeg`).
    public var format: String?
    /// The file's own sample rate and channels, and how it stores samples (MPD's `Format:`, `16`, `24`, `f`…).
    public var rate: Int?
    public var channels: Int?
    public var bits: String?
    /// Average kbit/s.
    public var bitrate: Int?
    /// Whether the tags hold a picture.
    public var hasArtwork: Bool
    /// Every tag value, in the order the file has them (several values of one type kept).
    public var tags: [Tag]

    public init(id: Int, path: String, size: Int, modified: Int, added: Int, duration: Double?, format: String?,
                rate: Int?, channels: Int?, bits: String?, bitrate: Int?, hasArtwork: Bool, tags: [Tag]) {
        (self.id, self.path, self.size, self.modified, self.added, self.duration, self.format) =
            (id, path, size, modified, added, duration, format)
        (self.rate, self.channels, self.bits, self.bitrate, self.hasArtwork, self.tags) = (rate, channels, bits, bitrate, hasArtwork, tags)
    }

    /// Every value of `key`.
    public func values(_ key: TagKey) -> [String] { tags.filter { $0.key == key }.map(\.value) }
    /// The first value of `key`.
    public func first(_ key: TagKey) -> String? { tags.first { $0.key == key }?.value }

    /// The tags as a decoder's metadata (the common fields filled in; no picture, no ReplayGain).
    public var metadata: TrackMetadata {
        var m = TrackMetadata()
        m.tags = tags
        m.title = first(.title)
        m.artist = first(.artist)
        m.album = first(.album)
        m.albumArtist = first(.albumArtist)
        m.trackNumber = first(.track).flatMap { Int($0) }
        m.discNumber = first(.disc).flatMap { Int($0) }
        m.genre = first(.genre)
        m.composer = first(.composer)
        m.year = first(.date)
        return m
    }

    /// MPD's `Format:` (`44100:16:2`), when known.
    public var audioFormat: String? {
        guard let rate, let channels else { return nil }
        return "\(rate):\(bits ?? "f"):\(channels)"
    }
}

/// A directory of the library.
public struct LibraryDirectory: Sendable, Equatable {
    /// Relative to the music directory.
    public var path: String
    /// When it was last modified, in seconds since 1970.
    public var modified: Int
}

/// A playlist file in the music directory (`.m3u`, `.m3u8`, `.pls`).
public struct LibraryPlaylist: Sendable, Equatable {
    public var path: String
    public var modified: Int
}

/// One entry of a directory listing or a walk.
public enum LibraryNode: Sendable, Equatable {
    case directory(LibraryDirectory)
    case song(LibrarySong)
    case playlist(LibraryPlaylist)
}

/// Counts over the whole library (MPD's `stats`).
public struct LibraryStats: Sendable, Equatable {
    public var artists: Int
    public var albums: Int
    public var songs: Int
    /// The sum of the songs' durations, seconds.
    public var playtime: Double
    /// When the last scan that changed something ended (seconds since 1970; 0: never).
    public var updated: Int
    /// Files the scans could not use, each with its reason.
    public var unreadable: Int
}

/// A scan: queued, running, or done.
public struct LibraryUpdate: Sendable, Equatable {
    /// Its number (MPD's `updating_db: N`): counts up from 1 while the daemon runs.
    public var job: Int
    /// The directory scanned, relative to the music directory ("" for all of it).
    public var path: String
    /// Whether unchanged files were read again (`rescan`).
    public var rescan: Bool
    /// Files seen so far.
    public var scanned = 0
    /// Songs read and added / read again / removed / found moved; files that could not be read.
    public var added = 0
    public var updated = 0
    public var removed = 0
    public var moved = 0
    public var failed = 0
    /// Files opened to read their tags: a hard link of a file already read in this scan (same
    /// device, inode, size and time) takes its tags without being opened again.
    public var read = 0
    /// Files the walk will look at, when known (the previous count of this subtree: for a progress bar).
    public var expected: Int?
    /// Whether it ended, and how (nil: ended well).
    public var done = false
    public var error: String?

    /// Whether it changed the library.
    public var changed: Bool { added + updated + removed + moved > 0 }

    public init(job: Int, path: String, rescan: Bool) { (self.job, self.path, self.rescan) = (job, path, rescan) }
}

/// Why the library could not do something.
public struct LibraryError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// The database is from a newer Backline.
        case newerSchema = "newer-schema"
        /// A directory or song that is not in the library.
        case notFound = "not-found"
        /// A filter or argument that does not parse.
        case badFilter = "bad-filter"
        /// SQLite failed.
        case database
        /// An answer would be larger than allowed.
        case tooLarge = "too-large"
        /// The query was cancelled (its client has gone).
        case cancelled
    }
    public var kind: Kind
    public var message: String
    public init(_ kind: Kind, _ message: String) { (self.kind, self.message) = (kind, message) }
    public var description: String { message }

    init(_ e: SQLiteError) { self.init(.database, "library database: \(e.description)") }
}
