import MediaCore
import CALSA  // (where the importer puts `pollfd`: ALSA's headers include poll.h)
import CPulse
import Media
import Platform

#if canImport(Glibc)
import Glibc
#endif

/// An error from libpulse: its error code, message, and the call that failed.
struct PulseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `PA_ERR_*` code.
    public var code: Int32
    /// `pa_strerror(code)`.
    public var message: String
    /// The libpulse function (and server or sink) involved.
    public var function: String

    /// The error for a libpulse call that failed with `code`; the message is `pa_strerror(code)`.
    /// - Parameters:
    ///   - code: The `PA_ERR_*` code.
    ///   - function: The libpulse function (and server or sink) involved.
    public init(code: Int32, function: String) {
        self.code = code
        message = String(cString: pa_strerror(code))
        self.function = function
    }

    /// The function, the message and the code, for people.
    public var description: String { "\(function): \(message) (PulseAudio code \(code))" }
}

/// A thin typed wrapper over one PulseAudio playback stream on its own threaded mainloop,
/// owned by the output thread: the native route to a sound server (`pulse` or `pulse:SINK`).
///
/// Unlike ALSA's `pulse` plugin, which disconnects and recreates the server's stream at every
/// `snd_pcm_prepare` (so every flush became a new sink input whose first ~100 ms had no timing
/// information), this keeps one stream for as long as the format stays: a jump is
/// `pa_stream_flush`, pause is `pa_stream_cork`, and the latency comes from the stream's
/// running timing information, so the heard position is as exact right after a jump as on the
/// straight path.
///
/// Each call takes the mainloop's lock for the length of one libpulse call (as ALSA's plugin
/// does inside every `snd_pcm_*` call); the mainloop thread only runs libpulse's I/O and the
/// callbacks below, which write one byte to a pipe or signal the mainloop.
final class PulseStream: @unchecked Sendable {
    // @unchecked Sendable: the pointers are used under the mainloop lock, by the owner only.
    let configuration: DeviceConfiguration
    private let mainloop: OpaquePointer
    private let context: OpaquePointer
    private let stream: OpaquePointer
    private let userdata: UnsafeMutablePointer<Callbacks>
    private let bytesPerFrame: Int
    /// The mainloop writes a byte here when the server asks for data or a state changes.
    let notifyFD: Int32
    private let notifyWriteFD: Int32
    private var corked = false
    private var closed = false

    struct Callbacks {
        var mainloop: OpaquePointer
        var notifyFD: Int32
        /// Server-side underruns (the stream ran dry while playing).
        var underflows = 0
        /// Whether playback started since the stream was created or last flushed.
        var started = false
        /// A timing update asked for and not answered yet.
        var timingRequested = false
        /// Uncorked, and the server has not said it plays again: libpulse's latency then reads
        /// 0 (as if everything written were heard) though the server has not restarted the
        /// stream, so nothing counts as heard until timing says it plays.
        var uncorkedNotPlaying = false
        /// How long the timing may age while playing before `delayFrames` asks again (ns):
        /// 10 ms after a start, a flush or an uncork, doubling to 1.5 s (libpulse's own
        /// automatic schedule, which also ran while corked: 1.3 wake-ups a second, paused).
        var timingInterval = PulseStream.firstTimingInterval
        /// The sink's own channel count, once its info arrived (0: not yet; -1: no answer).
        var sinkChannels = 0
    }
    static let firstTimingInterval = 10_000_000
    static let lastTimingInterval = 1_500_000_000
    private var underflowsSeen = 0
    /// When `delayFrames` last asked the server for timing (monotonic ns).
    private var lastTimingRequest = 0

    /// The sink named by a device string: `pulse` → the server's default, `pulse:NAME` → NAME;
    /// nil when the string does not name the native PulseAudio route.
    static func sink(forDevice device: String) -> String?? {
        if device == "pulse" { return .some(nil) }
        if device.hasPrefix("pulse:") { return .some(String(device.dropFirst(6))) }
        return nil
    }

