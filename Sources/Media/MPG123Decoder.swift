import CMPG123
import MediaCore
import Platform

#if canImport(Glibc)
import Glibc
#endif

extension DecoderPlugin {
    /// MPEG audio layers 1, 2 and 3 through libmpg123.
    public static let mpg123 = DecoderPlugin(
        name: "mpg123", formatName: "MPEG audio", suffixes: ["mp3", "mp2", "mp1", "mpa", "mpga"],
        mimeTypes: ["audio/mpeg", "audio/x-mpeg", "audio/mp3"],
        matches: { Sniff.isMPEGAudio($0) },
        open: { (source, _) throws(MediaError) in try MPG123Decoder(source: source) },
        // libmpg123 reads the length (the Info header, or a scan of the frame headers): no
        // audio is decoded.
        info: { (source) throws(MediaError) in TrackInfo(try MPG123Decoder(source: source)) })
}

/// A thin typed wrapper over one `mpg123_handle`, decoding one MPEG audio stream from a
/// `ByteSource` (libmpg123's reader callbacks) to float32.
///
/// Tags (``metadata``) are read as mpd 0.23 reads them (libid3tag and its `Id3Scan.cxx`): see
/// `TrackMetadata/tags`. The artwork comes from libmpg123.
///
/// Gapless decoding is on (LAME/Info encoder delay and padding removed), the length is exact
/// (a scan of the frame headers when the file has no Info header), seeking is sample-accurate.
/// Each MPEG frame is synthesised straight into the caller's buffer (the ring), with no copy.
/// Not thread-safe: one decoder belongs to one thread (the decoder thread), as the handle does.
public final class MPG123Decoder: AudioDecoder {
    private let handle: OpaquePointer
    public let source: any ByteSource
    /// The source's name (path or URL).
    public var path: String { source.name }
    /// The output format, fixed for the item: a file stops at a frame whose header changes the
    /// rate or layer (`MPG123_NO_FRANKENSTEIN`); a live stream drops frames in another format,
    /// and fails once more than a few come in a row (`FormatGuard`).
    public private(set) var format: StreamFormat
    public var encoding: SampleEncoding { .float(bits: 32) }
    public var sourceChannels: Int { format.channels }
    /// Exact length in frames.
    public private(set) var length: Int
    public var lengthFrames: Int? { source.isLive ? nil : length }
    /// Tags from the file.
    public private(set) var metadata: TrackMetadata
    public private(set) var bitrate: Int?
    /// Whether ``lengthFrames`` came from the file's Info header (not a scan): then a stream that
    /// ends early is reported as truncated.
    public private(set) var lengthFromHeader = false
    /// Whether ``lengthFrames`` could not be checked: a source that cannot seek is not scanned,
    /// so its length is a header's frame count where it has one, else libmpg123's estimate from
    /// the size and the frames' bit rate.
    private var lengthEstimated = false
    /// Exact where a scan counted the frames; stated where a header gave the count on a source
    /// that can seek (a header can claim fewer frames than follow it: a fuzzed Xing count of
    /// 1,908 before 2,304 frames decoded); estimated on a source that cannot seek.
    public var lengthAccuracy: LengthAccuracy { lengthEstimated ? .estimated : lengthFromHeader ? .stated : .exact }
    /// Frames delivered so far (from the start of the file, seeks included).
    public private(set) var position = 0
    /// The room ``decode(into:spillingInto:)`` needs: the most bytes any MPEG frame decodes
    /// to in float32 (1,152 samples in two channels), not only frames like the first
    /// (`mpg123_outblock`): a live stream can change layer, and libmpg123 then refuses a smaller
    /// buffer (`MPG123_NO_SPACE`).
    public private(set) var maxFrameBytes = 0
    /// libmpg123's output rate and channels now (they change at a `MPG123_NEW_FORMAT`).
    private var output = (rate: 0, channels: 0)
    /// Frames in another format than ``format`` are dropped; a run of them fails the item.
    private var formatGuard = FormatGuard(rate: 0, channels: 0)
    /// The bytes kept of a live stream, for libmpg123's look ahead (a frame is at
    /// most 2,881 bytes; it reads the next header and goes back).
    static let lookback = 16384
    public var minimumRoom: Int { maxFrameBytes }
    /// The decoder's own one-frame buffer (``maxFrameBytes``): libmpg123 is pointed back at it
    /// after each ``decode(into:spillingInto:)`` (so nothing it does between frames writes
    /// into the caller's memory), and a frame too big for the caller's first buffer is decoded
    /// here. nil until the first ``decode(into:spillingInto:)`` (libmpg123 keeps its own).
    private var scratch: UnsafeMutableRawPointer?
    /// The source for libmpg123's reader callbacks, and the error one met (libmpg123 only sees -1).
    private let box: SourceBox

