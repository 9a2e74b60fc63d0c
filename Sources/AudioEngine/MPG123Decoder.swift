import CMPG123
import Platform

#if canImport(Glibc)
import Glibc
#endif

/// An error from libmpg123: the C code, its message, and the file it concerns.
public struct MPG123Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `mpg123_errors` code (`MPG123_ERR` = -1 when the handle's code was not available).
    public var code: Int32
    /// libmpg123's message for the code, or our own explanation.
    public var message: String
    /// The file being decoded.
    public var path: String

    /// An error for the file at `path`.
    /// - Parameters:
    ///   - code: The `mpg123_errors` code (`-1` when it did not come from libmpg123).
    ///   - message: What went wrong, for people.
    ///   - path: The file being decoded.
    public init(code: Int32, message: String, path: String) {
        self.code = code
        self.message = message
        self.path = path
    }

    /// The file, the message and the code, for people.
    public var description: String { "\(path): \(message) (mpg123 code \(code))" }
}

/// A file's tags: every value as mpd 0.23 reads it (``tags``, ``comments``), and the first
/// values as single fields.
///
/// For an MP3: its ID3v2 tag at the start, or else its ID3v1 tag (see ``MPG123Decoder``).
public struct TrackMetadata: Sendable, Equatable {
    /// Every tag value, in the order mpd's scan finds them (for ID3: all `TPE1` values, then
    /// `TPE2`, …, see ``TagKey``), each value of a multi-valued tag its own entry, as mpd stores
    /// them (``addTag(_:_:)``): what mpd prints for the song, one line each.
    public var tags: [Tag] = []
    /// Every name/value pair in file order (for ID3: each `TXXX` frame's description and
    /// value), unfiltered: what mpd's `readcomments` prints from, after its own filter.
    public var comments: [TagPair] = []
    /// The title: the first ``TagKey/title``.
    public var title: String?
    /// The performing artist: the first ``TagKey/artist``.
    public var artist: String?
    /// The album: the first ``TagKey/album``.
    public var album: String?
    /// The album artist: the first ``TagKey/albumArtist``.
    public var albumArtist: String?
    /// The track number: the first of the first track value (`TRCK` "3/9" gives 3).
    public var trackNumber: Int?
    /// The number of tracks on the album: the total of the first track value ("3/9" gives 9).
    public var trackCount: Int?
    /// The disc number: the first of the first disc value (`TPOS` "1/2" gives 1).
    public var discNumber: Int?
    /// The number of discs: the total of the first disc value ("1/2" gives 2).
    public var discCount: Int?
    /// The genre: the first ``TagKey/genre`` (an ID3v1 genre number is its name, `17` is `Rock`).
    public var genre: String?
    /// The composer: the first ``TagKey/composer``.
    public var composer: String?
    /// The year or recording date: the first ``TagKey/date``, as written (`TDRC`; ID3v2.3
    /// `TYER`, with `TDAT` and `TIME` when present).
    public var year: String?
    /// The first embedded picture (APIC), front cover preferred.
    public var artwork: Artwork?

    /// No tags: every field absent.
    public init() {}

    /// Embedded picture bytes and their MIME type.
    public struct Artwork: Sendable, Equatable {
        /// The picture's bytes, as stored in the tag (PNG, JPEG, …).
        public var data: [UInt8]
        /// The picture's MIME type, as the tag gives it (`image/jpeg`, `image/png`).
        public var mimeType: String
        /// A picture from its bytes and MIME type.
        /// - Parameters:
        ///   - data: The picture's bytes.
        ///   - mimeType: Their MIME type.
        public init(data: [UInt8], mimeType: String) {
            self.data = data
            self.mimeType = mimeType
        }
    }
}

/// The PCM format of decoded audio: interleaved native-endian float32.
public struct StreamFormat: Sendable, Equatable, CustomStringConvertible {
    /// Frames per second.
    public var rate: Int
    /// 1 (mono) or 2 (stereo).
    public var channels: Int
    /// Bytes per frame (4 × channels).
    public var bytesPerFrame: Int { 4 * channels }

    /// A float32 format with `rate` frames per second and `channels` channels.
    /// - Parameters:
    ///   - rate: Frames per second.
    ///   - channels: 1 (mono) or 2 (stereo).
    public init(rate: Int, channels: Int) {
        self.rate = rate
        self.channels = channels
    }

