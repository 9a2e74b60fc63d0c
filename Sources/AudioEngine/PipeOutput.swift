import CALSA  // (its headers declare poll and the signal sets this module uses)
import CSoxr
import Locking
import MediaCore
import Platform
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The `pipe:PATH[?format=RATE:16:CHANNELS][&latency=MS]` driver: PCM into a FIFO another
/// program reads — Snapcast's `snapserver` with a `pipe://` stream — as a sound card would play
/// it. Its stream has one fixed format (snapserver's default `48000:16:2`); items at other rates
/// are resampled with libsoxr (its high quality), a mono item is played on every channel, more
/// channels are down-mixed by the decoder (``channelLimit(device:)``).
///
/// - The FIFO is never created here: the reader makes it (snapserver's `mode=create`), so no
///   stale FIFO's old audio is ever replayed; missing, the device is unavailable. It is
///   opened for reading too, as mpd's `fifo` output does: snapserver opens its end only now and
///   then while nothing writes (each time it finds the end of the file), so a writer alone would
///   find no reader; and holding a read end lets a flush take back what the reader has not read.
///   A reader that stops taking the audio (the FIFO full of it for a second) is a lost device, as
///   a sound server that goes away.
/// - It is written at real-time pace: what the engine writes waits in this driver's buffer (its
///   "device buffer", `buffer` ms) and goes into the FIFO as the clock reaches it, one period
///   and 20 ms ahead, so the reader never starves between the output thread's wake-ups and the
///   FIFO never holds more than that: a pause, a seek or a next drops what was not yet sent.
/// - The heard position counts what waits here, what is in the FIFO, the resampler's delay,
///   and `latency` (ms: the reader's own buffer and its clients', e.g. snapserver's `buffer`).
struct PipeOutput: AudioOutput {
    let configuration: DeviceConfiguration
    let pipe: PipeStream

    static func handles(_ device: String) -> Bool { device.hasPrefix("pipe:") }
    static var channelOrder: ChannelOrder { .wave }

    /// What a `pipe:` device names.
    struct Target: Equatable {
        var path: String
        var rate = 48000
        /// Stereo only (see ``target(_:)``).
        let channels = 2
        var latencyMillis = 0
    }

    /// Parses `pipe:PATH[?format=RATE:16:CHANNELS][&latency=MS]`.
    static func target(_ device: String) throws(MediaError) -> Target {
        let spec = device.dropFirst(5)
        let parts = spec.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard let path = parts.first, path.hasPrefix("/") else {
            throw MediaError(.device, "a pipe device is pipe:/ABSOLUTE/PATH[?format=48000:16:2], not '\(device)'", item: device)
        }
        var t = Target(path: String(path))
        for option in parts.count > 1 ? parts[1].split(separator: "&") : [] {
            let kv = option.split(separator: "=", maxSplits: 1)
            switch (kv.first, kv.count == 2 ? kv[1] : nil) {
            case ("format", let v?):
                let f = v.split(separator: ":")
                // (Stereo, as snapserver streams by default: a whole number of frames in every
                // page of the FIFO, so a flush never splits one.)
                guard f.count == 3, let rate = Int(f[0]), (8000...384_000).contains(rate), f[1] == "16", f[2] == "2" else {
                    throw MediaError(.device, "pipe format must be RATE:16:2 (16-bit stereo, as snapserver reads it), not '\(v)'", item: device)
                }
                t.rate = rate
            case ("latency", let v?):
                guard let ms = Int(v), (0...60_000).contains(ms) else {
                    throw MediaError(.device, "pipe latency is milliseconds, 0…60000, not '\(v)'", item: device)
                }
                t.latencyMillis = ms
            default:
                throw MediaError(.device, "unknown pipe option '\(option)' (format=RATE:16:CHANNELS, latency=MS)", item: device)
            }
        }
        return t
    }

