// The engine's value types: item ids, what the engine knows of an item, its events, the
// audible position, and its configuration.

import Logging
import MediaCore

/// Identifies one entry given to the engine (the same file queued twice gets two ids).
public struct ItemID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "#\(rawValue)" }
}

/// What the engine knows about an item once the decoder has opened it.
public struct ItemInfo: Sendable, Equatable {
    /// The engine's id for the entry.
    public var id: ItemID
    /// The file's path.
    public var path: String
    /// The decoded audio's format (rate and channels).
    public var format: StreamFormat
    /// The exact length in frames, encoder delay and padding removed (gapless).
    public var durationFrames: Int
    /// The file's tags.
    public var metadata: TrackMetadata
    /// What the file holds and how it plays (its format, and whether it is down-mixed).
    public var audio: AudioDescription?
    /// The ReplayGain scale it plays with (1: off, or unity), known once it is heard.
    public var replayGainScale: Float = 1
    /// A live stream (an Icecast mount): no end and no length (``durationFrames`` is 0), no seeking.
    public var isLive = false
    /// Seconds of silence cut from it so far, as the output reached each cut (the item's long
    /// silences shortened: ``PlaybackEngine/silenceTrimming``).
    public var silenceTrimmed: Double = 0
    /// Duration in seconds.
    public var duration: Double { Double(durationFrames) / Double(format.rate) }
}

/// Engine events. Item events fire when the listener *hears* them (position-based), not when decoded.
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum EngineEvent: Sendable, Equatable {
    /// An item's first sample (or its first sample after a seek, with `fromSeek`) became audible.
    case itemStarted(ItemInfo, fromSeek: Bool)
    /// An item's last sample was heard.
    case itemEnded(ItemID)
    /// An item could not be (fully) decoded; whatever decoded was played first.
    case itemFailed(ItemID, path: String, error: MediaError)
    /// The output ran dry (the decoder fell behind); playback continues when data arrives.
    case underrun(count: Int)
    /// The input waits for the network and the ring ran dry: the device plays silence and the
    /// item holds its position, from the moment this is heard. Not an underrun: it ends by
    /// itself once enough is buffered (``stallEnded(_:)``), or the item fails.
    case stalled(ItemID)
    /// Enough is buffered again after a stall: the item is heard again from where it held.
    case stallEnded(ItemID)
    /// The device could not be opened or failed.
    case deviceError(MediaError)
    /// Everything queued has been played; the device is released.
    case endOfInput
    /// The decoder opened an item (ahead of it being heard; again when a seek reopens it):
    /// its format, exact length and tags are known. Delivered as soon as it happens.
    case itemLoaded(ItemInfo)
    /// The decoder could not (fully) decode an item, ahead of it being heard: the decoder has
    /// gone on to the next item it holds (if any). ``itemFailed(_:path:error:)`` follows when the listener
    /// reaches the failure. Delivered as soon as it happens, so whoever feeds the engine can
    /// queue what comes next without a gap.
    case itemDecodeFailed(ItemID, path: String, error: MediaError)
    /// The output device opened, with these settings. Delivered as soon as it happens.
    case deviceOpened(DeviceConfiguration)
    /// The item's tags changed within it (a chained Ogg stream's next link), heard now: the
    /// info carries the new tags (``PlaybackEngine/info(for:)`` answers them from now on).
    case metadataChanged(ItemInfo)
    /// The item's chapter changed, heard now: `chapter` is the index in its tags'
    /// `TrackMetadata.chapters` of the chapter whose frames the listener hears (nil: before
    /// the first chapter's start).
    /// Posted when an item with chapters starts (after its ``itemStarted(_:fromSeek:)``), when a
    /// chapter's first frame is heard, and after a seek lands in another chapter.
    case chapterChanged(ItemID, chapter: Int?)
}

/// The audible position.
public struct PlaybackPosition: Sendable, Equatable {
    /// The item being heard.
    public var item: ItemID
    /// Frames into the item (after gapless trimming).
    public var frame: Int
    /// Sample rate of the item.
    public var rate: Int
    /// Seconds into the item.
    public var seconds: Double { Double(frame) / Double(rate) }
}

/// Engine configuration.
public struct EngineConfiguration: Sendable {
    /// ALSA output settings.
    public var output: OutputSettings
    /// How far ahead the decoder may run, in seconds of 48 kHz stereo float (sets the ring size).
    public var decodeAheadSeconds: Double
    /// Where the engine logs (from the control plane only).
    public var logger: Logger
    /// When set, every file the engine opens must lie beneath this directory (absolute, its
    /// links resolved), checked on the opened descriptor: an item whose file has become a link
    /// leading out of it since it was queued fails with that reason (a daemon confining its
    /// clients to the music directory). nil: any file.
    public var confinement: String?

    /// A configuration with the default device and a 2-second decode-ahead unless given.
    /// - Parameters:
    ///   - output: The output device's settings.
    ///   - decodeAheadSeconds: How far ahead the decoder may run, seconds.
    ///   - logger: Where the engine logs.
    ///   - confinement: The directory every file must lie beneath (nil: anywhere).
    public init(output: OutputSettings = OutputSettings(), decodeAheadSeconds: Double = 2,
                logger: Logger = Logger(label: "backline.engine"), confinement: String? = nil) {
        self.confinement = confinement
        self.output = output
        self.decodeAheadSeconds = decodeAheadSeconds
        self.logger = logger
    }
}