    /// The rate and channels, for people (`44100 Hz stereo f32`).
    public var description: String { "\(rate) Hz \(channels == 1 ? "mono" : "stereo") f32" }
}

/// A thin typed wrapper over one `mpg123_handle`, decoding one file to float32.
///
/// Tags (``metadata``) are read from the file as mpd 0.23 reads them (libid3tag and its
/// `Id3Scan.cxx`): see ``TrackMetadata/tags``. The artwork comes from libmpg123.
///
/// Gapless decoding is on (LAME/Info encoder delay and padding removed), the length is exact
/// (`mpg123_scan` when the file has no Info header), seeking is sample-accurate.
/// Not thread-safe: one decoder belongs to one thread (the decoder thread), as the handle does.
public final class MPG123Decoder {
    private let handle: OpaquePointer
    /// The file being decoded.
    public let path: String
    /// The output format (fixed for the whole file: libmpg123 is told not to change it).
    public private(set) var format: StreamFormat
    /// Exact length in frames.
    public private(set) var lengthFrames: Int
    /// Tags from the file.
    public private(set) var metadata: TrackMetadata
    /// Whether ``lengthFrames`` came from the file's Info header (not a scan): then a stream that
    /// ends early is reported as truncated.
    public private(set) var lengthFromHeader = false
    /// Frames delivered so far (from the start of the file, seeks included).
    public private(set) var position = 0
    /// Duration in seconds.
    public var duration: Double { Double(lengthFrames) / Double(format.rate) }
    /// The most bytes one MPEG frame decodes to (`mpg123_outblock`): the room
    /// ``decodeFrame(into:spillingInto:)`` needs.
    public private(set) var maxFrameBytes = 0
    /// The decoder's own one-frame buffer (``maxFrameBytes``): libmpg123 is pointed back at it
    /// after each ``decodeFrame(into:spillingInto:)`` (so nothing it does between frames writes
    /// into the caller's memory), and a frame too big for the caller's first buffer is decoded
    /// here. nil until the first ``decodeFrame(into:spillingInto:)`` (libmpg123 keeps its own).
    private var scratch: UnsafeMutableRawPointer?

    /// Opens `path` and reads its format, exact length and tags.
    /// - Parameters:
    ///   - path: The file.
    ///   - root: When given, the file opened must lie beneath this directory (resolved, no
    ///     links), checked on the opened descriptor (Platform's `Confinement`): a link swapped in
    ///     after the path was checked cannot lead out of it.
    /// - Throws: ``MPG123Error`` naming the file, when it is missing, not a file, outside `root`,
    ///   or not MPEG audio.
    public convenience init(path: String, beneath root: String? = nil) throws {
        // Opened without blocking and checked before libmpg123 reads it: a FIFO, a socket or a
        // device named like a music file is refused at once, never waited on.
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else {
            let e = errno
            throw MPG123Error(code: MPG123_BAD_FILE.rawValue, message: e == ENOENT ? "no such file" : String(cString: strerror(e)), path: path)
        }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            let kind = switch st.st_mode & S_IFMT {
            case S_IFDIR: "a directory"
            case S_IFIFO: "a FIFO"
            case S_IFSOCK: "a socket"
            case S_IFCHR, S_IFBLK: "a device"
            default: "not a regular file"
            }
            Glibc.close(fd)
            throw MPG123Error(code: MPG123_BAD_FILE.rawValue, message: "is \(kind), not a regular file", path: path)
        }
        if let problem = Confinement.problem(descriptor: fd, beneath: root) {
            Glibc.close(fd)
            throw MPG123Error(code: MPG123_BAD_FILE.rawValue, message: problem, path: path)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        try self.init(source: .ownedDescriptor(fd), name: path)
    }

    /// A fresh decoder of the same open file (a duplicate of this one's descriptor): what a
    /// seek opens, so that a file deleted or replaced since it began playing still seeks
    /// within what is playing, as a fresh open of it would (bit for bit).
    /// - Throws: ``MPG123Error`` when the descriptor cannot be duplicated (or the decoder was
    ///   made from a caller's descriptor).
    public func reopened() throws -> MPG123Decoder {
        guard ownedFD >= 0 else { throw MPG123Error(code: MPG123_BAD_FILE.rawValue, message: "not opened by path", path: path) }
        let fd = fcntl(ownedFD, F_DUPFD_CLOEXEC, 0)
        guard fd >= 0 else { throw MPG123Error(code: MPG123_BAD_FILE.rawValue, message: String(cString: strerror(errno)), path: path) }
        return try MPG123Decoder(source: .ownedDescriptor(fd), name: path)
    }