    static func open(device: String, rate: Int, channels: Int, preferred: DeviceSampleFormat,
                     bufferMicros: Int, periodMicros: Int, mmap: Bool) throws(MediaError) -> PipeOutput {
        let t = try target(device)
        let fd = try openFIFO(t.path, device: device)
        let buffer = max(256, bufferMicros * rate / 1_000_000)
        let period = min(max(64, periodMicros * rate / 1_000_000), buffer / 2)
        // The same rate and channels: the engine converts to 16 bits itself (rounded, clipped:
        // the S16 path every device has); otherwise float32 in, mapped and resampled here.
        let direct = rate == t.rate && channels == t.channels
        let stream: PipeStream
        do {
            stream = try PipeStream(fd: fd.write, readEnd: fd.read, target: t, inRate: rate, inChannels: min(channels, t.channels), direct: direct,
                                    bufferFrames: buffer, periodFrames: period)
        } catch {
            Glibc.close(fd.read)
            Glibc.close(fd.write)
            // ("libsoxr is not installed (…)" names it already; libsoxr's own messages do not.)
            let reason = error.message.hasPrefix("libsoxr") ? error.message : "libsoxr: \(error.message)"
            resamplerFailure.withLock { $0 = reason }
            throw MediaError(.device, reason, library: "libsoxr", item: device)
        }
        resamplerFailure.withLock { $0 = nil }
        return PipeOutput(configuration: DeviceConfiguration(
            rate: rate, channels: min(channels, t.channels), sampleFormat: direct ? .s16 : .float32, bufferFrames: buffer,
            periodFrames: period, canPause: true, maxChannels: t.channels), pipe: stream)
    }

    /// Opens the FIFO without blocking, for reading (ours: see above) then for writing: it must
    /// exist (the reader made it) and be a FIFO.
    static func openFIFO(_ path: String, device: String) throws(MediaError) -> (read: Int32, write: Int32) {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw MediaError(.device, "\(path): no such FIFO (its reader makes it: start snapserver with mode=create first)",
                             code: -ENODEV, item: device)
        }
        guard st.st_mode & S_IFMT == S_IFIFO else {
            throw MediaError(.device, "\(path) is not a FIFO", code: -ENODEV, item: device)
        }
        // (Opened without following a link swapped in meanwhile, and checked again once open.)
        let r = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW)
        let w = r >= 0 ? Glibc.open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC) : -1
        var opened = stat()
        guard w >= 0, fstat(w, &opened) == 0, opened.st_mode & S_IFMT == S_IFIFO else {
            let e = errno
            if r >= 0 { Glibc.close(r) }
            if w >= 0 { Glibc.close(w) }
            throw MediaError(.device, "\(path): \(w >= 0 ? "not a FIFO" : String(cString: strerror(e)))", code: -ENODEV, item: device)
        }
        return (r, w)
    }

    /// Which FIFO, and what is wrong with it (missing, not a FIFO, no reader), or why its resampler
    /// failed; nil when neither.
    static func failureReason(device: String) -> String? {
        do throws(MediaError) {
            let fd = try openFIFO(try target(device).path, device: device)
            Glibc.close(fd.read)
            Glibc.close(fd.write)
            return resamplerFailure.withLock { $0 }
        } catch {
            return error.message
        }
    }

    /// Why the last open failed once its FIFO had opened: the resampler (libsoxr not installed,
    /// or refusing the rates); nil after an open that succeeded. ``failureReason(device:)``
    /// says it, as the output thread reports a failed open by its code alone.
    private static let resamplerFailure = Lock<String?>(nil)

    /// At most the pipe's channels (the decoder down-mixes the rest).
    static func channelLimit(device: String) -> Int? { (try? target(device))?.channels }

    /// Whether the FIFO is there (its reader made it).
    static func probe(device: String) -> (available: Bool, soundServer: Bool) {
        guard let t = try? target(device) else { return (false, true) }
        var st = stat()
        return (stat(t.path, &st) == 0 && st.st_mode & S_IFMT == S_IFIFO, true)
    }

    // (Reading the device's position plays it on: the FIFO is fed whenever the output thread
    // looks, as a sound card plays whether looked at or not — draining included.)
    func state() -> OutputState { pipe.state }
    var isLost: Bool { pipe.lost }
    func delay() -> Int? { pipe.pump(); return pipe.delay() }
    func avail() -> Int { pipe.pump(); return pipe.lost ? -Int(ENODEV) : pipe.room() }

    func waitForRoom(timeoutMillis: Int32, wake: Int32) -> Int32 { pipe.waitForRoom(timeoutMillis: timeoutMillis, wake: wake) }

    /// Paused, nothing is sent: only `wake` is watched.
    func waitWhilePaused(wake: Int32) -> Bool {
        waitForWake(wake)
        return false
    }

    func beginDirectWrite(frames: Int) -> DirectWrite { .unsupported }
    func commitDirectWrite(offset: Int, frames: Int) -> Int { -Int(EINVAL) }
    func write(_ buffer: UnsafeRawPointer, frames: Int) -> Int { pipe.write(buffer, frames: frames) }
    func discard() { pipe.discard() }
    func stop() { pipe.discard() }
    func prepare() -> Int32 { 0 }
    func resume() -> Int32 { 0 }
    func pause(_ on: Bool) -> Bool { pipe.pause(on); return true }
    func startIfWaiting() {}
    func drain() { pipe.drain() }
    func close() { pipe.close() }
}

