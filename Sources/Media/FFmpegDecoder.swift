import CFFmpeg
import MediaCore

extension DecoderPlugin {
    /// What no dedicated decoder takes, through FFmpeg (libavformat and libavcodec, opened when
    /// the first such item plays): AAC and ALAC in MP4/M4A, WMA, WavPack, Monkey's Audio,
    /// Musepack, TTA, AAC in ADTS.
    public static let ffmpeg = DecoderPlugin(
        name: "ffmpeg", formatName: "FFmpeg",
        suffixes: ["m4a", "m4b", "mp4", "aac", "alac", "wma", "asf", "wv", "ape", "mpc", "tta", "mka", "webm"],
        mimeTypes: ["audio/mp4", "audio/x-m4a", "audio/aac", "audio/x-ms-wma", "audio/x-wavpack", "audio/x-ape", "audio/x-musepack"],
        matches: { FFmpegDecoder.recognises($0) },
        open: { (source, options) throws(MediaError) in try FFmpegDecoder(source: source, options: options) },
        info: { (source) throws(MediaError) in TrackInfo(try FFmpegDecoder(source: source)) })
}

/// FFmpeg's libraries, opened once, when the first item needs them.
enum FFmpeg {
    /// The functions, or why they could not be loaded.
    static let api: Result<bl_ffmpeg_api, MediaError> = {
        var api = bl_ffmpeg_api()
        if let failure = bl_ffmpeg_load(&api) {
            return .failure(MediaError(.unsupportedFormat, "FFmpeg is not installed (\(String(cString: failure)))", library: "FFmpeg"))
        }
        api.av_log_set_level(AV_LOG_QUIET)  // failures reach the caller as MediaErrors, not stderr lines
        return .success(api)
    }()