    /// Decodes from an open, seekable file descriptor (which stays open and owned by the caller;
    /// decoding starts from its beginning). `name` labels errors.
    public convenience init(fileDescriptor fd: Int32, name: String) throws {
        try self.init(source: .fileDescriptor(fd), name: name)
    }

    private enum Source {
        /// The caller's descriptor.
        case fileDescriptor(Int32)
        /// A descriptor this decoder opened, closed with it.
        case ownedDescriptor(Int32)
    }

    /// The descriptor to close with the decoder (-1: none).
    private let ownedFD: Int32

    private init(source: Source, name path: String) throws {
        self.path = path
        if case .ownedDescriptor(let fd) = source { ownedFD = fd } else { ownedFD = -1 }
        let fd: Int32 = switch source { case .fileDescriptor(let fd), .ownedDescriptor(let fd): fd }
        func open(_ h: OpaquePointer) -> Int32 {
            lseek(fd, 0, SEEK_SET)
            return mpg123_open_fd(h, fd)
        }
        var err: Int32 = 0
        guard let h = mpg123_new(nil, &err) else {
            if ownedFD >= 0 { Glibc.close(ownedFD) }
            throw MPG123Error(code: err, message: String(cString: mpg123_plain_strerror(err)), path: path)
        }
        handle = h
        format = StreamFormat(rate: 0, channels: 0)
        lengthFrames = 0
        metadata = TrackMetadata()
        // Every stored property is set: from here a throw runs deinit, which frees the handle.
        do {
            try check(mpg123_param2(h, Int32(MPG123_ADD_FLAGS.rawValue), Int(MPG123_QUIET.rawValue | MPG123_PICTURE.rawValue
                | MPG123_GAPLESS.rawValue | MPG123_NO_FRANKENSTEIN.rawValue), 0))
            try check(mpg123_param2(h, Int32(MPG123_REMOVE_FLAGS.rawValue), Int(MPG123_AUTO_RESAMPLE.rawValue), 0))
            try check(mpg123_format_none(h))
            try check(mpg123_format2(h, 0, Int32(MPG123_MONO.rawValue | MPG123_STEREO.rawValue),
                                     Int32(MPG123_ENC_FLOAT_32.rawValue)))
            try check(open(h))
            var rate = 0, channels: Int32 = 0, enc: Int32 = 0
            let r = mpg123_getformat(h, &rate, &channels, &enc)
            if r == MPG123_DONE.rawValue || r == MPG123_NEED_MORE.rawValue {
                throw MPG123Error(code: r, message: "no MPEG audio frames found (empty or not an MP3 file)", path: path)
            }
            try check(r)
            guard enc == Int32(MPG123_ENC_FLOAT_32.rawValue), channels == 1 || channels == 2, rate > 0 else {
                throw MPG123Error(code: MPG123_BAD_OUTFORMAT.rawValue,
                                  message: "unsupported stream format (\(rate) Hz, \(channels) channels)", path: path)
            }
            format = StreamFormat(rate: rate, channels: Int(channels))
            metadata = readMetadata(descriptor: fd)
            // Exact length: from the LAME/Info header when there is one (libmpg123 then reports
            // accurate positions); otherwise scan every frame, and reopen, because decoding after
            // the scan's seek back to 0 differs from a fresh decode in the first frames of
            // MPEG-2 streams by rounding, and a fresh open is bit-exact.
            var accurate = 0
            var unused = 0.0
            mpg123_getstate2(h, Int32(MPG123_ACCURATE.rawValue), &accurate, &unused)
            lengthFromHeader = accurate == 1
            if !lengthFromHeader {
                try check(mpg123_scan(h))
                mpg123_close(h)
                try check(open(h))
                try check(mpg123_getformat(h, &rate, &channels, &enc))
            }
            let length = mpg123_length(h)
            guard length > 0 else {
                throw MPG123Error(code: MPG123_ERR.rawValue, message: "no audio frames", path: path)
            }
            lengthFrames = length
            maxFrameBytes = mpg123_outblock(h)
        }
    }