/// A libsoxr failure: its message.
struct SoxrError: Error {
    let message: String
}

/// The pipe output's state, touched by the output thread only (`@unchecked Sendable`): the FIFO,
/// the audio waiting to be sent (16-bit, in the pipe's format), the clock that sends it, the
/// resampler. Every buffer is allocated at open: writing allocates nothing.
final class PipeStream: @unchecked Sendable {
    let fd: Int32
    /// Our own read end (see ``PipeOutput``): a flush reads back what the reader has not.
    let readEnd: Int32
    let target: PipeOutput.Target
    let inRate: Int, inChannels: Int
    let bufferFrames: Int, periodFrames: Int
    /// The engine's 16-bit frames go straight in (same rate and channels).
    let direct: Bool
    private let bytesPerFrame: Int
    /// Audio not sent yet: `queued` bytes from `queue`'s start.
    private let queue: UnsafeMutableRawPointer
    private let queueCapacity: Int
    private var queued = 0
    /// The input mapped to the pipe's channels (float32), before resampling.
    private let mapped: UnsafeMutablePointer<Float>
    private let resampler: soxr_t?
    /// When the clock started (0: stopped: nothing sent since the last start, pause or flush),
    /// and the bytes sent since.
    private var startNanos = 0
    private var sentBytes = 0
    /// How far ahead of the clock the FIFO is filled: a period and 20 ms (the output thread
    /// wakes once a period: the reader never finds it empty between).
    private let leadBytes: Int
    private(set) var paused = false
    private(set) var lost = false
    /// Since when audio has been due and the FIFO full (0: it is not): nobody reads it.
    private var stuckSince = 0
    /// Something was sent since the open or the last flush: the device runs (a queue that
    /// runs dry is a device playing what it was given, not one waiting to start).
    private var started = false
    /// When everything written had left this buffer and the FIFO (0: it has not): the reader's
    /// latency runs down from then (what it buffered plays on).
    private var emptiedAt = 0
    /// Sending the rest at the end: a run may start with less than the lead.
    private var draining = false

