import MediaCore

/// An item's decoder with its audio stretched to another rate (``TimeStretcher``): what the
/// decoder thread writes into the ring at a rate other than 1. Its frames are output frames:
/// `speed` content frames each. Made once the inner decoder is at the item's first frame; a
/// clip's end (`limit`, in content frames) is applied before the stretch.
final class StretchingDecoder: AudioDecoder {
    let inner: any AudioDecoder
    let speed: Double
    private let algorithm: TimePitchAlgorithm
    private var stretcher: any TimeStretcher
    /// Content frames left before the clip's end (nil: to the file's end).
    private var limit: Int?
    private var inputDone = false
    /// One inner block, decoded here before the stretch.
    private let scratch: UnsafeMutableRawBufferPointer
    /// Stretched frames for a ring region that wraps (taken here, then copied into both pieces).
    private var staging: UnsafeMutableBufferPointer<Float>

    init(_ inner: any AudioDecoder, speed: Double, algorithm: TimePitchAlgorithm, limit: Int?) throws(MediaError) {
        self.inner = inner
        self.speed = speed
        self.algorithm = algorithm
        self.limit = limit
        stretcher = try TimeStretchers.make(algorithm, rate: inner.format.rate, channels: inner.format.channels, speed: speed)
        // (Small: after a jump the output waits for the first block stretched; 2,048 frames is
        // 46 ms of a 44.1 kHz file decoded and stretched at a time.)
        scratch = .allocate(byteCount: max(inner.minimumRoom, 2048 * inner.format.bytesPerFrame), alignment: 16)
        staging = .allocate(capacity: 4096 * inner.format.channels)
    }

    deinit {
        scratch.deallocate()
        staging.deallocate()
    }

    var source: any ByteSource { inner.source }
    var format: StreamFormat { inner.format }
    var encoding: SampleEncoding { inner.encoding }
    var sourceChannels: Int { inner.sourceChannels }
    var formatName: String? { inner.formatName }
    /// Output frames: the inner length at this speed.
    var lengthFrames: Int? { inner.lengthFrames.map { Int((Double($0) / speed).rounded()) } }
    var lengthAccuracy: LengthAccuracy { inner.lengthAccuracy }
    var metadata: TrackMetadata { inner.metadata }
    var minimumRoom: Int { inner.minimumRoom }
    var bitrate: Int? { inner.bitrate }
    func takeMetadataUpdate() -> TrackMetadata? { inner.takeMetadataUpdate() }

    func decode(into buffer: UnsafeMutableRawBufferPointer, spillingInto rest: UnsafeMutableRawBufferPointer)
        throws(MediaError) -> (bytes: Int, status: DecodeStatus) {
        let bytesPerFrame = format.bytesPerFrame
        var bytes = take(into: buffer, rest, from: 0)
        // Room left: one more inner block in, and what it gives out. (Room full: what the
        // stretcher holds waits for the next call, so it never holds more than a block's worth
        // beyond the ring's room.)
        if !inputDone, bytes + bytesPerFrame <= buffer.count + rest.count {
            var (got, status) = try inner.decode(into: scratch, spillingInto: UnsafeMutableRawBufferPointer(start: nil, count: 0))
            var frames = got / bytesPerFrame
            if let l = limit {
                if frames >= l { (frames, status) = (l, .done) }
                limit = l - frames
            }
            inputDone = status == .done
            stretcher.put(scratch.baseAddress!.assumingMemoryBound(to: Float.self), frames: frames, final: inputDone)
            bytes += take(into: buffer, rest, from: bytes)
        }
        return (bytes, inputDone && stretcher.finished ? .done : .more)
    }

    /// Takes stretched frames into `a` from byte `from` on, then into `b`; the bytes written.
    private func take(into a: UnsafeMutableRawBufferPointer, _ b: UnsafeMutableRawBufferPointer, from: Int) -> Int {
        let bytesPerFrame = format.bytesPerFrame, channels = format.channels
        var written = from
        // Whole frames into `a` directly.
        let inA = (a.count - written) / bytesPerFrame
        if inA > 0 {
            written += bytesPerFrame * stretcher.take(a.baseAddress!.advanced(by: written).assumingMemoryBound(to: Float.self), maxFrames: inA)
            if (a.count - written) / bytesPerFrame > 0 { return written - from }  // the stretcher has no more
        }
        // The rest of `a` (less than a frame) and `b`, through the staging buffer.
        while written < a.count + b.count {
            let room = (a.count + b.count - written) / bytesPerFrame
            guard room > 0 else { break }
            let got = stretcher.take(staging.baseAddress!, maxFrames: min(room, staging.count / channels))
            if got == 0 { break }
            let n = got * bytesPerFrame, staged = UnsafeRawPointer(staging.baseAddress!)
            let toA = max(0, min(n, a.count - written))
            if toA > 0 { a.baseAddress!.advanced(by: written).copyMemory(from: staged, byteCount: toA) }
            if n > toA { b.baseAddress!.advanced(by: written + toA - a.count).copyMemory(from: staged + toA, byteCount: n - toA) }
            written += n
        }
        return written - from
    }

    /// Moves the inner decoder to content frame `frame`; the stretch starts again there.
    func seek(toFrame frame: Int) throws(MediaError) {
        try inner.seek(toFrame: frame)
        stretcher = try TimeStretchers.make(algorithm, rate: format.rate, channels: format.channels, speed: speed)
        inputDone = false
    }
}