    deinit {
        mpg123_close(handle)
        mpg123_delete(handle)
        scratch?.deallocate()
        if ownedFD >= 0 { Glibc.close(ownedFD) }
    }

    private func check(_ code: Int32) throws {
        guard code == MPG123_OK.rawValue else { throw currentError(code) }
    }

    private func currentError(_ code: Int32) -> MPG123Error {
        let c = code == MPG123_ERR.rawValue ? mpg123_errcode(handle) : code
        let msg = c == MPG123_ERR.rawValue ? String(cString: mpg123_strerror(handle))
            : String(cString: mpg123_plain_strerror(c))
        return MPG123Error(code: c, message: msg, path: path)
    }

    /// What one ``read(into:)`` produced.
    public enum ReadStatus: Sendable, Equatable {
        /// More audio follows.
        case more
        /// The end of the stream: no more audio.
        case done
    }

    /// Decodes into `buffer` (whole frames), returning the bytes written and whether more follows.
    ///
    /// Bytes are returned together with an end or error: callers must keep what was written
    /// before acting on the status. A decoding error after some audio throws only on the next call.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> (bytes: Int, status: ReadStatus) {
        if let e = pendingError { throw e }
        var done = 0
        let r = mpg123_read(handle, buffer.baseAddress, buffer.count, &done)
        position += done / format.bytesPerFrame
        switch r {
        case MPG123_OK.rawValue, MPG123_NEW_FORMAT.rawValue:
            return (done, .more)
        case MPG123_DONE.rawValue:
            if let e = truncation {
                pendingError = e
                return (done, .more)
            }
            return (done, .done)
        default:
            if done > 0 { pendingError = currentError(r); return (done, .more) }
            throw currentError(r)
        }
    }
    private var pendingError: MPG123Error?

    /// At the end of the stream: the error when the header promised more than the file holds
    /// (the file was cut short), else nil.
    private var truncation: MPG123Error? {
        guard lengthFromHeader && position < lengthFrames - 1152 else { return nil }
        return MPG123Error(code: MPG123_ERR.rawValue,
                           message: "file is truncated: it ends after \(position) of \(lengthFrames) frames", path: path)
    }

    /// Decodes the next MPEG frame straight into `buffer`, with no copy: libmpg123's synthesis
    /// writes there itself (`mpg123_replace_buffer` + `mpg123_decode_frame`). When `buffer` holds
    /// less than ``maxFrameBytes`` (the free space of a ring, up to its end), the frame is decoded
    /// into the decoder's own buffer and copied to `buffer`, then on into `rest` (the ring's
    /// start). A frame may yield no bytes (gapless trimming, a frame skipped after a seek).
    /// Returns the bytes written (whole frames) and whether more follows.
    ///
    /// Use this or ``read(into:)`` for a whole stream, not both: libmpg123 drops what a
    /// ``read(into:)`` left decoded when a frame is decoded this way.
    /// - Throws: ``MPG123Error`` when the stream is broken, and when `buffer` and `rest` together
    ///   hold less than ``maxFrameBytes``.
    public func decodeFrame(into buffer: UnsafeMutableRawBufferPointer,
                            spillingInto rest: UnsafeMutableRawBufferPointer = .init(start: nil, count: 0))
        throws -> (bytes: Int, status: ReadStatus) {
        if let e = pendingError { throw e }
        guard buffer.count + rest.count >= maxFrameBytes else {
            throw MPG123Error(code: MPG123_NO_SPACE.rawValue,
                              message: "buffer of \(buffer.count + rest.count) bytes is smaller than a frame (\(maxFrameBytes))",
                              path: path)
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
            return (0, .more)  // (the format is fixed: only float32 at the file's own rate)
        case MPG123_DONE.rawValue:
            if let e = truncation { throw e }
            return (0, .done)
        default:
            throw currentError(r)
        }
    }

    /// Moves to `frame` (sample-accurate, counted from the start after gapless trimming).
    public func seek(toFrame frame: Int) throws {
        let r = mpg123_seek(handle, off_t(max(0, min(frame, lengthFrames))), SEEK_SET)
        if r < 0 { throw currentError(Int32(r)) }
        position = Int(r)
    }

    /// The file's tags (``ID3Scan``, read from `fd` with positioned reads) and libmpg123's
    /// first picture, front cover preferred.
    private func readMetadata(descriptor fd: Int32) -> TrackMetadata {
        var meta = ID3Scan.metadata(descriptor: fd)
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
