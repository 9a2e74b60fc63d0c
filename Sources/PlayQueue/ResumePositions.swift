import Player

/// Where entries start when played again, and what the queue tells when the listener leaves one
/// before its end: the resume positions of podcasts and audiobooks, kept by whoever sets
/// ``PlayQueue/resumePositions`` (the daemon keeps them in its state file).
///
/// The queue calls it under its own lock: implementations must not call back into the queue.
public protocol ResumePositions: Sendable {
    /// Where `entry` starts when it is played from its beginning (nil: at 0).
    func start(for entry: PlayQueueEntry) -> Double?
    /// The listener left `entry` (its player item `item`) at `time` seconds, heard there, before
    /// its end: skipped, removed, stopped, played another, or the queue replaced.
    func left(_ entry: PlayQueueEntry, item: PlayerItem, at time: Double)
}