    /// Connects to the server (`PULSE_SERVER` or the default) and opens a stream on `sink`.
    init(sink: String?, rate: Int, channels: Int, preferred: DeviceSampleFormat,
         bufferMicros: Int, periodMicros: Int) throws(PulseError) {
        let where_ = sink.map { "pulse:\($0)" } ?? "pulse"
        guard let m = pa_threaded_mainloop_new() else { throw PulseError(code: Int32(PA_ERR_INTERNAL.rawValue), function: "pa_threaded_mainloop_new") }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            pa_threaded_mainloop_free(m)
            throw PulseError(code: Int32(PA_ERR_INTERNAL.rawValue), function: "pipe")
        }
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        notifyFD = fds[0]
        notifyWriteFD = fds[1]
        mainloop = m
        userdata = .allocate(capacity: 1)
        userdata.initialize(to: Callbacks(mainloop: m, notifyFD: fds[1]))
        let api = pa_threaded_mainloop_get_api(m)
        guard let c = pa_context_new(api, "Backline") else {
            Self.release(m, userdata, fds)
            throw PulseError(code: Int32(PA_ERR_INTERNAL.rawValue), function: "pa_context_new")
        }
        context = c
        pa_context_set_state_callback(c, Self.stateChanged, userdata)
        pa_threaded_mainloop_lock(m)
        var failure: PulseError?
        var s: OpaquePointer?
        var attr = pa_buffer_attr()
        let format = preferred
        if pa_threaded_mainloop_start(m) < 0 {
            failure = PulseError(code: Int32(PA_ERR_INTERNAL.rawValue), function: "pa_threaded_mainloop_start")
        } else if pa_context_connect(c, nil, PA_CONTEXT_NOAUTOSPAWN, nil) < 0 {
            failure = PulseError(code: pa_context_errno(c), function: "pa_context_connect(\(where_))")
        } else {
            let ready = Self.wait(m) {
                switch pa_context_get_state(c) {
                case PA_CONTEXT_READY: true
                case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED: false
                default: nil
                }
            }
            if !ready { failure = PulseError(code: pa_context_errno(c), function: "pa_context_connect(\(where_))") }
        }
        if failure == nil {
            var spec = pa_sample_spec(format: preferred == .float32 ? PA_SAMPLE_FLOAT32LE : PA_SAMPLE_S16LE,
                                      rate: UInt32(rate), channels: UInt8(channels))
            if pa_sample_spec_valid(&spec) == 0 {
                failure = PulseError(code: Int32(PA_ERR_INVALID.rawValue), function: "pa_sample_spec(\(rate) Hz, \(channels) ch)")
            } else if let st = Self.newStream(c, &spec) {
                s = st
                pa_stream_set_state_callback(st, Self.stateChanged, userdata)
                pa_stream_set_underflow_callback(st, { _, ud in
                    guard let cb = ud?.assumingMemoryBound(to: Callbacks.self) else { return }
                    // (Under the mainloop lock, read under it too.) Running dry after a flush,
                    // before the new audio started, is the jump itself, not an underrun.
                    if cb.pointee.started { cb.pointee.underflows += 1 }
                }, userdata)
                pa_stream_set_started_callback(st, { stream, ud in
                    guard let cb = ud?.assumingMemoryBound(to: Callbacks.self) else { return }
                    cb.pointee.started = true
                    // Playback began (first fill, or after an underrun): fresh timing now, so the
                    // interpolated latency starts moving at once instead of at `delayFrames`'
                    // next request (up to 10 ms away); its arrival wakes the output thread, which
                    // publishes the position then rather than after its next write (a period
                    // away when the buffer is full): the first frame is reported heard when it is.
                    cb.pointee.timingRequested = true
                    cb.pointee.timingInterval = PulseStream.firstTimingInterval
                    if let op = pa_stream_update_timing_info(stream, PulseStream.timingArrived, ud) { pa_operation_unref(op) }
                }, userdata)
                pa_stream_set_write_callback(st, { _, _, ud in
                    guard let cb = ud?.assumingMemoryBound(to: Callbacks.self) else { return }
                    var one: UInt8 = 1
                    _ = Glibc.write(cb.pointee.notifyFD, &one, 1)
                }, userdata)
                let frameBytes = channels * format.bytes
                func bytes(_ micros: Int) -> UInt32 { UInt32(max(1, micros * rate / 1_000_000) * frameBytes) }
                // tlength: the whole buffer (server side included, ADJUST_LATENCY); the server
                // asks for more each period; playback (re)starts once the buffer is full again.
                attr = pa_buffer_attr(maxlength: UInt32.max, tlength: bytes(bufferMicros), prebuf: UInt32.max,
                                      minreq: bytes(periodMicros), fragsize: UInt32.max)
                // No PA_STREAM_AUTO_TIMING_UPDATE: `delayFrames` asks for timing itself while the
                // stream plays, so a corked (paused) stream costs no wake-ups at all.
                let flags = pa_stream_flags_t(rawValue: PA_STREAM_INTERPOLATE_TIMING.rawValue
                    | PA_STREAM_ADJUST_LATENCY.rawValue)
                if pa_stream_connect_playback(st, sink, &attr, flags, nil, nil) < 0 {
                    failure = PulseError(code: pa_context_errno(c), function: "pa_stream_connect_playback(\(where_))")
                } else {
                    let ready = Self.wait(m) {
                        switch pa_stream_get_state(st) {
                        case PA_STREAM_READY: true
                        case PA_STREAM_FAILED, PA_STREAM_TERMINATED: false
                        default: nil
                        }
                    }
                    if !ready { failure = PulseError(code: pa_context_errno(c), function: "pa_stream_connect_playback(\(where_))") }
                }
                if failure == nil, let got = pa_stream_get_buffer_attr(st) { attr = got.pointee }
                if failure == nil, let op = pa_context_get_sink_info_by_index(c, pa_stream_get_device_index(st), { _, info, eol, ud in
                    guard let cb = ud?.assumingMemoryBound(to: Callbacks.self) else { return }
                    if let info { cb.pointee.sinkChannels = Int(info.pointee.channel_map.channels) }
                    else if eol != 0, cb.pointee.sinkChannels == 0 { cb.pointee.sinkChannels = -1 }
                    pa_threaded_mainloop_signal(cb.pointee.mainloop, 0)
                }, userdata) {
                    let cb = userdata
                    // Until the answer, or the operation ends without one (the server went away).
                    _ = Self.wait(m) {
                        cb.pointee.sinkChannels != 0 ? true : pa_operation_get_state(op) != PA_OPERATION_RUNNING ? false : nil
                    }
                    pa_operation_unref(op)
                }
            } else {
                failure = PulseError(code: pa_context_errno(c), function: "pa_stream_new(\(where_))")
            }
        }
        if let failure {
            if let s {
                pa_stream_disconnect(s)
                pa_stream_unref(s)
            }
            pa_context_disconnect(c)
            pa_context_unref(c)
            pa_threaded_mainloop_unlock(m)
            pa_threaded_mainloop_stop(m)
            Self.release(m, userdata, fds)
            throw failure
        }
        pa_threaded_mainloop_unlock(m)
        stream = s!
        bytesPerFrame = channels * format.bytes
        configuration = DeviceConfiguration(rate: rate, channels: channels, sampleFormat: format,
                                            bufferFrames: Int(attr.tlength) / bytesPerFrame,
                                            periodFrames: max(1, Int(attr.minreq) / bytesPerFrame), canPause: true,
                                            maxChannels: max(2, userdata.pointee.sinkChannels))
    }

    private static func release(_ m: OpaquePointer, _ ud: UnsafeMutablePointer<Callbacks>, _ fds: [Int32]) {
        pa_threaded_mainloop_free(m)
        ud.deinitialize(count: 1)
        ud.deallocate()
        for fd in fds { Glibc.close(fd) }
    }

    /// Whether the stream is usable: a lost server or a removed sink make it fail.
    private func alive() -> Bool {
        pa_stream_get_state(stream) == PA_STREAM_READY && pa_context_get_state(context) == PA_CONTEXT_READY
    }

    /// Whether the stream and its server are still there (a server that died fails both).
    var isAlive: Bool {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        return alive()
    }

    /// Frames the server takes now; `-ENODEV` when the stream or server is gone, `-EPIPE` once
    /// for each underrun the server reported (as ALSA reports an xrun).
    func availFrames() -> Int {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        guard alive() else { return -Int(ENODEV) }
        if userdata.pointee.underflows != underflowsSeen {
            underflowsSeen = userdata.pointee.underflows
            return -Int(EPIPE)
        }
        let n = pa_stream_writable_size(stream)
        return n == Int.max || n == -1 ? -Int(ENODEV) : n / bytesPerFrame
    }

    /// Hands `frames` frames to the server (copied); returns the frames taken or `-ENODEV`.
    func write(_ buffer: UnsafeRawPointer, frames: Int) -> Int {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        guard alive(), pa_stream_write(stream, buffer, frames * bytesPerFrame, nil, 0, PA_SEEK_RELATIVE) == 0 else {
            return -Int(ENODEV)
        }
        return frames
    }

    /// Frames written but not yet heard (the stream's latency, the sink's included); nil while
    /// the server has not reported timing since the stream started or was flushed.
    func delayFrames() -> Int? {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        var usec: pa_usec_t = 0
        var negative: Int32 = 0
        let known = pa_stream_get_latency(stream, &usec, &negative) == 0
        requestTimingIfDue(known: known && !userdata.pointee.uncorkedNotPlaying)
        guard known else { return nil }
        // Uncorked and not playing again yet: what is queued is what the server has not read.
        if userdata.pointee.uncorkedNotPlaying, let t = pa_stream_get_timing_info(stream) {
            return max(0, Int(t.pointee.write_index - t.pointee.read_index)) / bytesPerFrame
        }
        return negative != 0 ? 0 : Int(usec) * configuration.rate / 1_000_000
    }

    /// Asks the server for timing when it is due (mainloop locked): with no timing yet (a new
    /// stream), or the server not playing at its last report (filling up), every 10 ms, one
    /// request at a time, so the first frame is reported heard when it is; playing, on
    /// libpulse's automatic schedule (10 ms after a start, doubling to 1.5 s); corked, never.
    private func requestTimingIfDue(known: Bool) {
        let playing = pa_stream_get_timing_info(stream).map { $0.pointee.playing != 0 } ?? false
        let now = monotonicNanos()
        let age = now - lastTimingRequest
        let due = !known || !playing ? age >= Self.firstTimingInterval : age >= userdata.pointee.timingInterval
        if due && !corked && !userdata.pointee.timingRequested {
            // (At most one every 10 ms: while the server holds the stream back, a sink
            // suspended say, the loop would otherwise ask on every wake-up.)
            lastTimingRequest = now
            if known && playing {
                userdata.pointee.timingInterval = min(Self.lastTimingInterval, userdata.pointee.timingInterval * 2)
            }
            userdata.pointee.timingRequested = true
            if let op = pa_stream_update_timing_info(stream, Self.timingArrived, userdata) { pa_operation_unref(op) }
        }
    }

    /// Whether the stream is corked (paused).
    var isCorked: Bool { corked }

    /// Drops everything queued on the server side; the stream stays (same sink input) and
    /// plays again once refilled.
    /// Waits for the server to confirm (one round trip, under a millisecond locally: ALSA's
    /// plugin spends several recreating its stream instead) and for fresh timing, so the
    /// latency read right after it is the new one, never a guess.
    func flush() {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        guard alive() else { return }
        userdata.pointee.started = false
        userdata.pointee.timingInterval = Self.firstTimingInterval
        wait(pa_stream_flush(stream, Self.signalDone, userdata))
        wait(pa_stream_update_timing_info(stream, Self.signalDone, userdata))
    }

    /// The context's or the stream's state changed: wakes a waiting caller, and the output
    /// thread (one byte on the notification pipe), which then finds a failed stream.
    private static let stateChanged: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void = { _, ud in
        guard let cb = ud?.assumingMemoryBound(to: Callbacks.self) else { return }
        pa_threaded_mainloop_signal(cb.pointee.mainloop, 0)
        var one: UInt8 = 1
        _ = Glibc.write(cb.pointee.notifyFD, &one, 1)
    }

    /// Waits (mainloop locked) until `state` says ready (true) or failed (false).
    /// A stream for `spec`: more than two channels in WAVE's order (`PA_CHANNEL_MAP_WAVEEX`,
    /// the order decoders write for ``channelOrder``), fewer with the server's default map.
    private static func newStream(_ c: OpaquePointer, _ spec: inout pa_sample_spec) -> OpaquePointer? {
        guard spec.channels > 2 else { return pa_stream_new(c, "Backline", &spec, nil) }
        // The positions written out: PA_CHANNEL_MAP_WAVEEX's own maps for 4, 5, 7 and 8 channels
        // are not WAVE's default layouts (its quad is FL FR FC LFE, its 7.1 has FLC/FRC).
        var map = pa_channel_map()
        map.channels = spec.channels
        let positions = Downmix.waveOrder(Int(spec.channels)).map { p -> pa_channel_position_t in
            switch p {
            case .frontLeft: PA_CHANNEL_POSITION_FRONT_LEFT
            case .frontRight: PA_CHANNEL_POSITION_FRONT_RIGHT
            case .frontCenter: PA_CHANNEL_POSITION_FRONT_CENTER
            case .lfe: PA_CHANNEL_POSITION_LFE
            case .backLeft: PA_CHANNEL_POSITION_REAR_LEFT
            case .backRight: PA_CHANNEL_POSITION_REAR_RIGHT
            case .backCenter: PA_CHANNEL_POSITION_REAR_CENTER
            case .sideLeft: PA_CHANNEL_POSITION_SIDE_LEFT
            case .sideRight: PA_CHANNEL_POSITION_SIDE_RIGHT
            }
        }
        withUnsafeMutableBytes(of: &map.map) { raw in
            let slots = raw.bindMemory(to: pa_channel_position_t.self)
            for (i, p) in positions.enumerated() where i < slots.count { slots[i] = p }
        }
        guard pa_channel_map_valid(&map) != 0 else { return nil }
        return pa_stream_new(c, "Backline", &spec, &map)
    }

    private static func wait(_ mainloop: OpaquePointer, until state: () -> Bool?) -> Bool {
        while true {
            if let done = state() { return done }
            pa_threaded_mainloop_wait(mainloop)
        }
    }

    /// A requested timing update arrived: one byte on the notification pipe, so the output thread
    /// publishes the position with it at once.
    private static let timingArrived: pa_stream_success_cb_t = { stream, _, ud in
        guard let cb = ud?.assumingMemoryBound(to: Callbacks.self) else { return }
        cb.pointee.timingRequested = false
        if cb.pointee.uncorkedNotPlaying, let s = stream, let t = pa_stream_get_timing_info(s), t.pointee.playing != 0 {
            cb.pointee.uncorkedNotPlaying = false
        }
        var one: UInt8 = 1
        _ = Glibc.write(cb.pointee.notifyFD, &one, 1)
    }

    private static let signalDone: pa_stream_success_cb_t = { _, _, ud in
        guard let cb = ud?.assumingMemoryBound(to: Callbacks.self) else { return }
        pa_threaded_mainloop_signal(cb.pointee.mainloop, 0)
    }

    /// Waits (mainloop locked) until `op` completes or the stream fails.
    private func wait(_ op: OpaquePointer?) {
        guard let op else { return }
        while pa_operation_get_state(op) == PA_OPERATION_RUNNING && alive() {
            pa_threaded_mainloop_wait(mainloop)
        }
        pa_operation_unref(op)
    }

    /// Corks (pauses) or uncorks the stream. A cork waits for the server to confirm and for
    /// fresh timing (one round trip, under a millisecond locally), as ``flush()`` does: the
    /// latency read while paused is where the server stopped, never the last timing from
    /// before (a stream paused right after it started has none but its filling-up report,
    /// which put the heard position at the start while the server had played on). An uncork
    /// takes effect at the server's next render.
    @discardableResult
    func cork(_ on: Bool) -> Bool {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        guard alive() else { return false }
        if on {
            guard let op = pa_stream_cork(stream, 1, Self.signalDone, userdata) else { return false }
            wait(op)
            corked = true
            wait(pa_stream_update_timing_info(stream, Self.signalDone, userdata))
            return true
        }
        guard let op = pa_stream_cork(stream, 0, nil, nil) else { return false }
        pa_operation_unref(op)
        corked = false
        userdata.pointee.timingInterval = Self.firstTimingInterval
        // Fresh timing at once (answered after the uncork: the server handles requests in order).
        userdata.pointee.uncorkedNotPlaying = true
        userdata.pointee.timingRequested = true
        lastTimingRequest = monotonicNanos()
        if let t = pa_stream_update_timing_info(stream, Self.timingArrived, userdata) { pa_operation_unref(t) }
        return true
    }

    /// Starts playback of what is queued even if the buffer is not full (the end of input).
    func trigger() {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        if let op = pa_stream_trigger(stream, nil, nil) { pa_operation_unref(op) }
    }

    /// Plays out what is queued and returns when the server has played it (or the stream failed).
    func drain() {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        guard alive() else { return }
        wait(pa_stream_drain(stream, Self.signalDone, userdata))
    }

    /// Empties the notification pipe (after a wait).
    func drainNotifications() {
        var scratch: (UInt64, UInt64) = (0, 0)
        while withUnsafeMutableBytes(of: &scratch, { read(notifyFD, $0.baseAddress, 16) }) > 0 {}
    }

    /// Disconnects and frees everything (once).
    func close() {
        guard !closed else { return }
        closed = true
        pa_threaded_mainloop_lock(mainloop)
        pa_stream_disconnect(stream)
        pa_stream_unref(stream)
        pa_context_disconnect(context)
        pa_context_unref(context)
        pa_threaded_mainloop_unlock(mainloop)
        pa_threaded_mainloop_stop(mainloop)
        Self.release(mainloop, userdata, [notifyFD, notifyWriteFD])
    }

    /// Whether a server answers within a second (connects and disconnects at once, from the
    /// calling thread; a server that accepts but never answers, stopped say, counts as absent).
    static func probe() -> Bool {
        guard let m = pa_mainloop_new() else { return false }
        defer { pa_mainloop_free(m) }
        guard let c = pa_context_new(pa_mainloop_get_api(m), "Backline probe") else { return false }
        defer { pa_context_unref(c) }
        guard pa_context_connect(c, nil, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0 else { return false }
        defer { pa_context_disconnect(c) }
        let deadline = monotonicNanos() + 1_000_000_000
        while monotonicNanos() < deadline {
            let st = pa_context_get_state(c)
            if st == PA_CONTEXT_READY { return true }
            if st == PA_CONTEXT_FAILED || st == PA_CONTEXT_TERMINATED { return false }
            // One bounded wait (50 ms) for the server, then the state again.
            guard pa_mainloop_prepare(m, 50_000) >= 0, pa_mainloop_poll(m) >= 0, pa_mainloop_dispatch(m) >= 0 else { return false }
        }
        return false
    }
}

