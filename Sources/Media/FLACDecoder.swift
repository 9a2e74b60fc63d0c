import CFLAC
import MediaCore

extension DecoderPlugin {
    /// Native FLAC through libFLAC's stream decoder (reading the `ByteSource`).
    public static let flac = DecoderPlugin(
        name: "flac", formatName: "FLAC", suffixes: ["flac"], mimeTypes: ["audio/flac", "audio/x-flac"],
        matches: { Sniff.has($0, "fLaC") },
        open: { (source, options) throws(MediaError) in try FLACDecoder(source: source, options: options) },
        info: { (source) throws(MediaError) in try FLACDecoder.info(source) })
}

/// FLAC: 4 to 32 bits, any rate libFLAC takes, 1 to 8 channels (more than two as the output
/// takes them, else down-mixed, see ``Downmix``), exact length from `STREAMINFO`, sample-exact seeks (libFLAC uses the seek
/// table, or searches). Tags (`VORBIS_COMMENT`) and the picture (`PICTURE`) are read from the
/// metadata blocks in Swift, as the registry's tag reader does without libFLAC.
///
/// Not thread-safe: one decoder belongs to one thread.
public final class FLACDecoder: AudioDecoder {
    public let source: any ByteSource
    public let format: StreamFormat
    public let encoding: SampleEncoding
    public let sourceChannels: Int
    public let lengthFrames: Int?
    public let metadata: TrackMetadata
    public let bitrate: Int?
    public var minimumRoom: Int { format.bytesPerFrame }

    private let decoder: UnsafeMutablePointer<FLAC__StreamDecoder>
    private let stage: PCMStage
    /// Bits per sample of the stream: samples are scaled by 2^-(bits-1).
    private let bits: Int
    /// An error met in a callback (libFLAC reports only a state).
    fileprivate var callbackError: MediaError?
    /// A decoding error libFLAC reported (lost sync, bad header, CRC mismatch).
    fileprivate var streamError: FLAC__StreamDecoderErrorStatus?
    /// Frames delivered (from the start, seeks included).
    private var position = 0
    private var ended = false

    /// Opens the stream: reads `STREAMINFO` and the tags, then starts libFLAC on the source.
    public init(source: any ByteSource, options: DecoderOptions = .stereo) throws(MediaError) {
        self.source = source
        let info = try Self.info(source)
        guard let f = info.format, case .integer(let bits)? = info.encoding else {
            throw MediaError(.corrupt, "no STREAMINFO block", item: source.name)
        }
        guard (1...8).contains(f.channels), f.rate > 0, (4...32).contains(bits) else {
            throw MediaError(.unsupportedFormat, "FLAC with \(f.channels) channels at \(f.rate) Hz, \(bits) bits", item: source.name)
        }
        sourceChannels = f.channels
        stage = PCMStage(maxFrames: 4096, sourceChannels: f.channels, output: options.outputChannels())
        format = StreamFormat(rate: f.rate, channels: stage.channels)
        encoding = .integer(bits: bits)
        self.bits = bits
        lengthFrames = info.lengthFrames
        metadata = info.metadata
        bitrate = info.bitrate
        guard let d = FLAC__stream_decoder_new() else {
            throw MediaError(.io, "cannot allocate a decoder", library: "libFLAC", item: source.name)
        }
        decoder = d
        try source.seek(to: 0)
        let status = FLAC__stream_decoder_init_stream(
            d, flacRead, flacSeek, flacTell, flacLength, flacEOF, flacWrite, nil, flacError,
            Unmanaged.passUnretained(self).toOpaque())
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else {
            throw MediaError(.corrupt, "cannot start decoding", library: "libFLAC", code: Int32(status.rawValue), item: source.name)
        }
        guard FLAC__stream_decoder_process_until_end_of_metadata(d) != 0 else { throw failure("reading the metadata") }
    }

    deinit {
        FLAC__stream_decoder_finish(decoder)
        FLAC__stream_decoder_delete(decoder)
    }

    /// The error for the decoder's state: a callback's own error first.
    private func failure(_ doing: String) -> MediaError {
        if let callbackError { return callbackError }
        if let streamError { return Self.streamErrorText(streamError, source.name) }
        let state = FLAC__stream_decoder_get_state(decoder)
        return MediaError(.corrupt, "\(doing): \(String(cString: FLAC__stream_decoder_get_resolved_state_string(decoder)))",
                          library: "libFLAC", code: Int32(state.rawValue), item: source.name)
    }

    private static func streamErrorText(_ e: FLAC__StreamDecoderErrorStatus, _ item: String) -> MediaError {
        let what = switch e {
        case FLAC__STREAM_DECODER_ERROR_STATUS_LOST_SYNC: "lost sync"
        case FLAC__STREAM_DECODER_ERROR_STATUS_BAD_HEADER: "bad frame header"
        case FLAC__STREAM_DECODER_ERROR_STATUS_FRAME_CRC_MISMATCH: "frame CRC mismatch"
        default: "unparseable stream"
        }
        return MediaError(.corrupt, what, library: "libFLAC", code: Int32(e.rawValue), item: item)
    }

