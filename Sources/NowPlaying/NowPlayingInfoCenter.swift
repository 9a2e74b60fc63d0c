import AudioEngine
import Broadcast
import Dispatch
import FoundationEssentials
import MediaCore
import Synchronization
import Locking

/// What is playing (`MPNowPlayingInfoCenter.nowPlayingInfo`), with typed keys for the
/// `MPMediaItemProperty*` and `MPNowPlayingInfoProperty*` entries.
public struct NowPlayingInfo: Sendable, Equatable {
    /// `MPNowPlayingInfoMediaType`.
    ///
    /// Cases may be added in a minor version: `switch` over it with a `default:` case, as over
    /// Apple's non-frozen enums.
    public enum MediaType: Int, Sendable {
        /// Unspecified.
        case none = 0
        /// Audio.
        case audio = 1
        /// Video.
        case video = 2
        /// The lowercase name (`none`, `audio`, `video`).
        public var name: String {
            switch self {
            case .none: "none"
            case .audio: "audio"
            case .video: "video"
            }
        }
    }

    /// Embedded artwork: the bytes and their MIME type (the decoder's own type: tags pass through as read).
    public typealias Artwork = TrackMetadata.Artwork

    /// `MPMediaItemPropertyTitle`: the track's title.
    public var title: String?
    /// `MPMediaItemPropertyArtist`: the performing artist.
    public var artist: String?
    /// `MPMediaItemPropertyAlbumTitle`.
    public var albumTitle: String?
    /// `MPMediaItemPropertyAlbumArtist`.
    public var albumArtist: String?
    /// `MPMediaItemPropertyComposer`.
    public var composer: String?
    /// `MPMediaItemPropertyAlbumTrackNumber`: the track's number on its album (1-based).
    public var albumTrackNumber: Int?
    /// `MPMediaItemPropertyAlbumTrackCount`: how many tracks the album has.
    public var albumTrackCount: Int?
    /// `MPMediaItemPropertyDiscNumber` (1-based).
    public var discNumber: Int?
    /// `MPMediaItemPropertyDiscCount`.
    public var discCount: Int?
    /// `MPMediaItemPropertyGenre`.
    public var genre: String?
    /// Every tag the item's file carries, in its order, several values of a type kept (beyond
    /// Apple's properties, which hold one value each: MPRIS's `xesam:genre` and
    /// `xesam:artist` are lists, and `xesam:contentCreated` is the date).
    public var tags: [Tag] = []
    /// `MPMediaItemPropertyPlaybackDuration`, seconds.
    public var playbackDuration: Double?
    /// `MPMediaItemPropertyArtwork`: embedded cover art.
    public var artwork: Artwork?
    /// `MPNowPlayingInfoPropertyElapsedPlaybackTime`: the position, seconds, when this info was
    /// set; the center extrapolates from it (``NowPlayingInfoCenter/elapsed(at:)``).
    public var elapsedPlaybackTime: Double?
    /// `MPNowPlayingInfoPropertyPlaybackRate`: 0 paused, 1 playing; absent means 1 (as on Apple
    /// platforms).
    public var playbackRate: Double?
    /// `MPNowPlayingInfoPropertyDefaultPlaybackRate`: the rate "play" means (1).
    public var defaultPlaybackRate: Double?
    /// `MPNowPlayingInfoPropertyPlaybackProgress`: how far through the item, 0…1 (for items with
    /// no meaningful elapsed time; players with a duration set ``elapsedPlaybackTime`` instead).
    public var playbackProgress: Float?
    /// `MPNowPlayingInfoPropertyPlaybackQueueIndex`: the item's place in the queue, zero-based.
    public var playbackQueueIndex: Int?
    /// `MPNowPlayingInfoPropertyPlaybackQueueCount`: how many items the queue has.
    public var playbackQueueCount: Int?
    /// `MPNowPlayingInfoPropertyChapterNumber`: the chapter playing, zero-based.
    public var chapterNumber: Int?
    /// `MPNowPlayingInfoPropertyChapterCount`: how many chapters the item has.
    public var chapterCount: Int?
    /// `MPNowPlayingInfoPropertyMediaType`.
    public var mediaType: MediaType?
    /// `MPNowPlayingInfoPropertyIsLiveStream`: a stream with no end (no duration, no seeking).
    public var isLiveStream: Bool?
    /// `MPNowPlayingInfoPropertyAssetURL`: the item's file, as a `file://` URL.
    public var assetURL: String?
    /// `MPNowPlayingInfoPropertyExternalContentIdentifier`: a stable id of the item (the play
    /// queue's id in the daemon; the queue index otherwise).
    public var externalContentIdentifier: String?

