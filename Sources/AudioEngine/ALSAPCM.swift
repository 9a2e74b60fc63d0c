import CALSA

#if canImport(Glibc)
import Glibc
#endif

/// An error from alsa-lib: the negative errno-style code, its message, and the call that failed.
struct ALSAError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The (negative) return code.
    public var code: Int32
    /// `snd_strerror(code)`.
    public var message: String
    /// The ALSA function (and device) involved.
    public var function: String

    /// The error for an alsa-lib call that returned `code`; the message is `snd_strerror(code)`.
    /// - Parameters:
    ///   - code: The negative code alsa-lib returned.
    ///   - function: The ALSA function (and device) involved.
    public init(code: Int32, function: String) {
        self.code = code
        self.message = String(cString: snd_strerror(code))
        self.function = function
    }

    /// The function, the message and the code, for people.
    public var description: String { "\(function): \(message) (ALSA code \(code))" }
}

/// Sample format written to the device.
public enum DeviceSampleFormat: Sendable, Equatable, CustomStringConvertible {
    /// 32-bit float, little-endian: the decoder's own format, copied bit-exact.
    case float32
    /// 16-bit signed, little-endian: converted with rounding and clipping.
    case s16

    var alsa: snd_pcm_format_t { self == .float32 ? SND_PCM_FORMAT_FLOAT_LE : SND_PCM_FORMAT_S16_LE }
    /// Bytes per sample.
    public var bytes: Int { self == .float32 ? 4 : 2 }
    public var description: String { self == .float32 ? "float32" : "s16" }
}

/// What the device agreed to.
public struct DeviceConfiguration: Sendable, Equatable, CustomStringConvertible {
    /// The device's sample rate, frames per second.
    public var rate: Int
    /// The number of channels (1 mono, 2 stereo).
    public var channels: Int
    /// The sample format written to the device.
    public var sampleFormat: DeviceSampleFormat
    /// Device buffer and period, in frames.
    public var bufferFrames: Int
    /// The device's period (how much it takes per wake-up of the output thread), in frames.
    public var periodFrames: Int
    /// Whether `snd_pcm_pause` works on this device.
    public var canPause: Bool
    /// Whether the output renders straight into the device's buffer (ALSA mmap access) rather
    /// than handing it a copy (`snd_pcm_writei`, a PulseAudio stream write).
    public var mmap: Bool = false

    /// Milliseconds of `frames` at this rate.
    public func milliseconds(_ frames: Int) -> Double { rate > 0 ? Double(frames) * 1000 / Double(rate) : 0 }

    /// `float32, 44100 Hz, 2 channels, buffer 22050 frames (500 ms), period 11025 frames (250 ms), mmap`.
    public var description: String {
        func ms(_ f: Int) -> String {
            let v = milliseconds(f)
            let tenths = Int((v * 10).rounded())
            return tenths % 10 == 0 ? String(tenths / 10) : "\(tenths / 10).\(tenths % 10)"
        }
        return "\(sampleFormat), \(rate) Hz, \(channels) channel\(channels == 1 ? "" : "s"), "
            + "buffer \(bufferFrames) frames (\(ms(bufferFrames)) ms), period \(periodFrames) frames (\(ms(periodFrames)) ms)"
            + (mmap ? ", mmap" : "")
    }
}

/// A thin typed wrapper over one playback `snd_pcm_t`, owned by the output thread.
///
/// A plain value (a C pointer and what was negotiated), so passing it around the real-time loop
/// costs no reference counting; the owner calls ``close()`` exactly once.
/// Blocking mode, interleaved access: mmap where the device offers it (the output renders into
/// the device's own buffer), else RW (`snd_pcm_writei`). The output loop only ever writes what
/// `avail` says fits, after `snd_pcm_wait`, so a write never blocks for long.
struct ALSAPCM {
    let pcm: OpaquePointer
    let configuration: DeviceConfiguration
    /// Whether access is mmap (``beginWrite(frames:)``/``commitWrite(_:frames:)``), not RW.
    var mmap: Bool { configuration.mmap }
    /// Frames queued at which the device starts: with mmap access the output starts it itself
    /// (alsa-lib starts a device at this threshold only inside `snd_pcm_writei`).
    let startThreshold: Int