    /// FFmpeg's text for `code`.
    static func message(_ api: bl_ffmpeg_api, _ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        _ = api.av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A decoder through FFmpeg, reading the `ByteSource` through an `AVIOContext` (never by
/// path: an HTTP source reaches it too). Gapless in MP4: libavformat and libavcodec drop the
/// encoder's delay (the edit list's start, or `iTunSMPB`'s priming); the decoder stops at the
/// exact length (`iTunSMPB`'s sample count, else the edit list's duration — to the sample when
/// the movie's time scale is the sample rate, as Apple's encoders write it; ffmpeg's default
/// of 1000 rounds it to the millisecond), dropping the padding FFmpeg leaves in. Sample-exact seeks: from a packet at least 8192 frames before the target, the
/// frames decoded before it dropped. Tags from FFmpeg's metadata (MP4 atoms under their common
/// names, `----:com.apple.iTunes:` free-form ones under theirs), the cover from the attached
/// picture.
public final class FFmpegDecoder: AudioDecoder {
    public let source: any ByteSource
    public let format: StreamFormat
    public let encoding: SampleEncoding
    public let sourceChannels: Int
    public private(set) var lengthFrames: Int?
    public private(set) var metadata = TrackMetadata()
    public let bitrate: Int?
    public var minimumRoom: Int { format.bytesPerFrame }
    /// The codec's name, as FFmpeg calls it (`aac`, `alac`, `wmav2`, `wavpack`).
    public let codecName: String

    /// The codec for people, in the container when it says more: `AAC (MPEG-4)`, `Apple
    /// Lossless (MPEG-4)`, `WMA`, `WavPack` (Apple's names where it has them).
    public var formatName: String? {
        let codec = switch codecName {
        case "aac": "AAC"
        case "alac": "Apple Lossless"
        case "wmav1", "wmav2": "WMA"
        case "wmapro": "WMA Pro"
        case "wmalossless": "WMA Lossless"
        case "wavpack": "WavPack"
        case "ape": "Monkey's Audio"
        case "mpc7", "mpc8": "Musepack"
        case "tta": "TTA"
        default: codecName
        }
        return exactLength ? "\(codec) (MPEG-4)" : codec
    }

    private let api: bl_ffmpeg_api
    private let box: SourceBox
    private var io: UnsafeMutablePointer<AVIOContext>?
    private var formatContext: UnsafeMutablePointer<AVFormatContext>?
    private var codecContext: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private let streamIndex: Int32
    private let stream: UnsafeMutablePointer<AVStream>
    private let stage: PCMStage
    /// Frames before this one are dropped (after a seek); nil when decoding straight on.
    private var dropBefore: Int?
    /// The next decoded frame's position, counted while decoding straight on.
    private var position = 0
    /// Whether the demuxer has no more packets (the decoder is being drained).
    private var draining = false
    /// The timestamp of the first decoded frame (the stream's time base): frame 0. Learnt from
    /// the first frame, as the container's start time may count the encoder's delay.
    private var origin: Int64?
    /// Frames left before the container's exact end (MP4: the edit list's duration; FFmpeg
    /// leaves the encoder's padding in the last frame); nil where the length is FFmpeg's estimate.
    private var remaining: Int?
    /// Whether ``lengthFrames`` is the container's exact length.
    private var exactLength: Bool
    /// Frames in another rate or channel count than the stream's are dropped; a run of them
    /// fails the item.
    private var formatGuard = FormatGuard(rate: 0, channels: 0)
    /// Whether FFmpeg estimated the length from the bit rate (the container states none).
    private var lengthFromBitRate = false
    /// Only MP4's length (its edit list, or `iTunSMPB`) is exact; other containers' are stated
    /// to the millisecond, or estimated from the bit rate where they state none (raw AAC, AC-3).
    public var lengthAccuracy: LengthAccuracy { exactLength ? .exact : lengthFromBitRate ? .estimated : .stated }

    /// Whether `header` (the first bytes) is a container or stream FFmpeg takes and no
    /// dedicated decoder does.
    static func recognises(_ header: [UInt8]) -> Bool {
        guard let what = Sniff.recognised(header) else { return false }
        return what.hasPrefix("MPEG-4") || what.hasPrefix("AAC")
            || ["WavPack", "Monkey's Audio", "Musepack", "TTA", "ASF (WMA)", "Matroska or WebM"].contains(what)
    }

    public init(source: any ByteSource, options: DecoderOptions = .stereo) throws(MediaError) {
        let api = try FFmpeg.api.get()
        self.api = api
        self.source = source
        try source.seek(to: 0)
        box = SourceBox(source)
        let bufferSize: Int32 = 32_768
        guard let buffer = api.av_malloc(Int(bufferSize)) else { throw MediaError(.io, "out of memory", library: "FFmpeg", item: source.name) }
        let opaque = Unmanaged.passUnretained(box).toOpaque()
        io = api.avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), bufferSize, 0, opaque, ffmpegRead, nil,
                                    source.isSeekable ? ffmpegSeek : nil)
        if io == nil {
            var b: UnsafeMutableRawPointer? = buffer
            api.av_freep(&b)
        }
        var failure: MediaError?
        var opened: (Int32, UnsafeMutablePointer<AVStream>, UnsafeMutablePointer<AVCodecContext>)?
        if let io, let fc = api.avformat_alloc_context() {
            fc.pointee.pb = io
            fc.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
            var context: UnsafeMutablePointer<AVFormatContext>? = fc
            // (On failure avformat_open_input frees the context and sets it to nil.)
            let r = api.avformat_open_input(&context, "", nil, nil)
            formatContext = context
            if r < 0 {
                failure = box.error ?? MediaError(.corrupt,
                                                  FFmpeg.message(api, r), library: "FFmpeg", code: r, item: source.name)
            } else {
                opened = Self.openAudio(api, fc, source: source, failure: &failure)
            }
        } else {
            failure = MediaError(.io, "out of memory", library: "FFmpeg", item: source.name)
        }
        guard failure == nil, let (index, stream, cc) = opened else {
            FFmpegDecoder.release(api, &formatContext, &io, nil, nil, nil)
            throw failure ?? MediaError(.corrupt, "cannot open", library: "FFmpeg", item: source.name)
        }
        streamIndex = index
        self.stream = stream
        codecContext = cc
        packet = api.av_packet_alloc()
        frame = api.av_frame_alloc()
        codecName = api.avcodec_get_name(cc.pointee.codec_id).map { String(cString: $0) } ?? "unknown"
        let channels = Int(cc.pointee.ch_layout.nb_channels)
        let rate = Int(cc.pointee.sample_rate)
        sourceChannels = channels
        guard (1...8).contains(channels), rate > 0 else {
            FFmpegDecoder.release(api, &formatContext, &io, &codecContext, &packet, &frame)
            throw MediaError(.unsupportedFormat, "\(codecName) with \(channels) channels at \(rate) Hz", item: source.name)
        }
        stage = PCMStage(maxFrames: 8192, sourceChannels: channels, layout: Self.layout(cc.pointee.ch_layout),
                         output: options.outputChannels())
        format = StreamFormat(rate: rate, channels: stage.channels)
        formatGuard = FormatGuard(rate: rate, channels: channels)
        let raw = Int(cc.pointee.bits_per_raw_sample)
        let isFloat = [AV_SAMPLE_FMT_FLT, AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_DBL, AV_SAMPLE_FMT_DBLP].contains(cc.pointee.sample_fmt)
        let bits = switch cc.pointee.sample_fmt {
        case AV_SAMPLE_FMT_U8, AV_SAMPLE_FMT_U8P: 8
        case AV_SAMPLE_FMT_S16, AV_SAMPLE_FMT_S16P: 16
        default: 32
        }
        encoding = isFloat ? .float(bits: 32) : .integer(bits: raw > 0 ? raw : bits)
        // The length: the stream's duration in its time base, else the container's.
        let tb = stream.pointee.time_base
        // MP4 states the exact length (its edit list, or the track's duration less iTunSMPB's
        // delay and padding); other containers state theirs to the millisecond (ASF's counts its
        // preroll), and FFmpeg estimates one from the bit rate where none is stated (raw AAC).
        let container = formatContext?.pointee.iformat.map { String(cString: $0.pointee.name) } ?? ""
        exactLength = container.contains("mp4") || container.contains("mov")
        lengthFromBitRate = formatContext?.pointee.duration_estimation_method == AVFMT_DURATION_FROM_BITRATE
        if stream.pointee.duration != bl_av_nopts_value(), stream.pointee.duration > 0, tb.den > 0 {
            lengthFrames = Int((Double(stream.pointee.duration) * Double(tb.num) * Double(rate) / Double(tb.den)).rounded())
        } else if let fc = formatContext, fc.pointee.duration != bl_av_nopts_value(), fc.pointee.duration > 0 {
            lengthFrames = Int((Double(fc.pointee.duration) * Double(rate) / Double(AV_TIME_BASE)).rounded())
        } else {
            lengthFrames = nil
        }
        let br = cc.pointee.bit_rate > 0 ? cc.pointee.bit_rate : (formatContext?.pointee.bit_rate ?? 0)
        bitrate = br > 0 ? Int((Double(br) / 1000).rounded()) : nil
        readTags()
        // iTunes' gapless record: ` 00000000 PRIMING PADDING SAMPLES …` (hex), the exact length.
        if let smpb = metadata.comments.first(where: { $0.name.lowercased() == "itunsmpb" })?.value {
            let fields = smpb.split(separator: " ")
            if fields.count >= 4, let samples = Int(fields[3], radix: 16), samples > 0 {
                lengthFrames = samples
                exactLength = true
            }
        }
        remaining = exactLength ? lengthFrames : nil
    }

    /// The speakers of FFmpeg's native channel order (the mask's bits, lowest first); nil for
    /// other orders or speakers the down-mix does not know (WAVE's default order is then assumed).
    static func layout(_ l: AVChannelLayout) -> [Downmix.Position]? {
        guard l.order == AV_CHANNEL_ORDER_NATIVE, l.nb_channels > 2 else { return nil }
        let known: [(UInt64, Downmix.Position)] = [
            (0x1, .frontLeft), (0x2, .frontRight), (0x4, .frontCenter), (0x8, .lfe), (0x10, .backLeft), (0x20, .backRight),
            (0x100, .backCenter), (0x200, .sideLeft), (0x400, .sideRight),
        ]
        let mask = l.u.mask
        guard mask & ~known.reduce(0, { $0 | $1.0 }) == 0 else { return nil }
        let positions = known.filter { mask & $0.0 != 0 }.map(\.1)
        return positions.count == Int(l.nb_channels) ? positions : nil
    }

    /// The audio stream and its decoder, opened.
    private static func openAudio(_ api: bl_ffmpeg_api, _ fc: UnsafeMutablePointer<AVFormatContext>, source: any ByteSource,
                                  failure: inout MediaError?) -> (Int32, UnsafeMutablePointer<AVStream>, UnsafeMutablePointer<AVCodecContext>)? {
        var r = api.avformat_find_stream_info(fc, nil)
        guard r >= 0 else {
            failure = MediaError(.corrupt, FFmpeg.message(api, r), library: "FFmpeg", code: r, item: source.name)
            return nil
        }
        var codec: UnsafePointer<AVCodec>?
        let index = api.av_find_best_stream(fc, AVMEDIA_TYPE_AUDIO, -1, -1, &codec, 0)
        let container = fc.pointee.iformat.map { String(cString: $0.pointee.name) } ?? "container"
        guard index >= 0, let stream = fc.pointee.streams[Int(index)] else {
            if index == bl_averror_decoder_not_found() {
                let tag = (0..<Int(fc.pointee.nb_streams)).lazy.compactMap { i -> UInt32? in
                    guard let p = fc.pointee.streams[i]?.pointee.codecpar.pointee, p.codec_type == AVMEDIA_TYPE_AUDIO else { return nil }
                    return p.codec_tag
                }.first
                failure = protectedAudio(tag, source: source) ?? MediaError(
                    .unsupportedFormat, "no decoder for its audio (\(container)\(tag.map { ", codec \(fourCC($0))" } ?? ""))",
                    library: "FFmpeg", code: index, item: source.name)
            } else {
                let video = (0..<Int(fc.pointee.nb_streams)).contains { fc.pointee.streams[$0]?.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO }
                let name = container.contains("mp4") ? "MPEG-4" : container
                failure = MediaError(.unsupportedFormat, video ? "\(name) video with no audio" : "\(name) with no audio",
                                     item: source.name)
            }
            return nil
        }
        // FFmpeg reads iTunes' FairPlay entries as AAC and would decode their encrypted frames as noise.
        if let drm = protectedAudio(stream.pointee.codecpar.pointee.codec_tag, source: source) {
            failure = drm
            return nil
        }
        guard let codec, let cc = api.avcodec_alloc_context3(codec) else {
            failure = MediaError(.unsupportedFormat, "no decoder for its audio", library: "FFmpeg", item: source.name)
            return nil
        }
        r = api.avcodec_parameters_to_context(cc, stream.pointee.codecpar)
        if r >= 0 { r = api.avcodec_open2(cc, codec, nil) }
        guard r >= 0 else {
            var c: UnsafeMutablePointer<AVCodecContext>? = cc
            api.avcodec_free_context(&c)
            failure = MediaError(.unsupportedFormat, FFmpeg.message(api, r), library: "FFmpeg", code: r, item: source.name)
            return nil
        }
        // Every other stream's packets are dropped by the demuxer.
        for i in 0..<Int(fc.pointee.nb_streams) where i != Int(index) { fc.pointee.streams[i]?.pointee.discard = AVDISCARD_ALL }
        return (index, stream, cc)
    }

    /// The sample entry's four characters (`mp4a`, `drms`).
    private static func fourCC(_ tag: UInt32) -> String {
        String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: tag >> (8 * $0)) }, as: UTF8.self)
    }

    /// The error for DRM-protected audio: iTunes' FairPlay entries (`drms`, `drmi`) and
    /// encrypted ones (`enca`): no decoder undoes them. nil for any other entry.
    private static func protectedAudio(_ tag: UInt32?, source: any ByteSource) -> MediaError? {
        guard let tag, ["drms", "drmi", "enca", "drma"].contains(fourCC(tag)) else { return nil }
        return MediaError(.unsupportedFormat, "DRM-protected audio (\(fourCC(tag))), which cannot be played", item: source.name)
    }

    /// Tags in the order mpd's FFmpeg plugin reports them (`FfmpegScanDictionary`): the types
    /// FFmpeg names as mpd does, in mpd's type order; then those under FFmpeg's own names
    /// (`album_artist`, the sort tags); then MusicBrainz ids. Several values of a type keep
    /// their order. (The library and MPD clients list a song's tags in this order.)
    static func inMPDOrder(_ tags: [Tag]) -> [Tag] {
        let aliases: [TagKey] = [.albumArtist, .albumSort, .artistSort, .albumArtistSort]
        func rank(_ k: TagKey) -> Int {
            if let i = aliases.firstIndex(of: k) { return 100 + i }
            if k.mpdName.hasPrefix("MUSICBRAINZ_") { return 200 + k.rawValue }
            return k.rawValue
        }
        return tags.enumerated().sorted { (rank($0.element.key), $0.offset) < (rank($1.element.key), $1.offset) }.map(\.element)
    }

    /// Tags: the container's and the stream's metadata as `NAME=value` comments (FFmpeg's
    /// names are Vorbis comments' for the common ones); the cover from an attached picture.
    private func readTags() {
        var comments: [ArraySlice<UInt8>] = []
        for dict in [formatContext?.pointee.metadata, stream.pointee.metadata] {
            var entry: UnsafeMutablePointer<AVDictionaryEntry>?
            while let e = api.av_dict_get(dict, "", entry, AV_DICT_IGNORE_SUFFIX) {
                entry = e
                guard let key = e.pointee.key, let value = e.pointee.value else { continue }
                comments.append((Array(String(cString: key).utf8) + [UInt8(ascii: "=")] + Array(String(cString: value).utf8))[...])
            }
        }
        VorbisComments.apply(comments, into: &metadata)
        metadata.tags = Self.inMPDOrder(metadata.tags)
        guard let fc = formatContext else { return }
        // The container's chapters (MP4's chapter track or Nero `chpl`, Matroska's), in order.
        if fc.pointee.nb_chapters > 0, let list = fc.pointee.chapters {
            metadata.chapters = (0..<Int(fc.pointee.nb_chapters)).compactMap { i -> Chapter? in
                guard let ch = list[i] else { return nil }
                let base = ch.pointee.time_base
                guard base.den != 0 else { return nil }
                let unit = Double(base.num) / Double(base.den)
                let title = api.av_dict_get(ch.pointee.metadata, "title", nil, 0).flatMap { $0.pointee.value.map { String(cString: $0) } }
                return Chapter(title: title, start: Double(ch.pointee.start) * unit, end: Double(ch.pointee.end) * unit)
            }
        }
        for i in 0..<Int(fc.pointee.nb_streams) {
            guard let s = fc.pointee.streams[i], s.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC != 0,
                  let data = s.pointee.attached_pic.data, s.pointee.attached_pic.size > 0 else { continue }
            let mime = switch s.pointee.codecpar.pointee.codec_id {
            case AV_CODEC_ID_PNG: "image/png"
            case AV_CODEC_ID_BMP: "image/bmp"
            case AV_CODEC_ID_GIF: "image/gif"
            default: "image/jpeg"
            }
            metadata.artwork = .init(data: Array(UnsafeBufferPointer(start: data, count: Int(s.pointee.attached_pic.size))), mimeType: mime)
            break
        }
    }

    deinit { Self.release(api, &formatContext, &io, &codecContext, &packet, &frame) }

    private static func release(_ api: bl_ffmpeg_api, _ fc: inout UnsafeMutablePointer<AVFormatContext>?,
                                _ io: inout UnsafeMutablePointer<AVIOContext>?, _ cc: UnsafeMutablePointer<UnsafeMutablePointer<AVCodecContext>?>?,
                                _ packet: UnsafeMutablePointer<UnsafeMutablePointer<AVPacket>?>?,
                                _ frame: UnsafeMutablePointer<UnsafeMutablePointer<AVFrame>?>?) {
        if let frame { api.av_frame_free(frame) }
        if let packet { api.av_packet_free(packet) }
        if let cc { api.avcodec_free_context(cc) }
        if fc != nil { api.avformat_close_input(&fc) }
        if let ctx = io {
            // The buffer may have been replaced by libavformat: free the one it holds now.
            withUnsafeMutablePointer(to: &ctx.pointee.buffer) { api.av_freep($0) }
            api.avio_context_free(&io)
        }
    }

    public func decode(into buffer: UnsafeMutableRawBufferPointer, spillingInto rest: UnsafeMutableRawBufferPointer)
        throws(MediaError) -> (bytes: Int, status: DecodeStatus) {
        while stage.pending == 0 {
            guard let cc = codecContext, let frame, let packet, remaining != 0 else { return (0, .done) }
            let r = api.avcodec_receive_frame(cc, frame)
            if r == bl_averror_eof() { return (0, .done) }
            if r == bl_averror_eagain() {
                if draining { return (0, .done) }
                try feed(cc, packet)
                continue
            }
            guard r >= 0 else { throw MediaError(.corrupt, FFmpeg.message(api, r), library: "FFmpeg", code: r, item: source.name) }
            // A frame in another layout or rate (raw AAC's headers each carry theirs): dropped,
            // or, a run of them, the item fails (fuzz finding, decoder/ffmpeg-channels).
            let rate = frame.pointee.sample_rate > 0 ? Int(frame.pointee.sample_rate) : format.rate
            let admitted: Bool
            do {
                admitted = try formatGuard.admits(rate: rate, channels: Int(frame.pointee.ch_layout.nb_channels),
                                                  library: "FFmpeg", item: source.name)
            } catch {
                api.av_frame_unref(frame)
                throw error
            }
            if admitted { stageFrame(frame) }
            api.av_frame_unref(frame)
        }
        return (stage.drain(into: buffer, rest), .more)
    }

    /// Reads the next packet of the audio stream into the decoder (at the end, the flush).
    private func feed(_ cc: UnsafeMutablePointer<AVCodecContext>, _ packet: UnsafeMutablePointer<AVPacket>) throws(MediaError) {
        guard let fc = formatContext else { return }
        while true {
            let r = api.av_read_frame(fc, packet)
            if r == bl_averror_eof() {
                draining = true
                _ = api.avcodec_send_packet(cc, nil)
                return
            }
            guard r >= 0 else {
                if let e = box.error { throw e }
                throw MediaError(.corrupt, FFmpeg.message(api, r), library: "FFmpeg", code: r, item: source.name)
            }
            defer { api.av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex else { continue }
            let s = api.avcodec_send_packet(cc, packet)
            // A damaged packet: skipped (the decoder resynchronises), as ffmpeg does.
            if s < 0 && s != bl_averror_invaliddata() && s != bl_averror_eagain() {
                throw MediaError(.corrupt, FFmpeg.message(api, s), library: "FFmpeg", code: s, item: source.name)
            }
            return
        }
    }

    /// Stages a decoded frame as float32, dropping what lies before a seek's target.
    private func stageFrame(_ frame: UnsafeMutablePointer<AVFrame>) {
        var count = Int(frame.pointee.nb_samples)
        var first = 0
        let pts = frame.pointee.best_effort_timestamp != bl_av_nopts_value() ? frame.pointee.best_effort_timestamp : frame.pointee.pts
        if origin == nil, dropBefore == nil, position == 0, pts != bl_av_nopts_value() { origin = pts }
        if let target = dropBefore {
            // Where this frame starts, from its timestamp (the stream's time base).
            if pts != bl_av_nopts_value() {
                let tb = stream.pointee.time_base
                position = Int((Double(pts - (origin ?? 0)) * Double(tb.num) * Double(format.rate) / Double(tb.den)).rounded())
            }
            if position + count <= target {
                position += count
                return
            }
            first = max(0, target - position)
            dropBefore = nil
        }
        position += count
        count -= first
        if let r = remaining {
            // The container's end: the encoder's padding after it is not audio.
            count = min(count, max(0, r))
            remaining = r - count
        }
        guard count > 0, let data = frame.pointee.extended_data else { return }
        let channels = sourceChannels
        // One closure per sample format, written out (no generic helper): each specialised, as
        // FLAC's, so the per-sample read is a load, not a call.
        func plane<T>(_ c: Int, _: T.Type) -> UnsafePointer<T> {
            UnsafeRawPointer(data[c]!).assumingMemoryBound(to: T.self) + first
        }
        func packed<T>(_: T.Type) -> UnsafePointer<T> {
            UnsafeRawPointer(data[0]!).assumingMemoryBound(to: T.self) + first * channels
        }
        switch AVSampleFormat(frame.pointee.format) {
        case AV_SAMPLE_FMT_FLTP:
            let p = (0..<channels).map { plane($0, Float.self) }
            stage.putPlanar(count, channels: channels, scale: 1) { c, i in p[c][i] }
        case AV_SAMPLE_FMT_FLT:
            stage.putInterleaved(packed(Float.self), frames: count, channels: channels)
        case AV_SAMPLE_FMT_S16P:
            let p = (0..<channels).map { plane($0, Int16.self) }
            stage.putPlanar(count, channels: channels, scale: 1 / 32768) { c, i in Float(p[c][i]) }
        case AV_SAMPLE_FMT_S16:
            let p = packed(Int16.self)
            stage.putPlanar(count, channels: channels, scale: 1 / 32768) { c, i in Float(p[i * channels + c]) }
        case AV_SAMPLE_FMT_S32P:
            let p = (0..<channels).map { plane($0, Int32.self) }
            stage.putPlanar(count, channels: channels, scale: 1 / 2_147_483_648) { c, i in Float(p[c][i]) }
        case AV_SAMPLE_FMT_S32:
            let p = packed(Int32.self)
            stage.putPlanar(count, channels: channels, scale: 1 / 2_147_483_648) { c, i in Float(p[i * channels + c]) }
        case AV_SAMPLE_FMT_DBLP:
            let p = (0..<channels).map { plane($0, Double.self) }
            stage.putPlanar(count, channels: channels, scale: 1) { c, i in Float(p[c][i]) }
        case AV_SAMPLE_FMT_DBL:
            let p = packed(Double.self)
            stage.putPlanar(count, channels: channels, scale: 1) { c, i in Float(p[i * channels + c]) }
        case AV_SAMPLE_FMT_U8P:
            let p = (0..<channels).map { plane($0, UInt8.self) }
            stage.putPlanar(count, channels: channels, scale: 1 / 128) { c, i in Float(Int(p[c][i]) - 128) }
        case AV_SAMPLE_FMT_U8:
            let p = packed(UInt8.self)
            stage.putPlanar(count, channels: channels, scale: 1 / 128) { c, i in Float(Int(p[i * channels + c]) - 128) }
        default: break  // (FFmpeg's audio decoders produce only the formats above)
        }
    }

    public func seek(toFrame target: Int) throws(MediaError) {
        guard let fc = formatContext, let cc = codecContext else { return }
        if origin == nil {
            // Frame 0's timestamp, from the first frame (a seek before anything was decoded).
            let room = UnsafeMutableRawBufferPointer.allocate(byteCount: minimumRoom, alignment: 16)
            defer { room.deallocate() }
            _ = try decode(into: room, spillingInto: .init(start: nil, count: 0))
        }
        stage.clear()
        draining = false
        // From well before the target: decoders that overlap frames (AAC's MDCT) converge
        // after one; the frames before the target are dropped as they come.
        let tb = stream.pointee.time_base
        let from = max(0, target - 8192)
        let ts = (origin ?? 0) + Int64((Double(from) * Double(tb.den) / (Double(tb.num) * Double(format.rate))).rounded(.down))
        let r = api.av_seek_frame(fc, streamIndex, ts, AVSEEK_FLAG_BACKWARD)
        guard r >= 0 else {
            if let e = box.error { throw e }
            throw MediaError(.corrupt, FFmpeg.message(api, r), library: "FFmpeg", code: r, item: source.name)
        }
        api.avcodec_flush_buffers(cc)
        position = 0
        dropBefore = target
        remaining = exactLength ? lengthFrames.map { $0 - target } : nil
    }
}

private func ffmpegRead(_ opaque: UnsafeMutableRawPointer?, _ buffer: UnsafeMutablePointer<UInt8>?, _ size: Int32) -> Int32 {
    let n = SourceBox.from(opaque).read(buffer, Int(size))
    if n < 0 { return -5 }  // AVERROR(EIO); the error itself is in the box
    return n == 0 ? bl_averror_eof() : Int32(n)
}

private func ffmpegSeek(_ opaque: UnsafeMutableRawPointer?, _ offset: Int64, _ whence: Int32) -> Int64 {
    let box = SourceBox.from(opaque)
    if whence & AVSEEK_SIZE != 0 { return box.source.length.map(Int64.init) ?? -1 }
    return box.seek(offset, whence & ~AVSEEK_FORCE)
}