    init(fd: Int32, readEnd: Int32, target: PipeOutput.Target, inRate: Int, inChannels: Int, direct: Bool, bufferFrames: Int, periodFrames: Int)
        throws(SoxrError) {
        (self.fd, self.readEnd, self.target, self.inRate, self.inChannels, self.direct) = (fd, readEnd, target, inRate, inChannels, direct)
        (self.bufferFrames, self.periodFrames) = (bufferFrames, periodFrames)
        bytesPerFrame = 2 * target.channels
        let pipeFrames = Self.pipeFrames(bufferFrames, from: inRate, to: target.rate) + target.rate / 5
        queueCapacity = pipeFrames * bytesPerFrame
        leadBytes = (Self.pipeFrames(periodFrames, from: inRate, to: target.rate) + target.rate / 50) * bytesPerFrame
        if inRate != target.rate {
            // libsoxr is opened here the first time (see `SoxrLibrary`): without it the output
            // cannot open at this rate, saying why.
            try SoxrLibrary.load()
            var error: soxr_error_t?
            var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_INT16_I)
            io.flags |= UInt(SOXR_NO_DITHER)  // (deterministic: the same input, the same output)
            var quality = soxr_quality_spec(UInt(SOXR_HQ), 0)
            let r = soxr_create(Double(inRate), Double(target.rate), UInt32(target.channels), &error, &io, &quality, nil)
            if let error { throw SoxrError(message: String(cString: error)) }
            resampler = r
        } else {
            resampler = nil
        }
        // The FIFO holds at least twice the lead: snapserver reads in real time, and a FIFO
        // smaller than a period (64 KiB is 341 ms at 48 kHz) would run dry between wake-ups.
        let want = Int32(max(65536, 2 * leadBytes))
        let (getSize, setSize): (Int32, Int32) = (1032, 1031)  // F_GETPIPE_SZ, F_SETPIPE_SZ (Linux; not in the Swift overlay)
        if fcntl(fd, getSize) < want { _ = fcntl(fd, setSize, want) }
        queue = .allocate(byteCount: queueCapacity, alignment: 16)
        mapped = .allocate(capacity: max(1, bufferFrames) * target.channels)
        // Our own read end keeps write() from failing with EPIPE; should it ever (the FIFO's
        // ends closed under us), its SIGPIPE (sent to this thread) is blocked here, not fatal.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    static func pipeFrames(_ frames: Int, from: Int, to: Int) -> Int { (frames * to + from - 1) / from }

    var state: OutputState { paused ? .paused : started ? .running : .prepared }

    /// Input frames that fit now.
    func room() -> Int {
        let heldPipe = queued / bytesPerFrame
        let held = (heldPipe * inRate + target.rate - 1) / target.rate
        return max(0, bufferFrames - held)
    }

    /// Input frames written and not yet heard: waiting here, in the FIFO, in the resampler, and
    /// the reader's latency.
    func delay() -> Int {
        var inFIFO: Int32 = 0
        if ioctl(fd, UInt(FIONREAD), &inFIFO) != 0 { inFIFO = 0 }
        let resampling = resampler.map { soxr_delay($0) } ?? 0
        let pipe = Double(queued + Int(inFIFO)) / Double(bytesPerFrame) + resampling
        // The reader's latency: whole while audio flows; once all is out, it plays down.
        var latency = target.latencyMillis * inRate / 1000
        if queued == 0, inFIFO == 0, started {
            let now = monotonicNanos()
            if emptiedAt == 0 { emptiedAt = now }
            latency = max(0, latency - Int(Double(now - emptiedAt) * Double(inRate) / 1e9))
        } else {
            emptiedAt = 0
        }
        return Int((pipe * Double(inRate) / Double(target.rate)).rounded()) + latency
    }