    /// Opens the file at `path` (see ``FileSource``) and reads its format, exact length and tags.
    /// - Throws: `MediaError` naming the file.
    public convenience init(path: String, beneath root: String? = nil) throws(MediaError) {
        try self.init(source: FileSource(path: path, beneath: root))
    }

    /// Opens a decoder on `source` (from its start) and reads its format, exact length and tags.
    /// - Throws: `MediaError`: `.unsupportedFormat` when no MPEG frames are found.
    public init(source: any ByteSource) throws(MediaError) {
        self.source = source
        box = SourceBox(source, lookback: source.isLive ? Self.lookback : 0)
        let path = source.name
        var err: Int32 = 0
        guard let h = mpg123_new(nil, &err) else {
            throw MediaError(.corrupt, String(cString: mpg123_plain_strerror(err)), library: "libmpg123", code: err, item: path)
        }
        handle = h
        format = StreamFormat(rate: 0, channels: 0)
        length = 0
        metadata = TrackMetadata()
        // Every stored property is set: from here a throw runs deinit, which frees the handle.
        do {
            // A live stream has no end to trim and may be several streams back to back (a
            // station's encoder restarting, a reconnect): gapless trimming and the
            // single-stream rule, which would end it at the first Info header's length, are off.
            let whole = source.isLive ? 0 : MPG123_GAPLESS.rawValue | MPG123_NO_FRANKENSTEIN.rawValue
            // A live stream is read through the box's kept bytes, and libmpg123 is
            // told it can seek (`MPG123_FORCE_SEEKABLE`), so that it looks a frame ahead as it
            // does on a file: a stream joined mid-frame (every radio) starts at the first
            // header the next one confirms, not at the first four bytes that look like a
            // header (a false layer I header at 48 kHz made a 44.1 kHz station fail). Its own
            // buffer (`MPG123_SEEKBUFFER`) would do that too, but reads 4 KiB ahead: an Icecast
            // title, taking effect at the next byte read, would change a quarter second early.
            let seekable = box.looksBack ? MPG123_FORCE_SEEKABLE.rawValue : 0
            let flags = MPG123_QUIET.rawValue | MPG123_PICTURE.rawValue | seekable | whole
            try check(mpg123_param2(h, Int32(MPG123_ADD_FLAGS.rawValue), Int(flags), 0))
            // (libmpg123 trims gaplessly by default: off for a live stream, explicitly.)
            let trim = source.isLive ? MPG123_GAPLESS.rawValue : 0
            try check(mpg123_param2(h, Int32(MPG123_REMOVE_FLAGS.rawValue), Int(MPG123_AUTO_RESAMPLE.rawValue | trim), 0))
            try check(mpg123_format_none(h))
            try check(mpg123_format2(h, 0, Int32(MPG123_MONO.rawValue | MPG123_STEREO.rawValue),
                                     Int32(MPG123_ENC_FLOAT_32.rawValue)))
            try check(mpg123_replace_reader_handle(h, mpg123Read, mpg123Seek, nil))
            try open()
            var rate = 0, channels: Int32 = 0, enc: Int32 = 0
            let r = mpg123_getformat(h, &rate, &channels, &enc)
            if r == MPG123_DONE.rawValue || r == MPG123_NEED_MORE.rawValue {
                if let e = box.error { throw e }
                throw MediaError(.unsupportedFormat, "no MPEG audio frames found", library: "libmpg123", item: path)
            }
            try check(r)
            guard enc == Int32(MPG123_ENC_FLOAT_32.rawValue), channels == 1 || channels == 2, rate > 0 else {
                throw MediaError(.unsupportedFormat, "MPEG audio at \(rate) Hz with \(channels) channels", library: "libmpg123", item: path)
            }
            format = StreamFormat(rate: rate, channels: Int(channels))
            output = (rate, Int(channels))
            formatGuard = FormatGuard(rate: rate, channels: Int(channels))
            metadata = readMetadata()
            switch (source.isLive, source.isSeekable) {
            case (true, _):
                // A live stream has no length: none is looked for.
                break
            case (false, false):
                // A file that cannot seek (a server without ranges, larger than is kept whole)
                // cannot be scanned and read again: its length is a header's frame count where
                // it has one (libmpg123 reads a LAME/Info or Xing header before it is told the
                // size), else estimated from the size and the frames' bit rate, and either is
                // only estimated, since a header no scan checks may lie. libmpg123 calls such a
                // stream's positions accurate (it has not looked for a header it cannot find), so
                // that flag says nothing here. The audio is decoded as it comes, to its end.
                lengthEstimated = true
                if mpg123_length(h) <= 0, let bytes = source.length { mpg123_set_filesize(h, off_t(bytes)) }
            case (false, true):
                // The LAME/Info header's frame count where there is one (libmpg123 then reports
                // accurate positions), stated; otherwise every frame is scanned, and the handle
                // opened again, because decoding after the scan's seek back to 0 differs from a
                // fresh decode in the first frames of MPEG-2 streams by rounding, and a fresh
                // open is bit-exact.
                var accurate = 0
                var unused = 0.0
                mpg123_getstate2(h, Int32(MPG123_ACCURATE.rawValue), &accurate, &unused)
                lengthFromHeader = accurate == 1
                if !lengthFromHeader {
                    try check(mpg123_scan(h))
                    mpg123_close(h)
                    try open()
                    try check(mpg123_getformat(h, &rate, &channels, &enc))
                }
            }
            let n = mpg123_length(h)
            guard n > 0 || source.isLive else {
                throw MediaError(.corrupt, "no audio frames", library: "libmpg123", item: path)
            }
            length = n
            maxFrameBytes = max(mpg123_outblock(h), 1152 * 2 * MemoryLayout<Float>.size)
            var info = mpg123_frameinfo2()
            if mpg123_info2(h, &info) == MPG123_OK.rawValue {
                if info.vbr == Int32(MPG123_CBR.rawValue), info.bitrate > 0 { bitrate = Int(info.bitrate) }
            }
            if bitrate == nil, let bytes = source.length, length > 0 {
                bitrate = Int((Double(bytes) * 8 / (Double(length) / Double(rate)) / 1000).rounded())
            }
        }
    }

