import MediaCore

/// What the engine plays: a file and, optionally, the part of it to play.
public struct EngineItem: Sendable, Equatable {
    /// The file.
    public var path: String
    /// The part to play (nil: all of it).
    public var clip: PlaybackClip?
    /// How it is stretched when the engine plays at a rate other than 1 (``PlaybackEngine/speed``).
    public var pitchAlgorithm: TimePitchAlgorithm = .timeDomain

    /// An item for `path`, all of it or `clip`.
    public init(path: String, clip: PlaybackClip? = nil) {
        self.path = path
        self.clip = clip
    }
}

/// The part of an item to play: MediaCore's `PlaybackClip`, which moved to MediaCore (the queue
/// and the protocols carry it without the engine). The name stays here so code that spells it
/// `AudioEngine.PlaybackClip` keeps building.
public typealias PlaybackClip = MediaCore.PlaybackClip
