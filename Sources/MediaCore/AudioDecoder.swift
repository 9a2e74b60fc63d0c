/// What one ``AudioDecoder/decode(into:spillingInto:)`` produced.
public enum DecodeStatus: Sendable, Equatable {
    /// More audio follows.
    case more
    /// The end of the stream: no more audio.
    case done
}

/// A decoder opened on a ``ByteSource``: the format, exact length, tags, and float32 PCM into a
/// caller's buffer (the decoder thread's ring, with no copy where the library allows it).
///
/// Not thread-safe: a decoder belongs to the decoder thread. A decoder never changes
/// ``format`` during a stream (a chained stream that changes it ends the item there).
public protocol AudioDecoder: AnyObject {
    /// The source it reads.
    var source: any ByteSource { get }
    /// The PCM it produces: float32 interleaved at the file's rate; the file's channels in the
    /// output's order (``DecoderOptions``) when the output takes them all, else down-mixed to
    /// stereo (the Media module's `Downmix`).
    var format: StreamFormat { get }
    /// How the file stores samples (its bits), for status lines.
    var encoding: SampleEncoding { get }
    /// The file's own channel count (before any down-mix).
    var sourceChannels: Int { get }
    /// The format's name when it is more than the plugin's (a catch-all decoder names the
    /// codec it found: `AAC`, `Apple Lossless`); nil: the plugin's.
    var formatName: String? { get }
    /// The length in frames (gapless: encoder delay and padding removed), when known: exact,
    /// unless ``lengthAccuracy`` says otherwise.
    var lengthFrames: Int? { get }
    /// How far ``lengthFrames`` can be trusted; short of ``LengthAccuracy/exact``, decoding may
    /// end before it or go past it.
    var lengthAccuracy: LengthAccuracy { get }
    /// The file's tags and artwork.
    var metadata: TrackMetadata { get }
    /// The room one ``decode(into:spillingInto:)`` call needs, in bytes (`into` and
    /// `spillingInto` together): at least one frame.
    var minimumRoom: Int { get }
    /// The stream's average bit rate in kbit/s, when known.
    var bitrate: Int? { get }
    /// Decodes the next whole frames into `buffer`, going on into `rest` (the start of a ring
    /// whose free space wraps) when `buffer` is full. Returns the bytes written and whether
    /// more follows; bytes written are valid even when the status is `.done`.
    /// - Throws: ``MediaError`` when the stream is broken or ends early; what was written by
    ///   earlier calls stays valid.
    func decode(into buffer: UnsafeMutableRawBufferPointer, spillingInto rest: UnsafeMutableRawBufferPointer)
        throws(MediaError) -> (bytes: Int, status: DecodeStatus)
    /// Moves to `frame` (counted from the start of the audio after gapless trimming), exactly:
    /// the next decoded frame is that one.
    func seek(toFrame frame: Int) throws(MediaError)
    /// Tags that take effect at the next frame ``decode(into:spillingInto:)`` writes (a chained
    /// Ogg stream's next link; a radio stream's next title), taken once: the decoder thread
    /// asks after every decode call and marks the ring there, so they change when that frame
    /// is heard. A decoder that has such a change writes nothing in the call that finds it.
    func takeMetadataUpdate() -> TrackMetadata?
}

extension AudioDecoder {
    /// No tags change within the stream.
    public func takeMetadataUpdate() -> TrackMetadata? { nil }
    /// The plugin's name says it.
    public var formatName: String? { nil }
    /// Every decoder but FFmpeg's knows the exact length, or none.
    public var lengthAccuracy: LengthAccuracy { .exact }

    /// Duration in seconds, when the length is known.
    public var duration: Double? { lengthFrames.map { Double($0) / Double(format.rate) } }
}