    /// Sends what the clock has reached (and the lead ahead of it).
    func pump() {
        guard !paused, !lost, queued > 0 else {
            if queued == 0 { startNanos = 0 }  // starved, or nothing yet: the clock starts again with the next audio
            return
        }
        let now = monotonicNanos()
        if startNanos == 0 {
            // A run starts with the whole lead queued (after a seek the decoder is still filling
            // it): a reader that gets a few frames and then nothing (snapserver) resyncs its
            // stream at the next ones, a drop-out of a second.
            guard draining || queued >= min(leadBytes, queueCapacity / 2) else { return }
            // The clock starts (again): what the FIFO still holds counts as sent ahead.
            var inFIFO: Int32 = 0
            if ioctl(fd, UInt(FIONREAD), &inFIFO) != 0 { inFIFO = 0 }
            (startNanos, sentBytes) = (now, Int(inFIFO))
        }
        let clockBytes = Int(Double(now - startNanos) * Double(target.rate) / 1e9) * bytesPerFrame
        let due = min(queued, clockBytes + leadBytes - sentBytes)
        guard due > 0 else {
            stuckSince = 0
            return
        }
        let n = Glibc.write(fd, queue, due)
        if n > 0 {
            sentBytes += n
            queued -= n
            if queued > 0 { memmove(queue, queue + n, queued) }
            stuckSince = 0
            started = true
        } else {
            if n < 0, errno == EPIPE || errno == EBADF {
                lost = true
                var set = sigset_t(), info = siginfo_t(), zero = timespec()
                sigemptyset(&set)
                sigaddset(&set, SIGPIPE)
                _ = sigtimedwait(&set, &info, &zero)  // (the pending SIGPIPE: taken, not left)
                return
            }
            // EAGAIN: the FIFO is full, the rest goes next time. Full for a second while audio is
            // due: nobody takes it (the reader gone, the FIFO left behind).
            if stuckSince == 0 { stuckSince = now } else if now - stuckSince > 1_000_000_000 { lost = true }
        }
    }

