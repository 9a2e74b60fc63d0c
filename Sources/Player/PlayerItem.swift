import AudioEngine
import FoundationEssentials
import Platform
import Synchronization

/// Why an item could not be played: the engine's decoder error (the file, the reason, and
/// libmpg123's code, `-1` when the failure did not come from libmpg123).
public typealias PlayerItemError = MediaError

/// One playable file, as `AVPlayerItem`: its loading status, exact duration and tags.
///
/// An item has an identity: it can sit in one queue at one place only (see
/// ``QueuePlayer/canInsert(_:after:)``); to play a file twice, make two items. Items are
/// reference types and safe to use from any thread.
public final class PlayerItem: Sendable, Hashable, CustomStringConvertible {
    /// Loading status, as `AVPlayerItem.Status`.
    public enum Status: Int, Sendable {
        /// Not loaded yet (items load when the player gets near them).
        case unknown = 0
        /// Opened: ``duration`` and ``metadata`` are known.
        case readyToPlay = 1
        /// Cannot be played; terminal. ``error`` says why.
        case failed = 2
    }

    /// The file's path (for a `file:` URL, its path; for another URL, the URL as written).
    public let path: String
    /// The part of the file to play (nil: all of it): the item's timeline is the clip's (its
    /// time 0 is the clip's start, its ``duration`` the clip's length). AVPlayerItem's
    /// `forwardPlaybackEndTime`, with a start; MPD's `rangeid`.
    public let clip: PlaybackClip?
    /// The item's URL, as given (``init(url:clip:)``), or the file URL of its path.
    public let url: URL

    struct State {
        var status = Status.unknown
        var error: PlayerItemError?
        var durationFrames: Int?
        var rate = 0
        var metadata = TrackMetadata()
        var audio: AudioDescription?
        var isLive = false
        /// The player this item is queued in (an item belongs to one queue at a time).
        var owner: ObjectIdentifier?
    }

    let state = Mutex(State())

    /// An item for a URL: a `file:` URL plays its file; `http:` and `https:` play over the
    /// network where the program registered the HTTP input (`HTTPInput.register()`); other
    /// schemes fail with their name. The URL is kept as given.
    public init(url: URL, clip: PlaybackClip? = nil) {
        self.url = url
        path = url.isFileURL ? url.path : url.absoluteString
        self.clip = clip
    }

    /// An item for a file path: all of it, or `clip`.
    public init(path: String, clip: PlaybackClip? = nil) {
        self.path = path
        url = URL(fileURLWithPath: path)
        self.clip = clip
    }

    /// What the engine plays for this item.
    var engineItem: EngineItem { EngineItem(path: path, clip: clip) }

    /// Loading status. Items are loaded by the player that queues them, shortly before they play.
    public var status: Status { state.withLock { $0.status } }

    /// Why the item failed; nil unless ``status`` is `.failed`.
    public var error: PlayerItemError? { state.withLock { $0.error } }

    /// Exact duration in seconds (gapless: encoder delay and padding removed); nil until loaded,
    /// and for a live stream (``isLive``), whose duration is indefinite (`kCMTimeIndefinite` in
    /// AVFoundation, both).
    public var duration: Double? {
        state.withLock { s in s.isLive ? nil : s.durationFrames.map { Double($0) / Double(max(1, s.rate)) } }
    }

    /// Whether it is a live stream (an Icecast mount): no end, an indefinite duration, no
    /// seeking. Known once loaded.
    public var isLive: Bool { state.withLock { $0.isLive } }

    /// Exact duration in sample frames, and the sample rate; nil until loaded.
    public var durationFrames: (frames: Int, rate: Int)? {
        state.withLock { s in s.durationFrames.map { ($0, s.rate) } }
    }

    /// What it plays, once loaded: the format or codec (`FLAC`, `AAC (MPEG-4)`, `Apple Lossless
    /// (MPEG-4)`), the sample encoding, rate, its channels and those played (AVAssetTrack's
    /// `formatDescriptions`, kept to what a player shows). Nil until loaded.
    public var audioDescription: AudioDescription? { state.withLock { $0.audio } }

    /// Tags from the file; empty until loaded.
    public var metadata: TrackMetadata { state.withLock { $0.metadata } }

    /// Title, else the file name: what a player shows for this item.
    public var displayName: String {
        let m = metadata
        return m.title.map { t in m.artist.map { "\(t) — \($0)" } ?? t } ?? Path.lastComponent(path)
    }

    public var description: String { "PlayerItem(\(Path.lastComponent(path)))" }

    public static func == (a: PlayerItem, b: PlayerItem) -> Bool { a === b }
    public func hash(into h: inout Hasher) { h.combine(ObjectIdentifier(self)) }

    /// Marks the item loaded; returns whether its status changed.
    func markLoaded(_ info: ItemInfo) -> Bool {
        state.withLock { s in
            guard s.status == .unknown else { return false }
            s.status = .readyToPlay
            s.durationFrames = info.isLive ? nil : info.durationFrames
            s.isLive = info.isLive
            s.rate = info.format.rate
            s.metadata = info.metadata
            s.audio = info.audio
            return true
        }
    }

    /// The tags the stream carries from the frame heard now on.
    func updateMetadata(_ metadata: TrackMetadata) {
        state.withLock { $0.metadata = metadata }
    }

    /// Marks the item failed (terminal); returns whether its status changed.
    func markFailed(_ error: PlayerItemError) -> Bool {
        state.withLock { s in
            guard s.status != .failed else { return false }
            s.status = .failed
            s.error = error
            return true
        }
    }
}