/// What a format's tag reader finds without decoding audio: the tags, and the format and length
/// from the headers.
public struct TrackInfo: Sendable, Equatable {
    /// Tags and artwork.
    public var metadata: TrackMetadata
    /// The rate and channel count the file declares (its own channels, before any down-mix).
    public var format: StreamFormat?
    /// How it stores samples.
    public var encoding: SampleEncoding?
    /// The exact length in frames, when the headers give it.
    public var lengthFrames: Int?
    /// Average bit rate, kbit/s, when known.
    public var bitrate: Int?

    /// A description from its parts.
    public init(metadata: TrackMetadata = TrackMetadata(), format: StreamFormat? = nil, encoding: SampleEncoding? = nil,
                lengthFrames: Int? = nil, bitrate: Int? = nil) {
        self.metadata = metadata
        self.format = format
        self.encoding = encoding
        self.lengthFrames = lengthFrames
        self.bitrate = bitrate
    }

    /// What an opened decoder knows: its tags, the file's own rate and channels (before any
    /// down-mix), its encoding, length and bit rate (a tag reader that must open a decoder
    /// for the length: libmpg123's, libvorbisfile's, libopusfile's).
    public init(_ d: any AudioDecoder) {
        self.init(metadata: d.metadata, format: StreamFormat(rate: d.format.rate, channels: d.sourceChannels),
                  encoding: d.encoding, lengthFrames: d.lengthFrames, bitrate: d.bitrate)
    }

    /// Duration in seconds, when both length and rate are known.
    public var duration: Double? {
        guard let lengthFrames, let rate = format?.rate, rate > 0 else { return nil }
        return Double(lengthFrames) / Double(rate)
    }
}

/// One format the decoder registry knows: how to recognise it by content, its names, how to
/// decode it and how to read its tags. Adding a format is one such value (in its own file) and
/// one line in the registry's list.
public struct DecoderPlugin: Sendable {
    /// The plugin's name, as MPD's `decoders` lists it (`mpg123`, `flac`, `vorbis`, `opus`, `wave`).
    public var name: String
    /// The format's name for people (`MPEG audio`, `FLAC`).
    public var formatName: String
    /// File name suffixes, lower case, without the dot.
    public var suffixes: [String]
    /// MIME types.
    public var mimeTypes: [String]
    /// Whether the first bytes of the file (after any ID3v2 tag) are this format's.
    public var matches: @Sendable (_ header: [UInt8]) -> Bool
    /// Opens a decoder on `source`, positioned at its start, for an output as `options` say.
    public var open: @Sendable (_ source: any ByteSource, _ options: DecoderOptions) throws(MediaError) -> any AudioDecoder
    /// Reads tags, format and length from `source` (positioned at its start) without decoding audio.
    public var info: @Sendable (_ source: any ByteSource) throws(MediaError) -> TrackInfo

    /// A plugin from its parts.
    public init(name: String, formatName: String, suffixes: [String], mimeTypes: [String],
                matches: @escaping @Sendable (_ header: [UInt8]) -> Bool,
                open: @escaping @Sendable (_ source: any ByteSource, _ options: DecoderOptions) throws(MediaError) -> any AudioDecoder,
                info: @escaping @Sendable (_ source: any ByteSource) throws(MediaError) -> TrackInfo) {
        self.name = name
        self.formatName = formatName
        self.suffixes = suffixes
        self.mimeTypes = mimeTypes
        self.matches = matches
        self.open = open
        self.info = info
    }
}

/// How far a decoder's ``AudioDecoder/lengthFrames`` can be trusted.
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum LengthAccuracy: Sendable, Equatable {
    /// To the sample: the file states it (FLAC's STREAMINFO, an MP3's Info header, MP4's edit
    /// list) or the decoder counted it.
    case exact
    /// Stated by the container, but not to the sample: off by milliseconds (Matroska's
    /// duration in milliseconds, ASF's counting its preroll).
    case stated
    /// Estimated from the bit rate (raw AAC or AC-3, which state no length): off by as much as
    /// the bit rate varies, seconds in a long VBR file. A crossfade is not planned on it.
    case estimated
}
