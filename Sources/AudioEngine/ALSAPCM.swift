import CALSA
import MediaCore

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

extension DeviceSampleFormat {
    var alsa: snd_pcm_format_t { self == .float32 ? SND_PCM_FORMAT_FLOAT_LE : SND_PCM_FORMAT_S16_LE }
}

/// A thin typed wrapper over one playback `snd_pcm_t`, owned by the output thread.
///
/// A plain value (a C pointer and what was negotiated), so passing it around the real-time loop
/// costs no reference counting; the owner calls ``close()`` exactly once.
/// Blocking mode, interleaved access: mmap where the device offers it (the output renders into
/// the device's own buffer), else RW (`snd_pcm_writei`). The output loop only ever writes what
/// `avail` says fits, after `snd_pcm_wait`, so a write never blocks for long.
struct ALSAPCM: @unchecked Sendable {
    let pcm: OpaquePointer
    let configuration: DeviceConfiguration
    /// Whether access is mmap (``beginWrite(frames:)``/``commitWrite(_:frames:)``), not RW.
    var mmap: Bool { configuration.mmap }
    /// Frames queued at which the device starts: with mmap access the output starts it itself
    /// (alsa-lib starts a device at this threshold only inside `snd_pcm_writei`).
    let startThreshold: Int
    /// The device's poll descriptors plus the wake descriptor (allocated with the device, filled per wait).
    let pollFDs: UnsafeMutablePointer<pollfd>
    /// ALSA's `null` and `file` plugins: they take audio as fast as it comes.
    let takesAudioAtOnce: Bool

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
        pollFDs = .allocate(capacity: 16)
        let type = snd_pcm_type(p)
        takesAudioAtOnce = type == SND_PCM_TYPE_NULL || type == SND_PCM_TYPE_FILE
    }

    /// Closes the device (without draining).
    func close() {
        snd_pcm_close(pcm)
        pollFDs.deallocate()
    }

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

    /// Hands `frames` rendered frames at `offset` (``beginWrite(frames:)``'s area) to the device, and starts it once its start
    /// threshold is queued (as `snd_pcm_writei` does). Returns the frames taken or a negative error.
    func commitWrite(offset: snd_pcm_uframes_t, frames: Int) -> Int {
        let w = snd_pcm_mmap_commit(pcm, offset, snd_pcm_uframes_t(frames))
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
        var maxChannels: UInt32 = 2
        snd_pcm_hw_params_get_channels_max(hw, &maxChannels)
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
                                    canPause: canPause, mmap: mmap, maxChannels: Int(min(maxChannels, 8))),
                Int(start))
    }
}

/// ALSA as an ``AudioOutput``: every device name that is not another driver's.
extension ALSAPCM: AudioOutput {
    static func handles(_ device: String) -> Bool { true }
    static var channelOrder: ChannelOrder { .alsa }

    static func open(device: String, rate: Int, channels: Int, preferred: DeviceSampleFormat,
                     bufferMicros: Int, periodMicros: Int, mmap: Bool) throws(MediaError) -> ALSAPCM {
        do {
            return try ALSAPCM(device: device, rate: rate, channels: channels, preferred: preferred,
                               bufferMicros: bufferMicros, periodMicros: periodMicros, mmap: mmap)
        } catch {
            throw MediaError(.device, "\(error.function): \(error.message)", library: "ALSA", code: error.code, item: device)
        }
    }

