import BacklineWire
import Library
import Lifecycle
import PlayQueue
import Session

/// What changed, protocol-neutral, as MPD's idle subsystems name it (plus what MPD does not
/// have): a client waiting for changes asks for the subsystems it cares about.
public struct Subsystems: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Playback state, the current item, seeks, failures.
    public static let player = Subsystems(rawValue: 1 << 0)
    /// Volume and mute.
    public static let mixer = Subsystems(rawValue: 1 << 1)
    /// Repeat, shuffle, single, consume.
    public static let options = Subsystems(rawValue: 1 << 2)
    /// The play queue's contents.
    public static let playlist = Subsystems(rawValue: 1 << 3)
    /// Stored playlists.
    public static let storedPlaylist = Subsystems(rawValue: 1 << 4)
    /// The audio output (device lost or back).
    public static let output = Subsystems(rawValue: 1 << 5)
    /// The audio session (interruptions, silencing, ducking).
    public static let session = Subsystems(rawValue: 1 << 6)
    /// The app's life cycle.
    public static let lifecycle = Subsystems(rawValue: 1 << 7)
    /// The sleep timer and the alarms.
    public static let sleep = Subsystems(rawValue: 1 << 8)
    /// The daemon itself (hooks, shutdown).
    public static let daemon = Subsystems(rawValue: 1 << 9)
    /// The periodic position report.
    public static let position = Subsystems(rawValue: 1 << 10)
    /// Client-to-client channels: someone subscribed or unsubscribed.
    public static let subscription = Subsystems(rawValue: 1 << 11)
    /// A client-to-client message arrived for this connection.
    public static let message = Subsystems(rawValue: 1 << 12)
    /// The music library's contents (a scan that changed something ended).
    public static let database = Subsystems(rawValue: 1 << 13)
    /// A library scan started, progressed or ended.
    public static let update = Subsystems(rawValue: 1 << 14)
    /// A partition was made or deleted, or an output moved between partitions.
    public static let partition = Subsystems(rawValue: 1 << 15)
    /// A song's stickers (MPD's `sticker` idle).
    public static let sticker = Subsystems(rawValue: 1 << 16)
}

/// What the sleep timer did.
public enum SleepEvent: Sendable, Equatable {
    case set(minutes: Double?, endOfItem: Bool)
    /// Set to pause at the end of the chapter (or of the item, when it has none).
    case setAtEndOfChapter
    case cancelled
    case fired
}

/// Something that happened, typed; each protocol renders it (JSON events, MPD idle changes).
public enum ControlEvent: Sendable, Equatable {
    case state(PlaybackState)
    /// Playing but waiting for the network (a stream's first audio, a stall), or not any more.
    case buffering(Bool)
    case current(QueueItem?)
    case queue(version: Int, count: Int)
    case modes(repeatMode: RepeatMode, shuffle: Bool, stopAfterCurrent: Bool, consume: ConsumeMode = .off)
    case failed(item: Int, path: String, reason: String)
    case seeked(item: Int, time: Double)
    /// The current item's chapter heard changed (``ChapterPosition``).
    case chapter(item: Int, ChapterPosition)
    case position(item: Int, elapsed: Double, duration: Double?)
    /// Volume or mute changed (`muteChanged`: the output was turned off or on, as MPD's
    /// `disableoutput` does).
    case volume(VolumeState, muteChanged: Bool = false)
    case session(SessionEvent)
    case lifecycle(ApplicationEvent, state: ApplicationState)
    case sleep(SleepEvent)
    case alarm(AlarmEvent)
    case hook(name: String, status: Int32?)
    case shutdown
    /// A stored playlist was saved, changed, renamed or deleted.
    case playlists(name: String)
    /// A song's sticker was set, changed or deleted (`name` nil: all of its stickers), by a
    /// client or by the daemon (a play or skip counted, a position kept).
    case sticker(path: String, name: String?)
    /// A library scan started, progressed or ended (`done`), with its counts.
    case update(LibraryUpdate)
    /// A partition was made or deleted, or an output moved (``Partitions``).
    case partitions

    /// Every kind, as clients subscribe to them (the list `ctl watch` checks too).
    public static let kinds: [String] = EventKinds.all

    /// This event's kind (``EventKind``: the one list of kinds).
    public var eventKind: EventKind {
        switch self {
        case .state: .state
        case .buffering: .buffering
        case .current: .current
        case .queue: .queue
        case .modes: .modes
        case .failed: .failed
        case .seeked: .seeked
        case .chapter: .chapter
        case .position: .position
        case .volume: .volume
        case .session: .session
        case .lifecycle: .lifecycle
        case .sleep: .sleep
        case .alarm: .alarm
        case .hook: .hook
        case .shutdown: .shutdown
        case .playlists: .playlists
        case .sticker: .sticker
        case .update: .update
        case .partitions: .partitions
        }
    }

    /// Whether it concerns one partition (its player, queue, options, volume, sleep timer) and
    /// reaches only that partition's clients; the others (the session, the app, the library,
    /// stored playlists, partitions, the daemon) reach every client.
    public var isPartitionScoped: Bool {
        switch self {
        case .state, .buffering, .current, .queue, .modes, .failed, .seeked, .chapter, .position, .volume, .sleep: true
        case .session, .lifecycle, .alarm, .hook, .shutdown, .playlists, .sticker, .update, .partitions: false
        }
    }

    /// This event's kind's name.
    public var kind: String { eventKind.rawValue }

    /// What it changed.
    public var subsystems: Subsystems {
        switch self {
        case .state, .buffering, .current, .failed, .seeked: .player
        case .queue: .playlist
        case .modes: .options
        case .volume(_, let muteChanged): muteChanged ? [.mixer, .output] : .mixer
        case .session(let e):
            switch e {
            case .routeChanged, .mediaServicesWereReset: [.session, .output]
            default: .session
            }
        case .lifecycle: .lifecycle
        case .sleep, .alarm: .sleep
        case .hook, .shutdown: .daemon
        case .position: .position
        // MPD has no chapters; its clients see the seek (`player`) a chapter move makes.
        case .chapter: []
        case .playlists: .storedPlaylist
        case .sticker: .sticker
        // MPD tells a scan's start and end only (progress is the JSON event's).
        case .partitions: [.partition, .output]
        case .update(let u): u.done ? (u.changed ? [.update, .database] : .update) : u.scanned == 0 ? .update : []
        }
    }
}