    /// Opens the handle on the source, from its start: a file's descriptor directly (libmpg123
    /// reads a frame or two at a time: through callbacks that was 2.3 M instructions a minute
    /// of ours), any other source through the reader callbacks.
    private func open() throws(MediaError) {
        try source.seek(to: 0)
        box.restart()
        if let fd = source.fileDescriptor {
            lseek(fd, 0, SEEK_SET)
            try check(mpg123_open_fd(handle, fd))
        } else {
            try check(mpg123_open_handle(handle, Unmanaged.passUnretained(box).toOpaque()))
        }
    }

    deinit {
        mpg123_close(handle)
        mpg123_delete(handle)
        scratch?.deallocate()
    }

    private func check(_ code: Int32) throws(MediaError) {
        guard code == MPG123_OK.rawValue else { throw currentError(code) }
    }

    /// The error for a libmpg123 result: a reader callback's own error first (libmpg123 only
    /// saw -1), else libmpg123's message as corrupt data.
    private func currentError(_ code: Int32) -> MediaError {
        if let e = box.error { return e }
        let c = code == MPG123_ERR.rawValue ? mpg123_errcode(handle) : code
        let msg = c == MPG123_ERR.rawValue ? String(cString: mpg123_strerror(handle))
            : String(cString: mpg123_plain_strerror(c))
        return MediaError(.corrupt, msg, library: "libmpg123", code: c, item: path)
    }

    /// At the end of the stream: the error when the header promised more than the file holds
    /// (the file was cut short), else nil.
    private var truncation: MediaError? {
        guard lengthFromHeader && position < length - 1152 else { return nil }
        return MediaError(.truncated, "it ends after \(position) of \(length) frames", item: path)
    }