/// A PulseAudio stream as an ``AudioOutput``: `pulse` (the server's default sink) and `pulse:SINK`.
extension PulseStream: AudioOutput {
    static func handles(_ device: String) -> Bool { sink(forDevice: device) != nil }
    /// The stream's channel map is `WAVEEX` (set at open), so the server places each channel.
    static var channelOrder: ChannelOrder { .wave }

    static func open(device: String, rate: Int, channels: Int, preferred: DeviceSampleFormat,
                     bufferMicros: Int, periodMicros: Int, mmap: Bool) throws(MediaError) -> PulseStream {
        do {
            return try PulseStream(sink: sink(forDevice: device) ?? nil, rate: rate, channels: channels, preferred: preferred,
                                   bufferMicros: bufferMicros, periodMicros: periodMicros)
        } catch {
            // Reported with an errno-style code, as ALSA would for the same failure.
            let code: Int32 = switch UInt32(error.code) {
            case PA_ERR_CONNECTIONREFUSED.rawValue, PA_ERR_CONNECTIONTERMINATED.rawValue: -ECONNREFUSED
            case PA_ERR_NOENTITY.rawValue: -ENOENT
            case PA_ERR_ACCESS.rawValue: -EACCES
            default: -EIO
            }
            throw MediaError(.device, "\(error.function): \(error.message)", library: "PulseAudio", code: code, item: device)
        }
    }

