import CSonic
import MediaCore

/// `TimePitchAlgorithm.timeDomain`: libsonic (Apache 2.0), a pitch-synchronous overlap-add
/// made for speech (PICOLA below 2×, its own algorithm above): the pitch period found per
/// block, whole periods dropped or repeated, so voices keep their pitch and stay clear up to
/// 3× and more, for a few percent of a core. Music plays with it too, at a cost in quality
/// (chords have no single period): `TimePitchAlgorithm.spectral` is for music.
final class SonicStretcher: TimeStretcher {
    static let library = DynamicLibrary(name: "libsonic", empty: bl_sonic_api(), load: bl_sonic_load)

    private let api: UnsafePointer<bl_sonic_api>
    private let stream: sonicStream
    private var flushed = false

    init(rate: Int, channels: Int, speed: Double) throws(MediaError) {
        api = try Self.library.functions()
        guard let s = api.pointee.sonicCreateStream(Int32(rate), Int32(channels)) else {
            throw MediaError(.unsupportedFormat, "libsonic could not make a stream (\(rate) Hz, \(channels) channels)", library: "libsonic")
        }
        stream = s
        api.pointee.sonicSetSpeed(s, Float(speed))
    }

    deinit { api.pointee.sonicDestroyStream(stream) }

    func put(_ input: UnsafePointer<Float>, frames: Int, final: Bool) {
        // (libsonic copies the samples; its parameter is not const.)
        if frames > 0 { _ = api.pointee.sonicWriteFloatToStream(stream, UnsafeMutablePointer(mutating: input), Int32(frames)) }
        if final && !flushed {
            _ = api.pointee.sonicFlushStream(stream)
            flushed = true
        }
    }

    func take(_ output: UnsafeMutablePointer<Float>, maxFrames: Int) -> Int {
        Int(api.pointee.sonicReadFloatFromStream(stream, output, Int32(min(maxFrames, Int(Int32.max)))))
    }

    var finished: Bool { flushed && api.pointee.sonicSamplesAvailable(stream) == 0 }
}