    public func decode(into buffer: UnsafeMutableRawBufferPointer, spillingInto rest: UnsafeMutableRawBufferPointer)
        throws(MediaError) -> (bytes: Int, status: DecodeStatus) {
        if stage.pending == 0 {
            if ended { return (0, .done) }
            streamError = nil
            guard FLAC__stream_decoder_process_single(decoder) != 0 else { throw failure("decoding") }
            if FLAC__stream_decoder_get_state(decoder) == FLAC__STREAM_DECODER_END_OF_STREAM, stage.pending == 0 {
                ended = true
                if let lengthFrames, position < lengthFrames {
                    throw MediaError(.truncated, "it ends after \(position) of \(lengthFrames) frames", item: source.name)
                }
                return (0, .done)
            }
            if stage.pending == 0, let streamError { throw Self.streamErrorText(streamError, source.name) }
        }
        // Never past the length STREAMINFO declares (the stream's length, as every reader takes
        // it): frames beyond it are dropped (fuzz finding decoder/flac-past-length: 8,192 frames
        // of a stream declaring 5,512, a position past the duration).
        var (into, spill) = (buffer, rest)
        if let lengthFrames {
            let room = max(0, lengthFrames - position) * format.bytesPerFrame
            if room == 0 {
                stage.clear()
                ended = true
                return (0, .done)
            }
            if into.count >= room {
                into = UnsafeMutableRawBufferPointer(rebasing: into[0..<room])
                spill = UnsafeMutableRawBufferPointer(start: nil, count: 0)
            } else if into.count + spill.count > room {
                spill = UnsafeMutableRawBufferPointer(rebasing: spill[0..<(room - into.count)])
            }
        }
        let bytes = stage.drain(into: into, spill)
        position += bytes / format.bytesPerFrame
        return (bytes, .more)
    }

    public func seek(toFrame frame: Int) throws(MediaError) {
        stage.clear()
        ended = false
        let target = max(0, min(frame, lengthFrames ?? frame))
        if let lengthFrames, target >= lengthFrames {
            position = lengthFrames
            ended = true
            return
        }
        guard FLAC__stream_decoder_seek_absolute(decoder, FLAC__uint64(target)) != 0 else {
            let e = failure("seeking")
            if FLAC__stream_decoder_get_state(decoder) == FLAC__STREAM_DECODER_SEEK_ERROR { FLAC__stream_decoder_flush(decoder) }
            throw e
        }
        position = target
    }

    /// Called by libFLAC with one decoded frame (planar int32).
    fileprivate func write(_ frame: UnsafePointer<FLAC__Frame>, _ planes: UnsafePointer<UnsafePointer<FLAC__int32>?>) -> Bool {
        let h = frame.pointee.header
        let n = Int(h.blocksize)
        guard Int(h.channels) == sourceChannels, Int(h.bits_per_sample) == bits, Int(h.sample_rate) == format.rate else {
            callbackError = MediaError(.unsupportedFormat, "the format changes mid-stream", item: source.name)
            return false
        }
        let scale = 1 / Float(1 << (bits - 1))
        stage.putPlanar(n, channels: sourceChannels, scale: scale) { c, i in Float(planes[c]![i]) }
        return true
    }

    // MARK: Metadata without libFLAC

    /// `STREAMINFO`, `VORBIS_COMMENT` and `PICTURE` from the metadata blocks (after any ID3v2
    /// tag in front), read from `source`'s start.
    static func info(_ source: any ByteSource) throws(MediaError) -> TrackInfo {
        var offset = 0
        if let header = source.read(count: 10, at: 0), let tag = ID3Scan.tagSize(header) { offset = tag }
        guard let magic = source.read(count: 4, at: offset), Sniff.has(magic, "fLaC") else {
            throw MediaError(.unsupportedFormat, "not FLAC", item: source.name)
        }
        offset += 4
        var info = TrackInfo()
        var pictureType: UInt32?
        var audioStart = 0
        while true {
            guard let h = source.read(count: 4, at: offset) else {
                throw MediaError(.truncated, "it ends inside the metadata", item: source.name)
            }
            let last = h[0] & 0x80 != 0, type = h[0] & 0x7F
            let size = Int(h[1]) << 16 | Int(h[2]) << 8 | Int(h[3])
            offset += 4
            // Only the blocks read here are loaded (a padding block or a huge application block is skipped).
            let limit = 64 << 20
            if type == 0 || type == 4 || type == 6, size <= limit {
                guard let body = source.read(count: size, at: offset) else {
                    throw MediaError(.truncated, "it ends inside a metadata block", item: source.name)
                }
                switch type {
                case 0:
                    guard body.count >= 18 else { throw MediaError(.corrupt, "STREAMINFO too short", item: source.name) }
                    let rate = Int(body[10]) << 12 | Int(body[11]) << 4 | Int(body[12]) >> 4
                    let channels = Int((body[12] >> 1) & 7) + 1
                    let bits = Int((body[12] & 1) << 4 | body[13] >> 4) + 1
                    let total = Int(body[13] & 0x0F) << 32 | Int(body[14]) << 24 | Int(body[15]) << 16 | Int(body[16]) << 8 | Int(body[17])
                    info.format = StreamFormat(rate: rate, channels: channels)
                    info.encoding = .integer(bits: bits)
                    info.lengthFrames = total > 0 ? total : nil
                case 4:
                    VorbisComments.parse(body[...], into: &info.metadata)
                default:
                    if let p = FLACPicture.parse(body[...]), info.metadata.artwork == nil || (p.type == 3 && pictureType != 3) {
                        info.metadata.artwork = p.artwork
                        pictureType = p.type
                    }
                }
            }
            offset += size
            if last { audioStart = offset; break }
        }
        if let length = source.length, let duration = info.duration, duration > 0 {
            info.bitrate = Int((Double(length - audioStart) * 8 / duration / 1000).rounded())
        }
        try source.seek(to: 0)
        return info
    }
}

