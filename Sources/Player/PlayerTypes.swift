import AudioEngine
import Broadcast
import MediaCore

/// What the player does when an item plays to its end (`AVPlayer.ActionAtItemEnd`).
public enum ActionAtItemEnd: Int, Sendable {
    /// Go on to the next item (gapless). The default for a queue player.
    case advance = 0
    /// Set the rate to 0; the item stays current, at its end.
    case pause = 1
    /// Do nothing: rate and current item stay as they are. Changing the action later applies
    /// the new one at once.
    case none = 2
}

/// Whether a player can be used (`AVPlayer.Status`).
public enum PlayerStatus: Int, Sendable {
    /// Not ready yet.
    case unknown = 0
    /// Ready to play.
    case readyToPlay = 1
    /// Failed for good (see the player's `error`); a new player is needed.
    case failed = 2
}

/// Whether playback is advancing (`AVPlayer.TimeControlStatus`).
public enum TimeControlStatus: Int, Sendable {
    /// Rate 0.
    case paused = 0
    /// A non-zero rate was asked for but nothing is heard yet; see ``WaitingReason``.
    case waitingToPlayAtSpecifiedRate = 1
    /// Audio of the current item is being heard.
    case playing = 2
}

/// Why the player waits (`AVPlayer.WaitingReason`).
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum WaitingReason: String, Sendable {
    /// The player waits for its buffer: an item over the network before its first audio, or
    /// one that stalled (its input behind the device) until enough is buffered again.
    case toMinimizeStalls
    /// The current item is opening and its first audio is on its way to the device.
    case evaluatingBufferingRate
    /// There is no current item; playback starts as soon as one is inserted.
    case noItemToPlay
}

/// Why the rate changed (`AVPlayer.RateDidChangeReason`, plus Backline's own).
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum RateChangeReason: String, Sendable {
    /// `play()`, `pause()` or `setRate(_:)`.
    case setRateCalled
    /// A rate the player cannot play was asked for; the rate did not change.
    case setRateFailed
    /// The audio session was interrupted.
    case audioSessionInterrupted
    /// The app deactivated the audio session while the player was running (Backline's own).
    case audioSessionDeactivated
    /// The app went to the background without permission to play there.
    case appBackgrounded
    /// The current item ended with ``ActionAtItemEnd/pause``.
    case reachedEndOfItem
    /// The audio device failed or disappeared (the route change `oldDeviceUnavailable`).
    case oldDeviceUnavailable
}

/// A rate the player cannot play: thrown by ``QueuePlayer/setRate(_:)`` for a rate other than
/// 0 (paused) outside ``QueuePlayer/supportedRates`` (0.5…3), or not a number.
public struct UnsupportedRateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The rate asked for.
    public var rate: Float
    /// The error for a refused rate.
    /// - Parameter rate: The rate asked for.
    public init(rate: Float) { self.rate = rate }
    /// What went wrong and which rates are supported, for people.
    public var description: String {
        "unsupported playback rate \(rate): 0 (paused) or 0.5 to 3 are supported"
    }
}

/// Player notifications (the `AVPlayerItem…Notification`s and AVPlayer's observable properties).
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum PlayerEvent: Sendable {
    /// `currentItem` changed (nil: the queue ran out or was emptied).
    case currentItemChanged(PlayerItem?)
    /// An item's status changed (to `.readyToPlay` when loaded, `.failed` when it failed).
    case itemStatusChanged(PlayerItem, PlayerItem.Status)
    /// `AVPlayerItemDidPlayToEndTime`: the item's last sample was heard.
    case itemDidPlayToEnd(PlayerItem)
    /// `AVPlayerItemFailedToPlayToEndTime`: the item failed (what could be decoded was played);
    /// it has been removed from the queue and playback goes on with the next item.
    case itemFailedToPlayToEnd(PlayerItem, PlayerItemError)
    /// `AVPlayerItemTimeJumped`: the current time changed discontinuously (a seek), now `time`.
    case timeJumped(PlayerItem, time: Double)
    /// `AVPlayerItemPlaybackStalled`: the output ran dry; it refills by itself. For an item
    /// over the network it is a state, not a fault: the device plays silence, the position
    /// holds, ``QueuePlayer/timeControlStatus`` waits (`toMinimizeStalls`) until enough is
    /// buffered.
    case playbackStalled(PlayerItem?)
    /// The item's ``PlayerItem/isPlaybackLikelyToKeepUp`` changed (AVPlayerItem's key-value
    /// observation of it): false when it stalls, true when its audio is heard again.
    case playbackLikelyToKeepUpChanged(PlayerItem, Bool)
    /// `rate` changed.
    case rateChanged(Float, reason: RateChangeReason)
    /// `timeControlStatus` changed (with the reason while waiting).
    case timeControlStatusChanged(TimeControlStatus, reason: WaitingReason?)
    /// The audio device failed; the player paused.
    case outputFailed(MediaError)
    /// The item's tags changed within it, heard now (AVPlayerItem's `timedMetadata`: a
    /// chained Ogg stream's next link); ``PlayerItem/metadata`` holds them from now on.
    case timedMetadata(PlayerItem, TrackMetadata)
    /// The chapter heard changed: `chapter` is an index into the item's ``PlayerItem/chapters``
    /// (nil: before the first one starts). Posted when the chapter's first sample is heard, when
    /// an item with chapters starts, and when a seek lands in another chapter; never for an
    /// item without chapters. ``QueuePlayer/currentChapterIndex`` holds it from now on.
    case chapterChanged(PlayerItem, chapter: Int?)
}

/// An opaque token for a player's time observer or event handler; pass it back to the same
/// player to remove it.
public typealias ObserverToken = ObservationToken<QueuePlayer>
