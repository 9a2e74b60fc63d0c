import COpusFile
import MediaCore

extension DecoderPlugin {
    /// Ogg Opus through libopusfile (reading the `ByteSource`).
    public static let opus = DecoderPlugin(
        name: "opus", formatName: "Opus", suffixes: ["opus"], mimeTypes: ["audio/ogg", "audio/opus"],
        matches: { Sniff.oggCodec($0) == "opus" },
        open: { (source, options) throws(MediaError) in try OpusDecoder(source: source, options: options) },
        info: { (source) throws(MediaError) in TrackInfo(try OpusDecoder(source: source)) })
}

/// Ogg Opus through libopusfile: always 48 kHz; pre-skip and end trimming done by the library
/// (gapless); the header's output gain applied once, by the library (opusfile's default,
/// `OP_HEADER_GAIN`; nothing here applies it again); float output (`op_read_float`); more than
/// two channels (mapping family 1, Vorbis order) reordered for the output or down-mixed as
/// every format is (``Downmix``, not opusfile's own `op_read_float_stereo` matrix).
/// Exact length (`op_pcm_total`) and sample-exact seeks (`op_pcm_seek`).
public final class OpusDecoder: AudioDecoder {
    public let source: any ByteSource
    public let format: StreamFormat
    public var encoding: SampleEncoding { .float(bits: 32) }
    public let sourceChannels: Int
    public let lengthFrames: Int?
    public private(set) var metadata = TrackMetadata()
    public let bitrate: Int?
    public var minimumRoom: Int { format.bytesPerFrame }

    private let file: OpaquePointer
    private let box: SourceBox
    private let stage: PCMStage
    /// 120 ms at 48 kHz, stereo: opusfile's largest packet.
    private var pcm = [Float](repeating: 0, count: 5760 * 8)
    private var link: Int32 = 0
    /// A new link's tags, until the decoder thread takes them.
    private var metadataUpdate: TrackMetadata?

    public init(source: any ByteSource, options: DecoderOptions = .stereo) throws(MediaError) {
        self.source = source
        // libopusfile is opened here the first time (see `OpusFileLibrary`): without it the item
        // fails, saying why.
        try OpusFileLibrary.load(item: source.name)
        try source.seek(to: 0)
        let box = SourceBox(source)
        var callbacks = OpusFileCallbacks(read: opusRead, seek: source.isSeekable ? opusSeek : nil, tell: opusTell, close: nil)
        var err: Int32 = 0
        guard let f = op_open_callbacks(Unmanaged.passUnretained(box).toOpaque(), &callbacks, nil, 0, &err) else {
            throw box.error ?? MediaError(.corrupt, Self.errorText(err), library: "libopusfile", code: err, item: source.name)
        }
        file = f
        self.box = box
        sourceChannels = Int(op_channel_count(f, -1))
        guard (1...8).contains(sourceChannels) else {
            op_free(f)
            throw MediaError(.unsupportedFormat, "Opus with \(sourceChannels) channels", item: source.name)
        }
        stage = PCMStage(maxFrames: 5760, sourceChannels: sourceChannels, layout: Downmix.vorbisOrder(sourceChannels),
                         output: options.outputChannels())
        format = StreamFormat(rate: 48_000, channels: stage.channels)
        let total = op_pcm_total(f, -1)
        lengthFrames = total >= 0 ? Int(total) : nil
        let br = op_bitrate(f, -1)
        bitrate = br > 0 ? Int((Double(br) / 1000).rounded()) : nil
        if let tags = op_tags(f, -1) {
            VorbisComments.apply(count: tags.pointee.comments, comments: tags.pointee.user_comments,
                                 lengths: tags.pointee.comment_lengths, into: &metadata)
        }
    }

    deinit { op_free(file) }

    static func errorText(_ r: Int32) -> String {
        switch r {
        case OP_EREAD: "read error"
        case OP_EFAULT: "internal error"
        case OP_EIMPL: "a feature opusfile does not implement"
        case OP_EINVAL: "invalid argument"
        case OP_ENOTFORMAT: "not Ogg Opus"
        case OP_EBADHEADER: "bad Opus header"
        case OP_EVERSION: "unknown Opus version"
        case OP_EBADLINK: "bad link in a chained stream"
        case OP_EBADPACKET: "bad packet"
        case OP_EBADTIMESTAMP: "bad timestamp"
        case OP_HOLE: "missing or corrupt data (a hole in the stream)"
        case OP_ENOSEEK: "the stream cannot seek"
        default: "error \(r)"
        }
    }

    public func decode(into buffer: UnsafeMutableRawBufferPointer, spillingInto rest: UnsafeMutableRawBufferPointer)
        throws(MediaError) -> (bytes: Int, status: DecodeStatus) {
        if stage.pending == 0 {
            var current: Int32 = 0
            let n = pcm.withUnsafeMutableBufferPointer { p in op_read_float(file, p.baseAddress, Int32(p.count), &current) }
            if n == 0 { return (0, .done) }
            if n < 0 {
                if let e = box.error { throw e }
                throw MediaError(.corrupt, Self.errorText(n), library: "libopusfile", code: n, item: source.name)
            }
            if current != link, Int(op_channel_count(file, current)) != sourceChannels {
                throw MediaError(.unsupportedFormat, "a chained stream changes the channel count", item: source.name)
            }
            let newLink = current != link
            link = current
            pcm.withUnsafeBufferPointer { p in stage.putInterleaved(p.baseAddress!, frames: Int(n), channels: sourceChannels) }
            if newLink, let tags = op_tags(file, current) {
                // The link's first block waits in the stage until the change is marked.
                var m = TrackMetadata()
                VorbisComments.apply(count: tags.pointee.comments, comments: tags.pointee.user_comments,
                                     lengths: tags.pointee.comment_lengths, into: &m)
                metadataUpdate = m
                return (0, .more)
            }
        }
        return (stage.drain(into: buffer, rest), .more)
    }

    public func takeMetadataUpdate() -> TrackMetadata? {
        defer { metadataUpdate = nil }
        return metadataUpdate
    }

    public func seek(toFrame frame: Int) throws(MediaError) {
        stage.clear()
        // A chained file: the link landed in announces its tags (the first one's too).
        if op_link_count(file) > 1 { link = -1 }
        let r = op_pcm_seek(file, ogg_int64_t(max(0, frame)))
        guard r == 0 else {
            throw box.error ?? MediaError(.corrupt, Self.errorText(r), library: "libopusfile", code: r, item: source.name)
        }
    }
}

private func opusRead(_ stream: UnsafeMutableRawPointer?, _ ptr: UnsafeMutablePointer<UInt8>?, _ count: Int32) -> Int32 {
    Int32(SourceBox.from(stream).read(ptr, Int(count)))
}

private func opusSeek(_ stream: UnsafeMutableRawPointer?, _ offset: opus_int64, _ whence: Int32) -> Int32 {
    SourceBox.from(stream).seek(offset, whence) < 0 ? -1 : 0
}

private func opusTell(_ stream: UnsafeMutableRawPointer?) -> opus_int64 {
    opus_int64(SourceBox.from(stream).source.position)
}
