import CSoxr
import MediaCore

/// `TimePitchAlgorithm.varispeed`: no stretch, a resample (libsoxr, its high quality): the
/// item's audio taken as if recorded at `speed` times its rate, so it plays in 1/`speed` of the
/// time with its pitch `speed` times as high.
final class VarispeedStretcher: TimeStretcher {
    private let resampler: soxr_t
    private let channels: Int
    /// Output waiting to be taken (interleaved), and where the next take starts in it.
    private var out: [Float] = []
    private var outStart = 0
    private var flushed = false

    init(rate: Int, channels: Int, speed: Double) throws(MediaError) {
        _ = try SoxrLibrary.library.functions()
        var error: soxr_error_t?
        var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        io.flags |= UInt(SOXR_NO_DITHER)
        var quality = soxr_quality_spec(UInt(SOXR_HQ), 0)
        let r = soxr_create(Double(rate) * speed, Double(rate), UInt32(channels), &error, &io, &quality, nil)
        if let error { throw MediaError(.unsupportedFormat, "libsoxr: \(String(cString: error))", library: "libsoxr") }
        guard let r else { throw MediaError(.unsupportedFormat, "libsoxr made no resampler", library: "libsoxr") }
        resampler = r
        self.channels = channels
    }

    deinit { soxr_delete(resampler) }

    func put(_ input: UnsafePointer<Float>, frames: Int, final: Bool) {
        if outStart > 0, outStart * 2 >= out.count {
            out.removeFirst(outStart)
            outStart = 0
        }
        var chunk = [Float](repeating: 0, count: 4096 * channels)
        var consumed = 0
        while consumed < frames {
            var done = 0, made = 0
            chunk.withUnsafeMutableBufferPointer { c in
                _ = soxr_process(resampler, input + consumed * channels, frames - consumed, &done, c.baseAddress, 4096, &made)
            }
            consumed += done
            out.append(contentsOf: chunk[0..<(made * channels)])
            if done == 0 && made == 0 { break }
        }
        guard final, !flushed else { return }
        flushed = true
        while true {
            var made = 0
            chunk.withUnsafeMutableBufferPointer { c in
                _ = soxr_process(resampler, nil, 0, nil, c.baseAddress, 4096, &made)
            }
            if made == 0 { break }
            out.append(contentsOf: chunk[0..<(made * channels)])
        }
    }

    func take(_ output: UnsafeMutablePointer<Float>, maxFrames: Int) -> Int {
        let frames = min(maxFrames, (out.count - outStart) / channels)
        guard frames > 0 else { return 0 }
        out.withUnsafeBufferPointer { o in
            output.update(from: o.baseAddress! + outStart, count: frames * channels)
        }
        outStart += frames * channels
        return frames
    }

    var finished: Bool { flushed && outStart >= out.count }
}
