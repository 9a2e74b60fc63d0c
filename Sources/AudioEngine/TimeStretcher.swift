import MediaCore

/// A stretch of one item's decoded audio (interleaved float32) to another rate, on the decoder
/// thread, before the ring: the output and its real-time path see ordinary frames. Content
/// time advances `speed` frames per frame out. Not thread-safe: it belongs to its decoder.
protocol TimeStretcher: AnyObject {
    /// Takes `frames` frames of input; `final` after the item's last (what is held is then
    /// flushed out).
    func put(_ input: UnsafePointer<Float>, frames: Int, final: Bool)
    /// Writes up to `maxFrames` frames of output to `output`; returns how many.
    func take(_ output: UnsafeMutablePointer<Float>, maxFrames: Int) -> Int
    /// Whether everything has been taken after the final input.
    var finished: Bool { get }
}

/// The stretchers by algorithm: libsonic for `TimePitchAlgorithm.timeDomain`, Rubber Band's
/// finer engine for `TimePitchAlgorithm.spectral`, libsoxr for
/// `TimePitchAlgorithm.varispeed`.
enum TimeStretchers {
    /// The slowest and fastest rates (AVPlayer's audible range for spoken word).
    static let rates: ClosedRange<Double> = 0.5...3.0

    /// A stretcher for audio at `rate` Hz with `channels`, played `speed` times as fast.
    /// - Throws: ``MediaError`` when the algorithm's library is not installed.
    static func make(_ algorithm: TimePitchAlgorithm, rate: Int, channels: Int, speed: Double) throws(MediaError) -> any TimeStretcher {
        switch algorithm {
        case .timeDomain: try SonicStretcher(rate: rate, channels: channels, speed: speed)
        case .spectral: try RubberBandStretcher(rate: rate, channels: channels, speed: speed)
        case .varispeed: try VarispeedStretcher(rate: rate, channels: channels, speed: speed)
        }
    }
}
