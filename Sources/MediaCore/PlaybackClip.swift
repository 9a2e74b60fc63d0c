/// The part of an item to play: from ``start`` to ``end`` seconds into the file (nil: to its
/// end). MPD's `rangeid`; AVPlayerItem's `forwardPlaybackEndTime`, with a start.
///
/// In MediaCore (no dependencies) because the queue and the protocols carry it without the
/// engine; `import AudioEngine` still sees it.
///
/// The item's timeline is the clip's: its position 0 is the file's ``start``, its duration
/// `end - start`; seeks are within the clip. The cut is sample-exact at the file's rate.
public struct PlaybackClip: Sendable, Equatable, Hashable, Codable {
    /// Seconds into the file where the item starts (≥ 0).
    public var start: Double
    /// Seconds into the file where it ends (nil: the file's end).
    public var end: Double?

    /// A clip from `start` to `end`.
    public init(start: Double = 0, end: Double? = nil) {
        self.start = max(0, start)
        self.end = end
    }

    /// The clip's first and end frames at `rate`, within a file of `length` frames.
    package func frames(rate: Int, length: Int?) -> (first: Int, end: Int?) {
        let first = Int((start * Double(rate)).rounded())
        var last = end.map { Int(($0 * Double(rate)).rounded()) }
        if let length { last = min(last ?? length, length) }
        let f = length.map { min(first, $0) } ?? first
        return (f, last.map { max($0, f) })
    }
}
