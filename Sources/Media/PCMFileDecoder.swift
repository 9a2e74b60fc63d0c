import MediaCore

/// Where a PCM file's samples are and how they are stored: what the WAV and AIFF header
/// readers find.
struct PCMLayout {
    enum Sample: Equatable {
        /// Unsigned 8-bit (WAV).
        case unsigned8
        /// Signed integers of `bytes` bytes (1…4), `bits` significant.
        case signed(bytes: Int, bits: Int)
        /// IEEE float of 4 or 8 bytes.
        case float(bytes: Int)
    }
    var rate: Int
    var channels: Int
    var sample: Sample
    var bigEndian: Bool
    /// Offset and length in bytes of the sample data.
    var dataOffset: Int
    var dataLength: Int
    var metadata = TrackMetadata()
    /// The channel order for a down-mix (WAVE's default, or its channel mask's).
    var layout: [Downmix.Position]? = nil

    var bytesPerSample: Int {
        switch sample {
        case .unsigned8: 1
        case .signed(let b, _): b
        case .float(let b): b
        }
    }
    var bytesPerFrame: Int { bytesPerSample * channels }
    /// kbit/s (of a layout that passed ``check(_:)``: no overflow).
    var bitrate: Int { (rate * bytesPerFrame * 8 + 500) / 1000 }
    var lengthFrames: Int { bytesPerFrame > 0 ? dataLength / bytesPerFrame : 0 }
    var encoding: SampleEncoding {
        switch sample {
        case .unsigned8: .integer(bits: 8)
        case .signed(_, let bits): .integer(bits: bits)
        case .float(let b): .float(bits: b * 8)
        }
    }

    /// Refuses a layout no device takes: 1 to 8 channels, at most 768 kHz (mpd's limit too: a
    /// header saying 1.6 GHz opened, fuzz finding decoder/wave-rate; an AIFF rate near 2^63
    /// overflowed the bit rate in a tag read, decoder/aiff-rate-info).
    func check(_ name: String) throws(MediaError) {
        guard channels >= 1, channels <= 8, (1...768_000).contains(rate), bytesPerFrame > 0 else {
            throw MediaError(.unsupportedFormat, "PCM with \(channels) channels at \(rate) Hz", item: name)
        }
    }

    /// The tags, format and length, once the layout is one a device takes (``check(_:)``).
    func info(_ name: String) throws(MediaError) -> TrackInfo {
        try check(name)
        return TrackInfo(metadata: metadata, format: StreamFormat(rate: rate, channels: channels), encoding: encoding,
                         lengthFrames: lengthFrames, bitrate: bitrate)
    }
}

/// Uncompressed PCM read straight from the file (WAV, AIFF, AIFF-C): integers of 8 to 32 bits
/// and floats, in either byte order, converted to float32 by scaling (an integer sample `x` of
/// `b` bits is `x / 2^(b-1)`: exact for up to 24 bits).
///
/// Read directly rather than through libsndfile: the formats are a header and raw samples,
/// the conversion is one loop, and seeking is arithmetic; libsndfile would add a library (and
/// its own many formats, which the registry would then have to police) for no gain.
final class PCMFileDecoder: AudioDecoder {
    let source: any ByteSource
    let format: StreamFormat
    let sourceChannels: Int
    var encoding: SampleEncoding { layout.encoding }
    var lengthFrames: Int? { layout.lengthFrames }
    var metadata: TrackMetadata { layout.metadata }
    var bitrate: Int? { layout.bitrate }
    var minimumRoom: Int { format.bytesPerFrame }

    private let layout: PCMLayout
    private let stage: PCMStage
    private var raw: [UInt8]
    /// The next frame to read.
    private var frame = 0
    private static let blockFrames = 4096

    init(source: any ByteSource, layout: PCMLayout, options: DecoderOptions = .stereo) throws(MediaError) {
        try layout.check(source.name)
        self.source = source
        self.layout = layout
        sourceChannels = layout.channels
        stage = PCMStage(maxFrames: Self.blockFrames, sourceChannels: layout.channels, layout: layout.layout,
                         output: options.outputChannels())
        format = StreamFormat(rate: layout.rate, channels: stage.channels)
        raw = [UInt8](repeating: 0, count: Self.blockFrames * layout.bytesPerFrame)
        try source.seek(to: layout.dataOffset)
    }

