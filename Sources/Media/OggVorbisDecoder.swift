import CVorbisFile
import MediaCore

extension DecoderPlugin {
    /// Ogg Vorbis through libvorbisfile (reading the `ByteSource`).
    public static let vorbis = DecoderPlugin(
        name: "vorbis", formatName: "Ogg Vorbis", suffixes: ["ogg", "oga"], mimeTypes: ["audio/ogg", "audio/vorbis", "application/ogg"],
        matches: { Sniff.oggCodec($0) == "vorbis" },
        open: { (source, options) throws(MediaError) in try OggVorbisDecoder(source: source, options: options) },
        // vorbisfile reads the headers and, on a seekable source, the last page (the exact
        // length) without decoding audio.
        info: { (source) throws(MediaError) in TrackInfo(try OggVorbisDecoder(source: source)) })
}

/// Ogg Vorbis through libvorbisfile: the library's own float output (`ov_read_float`), exact
/// length (`ov_pcm_total`) and sample-exact seeks (`ov_pcm_seek`). libvorbisfile rather than
/// libogg and libvorbis by hand (as mpd does, for streams it cannot seek): it handles chained
/// streams, seeking by bisection and the granule arithmetic, which is where hand-written Ogg
/// code goes wrong; an HTTP source that cannot seek is read by vorbisfile as a stream.
///
/// Chained streams: a new logical stream plays on, its tags taking effect at its first sample
/// (``takeMetadataUpdate()``); one that changes the rate or channel count ends the item there
/// (reported, not played at the wrong rate). More than two channels play in the output's order
/// when it takes them, else down-mixed (``Downmix``).
public final class OggVorbisDecoder: AudioDecoder {
    public let source: any ByteSource
    public let format: StreamFormat
    public var encoding: SampleEncoding { .float(bits: 32) }
    public let sourceChannels: Int
    public let lengthFrames: Int?
    public private(set) var metadata = TrackMetadata()
    public let bitrate: Int?
    public var minimumRoom: Int { format.bytesPerFrame }

    private let file: UnsafeMutablePointer<OggVorbis_File>
    private let stage: PCMStage
    private var link: Int32 = 0
    /// A new link's tags, until the decoder thread takes them.
    private var metadataUpdate: TrackMetadata?
    /// Whether the file has more than one link (a seek may land in another's tags).
    private let chained: Bool

    public init(source: any ByteSource, options: DecoderOptions = .stereo) throws(MediaError) {
        self.source = source
        // libvorbisfile is opened here the first time (see `VorbisFileLibrary`): without it the
        // item fails, saying why.
        try VorbisFileLibrary.load(item: source.name)
        file = .allocate(capacity: 1)
        try source.seek(to: 0)
        let callbacks = ov_callbacks(read_func: vorbisRead, seek_func: source.isSeekable ? vorbisSeek : nil,
                                     close_func: nil, tell_func: vorbisTell)
        // The context is a box, not `self` (not yet initialised): it is set to `self` below.
        let box = SourceBox(source)
        let r = ov_open_callbacks(Unmanaged.passUnretained(box).toOpaque(), file, nil, 0, callbacks)
        guard r == 0 else {
            file.deallocate()
            throw box.error ?? MediaError(.corrupt, Self.errorText(r), library: "libvorbisfile", code: r, item: source.name)
        }
        self.box = box
        // libvorbisfile (1.3.7) leaves a chained file it has scanned for its links positioned
        // at the last link: back to the first sample.
        if source.isSeekable, ov_streams(file) > 1 {
            let r = ov_pcm_seek(file, 0)
            if r != 0 {
                ov_clear(file)
                file.deallocate()
                throw box.error ?? MediaError(.corrupt, Self.errorText(r), library: "libvorbisfile", code: r, item: source.name)
            }
        }
        chained = ov_streams(file) > 1
        // The first link's format (after the seek above, the current link is the first).
        guard let vi = ov_info(file, -1) else {
            ov_clear(file)
            file.deallocate()
            throw MediaError(.corrupt, "no stream info", library: "libvorbisfile", item: source.name)
        }
        sourceChannels = Int(vi.pointee.channels)
        stage = PCMStage(maxFrames: 4096, sourceChannels: sourceChannels, layout: Downmix.vorbisOrder(sourceChannels),
                         output: options.outputChannels())
        format = StreamFormat(rate: vi.pointee.rate, channels: stage.channels)
        let total = ov_pcm_total(file, -1)
        lengthFrames = total >= 0 ? Int(total) : nil
        let br = ov_bitrate(file, -1)
        bitrate = br > 0 ? Int((Double(br) / 1000).rounded()) : vi.pointee.bitrate_nominal > 0 ? vi.pointee.bitrate_nominal / 1000 : nil
        if let vc = ov_comment(file, -1) {
            VorbisComments.apply(count: vc.pointee.comments, comments: vc.pointee.user_comments, lengths: vc.pointee.comment_lengths,
                                 into: &metadata)
        }
        guard (1...8).contains(sourceChannels), format.rate > 0 else {
            throw MediaError(.unsupportedFormat, "Vorbis with \(sourceChannels) channels", item: source.name)
        }
    }