    /// Decodes the next MPEG frame straight into `buffer`, with no copy: libmpg123's synthesis
    /// writes there itself (`mpg123_replace_buffer` + `mpg123_decode_frame`). When `buffer` holds
    /// less than ``maxFrameBytes`` (the free space of a ring, up to its end), the frame is decoded
    /// into the decoder's own buffer and copied to `buffer`, then on into `rest` (the ring's
    /// start). A frame may yield no bytes (gapless trimming, a frame skipped after a seek).
    /// Returns the bytes written (whole frames) and whether more follows.
    ///
    /// - Throws: `MediaError` when the stream is broken, and when `buffer` and `rest` together
    ///   hold less than ``maxFrameBytes``.
    public func decode(into buffer: UnsafeMutableRawBufferPointer,
                       spillingInto rest: UnsafeMutableRawBufferPointer = .init(start: nil, count: 0))
        throws(MediaError) -> (bytes: Int, status: DecodeStatus) {
        guard buffer.count + rest.count >= maxFrameBytes else {
            throw MediaError(.io, "buffer of \(buffer.count + rest.count) bytes is smaller than a frame (\(maxFrameBytes))",
                             library: "libmpg123", code: MPG123_NO_SPACE.rawValue, item: path)
        }
        // The decoder's own buffer: where libmpg123 is left pointing between frames (nothing it
        // does then writes into the caller's memory), and the frame's room when `buffer` is short.
        let own: UnsafeMutableRawPointer
        if let scratch { own = scratch } else {
            own = UnsafeMutableRawPointer.allocate(byteCount: max(1, maxFrameBytes), alignment: 16)
            scratch = own
        }
        let inPlace = buffer.count >= maxFrameBytes
        let target = inPlace ? buffer.baseAddress ?? own : own
        mpg123_replace_buffer(handle, target, inPlace ? buffer.count : maxFrameBytes)
        var audio: UnsafeMutablePointer<UInt8>?
        var bytes = 0
        let r = mpg123_decode_frame(handle, nil, &audio, &bytes)
        if inPlace { mpg123_replace_buffer(handle, own, maxFrameBytes) }
        switch r {
        case MPG123_OK.rawValue:
            // libmpg123 moves a trimmed frame's audio to the start of a buffer it does not own.
            let start = audio.map(UnsafeRawPointer.init) ?? UnsafeRawPointer(target)
            // On some broken streams libmpg123 1.31 hands back the buffer it had before
            // `mpg123_replace_buffer` (freed by that call) for a frame: audio outside the buffer it
            // was given is never read (fuzz finding, decoder/mpg123-stale-buffer); the frame is
            // dropped, as a frame libmpg123 could not decode.
            let given = UnsafeRawPointer(target)
            guard start >= given, bytes >= 0, start + bytes <= given + (inPlace ? buffer.count : maxFrameBytes) else {
                return (0, .more)
            }
            guard try formatGuard.admits(rate: output.rate, channels: output.channels, library: "libmpg123", item: path) else {
                return (0, .more)
            }
            if inPlace {
                if start != UnsafeRawPointer(target), bytes > 0 { target.copyMemory(from: start, byteCount: bytes) }
            } else {
                let first = min(bytes, buffer.count)
                if first > 0, let dst = buffer.baseAddress { dst.copyMemory(from: start, byteCount: first) }
                if bytes > first, let dst = rest.baseAddress { dst.copyMemory(from: start + first, byteCount: bytes - first) }
            }
            position += bytes / format.bytesPerFrame
            return (bytes, .more)
        case MPG123_NEW_FORMAT.rawValue:
            // (Always float32: only the rate and channels can change.)
            var rate = 0, channels: Int32 = 0, enc: Int32 = 0
            mpg123_getformat(handle, &rate, &channels, &enc)
            output = (rate, Int(channels))
            return (0, .more)
        case MPG123_DONE.rawValue:
            if let e = truncation { throw e }
            return (0, .done)
        default:
            throw currentError(r)
        }
    }

    /// Moves to `frame` (sample-accurate, counted from the start after gapless trimming).
    public func seek(toFrame frame: Int) throws(MediaError) {
        let r = mpg123_seek(handle, off_t(max(0, min(frame, length))), SEEK_SET)
        if r < 0 { throw currentError(Int32(r)) }
        position = Int(r)
    }

    /// The file's tags (``ID3Scan``, when the source can seek: read where libmpg123 is not,
    /// its position put back) and libmpg123's first picture, front cover preferred.
    private func readMetadata() -> TrackMetadata {
        var meta = TrackMetadata()
        if source.isSeekable {
            let at = source.position
            meta = ID3Scan.metadata(source)
            try? source.seek(to: at)
        }
        var v2: UnsafeMutablePointer<mpg123_id3v2>?
        guard mpg123_id3(handle, nil, &v2) == MPG123_OK.rawValue, let t = v2?.pointee else { return meta }
        var best: mpg123_picture?
        for i in 0..<t.pictures where best == nil || t.picture[i].type == 3 { best = t.picture[i] }
        if let p = best, let data = p.data, p.size > 0 {
            meta.artwork = .init(data: Array(UnsafeBufferPointer(start: data, count: p.size)),
                                 mimeType: Self.string(p.mime_type) ?? "application/octet-stream")
        }
        return meta
    }

    private static func string(_ s: mpg123_string) -> String? {
        guard let p = s.p, s.fill > 1 else { return nil }
        let v = String(cString: p).trimmingBlanks()
        return v.isEmpty ? nil : v
    }
}

// libmpg123's reader callbacks: the handle is the decoder's `SourceBox`.

private func mpg123Read(_ box: UnsafeMutableRawPointer?, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    SourceBox.from(box).read(buffer, count)
}

private func mpg123Seek(_ box: UnsafeMutableRawPointer?, _ offset: off_t, _ whence: Int32) -> off_t {
    off_t(SourceBox.from(box).seek(Int64(offset), whence))
}