    func decode(into buffer: UnsafeMutableRawBufferPointer, spillingInto rest: UnsafeMutableRawBufferPointer)
        throws(MediaError) -> (bytes: Int, status: DecodeStatus) {
        if stage.pending == 0 {
            let total = layout.lengthFrames
            guard frame < total else { return (0, .done) }
            let want = min(Self.blockFrames, total - frame)
            let bpf = layout.bytesPerFrame
            let got = try raw.withUnsafeMutableBytes { r in
                Result { () throws(MediaError) in try source.readFully(into: UnsafeMutableRawBufferPointer(rebasing: r[..<(want * bpf)])) }
            }.get()
            let frames = got / bpf
            if frames == 0 {
                throw MediaError(.truncated, "it ends after \(frame) of \(total) frames", item: source.name)
            }
            convert(frames)
            frame += frames
        }
        return (stage.drain(into: buffer, rest), .more)
    }

    func seek(toFrame target: Int) throws(MediaError) {
        let f = max(0, min(target, layout.lengthFrames))
        try source.seek(to: layout.dataOffset + f * layout.bytesPerFrame)
        stage.clear()
        frame = f
    }

    /// Converts `frames` frames of `raw` into the stage.
    private func convert(_ frames: Int) {
        let channels = layout.channels, bps = layout.bytesPerSample, big = layout.bigEndian
        raw.withUnsafeBytes { r in
            let p = r.baseAddress!.assumingMemoryBound(to: UInt8.self)
            // One reading function per sample layout; the stage interleaves (or down-mixes).
            func at(_ c: Int, _ i: Int) -> UnsafePointer<UInt8> { p + (i * channels + c) * bps }
            switch layout.sample {
            case .unsigned8:
                stage.putPlanar(frames, channels: channels, scale: 1.0 / 128) { c, i in Float(Int(at(c, i).pointee) - 128) }
            case .signed(bytes: 1, _):
                stage.putPlanar(frames, channels: channels, scale: 1.0 / 128) { c, i in Float(Int8(bitPattern: at(c, i).pointee)) }
            case .signed(bytes: 2, _):
                stage.putPlanar(frames, channels: channels, scale: 1.0 / 32768) { c, i in
                    let s = at(c, i)
                    return Float(Int16(bitPattern: big ? UInt16(s[0]) << 8 | UInt16(s[1]) : UInt16(s[1]) << 8 | UInt16(s[0])))
                }
            case .signed(bytes: 3, _):
                stage.putPlanar(frames, channels: channels, scale: 1.0 / 8_388_608) { c, i in
                    let s = at(c, i)
                    let u = big ? UInt32(s[0]) << 24 | UInt32(s[1]) << 16 | UInt32(s[2]) << 8
                        : UInt32(s[2]) << 24 | UInt32(s[1]) << 16 | UInt32(s[0]) << 8
                    return Float(Int32(bitPattern: u) >> 8)
                }
            case .signed(bytes: _, _):
                stage.putPlanar(frames, channels: channels, scale: 1.0 / 2_147_483_648) { c, i in
                    Float(Int32(bitPattern: Self.u32(at(c, i), big)))
                }
            case .float(bytes: 4):
                stage.putPlanar(frames, channels: channels, scale: 1) { c, i in Float(bitPattern: Self.u32(at(c, i), big)) }
            case .float(bytes: _):
                stage.putPlanar(frames, channels: channels, scale: 1) { c, i in
                    let s = at(c, i)
                    let hi = UInt64(Self.u32(big ? s : s + 4, big)), lo = UInt64(Self.u32(big ? s + 4 : s, big))
                    return Float(Double(bitPattern: hi << 32 | lo))
                }
            }
        }
    }

    private static func u32(_ s: UnsafePointer<UInt8>, _ big: Bool) -> UInt32 {
        big ? UInt32(s[0]) << 24 | UInt32(s[1]) << 16 | UInt32(s[2]) << 8 | UInt32(s[3])
            : UInt32(s[3]) << 24 | UInt32(s[2]) << 16 | UInt32(s[1]) << 8 | UInt32(s[0])
    }
}