    /// The hardware's channel maximum (`snd_pcm_hw_params_get_channels_max`), the device opened
    /// and closed unconfigured (a `file:` device writes nothing before its parameters are set).
    static func channelLimit(device: String) -> Int? {
        var p: OpaquePointer?
        guard snd_pcm_open(&p, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK) >= 0, let p else { return nil }
        defer { snd_pcm_close(p) }
        var hw: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&hw) >= 0 else { return nil }
        defer { snd_pcm_hw_params_free(hw) }
        var maximum: UInt32 = 0
        guard snd_pcm_hw_params_any(p, hw) >= 0, snd_pcm_hw_params_get_channels_max(hw, &maximum) >= 0 else { return nil }
        return Int(min(maximum, 8))
    }

    static func probe(device: String) -> (available: Bool, soundServer: Bool) {
        var p: OpaquePointer?
        let r = snd_pcm_open(&p, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
        guard r >= 0, let p else { return (false, false) }
        let server = snd_pcm_type(p) == SND_PCM_TYPE_IOPLUG
        snd_pcm_close(p)
        return (true, server)
    }

    func state() -> OutputState {
        switch snd_pcm_state(pcm) {
        case SND_PCM_STATE_PREPARED: .prepared
        case SND_PCM_STATE_RUNNING: .running
        case SND_PCM_STATE_PAUSED: .paused
        default: .other
        }
    }

    var isLost: Bool { snd_pcm_state(pcm) == SND_PCM_STATE_DISCONNECTED }

    func delay() -> Int? {
        var d: snd_pcm_sframes_t = 0
        return snd_pcm_delay(pcm, &d) < 0 ? 0 : max(0, Int(d))
    }

    func avail() -> Int { Int(snd_pcm_avail_update(pcm)) }

    /// `snd_pcm_wait` that the wake descriptor can interrupt: polls the device's descriptors and `wake`.
    func waitForRoom(timeoutMillis: Int32, wake: Int32) -> Int32 {
        // Room for a period already (as `snd_pcm_wait` checks first): no poll, no syscall.
        // Devices such as `null` never signal their descriptor, so polling them would wait
        // out the timeout.
        let ready = snd_pcm_avail_update(pcm)
        if ready < 0 { return Int32(ready) }
        if Int(ready) >= configuration.periodFrames { return 1 }
        let count = snd_pcm_poll_descriptors_count(pcm)
        guard count > 0, count < 16 else { return snd_pcm_wait(pcm, timeoutMillis) }
        let n = snd_pcm_poll_descriptors(pcm, pollFDs, UInt32(count))
        guard n > 0 else { return snd_pcm_wait(pcm, timeoutMillis) }
        pollFDs[Int(n)] = pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
        let r = poll(pollFDs, nfds_t(n + 1), timeoutMillis)
        if r < 0 { return errno == EINTR ? 0 : -errno }
        if r == 0 { return 1 }
        if pollFDs[Int(n)].revents & Int16(POLLIN) != 0 { return 0 }
        var revents: UInt16 = 0
        let rr = snd_pcm_poll_descriptors_revents(pcm, pollFDs, UInt32(n), &revents)
        if rr < 0 { return rr }  // e.g. the sound server went away
        if revents & UInt16(POLLERR | POLLNVAL) != 0 {
            switch snd_pcm_state(pcm) {
            case SND_PCM_STATE_XRUN: return -EPIPE
            case SND_PCM_STATE_SUSPENDED: return -ESTRPIPE
            case SND_PCM_STATE_DISCONNECTED: return -ENODEV
            default: return -EIO
            }
        }
        // Writable, or a wake-up without POLLOUT: either way ask the device (`avail_update`),
        // which reports errors; never return 0 here, or a device that keeps its descriptor
        // readable would spin the loop.
        return 1
    }

    /// A paused PCM says nothing worth waking for: only `wake` is watched.
    func waitWhilePaused(wake: Int32) -> Bool {
        pollFDs[0] = pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
        _ = poll(pollFDs, 1, -1)
        return false
    }

    func beginDirectWrite(frames: Int) -> DirectWrite {
        guard mmap else { return .unsupported }
        switch beginWrite(frames: frames) {
        case .area(let a): return .area(pointer: a.pointer, frames: a.frames, offset: Int(a.offset))
        case .error(let code): return .error(code)
        }
    }

    func commitDirectWrite(offset: Int, frames: Int) -> Int {
        commitWrite(offset: snd_pcm_uframes_t(offset), frames: frames)
    }

    func write(_ buffer: UnsafeRawPointer, frames: Int) -> Int { Int(snd_pcm_writei(pcm, buffer, snd_pcm_uframes_t(frames))) }

    func discard() {
        snd_pcm_drop(pcm)
        snd_pcm_prepare(pcm)
    }

    func stop() { snd_pcm_drop(pcm) }
    func prepare() -> Int32 { snd_pcm_prepare(pcm) }
    func resume() -> Int32 { snd_pcm_resume(pcm) }
    /// A PCM not started yet (prepared) plays nothing until the output starts it: pausing or
    /// resuming it is nothing to do.
    func pause(_ on: Bool) -> Bool {
        if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED { return true }
        return snd_pcm_pause(pcm, on ? 1 : 0) >= 0
    }
    func startIfWaiting() { if snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED { snd_pcm_start(pcm) } }
    func drain() { snd_pcm_drain(pcm) }
}