    /// Opens `device` and negotiates the format: `preferred` first, else the other of float32/S16.
    /// With `mmap`, mmap access where the device offers it.
    init(device: String, rate: Int, channels: Int, preferred: DeviceSampleFormat,
         bufferMicros: Int, periodMicros: Int, mmap wantMmap: Bool) throws(ALSAError) {
        var p: OpaquePointer?
        let r = snd_pcm_open(&p, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard r >= 0, let p else { throw ALSAError(code: r, function: "snd_pcm_open(\(device))") }
        pcm = p
        do {
            (configuration, startThreshold) = try Self.configure(
                p, device: device, rate: rate, channels: channels, preferred: preferred,
                bufferMicros: bufferMicros, periodMicros: periodMicros, mmap: wantMmap)
        } catch {
            snd_pcm_close(p)
            throw error
        }
    }

    /// Closes the device (without draining).
    func close() { snd_pcm_close(pcm) }

    /// Where the next frames go in the device's own buffer (mmap access).
    struct WriteArea {
        /// The first frame's bytes.
        let pointer: UnsafeMutableRawPointer
        /// Contiguous frames there (up to the buffer's end).
        let frames: Int
        let offset: snd_pcm_uframes_t
    }

    /// What ``beginWrite(frames:)`` found.
    enum Begin {
        case area(WriteArea)
        /// A negative ALSA error (-EPIPE after an underrun, …).
        case error(Int32)
    }

    /// Up to `frames` (> 0, no more than `avail` said fit) contiguous frames of the device's
    /// buffer to render into.
    func beginWrite(frames: Int) -> Begin {
        var areas: UnsafePointer<snd_pcm_channel_area_t>?
        var offset: snd_pcm_uframes_t = 0
        var count = snd_pcm_uframes_t(frames)
        let r = snd_pcm_mmap_begin(pcm, &areas, &offset, &count)
        if r < 0 { return .error(r) }
        guard let area = areas?.pointee, let base = area.addr, count > 0 else { return .error(-EIO) }
        // Interleaved: every channel's area shares the address; channel 0 starts at `first`
        // bits, frames are `step` bits apart.
        return .area(WriteArea(pointer: base + Int(area.first / 8) + Int(offset) * Int(area.step / 8),
                               frames: Int(count), offset: offset))
    }

    /// Hands `frames` rendered frames of `area` to the device, and starts it once its start
    /// threshold is queued (as `snd_pcm_writei` does). Returns the frames taken or a negative error.
    func commitWrite(_ area: WriteArea, frames: Int) -> Int {
        let w = snd_pcm_mmap_commit(pcm, area.offset, snd_pcm_uframes_t(frames))
        if w < 0 { return Int(w) }
        if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED {
            let free = snd_pcm_avail_update(pcm)
            if free >= 0, configuration.bufferFrames - Int(free) >= startThreshold {
                let r = snd_pcm_start(pcm)
                if r < 0 { return Int(r) }
            }
        }
        return Int(w)
    }

    private static func configure(_ pcm: OpaquePointer, device: String, rate: Int, channels: Int,
                                  preferred: DeviceSampleFormat, bufferMicros: Int, periodMicros: Int,
                                  mmap wantMmap: Bool) throws(ALSAError) -> (DeviceConfiguration, Int) {
        func check(_ r: Int32, _ f: String) throws(ALSAError) {
            if r < 0 { throw ALSAError(code: r, function: "\(f)(\(device))") }
        }
        var hw: OpaquePointer?
        try check(snd_pcm_hw_params_malloc(&hw), "snd_pcm_hw_params_malloc")
        defer { snd_pcm_hw_params_free(hw) }
        try check(snd_pcm_hw_params_any(pcm, hw), "snd_pcm_hw_params_any")
        let mmap = wantMmap && snd_pcm_hw_params_test_access(pcm, hw, SND_PCM_ACCESS_MMAP_INTERLEAVED) == 0
        try check(snd_pcm_hw_params_set_access(pcm, hw, mmap ? SND_PCM_ACCESS_MMAP_INTERLEAVED : SND_PCM_ACCESS_RW_INTERLEAVED),
                  "set_access")
        var format = preferred
        if snd_pcm_hw_params_set_format(pcm, hw, format.alsa) < 0 {
            format = preferred == .float32 ? .s16 : .float32
            try check(snd_pcm_hw_params_set_format(pcm, hw, format.alsa), "snd_pcm_hw_params_set_format")
        }
        try check(snd_pcm_hw_params_set_channels(pcm, hw, UInt32(channels)), "snd_pcm_hw_params_set_channels")
        try check(snd_pcm_hw_params_set_rate_resample(pcm, hw, 1), "set_rate_resample")
        var exactRate = UInt32(rate)
        try check(snd_pcm_hw_params_set_rate(pcm, hw, exactRate, 0), "snd_pcm_hw_params_set_rate")
        var buffer = UInt32(bufferMicros), period = UInt32(periodMicros)
        var dir: Int32 = 0
        try check(snd_pcm_hw_params_set_buffer_time_near(pcm, hw, &buffer, &dir), "set_buffer_time_near")
        dir = 0
        try check(snd_pcm_hw_params_set_period_time_near(pcm, hw, &period, &dir), "set_period_time_near")
        try check(snd_pcm_hw_params(pcm, hw), "snd_pcm_hw_params")
        var bufferFrames: snd_pcm_uframes_t = 0, periodFrames: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_buffer_size(hw, &bufferFrames)
        snd_pcm_hw_params_get_period_size(hw, &periodFrames, &dir)
        snd_pcm_hw_params_get_rate(hw, &exactRate, &dir)
        let canPause = snd_pcm_hw_params_can_pause(hw) == 1

        var sw: OpaquePointer?
        try check(snd_pcm_sw_params_malloc(&sw), "snd_pcm_sw_params_malloc")
        defer { snd_pcm_sw_params_free(sw) }
        try check(snd_pcm_sw_params_current(pcm, sw), "snd_pcm_sw_params_current")
        // Start once the buffer is nearly full (less one period), wake per period.
        let start = bufferFrames > periodFrames ? bufferFrames - periodFrames : bufferFrames
        try check(snd_pcm_sw_params_set_start_threshold(pcm, sw, start), "set_start_threshold")
        try check(snd_pcm_sw_params_set_avail_min(pcm, sw, periodFrames), "set_avail_min")
        try check(snd_pcm_sw_params(pcm, sw), "snd_pcm_sw_params")
        try check(snd_pcm_prepare(pcm), "snd_pcm_prepare")
        return (DeviceConfiguration(rate: Int(exactRate), channels: channels, sampleFormat: format,
                                    bufferFrames: Int(bufferFrames), periodFrames: Int(periodFrames),
                                    canPause: canPause, mmap: mmap),
                Int(start))
    }
}
