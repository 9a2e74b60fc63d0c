import AudioEngine
import Media
import MediaCore
import FoundationEssentials
import Platform
import Synchronization
import Locking

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
        /// Buffering, as the player saw it (see ``isPlaybackLikelyToKeepUp``).
        var likelyToKeepUp = false
        var bufferEmpty = true
        /// Reads what the engine's network input holds for this item (set by the player that
        /// feeds it; nil for a file), and the last answer it gave.
        var probe: (@Sendable () -> InputProgress?)?
        var lastProgress: InputProgress?
    }

    let state = Lock(State())

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
    var engineItem: EngineItem {
        var item = EngineItem(path: path, clip: clip)
        item.pitchAlgorithm = audioTimePitchAlgorithm
        return item
    }

    /// How the item is stretched when the player's rate is not 1 (AVPlayerItem's
    /// `audioTimePitchAlgorithm`): `TimePitchAlgorithm.timeDomain` by default (speech, the
    /// pitch kept), `TimePitchAlgorithm.spectral` for music (the pitch kept, more CPU),
    /// `TimePitchAlgorithm.varispeed` for the pitch to follow the rate. A change applies the
    /// next time the player plans the item (a rate change, a seek, or its turn).
    public var audioTimePitchAlgorithm: TimePitchAlgorithm {
        get { pitchAlgorithm.withLock { $0 } }
        set { pitchAlgorithm.withLock { $0 = newValue } }
    }
    /// (A lock of its own: `engineItem` is read where `state` is held.)
    private let pitchAlgorithm = Lock(TimePitchAlgorithm.timeDomain)

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

    /// Its chapters once loaded, in order (AVAsset's `chapterMetadataGroups`: each a title over
    /// a time range): from MP4/M4B chapter tracks, Matroska, ID3v2 `CHAP` frames, or Ogg
    /// `CHAPTERnnn` comments. Empty when it has none or is not loaded yet.
    public var chapters: [Chapter] { metadata.chapters }

    /// Title, else the file name: what a player shows for this item.
    public var displayName: String {
        let m = metadata
        return m.title.map { t in m.artist.map { "\(t) — \($0)" } ?? t } ?? Path.lastComponent(path)
    }

    public var description: String { "PlayerItem(\(Path.lastComponent(path)))" }

    public static func == (a: PlayerItem, b: PlayerItem) -> Bool { a === b }
    public func hash(into h: inout Hasher) { h.combine(ObjectIdentifier(self)) }

    /// Whether it is read over a network (`http`, `https`).
    var isRemote: Bool { InputSources.isStream(path) }

    /// Whether the item is expected to play on without stalling (`AVPlayerItem`'s
    /// `isPlaybackLikelyToKeepUp`): a file once loaded; an item over the network once its
    /// audio is heard, and not while it is stalled.
    public var isPlaybackLikelyToKeepUp: Bool { state.withLock { $0.likelyToKeepUp } }

    /// Whether playback has used up what was buffered and stalls (`isPlaybackBufferEmpty`): an
    /// item over the network before its first audio is heard and while it is stalled; never a
    /// loaded file.
    public var isPlaybackBufferEmpty: Bool { state.withLock { $0.bufferEmpty } }

    /// The stretches of the item's timeline that are loaded, in seconds (`loadedTimeRanges`):
    /// all of a file once loaded; for an HTTP file, what its current request has received
    /// (its bytes mapped onto the duration: exact for constant bit rates); none for a live
    /// stream (it has no timeline to map onto) or an item not loaded.
    public var loadedTimeRanges: [Range<Double>] {
        let (probe, status, live, frames, rate) = state.withLock { s in (s.probe, s.status, s.isLive, s.durationFrames, s.rate) }
        guard status == .readyToPlay, !live, let frames, rate > 0 else { return [] }
        let duration = Double(frames) / Double(rate)
        guard isRemote else { return [0..<duration] }
        let progress = probe?() ?? nil
        let p = state.withLock { s -> InputProgress? in
            if let progress { s.lastProgress = progress }
            return s.lastProgress
        }
        guard let p, let length = p.length, length > 0 else { return [] }
        let start = duration * Double(p.loaded.lowerBound) / Double(length)
        let end = min(duration, duration * Double(p.loaded.upperBound) / Double(length))
        return end > start ? [start..<end] : []
    }

    /// Sets the buffering flags; returns whether `isPlaybackLikelyToKeepUp` changed.
    func setBuffering(likelyToKeepUp: Bool, bufferEmpty: Bool) -> Bool {
        state.withLock { s in
            let changed = s.likelyToKeepUp != likelyToKeepUp
            s.likelyToKeepUp = likelyToKeepUp
            s.bufferEmpty = bufferEmpty
            return changed
        }
    }

    /// Where the item's loaded bytes are read from (the player feeding it to an engine).
    func setProbe(_ probe: (@Sendable () -> InputProgress?)?) {
        state.withLock { $0.probe = probe }
    }

    /// Marks the item loaded; returns whether its status changed.
    func markLoaded(_ info: ItemInfo) -> Bool {
        let remote = isRemote
        return state.withLock { s in
            guard s.status == .unknown else { return false }
            s.status = .readyToPlay
            // A file is there to read; an item over the network is buffering until heard.
            s.likelyToKeepUp = !remote
            s.bufferEmpty = remote
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