    /// The reader's context: the source, and the error a callback met.
    private let box: SourceBox

    deinit {
        ov_clear(file)
        file.deallocate()
    }

    static func errorText(_ r: Int32) -> String {
        switch r {
        case OV_ENOTVORBIS: "not Vorbis data"
        case OV_EBADHEADER: "bad Vorbis header"
        case OV_EVERSION: "Vorbis version mismatch"
        case OV_EREAD: "read error"
        case OV_EFAULT: "internal error"
        case OV_EBADLINK: "bad link in a chained stream"
        case OV_HOLE: "missing or corrupt data (a hole in the stream)"
        case OV_ENOSEEK: "the stream cannot seek"
        default: "error \(r)"
        }
    }

    public func decode(into buffer: UnsafeMutableRawBufferPointer, spillingInto rest: UnsafeMutableRawBufferPointer)
        throws(MediaError) -> (bytes: Int, status: DecodeStatus) {
        if stage.pending == 0 {
            var planes: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
            var current: Int32 = link
            let n = ov_read_float(file, &planes, 4096, &current)
            if n == 0 { return (0, .done) }
            if n < 0 {
                if let e = box.error { throw e }
                throw MediaError(.corrupt, Self.errorText(Int32(n)), library: "libvorbisfile", code: Int32(n), item: source.name)
            }
            let newLink = current != link
            if newLink {
                link = current
                if let vi = ov_info(file, current), Int(vi.pointee.channels) != sourceChannels || vi.pointee.rate != format.rate {
                    throw MediaError(.unsupportedFormat, "a chained stream changes the format to \(vi.pointee.rate) Hz, \(vi.pointee.channels) channels",
                                     item: source.name)
                }
            }
            guard let planes else { return (0, .more) }
            stage.putPlanar(Int(n), channels: sourceChannels, scale: 1) { c, i in planes[c]![i] }
            if newLink, let vc = ov_comment(file, current) {
                // The link's first block waits in the stage until the change is marked.
                var m = TrackMetadata()
                VorbisComments.apply(count: vc.pointee.comments, comments: vc.pointee.user_comments, lengths: vc.pointee.comment_lengths,
                                     into: &m)
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
        if chained { link = -1 }
        let r = ov_pcm_seek(file, ogg_int64_t(max(0, frame)))
        guard r == 0 else {
            throw box.error ?? MediaError(.corrupt, Self.errorText(r), library: "libvorbisfile", code: r, item: source.name)
        }
    }
}

private func vorbisRead(_ ptr: UnsafeMutableRawPointer?, _ size: Int, _ count: Int, _ source: UnsafeMutableRawPointer?) -> Int {
    let n = SourceBox.from(source).read(ptr, size * count)
    return n < 0 ? 0 : n / max(size, 1)
}

private func vorbisSeek(_ source: UnsafeMutableRawPointer?, _ offset: ogg_int64_t, _ whence: Int32) -> Int32 {
    SourceBox.from(source).seek(offset, whence) < 0 ? -1 : 0
}

private func vorbisTell(_ source: UnsafeMutableRawPointer?) -> Int {
    SourceBox.from(source).source.position
}