    /// Waits until a period fits, the timeout passes (1), `wake` is readable (0), or the reader
    /// is gone (< 0), sending what comes due meanwhile.
    func waitForRoom(timeoutMillis: Int32, wake: Int32) -> Int32 {
        let deadline = monotonicNanos() + Int(timeoutMillis) * 1_000_000
        while true {
            pump()
            if lost { return -ENODEV }
            if room() >= periodFrames { return 1 }
            let now = monotonicNanos()
            guard now < deadline else { return 1 }
            // Until a period's worth has gone out (at least 1 ms; the deadline at most).
            let needBytes = Self.pipeFrames(periodFrames - room(), from: inRate, to: target.rate) * bytesPerFrame
            let waitNanos = max(1_000_000, needBytes / bytesPerFrame * 1_000_000_000 / target.rate)
            let millis = Int32(min(deadline - now, waitNanos) / 1_000_000)
            let woke = withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 1) { fds -> Bool in
                fds[0] = pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
                return poll(fds.baseAddress, 1, max(1, millis)) > 0 && fds[0].revents & Int16(POLLIN) != 0
            }
            if woke { return 0 }
        }
    }

    /// Takes `frames` frames of the engine's format into the queue (16-bit as they are; float32
    /// mapped to the pipe's channels, then resampled or rounded to 16 bits).
    func write(_ buffer: UnsafeRawPointer, frames: Int) -> Int {
        if lost { return -Int(ENODEV) }
        let n = min(frames, room())
        guard n > 0 else { return 0 }
        let free = queueCapacity - queued
        if direct {
            let bytes = min(n * bytesPerFrame, free / bytesPerFrame * bytesPerFrame)
            (queue + queued).copyMemory(from: buffer, byteCount: bytes)
            queued += bytes
            pump()
            return bytes / bytesPerFrame
        }
        // float32 in: each frame onto the pipe's channels (a mono item on all of them).
        let input = buffer.assumingMemoryBound(to: Float.self)
        let out = target.channels
        for f in 0..<n {
            for c in 0..<out {
                mapped[f * out + c] = inChannels == 1 ? input[f] : c < inChannels ? input[f * inChannels + c] : 0
            }
        }
        let taken: Int
        if let resampler {
            var used = 0, made = 0
            let err = soxr_process(resampler, mapped, n, &used, queue + queued, free / bytesPerFrame, &made)
            if err != nil { return -Int(EIO) }
            queued += made * bytesPerFrame
            taken = used
        } else {
            let count = min(n, free / bytesPerFrame)
            let dst = (queue + queued).assumingMemoryBound(to: Int16.self)
            for i in 0..<(count * out) {
                let v = (mapped[i] * 32768).rounded()
                dst[i] = Int16(max(-32768, min(32767, v)))
            }
            queued += count * bytesPerFrame
            taken = count
        }
        pump()
        return taken
    }

    /// Drops what was not sent, and what the reader has not read from the FIFO (read back
    /// through our own end), and the resampler's history; the clock starts again with the next
    /// audio.
    func discard() {
        queued = 0
        startNanos = 0
        stuckSince = 0
        emptiedAt = 0
        started = false
        draining = false
        paused = false  // (a flush ends a pause, as ALSA's drop does: the next audio plays)
        if let resampler { soxr_clear(resampler) }  // (libsoxr re-initialises here: a flush, not the steady state)
        while Glibc.read(readEnd, queue, queueCapacity) > 0 {}  // (the queue is free: read into it)
    }

    func pause(_ on: Bool) {
        paused = on
        startNanos = 0  // (resumed: the clock starts from what is queued then)
        stuckSince = 0
        if on { takeBack() }
    }

    /// Reads back what the reader has not taken from the FIFO, in front of what is queued: a
    /// pause is heard once what the reader already took has played (not the FIFO's lead too),
    /// and play goes on from there, nothing lost. (mpd's `fifo` output drops it instead.)
    private func takeBack() {
        var inFIFO: Int32 = 0
        guard ioctl(fd, UInt(FIONREAD), &inFIFO) == 0, inFIFO > 0, queued + Int(inFIFO) <= queueCapacity else { return }
        let n = Int(inFIFO)
        if queued > 0 { memmove(queue + n, queue, queued) }
        // The reader may take some meanwhile: what is read is the FIFO's tail, whole frames but
        // perhaps the first (the rest of one the reader took in part).
        var got = 0
        while got < n {
            let r = Glibc.read(readEnd, queue + got, n - got)
            guard r > 0 else { break }
            got += r
        }
        let skip = got % bytesPerFrame
        let kept = got - skip
        if skip > 0 { memmove(queue, queue + skip, kept) }
        if kept < n, queued > 0 { memmove(queue + kept, queue + n, queued) }
        queued += kept
    }

    /// Sends the rest (the resampler's tail too, then 100 ms of silence) at real-time pace, then
    /// waits until the reader has taken it from the FIFO (30 s at most).
    func drain() {
        if let resampler {
            var made = 0
            _ = soxr_process(resampler, nil, 0, nil, queue + queued, (queueCapacity - queued) / bytesPerFrame, &made)
            queued += made * bytesPerFrame
        }
        // A reader takes its input in chunks (snapserver: 20 ms) and drops a partial one when the
        // writer goes: a tenth of a second of silence after the end carries the last sound through.
        let pad = min(queueCapacity - queued, target.rate / 10 * bytesPerFrame)
        memset(queue + queued, 0, pad)
        queued += pad
        paused = false
        draining = true
        defer { draining = false }
        let deadline = monotonicNanos() + 30_000_000_000
        var last: Int32 = -1, movedAt = monotonicNanos()
        while monotonicNanos() < deadline, !lost {
            pump()
            var inFIFO: Int32 = 0
            guard ioctl(fd, UInt(FIONREAD), &inFIFO) == 0 else { return }
            if queued == 0, inFIFO == 0 { return }
            // All sent and the reader not taking it for a second: gone.
            let now = monotonicNanos()
            if inFIFO != last { (last, movedAt) = (inFIFO, now) } else if queued == 0, now - movedAt > 1_000_000_000 {
                lost = true
                return
            }
            usleep(5_000)
        }
    }

    private var closed = false
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
        Glibc.close(readEnd)
        if let resampler { soxr_delete(resampler) }
        queue.deallocate()
        mapped.deallocate()
    }
}