    /// Empty info (every key absent); set the keys you have.
    public init() {}
}

/// `MPNowPlayingPlaybackState`. On Linux it is authoritative (there is no system to infer it).
public enum NowPlayingPlaybackState: Int, Sendable {
    /// Not set.
    case unknown = 0
    /// Playing.
    case playing = 1
    /// Paused: the item stays, the position holds.
    case paused = 2
    /// Stopped: nothing is loaded to play.
    case stopped = 3
    /// Interrupted by another app's audio session.
    case interrupted = 4
}

/// Changes of the now-playing store.
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum NowPlayingEvent: Sendable, Equatable {
    /// The info was set (nil: cleared).
    case infoChanged(NowPlayingInfo?)
    /// ``NowPlayingInfoCenter/playbackState`` changed.
    case playbackStateChanged(NowPlayingPlaybackState)
}

/// A token for an observer of a ``NowPlayingInfoCenter``.
public typealias NowPlayingObserverToken = ObservationToken<NowPlayingInfoCenter>

/// The now-playing store (`MPNowPlayingInfoCenter`): the info is copied on set and stamped with
/// a monotonic time; readers extrapolate the elapsed time from it, so it need not be written on
/// every tick (and the binding never does).
public final class NowPlayingInfoCenter: Sendable {
    /// The process's store.
    public static let `default` = NowPlayingInfoCenter()

    private let clock: @Sendable () -> Double

    struct State {
        var info: NowPlayingInfo?
        var stamp: Double = 0
        var playbackState = NowPlayingPlaybackState.unknown
        var writes = 0
    }

    private let state = Lock(State())
    private let broadcaster = Broadcaster<NowPlayingEvent>()

    /// A store reading time from `clock` (seconds, monotonic; default `CLOCK_MONOTONIC`).
    /// Tests pass a controllable clock.
    public init(clock: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }) {
        self.clock = clock
    }

    /// The info (copied on set; nil clears it). Each set records the time for extrapolation.
    public var nowPlayingInfo: NowPlayingInfo? {
        get { state.withLock { $0.info } }
        set {
            let now = clock()
            state.withLock { s in
                s.info = newValue
                s.stamp = now
                s.writes += 1
            }
            post(.infoChanged(newValue))
        }
    }

    /// The playback state (authoritative on Linux).
    public var playbackState: NowPlayingPlaybackState {
        get { state.withLock { $0.playbackState } }
        set {
            let changed = state.withLock { s -> Bool in
                defer { s.playbackState = newValue }
                return s.playbackState != newValue
            }
            if changed { post(.playbackStateChanged(newValue)) }
        }
    }

    /// How many times ``nowPlayingInfo`` has been set.
    public var writeCount: Int { state.withLock { $0.writes } }

    /// The elapsed time now (or at `time` on the store's clock): `elapsed + rate × (t − stamp)`,
    /// clamped to [0, duration]; the rate is 1 when absent. Nil without an elapsed time.
    public func elapsed(at time: Double? = nil) -> Double? {
        let t = time ?? clock()
        return state.withLock { s in
            guard let info = s.info, let elapsed = info.elapsedPlaybackTime else { return nil }
            let rate = info.playbackRate ?? 1
            var value = elapsed + rate * (t - s.stamp)
            value = max(0, value)
            if let d = info.playbackDuration { value = min(d, value) }
            return value
        }
    }

    /// Calls `handler` on `queue` for every event, in order; returns a token.
    @discardableResult
    public func addObserver(queue: DispatchQueue, _ handler: @escaping @Sendable (NowPlayingEvent) -> Void) -> NowPlayingObserverToken {
        broadcaster.addObserver(for: NowPlayingInfoCenter.self, queue: queue, handler)
    }

    /// Removes a handler added with ``addObserver(queue:_:)``.
    public func removeObserver(_ token: NowPlayingObserverToken) { broadcaster.removeObserver(token) }

    /// Every event from now on.
    public func events() -> AsyncStream<NowPlayingEvent> { broadcaster.events() }

    private func post(_ event: NowPlayingEvent) { broadcaster.post(event) }
}
