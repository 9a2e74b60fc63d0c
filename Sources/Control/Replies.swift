import AudioEngine
import Library
import Lifecycle
import MediaCore
import NowPlaying
import PlayQueue
import Session

/// A queue item as replies and events show it.
public struct QueueItem: Sendable, Equatable {
    public var id: Int
    /// Its index in the queue (listings and the current item).
    public var index: Int?
    public var path: String
    /// The title tag, else the file name.
    public var title: String
    public var artist: String?
    public var album: String?
    public var track: Int?
    /// Seconds (exact: libmpg123's frame count), nil when unknown.
    public var duration: Double?
    /// Whether it is the current item (listings and the current item).
    public var isCurrent: Bool?
    /// Why it cannot play, when it cannot.
    public var error: String?
    /// 0–255 (shuffle plays higher priorities first).
    public var priority: Int
    /// Every tag the file carries (several values of a type stay several), in the file's order.
    public var tags: [Tag]
    /// The part of the file played (``duration`` is its length); nil: all of it.
    public var clip: PlaybackClip?

    public init(id: Int, index: Int? = nil, path: String, title: String, artist: String? = nil, album: String? = nil,
                track: Int? = nil, duration: Double? = nil, isCurrent: Bool? = nil, error: String? = nil, priority: Int = 0,
                tags: [Tag] = [], clip: PlaybackClip? = nil) {
        (self.id, self.index, self.path, self.title, self.artist, self.album) = (id, index, path, title, artist, album)
        (self.track, self.duration, self.isCurrent, self.error, self.priority) = (track, duration, isCurrent, error, priority)
        (self.tags, self.clip) = (tags, clip)
    }

    /// The length played of a file of `duration` seconds with `clip` (all of it without one).
    public static func playedLength(_ duration: Double?, _ clip: PlaybackClip?) -> Double? {
        guard let clip else { return duration }
        guard let end = clip.end ?? duration else { return nil }
        return max(0, min(end, duration ?? end) - clip.start)
    }
}

/// The queue: its version (bumped at every change), the current item, every item in order.
public struct QueueListing: Sendable, Equatable {
    public var version: Int
    public var current: Int?
    public var items: [QueueItem]
}

/// The audio session as it stands.
public struct SessionSnapshot: Sendable, Equatable {
    public var category: SessionCategory
    /// The options' names (`mixWithOthers`, `duckOthers`, `interruptSpokenAudioAndMixWithOthers`).
    public var options: [String]
    public var active: Bool
    public var interrupted: Bool
    public var silentSwitch: Bool
    public var screenLocked: Bool
    public var silenced: Bool
    public var ducked: Bool
    public var nowPlayingApp: Bool
}

/// The sleep timer, when one is set.
public struct SleepSnapshot: Sendable, Equatable {
    /// Seconds until it fires (nil: at the end of the item).
    public var remaining: Double?
    public var endOfItem: Bool
    /// Whether it pauses at the end of the chapter (and at the end of the item).
    public var endOfChapter: Bool = false
    /// Seconds of fade-out before it fires.
    public var fade: Double
}

/// Volume (0–1) and mute.
public struct VolumeState: Sendable, Equatable {
    public var volume: Float
    public var muted: Bool
    public init(volume: Float, muted: Bool) { (self.volume, self.muted) = (volume, muted) }
}

/// Everything `status` reports.
public struct StatusSnapshot: Sendable, Equatable {
    public var state: PlaybackState
    /// Playing, but waiting for the network: a stream's first audio on its way, or a stall
    /// (QueuePlayer waiting `toMinimizeStalls`).
    public var buffering: Bool
    public var current: QueueItem?
    /// The heard position in the current item, seconds.
    public var elapsed: Double
    public var duration: Double?
    public var volume: VolumeState
    public var rate: Double
    public var index: Int?
    public var count: Int
    public var queueVersion: Int
    public var repeatMode: RepeatMode
    public var shuffle: Bool
    public var stopAfterCurrent: Bool
    /// Whether stop-after-current stays on after each item (MPD's `single 1`).
    public var stopAfterEach: Bool
    public var consume: ConsumeMode
    public var session: SessionSnapshot
    public var app: ApplicationState
    public var device: String
    /// What the device agreed to, while it is open.
    public var output: DeviceConfiguration?
    /// The item heard now: its format, and whether it is down-mixed for the device.
    public var audio: AudioDescription?
    /// ReplayGain as set, and the scale the item heard now plays with.
    public var replayGain: ReplayGainSettings
    public var replayGainScale: Float?
    /// Crossfade, seconds (0: off).
    public var crossfade: Double
    /// The rate items play at (1: as recorded), playing or not.
    public var speed: Double = 1
    /// Seconds of silence cut so far from the item heard (``Playback/silenceTrimming``).
    public var silenceTrimmed: Double = 0
    /// The current item's chapter at ``elapsed``, when it has chapters.
    public var chapter: ChapterPosition? = nil
    public var underruns: Int
    public var sleep: SleepSnapshot?
    /// The music directory (symlinks resolved) that relative paths are relative to: a client
    /// in a folder inside it can name files relative to that folder.
    public var musicDirectory: String
}

