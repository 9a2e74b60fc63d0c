import AudioEngine
import Broadcast
import Dispatch
import Foundation
import Synchronization

/// What is playing (`MPNowPlayingInfoCenter.nowPlayingInfo`), with typed keys for the
/// `MPMediaItemProperty*` and `MPNowPlayingInfoProperty*` entries.
public struct NowPlayingInfo: Sendable, Equatable {
    /// `MPNowPlayingInfoMediaType`.
    public enum MediaType: Int, Sendable {
        case none = 0, audio = 1, video = 2
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

    public var title: String?
    public var artist: String?
    public var albumTitle: String?
    public var albumArtist: String?
    public var albumTrackNumber: Int?
    public var albumTrackCount: Int?
    public var discNumber: Int?
    public var discCount: Int?
    public var genre: String?
    /// `MPMediaItemPropertyPlaybackDuration`, seconds.
    public var playbackDuration: Double?
    public var artwork: Artwork?
    /// Position when this info was set; the center extrapolates from it.
    public var elapsedPlaybackTime: Double?
    /// 0 paused, 1 playing; absent means 1 (as on Apple platforms).
    public var playbackRate: Double?
    public var defaultPlaybackRate: Double?
    /// Zero-based.
    public var playbackQueueIndex: Int?
    public var playbackQueueCount: Int?
    public var mediaType: MediaType?
    public var isLiveStream: Bool?
    /// `MPNowPlayingInfoPropertyAssetURL`: the item's file, as a `file://` URL.
    public var assetURL: String?
    /// `MPNowPlayingInfoPropertyExternalContentIdentifier`: a stable id of the item (the play
    /// queue's id in the daemon; the queue index otherwise).
    public var externalContentIdentifier: String?

    public init() {}
}

/// `MPNowPlayingPlaybackState`. On Linux it is authoritative (there is no system to infer it).
public enum NowPlayingPlaybackState: Int, Sendable {
    case unknown = 0, playing = 1, paused = 2, stopped = 3, interrupted = 4
}

/// Changes of the now-playing store.
public enum NowPlayingEvent: Sendable, Equatable {
    case infoChanged(NowPlayingInfo?)
    case playbackStateChanged(NowPlayingPlaybackState)
}

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

    private let state = Mutex(State())
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
    public func addObserver(queue: DispatchQueue, _ handler: @escaping @Sendable (NowPlayingEvent) -> Void) -> UInt64 {
        broadcaster.addObserver(queue: queue, handler)
    }

    /// Removes a handler added with ``addObserver(queue:_:)``.
    public func removeObserver(_ token: UInt64) { broadcaster.removeObserver(token) }

    /// Every event from now on.
    public func events() -> AsyncStream<NowPlayingEvent> { broadcaster.events() }

    private func post(_ event: NowPlayingEvent) { broadcaster.post(event) }
}
