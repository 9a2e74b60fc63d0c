/// The PCM format of decoded audio, as it travels through the ring: interleaved native-endian
/// float32, whatever the file holds (a decoder converts).
public struct StreamFormat: Sendable, Equatable, CustomStringConvertible {
    /// Frames per second.
    public var rate: Int
    /// Channels per frame (1 mono, 2 stereo, up to 8).
    public var channels: Int
    /// Bytes per frame (4 × channels).
    public var bytesPerFrame: Int { 4 * channels }

    /// A float32 format with `rate` frames per second and `channels` channels.
    /// - Parameters:
    ///   - rate: Frames per second.
    ///   - channels: Channels per frame.
    public init(rate: Int, channels: Int) {
        self.rate = rate
        self.channels = channels
    }

    /// The rate and channels, for people (`44100 Hz stereo f32`, `48000 Hz 5.1 f32`).
    public var description: String { "\(rate) Hz \(Self.layoutName(channels)) f32" }

    /// `mono`, `stereo`, `3.0`, `quad`, `5.0`, `5.1`, `6.1`, `7.1` (WAVE/FLAC default layouts).
    public static func layoutName(_ channels: Int) -> String {
        switch channels {
        case 1: "mono"
        case 2: "stereo"
        case 3: "3.0"
        case 4: "quad"
        case 5: "5.0"
        case 6: "5.1"
        case 7: "6.1"
        case 8: "7.1"
        default: "\(channels) channels"
        }
    }
}

/// How a file stores its samples (what MPD's `Format` and `--verbose` show), before the
/// decoder converts them to float32.
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum SampleEncoding: Sendable, Equatable, CustomStringConvertible {
    /// Signed (or 8-bit unsigned) integers of this many significant bits.
    case integer(bits: Int)
    /// IEEE floating point (32 or 64 bits).
    case float(bits: Int)

    /// `16-bit`, `24-bit`, `float`.
    public var description: String {
        switch self {
        case .integer(let bits): "\(bits)-bit"
        case .float(let bits): bits == 32 ? "float" : "float\(bits)"
        }
    }

    /// MPD's sample format field: `16`, `24`, `32`, `f`.
    public var mpdName: String {
        switch self {
        case .integer(let bits): bits <= 8 ? "8" : bits <= 16 ? "16" : bits <= 24 ? "24" : "32"
        case .float: "f"
        }
    }
}
