import CRubberBand
import MediaCore

/// `TimePitchAlgorithm.spectral`: Rubber Band (GPL, as Backline), its finer (R3) engine in
/// real-time mode: a phase vocoder with transient handling, music's quality, at several times
/// libsonic's CPU. Channels are stretched together (the stereo image kept). In real-time mode
/// it delays its output: silence it asks for goes in first and the delay it reports is dropped
/// (content frame 0 is the first frame out), and silence goes in after the item's last frame
/// until its whole stretch has come out, cut at the item's stretched length.
final class RubberBandStretcher: TimeStretcher {
    static let library = DynamicLibrary(name: "librubberband", empty: bl_rubberband_api(), load: bl_rubberband_load)

    private let api: UnsafePointer<bl_rubberband_api>
    private let state: RubberBandState
    private let channels: Int
    private let speed: Double
    /// Frames per call in and out (Rubber Band takes and gives planar audio).
    private let block = 1024
    private var planes: [UnsafeMutablePointer<Float>]
    /// Output frames still to drop (the start delay), and the delay as reported.
    private var toDrop: Int
    private let delay: Int
    /// Content frames in, and stretched frames out (after the dropped delay).
    private var framesIn = 0
    private var framesOut = 0
    /// After the item's last frame: how many frames come out in all.
    private var total: Int?

    init(rate: Int, channels: Int, speed: Double) throws(MediaError) {
        api = try Self.library.functions()
        let options = Int32(RubberBandOptionProcessRealTime.rawValue | RubberBandOptionEngineFiner.rawValue | RubberBandOptionChannelsTogether.rawValue)
        guard let s = api.pointee.rubberband_new(UInt32(rate), UInt32(channels), options, 1 / speed, 1) else {
            throw MediaError(.unsupportedFormat, "Rubber Band could not make a stretcher (\(rate) Hz, \(channels) channels)", library: "librubberband")
        }
        state = s
        self.channels = channels
        self.speed = speed
        planes = (0..<channels).map { _ in .allocate(capacity: 1024) }
        api.pointee.rubberband_set_max_process_size(s, UInt32(block))
        delay = Int(api.pointee.rubberband_get_start_delay(s))
        toDrop = delay
        silence(Int(api.pointee.rubberband_get_preferred_start_pad(s)), final: false)
    }

    deinit {
        api.pointee.rubberband_delete(state)
        for p in planes { p.deallocate() }
    }

    func put(_ input: UnsafePointer<Float>, frames: Int, final: Bool) {
        var at = 0
        while at < frames {
            let n = min(block, frames - at)
            for c in 0..<channels {
                for i in 0..<n { planes[c][i] = input[(at + i) * channels + c] }
            }
            process(n, final: false)
            at += n
        }
        framesIn += frames
        if final, total == nil {
            total = Int((Double(framesIn) / speed).rounded())
            // What is still inside comes out behind this much silence (the delay in content
            // frames, and a block to spare); what follows the item's stretched end is cut.
            silence(Int(Double(delay) * speed) + block, final: true)
        }
    }

    /// Processes `frames` of silence.
    private func silence(_ frames: Int, final: Bool) {
        var left = frames
        repeat {
            let n = min(block, left)
            for c in 0..<channels { planes[c].update(repeating: 0, count: n) }
            left -= n
            process(n, final: final && left == 0)
        } while left > 0
    }

    private func process(_ frames: Int, final: Bool) {
        planes.withUnsafeBufferPointer { p in
            p.withMemoryRebound(to: UnsafePointer<Float>?.self) { api.pointee.rubberband_process(state, $0.baseAddress, UInt32(frames), final ? 1 : 0) }
        }
    }

    func take(_ output: UnsafeMutablePointer<Float>, maxFrames: Int) -> Int {
        var written = 0
        while written < maxFrames {
            let wanted = total.map { $0 - framesOut } ?? Int.max
            guard wanted > 0 else { break }
            let available = Int(api.pointee.rubberband_available(state))
            if available <= 0 { break }
            let want = min(available, block, toDrop > 0 ? toDrop : min(maxFrames - written, wanted))
            let got = planes.withUnsafeBufferPointer { p in
                p.withMemoryRebound(to: UnsafeMutablePointer<Float>?.self) { Int(api.pointee.rubberband_retrieve(state, $0.baseAddress, UInt32(want))) }
            }
            if got == 0 { break }
            if toDrop > 0 {
                toDrop -= got
                continue
            }
            for i in 0..<got {
                for c in 0..<channels { output[(written + i) * channels + c] = planes[c][i] }
            }
            written += got
            framesOut += got
        }
        return written
    }

    /// Done once the item's stretched length has come out, or Rubber Band has nothing more.
    var finished: Bool {
        guard let total else { return false }
        return framesOut >= total || api.pointee.rubberband_available(state) < 0
    }
}
