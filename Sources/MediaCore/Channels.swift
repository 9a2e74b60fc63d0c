/// How an output numbers the channels of a stream with more than two (mono and stereo are the
/// same everywhere).
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum ChannelOrder: Sendable, Equatable {
    /// FL FR FC LFE BL BR SL SR: `WAVE_FORMAT_EXTENSIBLE`'s and FLAC's order, and PulseAudio's
    /// `WAVEEX` channel map (which Backline's Pulse output sets).
    case wave
    /// ALSA's order for 5.0, 5.1 and 7.1: FL FR RL RR FC LFE SL SR (as mpd's ALSA output
    /// reorders); other counts as ``wave``.
    case alsa
}

/// What an output device takes: the most channels and their order. A file with more channels
/// than ``maximum`` is down-mixed to stereo; one within it plays as is.
public struct OutputChannels: Sendable, Equatable {
    /// The most channels the device takes (at least 2; at most 8).
    public var maximum: Int
    /// The device's channel order.
    public var order: ChannelOrder

    /// A device taking up to `maximum` channels (clamped to 2…8) in `order`.
    public init(maximum: Int, order: ChannelOrder = .wave) {
        self.maximum = min(8, max(2, maximum))
        self.order = order
    }

    /// A stereo device: anything with more channels is down-mixed.
    public static let stereo = OutputChannels(maximum: 2)
}

/// How a decoder is opened: what the output takes, asked only when a file has more than two
/// channels (finding out may mean opening the device).
public struct DecoderOptions: Sendable {
    /// The output's channels; called at most once per decoder, on the decoder's thread.
    public var outputChannels: @Sendable () -> OutputChannels

    /// Options asking `outputChannels` for the output's channels.
    public init(outputChannels: @escaping @Sendable () -> OutputChannels) {
        self.outputChannels = outputChannels
    }

    /// For a stereo output (tag readers, tools): more than two channels are down-mixed.
    public static let stereo = DecoderOptions { .stereo }
}

/// What an item holds and how it plays: its format, sample encoding, rate, its own channels and
/// those the output gets (fewer when it is down-mixed).
public struct AudioDescription: Sendable, Equatable, CustomStringConvertible {
    /// The format's name for people (`FLAC`, `MPEG audio`).
    public var formatName: String
    /// How the file stores samples.
    public var encoding: SampleEncoding
    /// Frames per second.
    public var rate: Int
    /// The file's own channels.
    public var sourceChannels: Int
    /// The channels played (the ring's and the device's).
    public var channels: Int
    /// Average bit rate, kbit/s, when known.
    public var bitrate: Int?

    /// A description from its parts.
    public init(formatName: String, encoding: SampleEncoding, rate: Int, sourceChannels: Int, channels: Int, bitrate: Int? = nil) {
        (self.formatName, self.encoding, self.rate) = (formatName, encoding, rate)
        (self.sourceChannels, self.channels, self.bitrate) = (sourceChannels, channels, bitrate)
    }

    /// Whether the file's channels were down-mixed for the output.
    public var isDownmixed: Bool { channels < sourceChannels }

    /// `FLAC, 24-bit, 96000 Hz, 5.1, down-mixed to stereo (ITU-R BS.775)`.
    public var description: String {
        var out = "\(formatName), \(encoding), \(rate) Hz, \(StreamFormat.layoutName(sourceChannels))"
        if isDownmixed { out += ", down-mixed to \(StreamFormat.layoutName(channels)) (ITU-R BS.775)" }
        if let bitrate, bitrate > 0 { out += ", \(bitrate) kbit/s" }
        return out
    }
}