// libFLAC's callbacks: the client data is the decoder (unretained; it owns the libFLAC decoder).

private func flacDecoder(_ p: UnsafeMutableRawPointer?) -> FLACDecoder {
    Unmanaged<FLACDecoder>.fromOpaque(p!).takeUnretainedValue()
}

private func flacRead(_: UnsafePointer<FLAC__StreamDecoder>?, _ buffer: UnsafeMutablePointer<FLAC__byte>?,
                      _ bytes: UnsafeMutablePointer<Int>?, _ client: UnsafeMutableRawPointer?) -> FLAC__StreamDecoderReadStatus {
    let d = flacDecoder(client)
    guard let buffer, let bytes, bytes.pointee > 0 else { return FLAC__STREAM_DECODER_READ_STATUS_ABORT }
    do {
        let n = try d.source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: bytes.pointee))
        bytes.pointee = n
        return n == 0 ? FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM : FLAC__STREAM_DECODER_READ_STATUS_CONTINUE
    } catch {
        d.callbackError = error
        bytes.pointee = 0
        return FLAC__STREAM_DECODER_READ_STATUS_ABORT
    }
}

private func flacSeek(_: UnsafePointer<FLAC__StreamDecoder>?, _ offset: FLAC__uint64,
                      _ client: UnsafeMutableRawPointer?) -> FLAC__StreamDecoderSeekStatus {
    let d = flacDecoder(client)
    guard d.source.isSeekable else { return FLAC__STREAM_DECODER_SEEK_STATUS_UNSUPPORTED }
    do {
        try d.source.seek(to: Int(offset))
        return FLAC__STREAM_DECODER_SEEK_STATUS_OK
    } catch {
        d.callbackError = error
        return FLAC__STREAM_DECODER_SEEK_STATUS_ERROR
    }
}

private func flacTell(_: UnsafePointer<FLAC__StreamDecoder>?, _ offset: UnsafeMutablePointer<FLAC__uint64>?,
                      _ client: UnsafeMutableRawPointer?) -> FLAC__StreamDecoderTellStatus {
    let d = flacDecoder(client)
    guard d.source.isSeekable else { return FLAC__STREAM_DECODER_TELL_STATUS_UNSUPPORTED }
    offset?.pointee = FLAC__uint64(d.source.position)
    return FLAC__STREAM_DECODER_TELL_STATUS_OK
}

private func flacLength(_: UnsafePointer<FLAC__StreamDecoder>?, _ length: UnsafeMutablePointer<FLAC__uint64>?,
                        _ client: UnsafeMutableRawPointer?) -> FLAC__StreamDecoderLengthStatus {
    guard let n = flacDecoder(client).source.length else { return FLAC__STREAM_DECODER_LENGTH_STATUS_UNSUPPORTED }
    length?.pointee = FLAC__uint64(n)
    return FLAC__STREAM_DECODER_LENGTH_STATUS_OK
}

private func flacEOF(_: UnsafePointer<FLAC__StreamDecoder>?, _ client: UnsafeMutableRawPointer?) -> FLAC__bool {
    let s = flacDecoder(client).source
    guard let n = s.length else { return 0 }
    return s.position >= n ? 1 : 0
}

private func flacWrite(_: UnsafePointer<FLAC__StreamDecoder>?, _ frame: UnsafePointer<FLAC__Frame>?,
                       _ buffer: UnsafePointer<UnsafePointer<FLAC__int32>?>?,
                       _ client: UnsafeMutableRawPointer?) -> FLAC__StreamDecoderWriteStatus {
    guard let frame, let buffer else { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
    return flacDecoder(client).write(frame, buffer) ? FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE : FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
}

private func flacError(_: UnsafePointer<FLAC__StreamDecoder>?, _ status: FLAC__StreamDecoderErrorStatus,
                       _ client: UnsafeMutableRawPointer?) {
    flacDecoder(client).streamError = status
}