/// Where an item with chapters is: how many it has and which is heard.
public struct ChapterPosition: Sendable, Equatable {
    /// The chapter's index (0 the first), nil before the first one starts.
    public var index: Int?
    /// How many chapters the item has.
    public var count: Int
    /// The chapter at ``index``.
    public var chapter: Chapter?

    /// The position `seconds` into an item with `chapters` (nil when it has none).
    public init?(_ chapters: [Chapter], at seconds: Double) {
        guard !chapters.isEmpty else { return nil }
        self.init(chapters, index: Chapter.index(at: seconds, in: chapters))
    }

    /// Chapter `index` of `chapters`.
    public init(_ chapters: [Chapter], index: Int?) {
        self.index = index
        count = chapters.count
        chapter = index.flatMap { chapters.indices.contains($0) ? chapters[$0] : nil }
    }
}

/// What the now-playing info center holds for the current item.
public struct NowPlayingSnapshot: Sendable, Equatable {
    public var item: Int
    public var info: NowPlayingInfo
    /// The elapsed time extrapolated to now.
    public var elapsed: Double?
    public var playbackState: String
}

/// An entry of the music directory as `browse` lists it; audio files with their tags when asked.
public struct LibraryEntry: Sendable, Equatable {
    public var listed: PathResolver.Listed
    /// Tags and duration (id 0: not queued).
    public var item: QueueItem?
    /// All the file says of itself (format, time), as read for `item` (not kept in the cache).
    public var info: TagCache.Info? = nil
}

/// What a path request skipped, and why.
public struct SkippedPath: Sendable, Equatable {
    public var path: String
    public var reason: String
}

/// A command's answer, typed; each protocol renders it its own way.
public enum Reply: Sendable, Equatable {
    case none
    case state(PlaybackState)
    case current(QueueItem?)
    /// A position in the current item, seconds.
    case position(Double)
    case repeatMode(RepeatMode)
    case shuffle(Bool)
    case stopAfterCurrent(Bool, each: Bool)
    case consume(ConsumeMode)
    case replayGain(ReplayGainSettings)
    case crossfade(Double)
    case rate(Double)
    /// The rate items play at (``Playback/speed``).
    case speed(Double)
    /// The current item's chapters, the one heard (index), and where a move landed (seconds).
    case chapters([Chapter], current: Int?, position: Double?)
    /// Where items were left, by path; or how many were forgotten.
    case bookmarks([String: Bookmark])
    case forgotten(Int)
    case added(ids: [Int], skipped: [SkippedPath])
    /// Items left in the queue.
    case count(Int)
    /// An item's new index.
    case index(Int)
    case queue(QueueListing)
    /// The stored playlists.
    case playlists([PlaylistStore.Info])
    /// A stored playlist's entries (relative to the music directory, or absolute).
    case playlistEntries([String])
    /// A directory of the music directory.
    case directory([LibraryEntry])
    /// A library scan was queued: its job number.
    case update(job: Int)
    /// Stickers: a song's (`path`, `name`, `value` each), or the songs holding one.
    case stickers([StickerValue])
    /// Every sticker name in use.
    case stickerNames([String])
    /// Songs of the library (`find`, `search`).
    case songs([LibrarySong])
    /// A tag's values (`list TAG`): each row the group values, then the value.
    case tagValues(keys: [TagKey], [[String]])
    /// Song counts (`count`), per value of `group` when grouped.
    case counts(group: TagKey?, [LibraryCount])
    /// A directory of the library (`ls`).
    case library([LibraryNode])
    /// The library's counts (`stats`), and the scan running, if any.
    case libraryStats(LibraryStats, updating: LibraryUpdate?)
    case status(StatusSnapshot)
    case nowPlaying(NowPlayingSnapshot?)
    case volume(VolumeState)
    case session(SessionSnapshot)
    case app(ApplicationState)
    case sleep(SleepSnapshot?)
    /// The alarms, soonest first.
    case alarms([Alarm])
    /// The event kinds now subscribed.
    case subscribed([String])
    /// The client-to-client channels someone is subscribed to.
    case channels([String])
    /// Client-to-client messages, in arrival order.
    case messages([ClientMessages.Message])
    /// The partitions, and the one this connection is in.
    case partitions([PartitionInfo], current: String)
    /// The outputs.
    case outputs([OutputInfo])
    case pong
    case version(String, protocol: Int)
    case help([String])
}

extension ApplicationState {
    /// Its name in replies and events.
    public var name: String {
        switch self {
        case .active: "active"
        case .inactive: "inactive"
        case .background: "background"
        case .suspended: "suspended"
        }
    }
}