    static func probe(device: String) -> (available: Bool, soundServer: Bool) { (probe(), true) }

    /// The sink's own channels, from a stream opened (and closed) on it without writing.
    static func channelLimit(device: String) -> Int? {
        guard let s = try? open(device: device, rate: 48_000, channels: 2, preferred: .float32,
                                bufferMicros: 100_000, periodMicros: 50_000, mmap: false) else { return nil }
        defer { s.close() }
        return s.configuration.maxChannels
    }

    /// Corked: paused; uncorked and not started again by the server: prepared, nothing heard
    /// yet (see `Callbacks.uncorkedNotPlaying`); else running.
    func state() -> OutputState {
        if isCorked { return .paused }
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        guard !userdata.pointee.uncorkedNotPlaying else {
            requestTimingIfDue(known: false)  // until the server says it plays again
            return .prepared
        }
        return .running
    }
    var isLost: Bool { !isAlive }
    func delay() -> Int? { delayFrames() }
    func avail() -> Int { availFrames() }

    /// The server's requests arrive as bytes on the stream's notification pipe.
    func waitForRoom(timeoutMillis: Int32, wake: Int32) -> Int32 {
        let ready = availFrames()
        if ready < 0 { return Int32(ready) }
        if ready >= configuration.periodFrames { return 1 }
        return withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 2) { fds -> Int32 in
            fds[0] = pollfd(fd: notifyFD, events: Int16(POLLIN), revents: 0)
            fds[1] = pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
            let r = poll(fds.baseAddress, 2, timeoutMillis)
            if r < 0 { return errno == EINTR ? 0 : -errno }
            if fds[0].revents != 0 { drainNotifications() }
            return fds[1].revents & Int16(POLLIN) != 0 ? 0 : 1
        }
    }

    /// Sleeps with no timeout on `wake` and the stream's notification pipe. True when the stream
    /// spoke (a state change; a request or timing left over from before the cork). A corked
    /// stream's server sends nothing periodic, so a healthy pause costs no wake-ups.
    func waitWhilePaused(wake: Int32) -> Bool {
        withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 2) { fds -> Bool in
            fds[0] = pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
            fds[1] = pollfd(fd: notifyFD, events: Int16(POLLIN), revents: 0)
            guard poll(fds.baseAddress, 2, -1) > 0 else { return false }  // EINTR: the caller re-checks
            guard fds[1].revents != 0 else { return false }
            drainNotifications()
            return true
        }
    }

    func beginDirectWrite(frames: Int) -> DirectWrite { .unsupported }
    func commitDirectWrite(offset: Int, frames: Int) -> Int { -Int(EINVAL) }

    func discard() {
        // A drop also ends ALSA's pause; a flushed stream stays corked until told.
        flush()
        if isCorked { _ = cork(false) }
    }

    func stop() { flush() }
    func prepare() -> Int32 { 0 }
    func resume() -> Int32 { 0 }
    func pause(_ on: Bool) -> Bool { cork(on) }
    func startIfWaiting() { trigger() }
}
