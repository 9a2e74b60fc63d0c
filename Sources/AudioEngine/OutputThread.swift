import CALSA
import CPulse
import MediaCore
import Platform
import RingBuffer
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// Output settings.
public struct OutputSettings: Sendable, Equatable {
    /// The output: an ALSA PCM name (`default`, `hw:0`, `null`, `file:…`), or `pulse` /
    /// `pulse:SINK` for a PulseAudio (or PipeWire-Pulse) server reached natively through
    /// libpulse: one stream for as long as the format stays, flushed in place at a jump.
    public var device: String
    /// Device buffer length (default 500 ms, as mpg123 and mpd) and period (default half of it: 4 wake-ups a second at 500 ms, a 250 ms cushion).
    ///
    /// A longer buffer means fewer wake-ups (8 a second at 500 ms) and more safety against a
    /// stalled process; pause, stop, seek and skip stay immediate (hardware pause or drop), but a
    /// volume change is heard only after what the device already holds (up to the buffer length).
    public var bufferMillis: Int
    /// Device period in milliseconds: how often the output thread wakes to refill the device
    /// (default half of ``bufferMillis``).
    public var periodMillis: Int
    /// Device sample format to try first (the other is the fallback).
    public var preferredFormat: DeviceSampleFormat
    /// Ask for SCHED_FIFO on the output thread.
    public var realtime: Bool
    /// Use `snd_pcm_pause` where the device offers it (default). When false, or on a device
    /// without it, pause drops the device buffer and resume re-seeks to the frame last heard
    /// (for drivers whose hardware pause is broken).
    public var hardwarePause: Bool = true
    /// Render straight into an ALSA device's own buffer (`snd_pcm_mmap_begin`/`commit`) where the
    /// device offers mmap access: one copy fewer than `snd_pcm_writei` through a card. Off by
    /// default: it is bit-exact through ALSA's `file` and `null` plugins, but has not run on a card
    /// here (none on the test machine), and those plugins gain nothing from it. When false, or on
    /// a device without it, the output renders into its own period buffer and writes that.
    public var mmap: Bool = false
    /// The most channels to send the device (2…8; mpv's `--audio-channels`, mpd's output
    /// `format`): a file with more than this, or more than the device takes, is down-mixed to
    /// stereo. Default 8: whatever the device takes.
    public var maxChannels: Int = 8

    /// Settings for `device`, with mpg123's and mpd's 500 ms buffer unless given.
    /// - Parameters:
    ///   - device: An ALSA PCM name, or `pulse` / `pulse:SINK`.
    ///   - bufferMillis: The device buffer, milliseconds.
    ///   - periodMillis: The device period, milliseconds (nil: half the buffer, at least 5).
    ///   - preferredFormat: The sample format to try first.
    ///   - realtime: Whether the output thread asks for SCHED_FIFO.
    public init(device: String = "default", bufferMillis: Int = 500, periodMillis: Int? = nil,
                preferredFormat: DeviceSampleFormat = .float32, realtime: Bool = true) {
        self.device = device
        self.bufferMillis = bufferMillis
        self.periodMillis = periodMillis ?? max(5, bufferMillis / 2)
        self.preferredFormat = preferredFormat
        self.realtime = realtime
    }
}

/// The output thread: owns the device (an ALSA PCM or a PulseAudio stream), drains the PCM ring through the ``Renderer``,
/// follows in-band markers, and publishes position and events.
///
/// The loop touches only its own stack state, preallocated buffers, atomics and ALSA: no locks
/// of ours, no allocation (except when the device is reopened for a new format, which is not
/// the steady state), no logging, no Swift concurrency. Opening an ALSA device allocates inside
/// alsa-lib; that happens only at item boundaries that change format, under the one lock this
/// thread takes (`EngineShared.deviceChannels`, shared with the decoder thread's probe of what
/// the device takes), never while rendering.
/// Generic over the driver (`ALSAPCM`, `PulseStream`, `PipeOutput`, `PacedOutput`): the loop is
/// entered through the concrete type (`runSpecialised`), so it is specialised per driver and
/// calls its device directly, with no existential, witness table or metadata lookup on the
/// real-time path; the engine holds it as an ``OutputThreadHandle`` (start and join only).
final class OutputThread<Device: AudioOutput>: OutputThreadHandle, @unchecked Sendable {
    // @unchecked Sendable: after `start()` every mutable field is used only by the thread itself;
    // the rest is `let`.
    private let shared: EngineShared
    private let settings: OutputSettings
    /// Copied out of `settings`, so the loop reads plain integers (no struct with a String).
    private let periodMillis: Int
    private var consumer: RingConsumer
    private var markers: RingConsumer
    private var events: RingProducer
    private var renderer = Renderer()
    private let periodBuffer: UnsafeMutableRawPointer
    private let periodBufferFrames = 16_384
    private var pcm: Device?
    private var framesWritten = 0
    /// `framesWritten` when the device was last (re)started empty (opened, prepared after a drop
    /// or an underrun): nothing before it is still in the device, so the published delay never
    /// reaches back past it, and while the device is not yet running it is what is heard.
    private var heardFloor = 0
    private var generation: UInt32 = 0
    /// Generation and format of the segment whose bytes are next in the ring.
    private var segmentGeneration: UInt32 = .max
    private var segmentChannels = 2
    private var segmentRate = 0
    /// Content frames per frame of the segment (the rate the decoder stretched it to).
    private var segmentSpeed = 1.0
    /// The playing item's ReplayGain scale (1: off, or none), times the volume for the renderer.
    private var segmentGain: Float = 1
    private var segmentItem: UInt64 = 0
    /// The ring position and item frame where the segment began: the item frame the output
    /// has reached is worked out from them (a stall holds the item there).
    private var segmentStartPosition = 0
    private var segmentStartFrame = 0
    /// `framesWritten` when the segment began.
    private var segmentStartWritten = 0
    /// Stalled: the ring ran dry while the input waited for the network. The device plays
    /// silence (it stays open and running: no underrun) and the item holds at this frame until
    /// enough is buffered again (see `stallStep`).
    private var stalledAt: Int?
    private var endReported = false
    /// The last cut seen, and the one pending (bytes [from, to) to skip).
    private var seenCut: UInt64 = 0
    private var cut: Cut?
    private typealias Cut = (from: Int, to: Int, anchor: UInt64, lastRemoved: UInt64)
    /// Whether any marker of the current generation has arrived: the end of input is only
    /// reported after some input (an engine with nothing queued yet has nothing to end).
    private var sawInput = false
    /// The device failed (a write, a wait, or an open): the output holds its place in the ring,
    /// consuming nothing, until the control plane re-plans (a new generation); it never skips
    /// the audio it could not play.
    private var deviceLost = false
    /// The last published heard frame (device timeline), when it was read, and whether the
    /// device was running then: the loss estimate's starting point.
    private var lastHeard = (frame: 0, stamp: 0, running: false)
    private var thread: PlatformThread?

    init(shared: EngineShared, settings: OutputSettings, consumer: consuming RingConsumer,
         markers: consuming RingConsumer, events: consuming RingProducer) {
        self.shared = shared
        self.settings = settings
        periodMillis = settings.periodMillis
        editWaitNanos = min(100, max(5, settings.bufferMillis / 2)) * 1_000_000
        self.consumer = consumer
        self.markers = markers
        self.events = events
        periodBuffer = UnsafeMutableRawPointer.allocate(byteCount: periodBufferFrames * 8, alignment: 64)
        periodBuffer.initializeMemory(as: UInt8.self, repeating: 0, count: periodBufferFrames * 8)
    }

    deinit {
        periodBuffer.deallocate()
    }

    func start() {
        // The loop compiled for this driver (``OutputDriver``), else the generic one.
        let loop = OutputDrivers.entry(for: Device.self)?.run
        thread = PlatformThread.start(name: "bl-output") { [self] in
            if let loop { loop(self) } else { run() }
        }
    }

    /// The thread's loop, for ``OutputDriver/of(_:)``.
    func runLoop() { run() }

    func join() {
        shared.wakeOutput()  // (from a wait with no timeout)
        thread?.join()
        thread = nil
    }

    private func requestRealtime() {
        guard settings.realtime else {
            shared.realtimeStatus.store(3, ordering: .releasing)
            return
        }
        var param = sched_param()
        param.sched_priority = 10
        let ok = pthread_setschedparam(pthread_self(), Int32(SCHED_FIFO), &param) == 0
        shared.realtimeStatus.store(ok ? 1 : 2, ordering: .releasing)
    }

    // MARK: - The loop

    private func run() {
        requestRealtime()
        while shared.running.load(ordering: .acquiring) {
            step()
        }
        pcm?.stop()
        closeDevice()
    }

    private func closeDevice() {
        pcm?.close()
        pcm = nil
    }

    private func emit(_ kind: OutputEvent.Kind, item: UInt64 = 0, itemFrame: Int64 = 0, code: Int32 = 0) {
        let e = OutputEvent(kind: kind, generation: generation, item: item, deviceFrame: framesWritten,
                            itemFrame: itemFrame, rate: Int32(segmentRate), code: code, speed: segmentSpeed)
        // The control plane drains this queue every few ms; if it is ever full the event is
        // dropped rather than blocking audio (the queue holds 1024 events).
        _ = events.push(e)
        shared.wakeMonitor()
    }

    /// What the device agreed to, packed into one event: rate, period (in `item`), buffer (in
    /// `itemFrame`), and format, pause support, mmap access and channels in `code`.
    private func emitOpened(_ c: DeviceConfiguration) {
        let code = Int32(c.sampleFormat == .float32 ? 1 : 2) | (c.canPause ? 4 : 0) | (c.mmap ? 8 : 0) | Int32(c.channels << 8)
            | Int32(c.maxChannels << 16)
        _ = events.push(OutputEvent(kind: .deviceOpened, generation: generation, item: UInt64(c.periodFrames),
                                    deviceFrame: framesWritten, itemFrame: Int64(c.bufferFrames), rate: Int32(c.rate), code: code))
        shared.wakeMonitor()
    }

    private func sleepMillis(_ ms: Int) {
        var ts = timespec(tv_sec: 0, tv_nsec: ms * 1_000_000)
        nanosleep(&ts, nil)
    }

    /// Sleeps up to `ms`, returning early when the control plane calls `wakeOutput()`.
    private func sleepWakeable(_ ms: Int) { shared.outputWake.wait(millis: ms) }

    /// Frames written and not yet heard, and the device's state: its delay, never reaching back
    /// past `heardFloor`; all of them while it has not started (filling up to its start
    /// threshold) or cannot tell yet (a PulseAudio stream just started or flushed, no timing from
    /// the server yet), which reads as `.prepared`.
    private func held(_ pcm: Device) -> (frames: Int, state: OutputState) {
        let state = pcm.state()
        let written = framesWritten - heardFloor
        guard state != .prepared, let delay = pcm.delay() else { return (written, .prepared) }
        return (min(written, delay), state)
    }

    /// Whether the last published position was advancing.
    private var advancing = false
    /// The heard frame last published.
    private var lastPublishedHeard = 0

    /// Publishes the position; when it starts advancing (playback began or resumed), wakes the
    /// monitor, which sleeps while it stands still, so what is heard now is announced now.
    private func publishPosition() {
        var frames = 0, running = false
        if let pcm {
            let h = held(pcm)
            (frames, running) = (h.frames, h.state == .running)
        }
        let now = running && !shared.pauseRequested.load(ordering: .relaxed)
        let stamp = monotonicNanos()
        let heard = framesWritten - frames
        lastHeard = (heard, stamp, running)
        // A device that plays in real time is extrapolated between readings; a paced one moves
        // only when its clock does, and each move wakes the monitor (nothing else would).
        let extrapolated = now && Device.playsInRealTime
        shared.publish(framesWritten: framesWritten, delay: frames, floor: heardFloor, stampNanos: stamp, advancing: extrapolated)
        if extrapolated && !advancing { shared.wakeMonitor() }
        if !Device.playsInRealTime, heard != lastPublishedHeard { shared.wakeMonitor() }
        lastPublishedHeard = heard
        advancing = extrapolated
    }

    /// Publishes everything written as heard (drained, or the device released).
    private func publishAllHeard() {
        lastHeard = (framesWritten, monotonicNanos(), false)
        shared.publish(framesWritten: framesWritten, delay: 0, floor: heardFloor)
    }

    /// Drops what the device holds and takes it off the timeline: those frames were never
    /// heard, so the device timeline goes on from the last frame heard (a jump's new audio is
    /// heard right after it, and the position never runs ahead and back). Returns the frames
    /// dropped.
    @discardableResult
    private func dropUnheard(_ pcm: Device) -> Int {
        let before = monotonicNanos()
        let h = held(pcm)
        pcm.discard()
        // Frames a running device kept playing between the reading and the drop were heard.
        let played = h.state == .running ? Int(Double(monotonicNanos() - before) * Double(segmentRate) / 1e9) : 0
        let unheard = max(0, h.frames - played)
        framesWritten -= unheard
        heardFloor = framesWritten
        return unheard
    }

    /// One pass: flush check, pause, markers, then one write.
    private func step() {
        let requested = shared.generation.load(ordering: .acquiring)
        if requested != generation {
            generation = requested
            if let pcm { dropUnheard(pcm) }
            deviceLost = false  // re-planned: the next segment opens the device again
            stalledAt = nil  // the new plan's audio is heard as it comes
            endReported = false
            sawInput = false
            publishPosition()
        }
        if shared.pauseRequested.load(ordering: .acquiring) {
            holdPause()
            return
        }
        if deviceLost {
            sleepWakeable(-1)  // until a flush (a re-plan) or shutdown wakes it
            return
        }
        let cutSeq = shared.cutSeq.load(ordering: .acquiring)
        if cutSeq != seenCut {
            seenCut = cutSeq
            let from = shared.cutFrom.load(ordering: .relaxed)
            if shared.cutGeneration.load(ordering: .relaxed) == generation {
                // In time while no marker at `from` has been applied: the output is before
                // `from`, or holds there at the anchor's end (waiting for this very edit).
                let atFromUnapplied = consumer.position == from && markers.peekMarker()?.position == from
                if consumer.position < from || atFromUnapplied {
                    cut = (from, shared.cutTo.load(ordering: .relaxed), shared.cutAnchor.load(ordering: .relaxed),
                           shared.cutLastRemoved.load(ordering: .relaxed))
                } else {
                    emit(.cutMissed)
                }
            }
        }
        // Read the data counter before the markers: any data visible now has its marker visible too.
        let readable = consumer.availableToRead()
        var limit = readable
        while let m = markers.peekMarker() {
            if let c = cut, Self.isCut(m, c) {
                markers.commit(Marker.stride)  // an item the queue edit replaced
                continue
            }
            if m.position > consumer.position {
                limit = min(limit, m.position - consumer.position)
                break
            }
            if (m.kind == .end || m.kind == .failed) && editPending() {
                waitForEdit()  // the edit may replace what follows this end
                return
            }
            markers.commit(Marker.stride)
            apply(m)
        }
        if let c = cut {
            if consumer.position >= c.from {
                consumer.commit(c.to - consumer.position)  // skip the replaced items' audio
                cut = nil
                shared.wakeDecoder()  // room for the new plan's audio
                return
            }
            limit = min(limit, c.from - consumer.position)
        }
        if stalledAt != nil, let pcm, stallStep(pcm, readable: limit, markerAhead: limit < readable) {
            return
        }
        if limit == 0 {
            checkEndOfInput(pcm)
            return
        }
        if segmentGeneration != generation {
            // Bytes of a flushed generation (or filler): discard them without playing. After a
            // flush the decoder may be waiting for this room: wake it (the new position must
            // reach the device at once).
            consumer.commit(limit)
            if segmentGeneration != .max { shared.wakeDecoder() }
            return
        }
        guard let pcm else {
            // No device where one should be (a segment start opens it, a failure holds the
            // output): never skip the audio; hold as after a failure.
            deviceFailed(-ENODEV)
            return
        }
        write(pcm, limitBytes: limit)
    }

    /// When the output started waiting for the decoder to handle a queue edit (0: not waiting).
    private var editWaitSince = 0
    /// How long the output waits at a boundary for a queue edit: long enough for a decoder
    /// thread that is busy or descheduled (normally it takes microseconds), short enough to
    /// stay within the device buffer (half of it), so the wait is never heard as an underrun.
    private let editWaitNanos: Int

    /// Whether a queue edit sent to the decoder is not handled yet, within the bounded wait.
    /// A decoder that takes longer (a slow file open) lets the output go on: the edit then
    /// falls back to the late path (`cutMissed` / `spliceFailed`, a re-plan from the heard frame).
    private func editPending() -> Bool {
        if shared.editsRequested.load(ordering: .acquiring) == shared.editsHandled.load(ordering: .acquiring) {
            editWaitSince = 0
            return false
        }
        let now = monotonicNanos()
        if editWaitSince == 0 { editWaitSince = now }
        return now - editWaitSince < editWaitNanos
    }

    /// One short wait for the decoder to handle a queue edit (the caller steps again after it).
    private func waitForEdit() {
        publishPosition()
        sleepMillis(1)
    }

    /// Whether marker `m` belongs to the items a cut removed: everything in [from, to) but the
    /// anchor's own end at `from`; and at `to`, the end (or failure) of the last removed item
    /// (the new plan's first markers sit there too, and are kept).
    private static func isCut(_ m: Marker, _ c: Cut) -> Bool {
        let ends = m.kind == .end || m.kind == .failed
        if m.position == c.from && m.item == c.anchor && ends { return false }
        if m.position >= c.from && m.position < c.to { return true }
        return m.position == c.to && ends && m.item == c.lastRemoved
    }

    private func apply(_ m: Marker) {
        guard m.generation == generation else {
            segmentGeneration = m.generation  // a flushed item: its bytes will be discarded
            return
        }
        sawInput = true
        switch m.kind {
        case .start:
            segmentGeneration = m.generation
            segmentItem = m.item
            endReported = false  // input after an end (an item appended late) ends again in its turn
            let needsOpen = pcm.map {
                $0.configuration.rate != Int(m.rate) || $0.configuration.channels != Int(m.channels)
            } ?? true
            segmentChannels = Int(m.channels)
            segmentRate = Int(m.rate)
            segmentSpeed = m.speed
            segmentStartPosition = consumer.position
            segmentStartFrame = Int(m.itemFrame)
            segmentStartWritten = framesWritten
            if needsOpen { reopen(rate: Int(m.rate), channels: Int(m.channels)) }
            // The item's ReplayGain, from its first frame: a step at the join, as mpd's, not a ramp.
            let mode = shared.replayGainMode.load(ordering: .relaxed)
            let gain = mode == 1 ? m.trackScale : mode == 2 ? m.albumScale : 1
            if gain != segmentGain {
                segmentGain = gain
                renderer.snap(to: Float(bitPattern: shared.gainBits.load(ordering: .relaxed)) * gain)
            }
            emit(.segmentStarted, item: m.item, itemFrame: m.itemFrame, code: Int32(bitPattern: segmentGain.bitPattern))
        case .end:
            emit(.itemEnded, item: m.item)
        case .failed:
            emit(.itemFailed, item: m.item)
        case .metadata:
            emit(.metadataChanged, item: m.item, itemFrame: m.itemFrame)
        case .resumed:
            // Content time jumps over the cut: the item's frames count from here anew.
            segmentStartFrame = Int(m.itemFrame)
            segmentStartPosition = consumer.position
            emit(.resumed, item: m.item, itemFrame: m.itemFrame)
        case .pad:
            segmentGeneration = .max  // discard the filler up to the next marker
        }
    }

    private func reopen(rate: Int, channels: Int) {
        if let old = pcm {
            drain(old)
            closeDevice()
        }
        do {
            pcm = try shared.deviceChannels.withLock { (known: inout Int) throws(MediaError) -> Device in
                let d = try Device.open(device: settings.device, rate: rate, channels: channels,
                                        preferred: settings.preferredFormat, bufferMicros: settings.bufferMillis * 1000,
                                        periodMicros: periodMillis * 1000, mmap: settings.mmap)
                known = d.configuration.maxChannels
                return d
            }
            heardFloor = framesWritten
            emitOpened(pcm!.configuration)
            renderer.snap(to: Float(bitPattern: shared.gainBits.load(ordering: .relaxed)) * segmentGain)
        } catch {
            deviceFailed(error.code)
        }
    }

    /// The device failed: what it held but had not played is off the timeline (the heard
    /// position stands where the listener stopped hearing), the device is closed, and the
    /// output holds until a re-plan. The heard frame is the last reading carried forward while
    /// the device ran: a sound server that died is noticed at once (its state change wakes
    /// this thread), so the estimate is within a few milliseconds.
    private func deviceFailed(_ code: Int32) {
        var heard = lastHeard.frame
        if pcm != nil, lastHeard.running {
            heard += Int(Double(monotonicNanos() - lastHeard.stamp) * Double(segmentRate) / 1e9)
        }
        framesWritten = min(framesWritten, max(heardFloor, heard))
        heardFloor = framesWritten
        closeDevice()
        deviceLost = true
        publishPosition()
        emit(.deviceError, item: segmentItem, code: code)
    }

    /// Plays out what the device holds (interruptibly until the last period), then stops it.
    private func drain(_ pcm: Device) {
        pcm.startIfWaiting()
        let period = pcm.configuration.periodFrames
        while shared.running.load(ordering: .relaxed), shared.generation.load(ordering: .acquiring) == generation {
            guard let delay = pcm.delay(), delay > period else { break }
            publishPosition()
            sleepMillis(max(1, periodMillis / 2))
        }
        if shared.generation.load(ordering: .acquiring) == generation {
            pcm.drain()
        } else {
            dropUnheard(pcm)
        }
        publishAllHeard()
    }

    private func checkEndOfInput(_ pcm: Device?) {
        if editPending() {
            waitForEdit()  // items may be on their way (an append or splice)
            return
        }
        let end = shared.endPosition.load(ordering: .acquiring)
        lastSeenEnd = end
        if !sawInput, pcm != nil, end == consumer.position,
           shared.endGeneration.load(ordering: .acquiring) == generation {
            // Stopped (flushed to an empty queue): the buffer was dropped; release the device.
            closeDevice()
            publishAllHeard()
            return
        }
        if !endReported, sawInput, end == consumer.position, shared.endGeneration.load(ordering: .acquiring) == generation {
            if let pcm { drain(pcm) }
            closeDevice()  // release the device while idle
            endReported = true
            emit(.endOfInput)
            return
        }
        // Waiting for the decoder: with a device open an underrun is near (or the device takes
        // audio faster than real time: ALSA's `null`, `file`), so look again within a
        // millisecond, or as soon as the decoder has a period ready; with none (idle, or before
        // the first item) sleep until the decoder publishes something.
        publishPosition()
        if let pcm, shouldStall(pcm) {
            let played = (consumer.position - segmentStartPosition) / (4 * segmentChannels)
            stalledAt = segmentStartFrame + (segmentSpeed == 1 ? played : Int(Double(played) * segmentSpeed))
            emit(.stalled, item: segmentItem, itemFrame: Int64(stalledAt!))
            writeSilence(pcm)
            return
        }
        if let pcm {
            shared.dataWanted.store(consumer.position + pcm.configuration.periodFrames * 4 * segmentChannels, ordering: .relaxed)
            atomicMemoryFence(ordering: .sequentiallyConsistent)
            if consumer.availableToRead() == 0 { sleepWakeable(1) }
            shared.dataWanted.store(-1, ordering: .relaxed)
        } else {
            idleWait()
        }
    }

    /// Whether the output, with nothing to read, stalls rather than lets the device run dry:
    /// the input waits for the network, an item of this plan is playing (a device buffer of it
    /// written already: before that a card waits at its start threshold, and the first reads
    /// of a response come in pieces), and the device is running with less than a period left
    /// (a device that takes audio at once never stalls).
    private func shouldStall(_ pcm: Device) -> Bool {
        guard !pcm.takesAudioAtOnce, sawInput, segmentGeneration == generation,
              framesWritten - segmentStartWritten >= pcm.configuration.bufferFrames,
              shared.inputWaitingItem.load(ordering: .acquiring) != 0 else { return false }
        let h = held(pcm)
        return h.state == .running && h.frames < pcm.configuration.periodFrames
    }

    /// One pass while stalled: true when the pass is done (silence written, or a wait), false
    /// when playback goes on from the ring now (the stall ended: a second is buffered, or half
    /// the ring if that is less, or a marker is ahead: the item's end or failure, the next
    /// item). Not sooner: a network that delivers a byte at a time would otherwise stutter.
    private func stallStep(_ pcm: Device, readable: Int, markerAhead: Bool) -> Bool {
        let second = segmentRate * 4 * segmentChannels
        let enough = min(second, consumer.capacity / 2)
        if readable >= enough || markerAhead {
            emit(.stallEnded, item: segmentItem, itemFrame: Int64(stalledAt ?? 0))
            stalledAt = nil
            return false
        }
        writeSilence(pcm)
        return true
    }

    /// Keeps the device from running dry while stalled: tops what it holds up to a period with
    /// silence (so the audio that ends the stall is heard within a period), then waits for room
    /// or a wake.
    private func writeSilence(_ pcm: Device) {
        let cfg = pcm.configuration
        let held = held(pcm).frames
        if held >= cfg.periodFrames {
            publishPosition()
            sleepWakeable(max(1, periodMillis / 4))
            return
        }
        let avail = pcm.avail()
        if avail < 0 { recover(pcm, Int32(avail)); return }
        let frames = min(Int(avail), cfg.periodFrames - held + cfg.periodFrames / 4, periodBufferFrames * 2 / segmentChannels)
        guard frames > 0 else {
            sleepWakeable(1)
            return
        }
        let bytesPerFrame = (cfg.sampleFormat == .s16 ? 2 : 4) * segmentChannels
        var w: Int
        switch pcm.beginDirectWrite(frames: frames) {
        case .area(let p, let n, let o):
            memset(p, 0, n * bytesPerFrame)
            w = pcm.commitDirectWrite(offset: o, frames: n)
        case .unsupported:
            memset(periodBuffer, 0, frames * bytesPerFrame)
            w = pcm.write(periodBuffer, frames: frames)
        case .error(let code):
            w = Int(code)
        }
        if w < 0 { recover(pcm, Int32(w)); return }
        framesWritten += w
        publishPosition()
    }

    /// The end position read by the last `checkEndOfInput`.
    private var lastSeenEnd = Int.min

    /// No device and nothing to read: sleeps with no timeout until the decoder publishes
    /// something (it wakes this thread through `EngineShared.notifyIdleOutput`) or the control
    /// plane wakes it (flush, pause, shutdown). The flag is stored, then fenced, then
    /// everything the decoder publishes is checked once more: a publication that raced with
    /// the flag is seen here, or the decoder sees the flag and wakes this thread.
    private func idleWait() {
        shared.outputIdle.store(true, ordering: .relaxed)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if consumer.availableToRead() == 0, markers.peekMarker() == nil,
           shared.endPosition.load(ordering: .acquiring) == lastSeenEnd,
           shared.cutSeq.load(ordering: .acquiring) == seenCut,
           shared.generation.load(ordering: .acquiring) == generation,
           shared.running.load(ordering: .acquiring) {
            sleepWakeable(-1)
        }
        shared.outputIdle.store(false, ordering: .relaxed)
    }

    // Not annotated: the performance checker rejects every C call ("not available in this
    // module"), so the device calls keep the loop from being compiler-checked; what it does
    // itself is plain integer work, atomics, and the annotated Renderer.
    private func write(_ pcm: Device, limitBytes: Int) {
        let cfg = pcm.configuration
        let r = pcm.waitForRoom(timeoutMillis: Int32(max(10, periodMillis)), wake: shared.outputWake.readFD)
        if r < 0 { recover(pcm, r); return }
        if r == 0 {
            shared.outputWake.drain()
            return  // woken: re-check pause and flush first
        }
        let avail = pcm.avail()
        if avail < 0 { recover(pcm, Int32(avail)); return }
        let bytesPerFrame = 4 * segmentChannels
        let frames = min(Int(avail), limitBytes / bytesPerFrame, periodBufferFrames * 2 / segmentChannels)
        if frames == 0 {
            // Woken without room (a device whose descriptor fired for another reason): back off
            // a millisecond rather than spin.
            publishPosition()
            sleepMillis(1)
            return
        }
        // Where to render: the device's own buffer (ALSA mmap access), else the period buffer
        // that `write` hands over.
        var area: (pointer: UnsafeMutableRawPointer, frames: Int, offset: Int)?
        switch pcm.beginDirectWrite(frames: frames) {
        case .unsupported: break
        case .area(let p, let n, let o): area = (p, n, o)
        case .error(let code): recover(pcm, code); return
        }
        let target = Float(bitPattern: shared.gainBits.load(ordering: .relaxed)) * segmentGain
        let rendered = renderer.render(from: &consumer, into: area?.pointer ?? periodBuffer, frames: area?.frames ?? frames,
                                       channels: segmentChannels, toS16: cfg.sampleFormat == .s16, target: target,
                                       rampFrames: cfg.rate / 50)
        let w = area.map { pcm.commitDirectWrite(offset: $0.offset, frames: rendered) } ?? pcm.write(periodBuffer, frames: rendered)
        if w < 0 { recover(pcm, Int32(w)); return }
        consumer.commit(Int(w) * bytesPerFrame)
        framesWritten += Int(w)
        // The decoder asleep on a full ring asked to be woken at this read position.
        let wanted = shared.roomWanted.load(ordering: .relaxed)
        if wanted >= 0, consumer.position >= wanted, shared.roomWanted.exchange(-1, ordering: .acquiringAndReleasing) >= 0 {
            shared.wakeDecoder()
        }
        publishPosition()
    }

    /// Recovers from a write/wait error by the PCM's state; unrecoverable errors close the device.
    private func recover(_ pcm: Device, _ code: Int32) {
        switch code {
        case -EAGAIN, -EINTR:
            return
        case -EPIPE:
            shared.underruns.add(1, ordering: .relaxed)
            emit(.underrun, item: segmentItem)
            heardFloor = framesWritten  // ran dry: everything written was heard
            if pcm.prepare() >= 0 { return }
        case -ESTRPIPE:
            var r = pcm.resume()
            for _ in 0..<100 where r == -EAGAIN {
                sleepMillis(10)
                r = pcm.resume()
            }
            if r < 0, pcm.prepare() >= 0 {
                heardFloor = framesWritten  // what the suspend lost counts as played
                return
            }
            if r >= 0 { return }
        default:
            break
        }
        deviceFailed(code)
    }

    /// Whether everything the decoder will write has been played to the device and its end not
    /// yet reported (the input's end published at the position read to, no marker left, no
    /// queue edit on its way).
    private func inputEndedUnreported() -> Bool {
        sawInput && !endReported && markers.peekMarker() == nil
            && shared.endPosition.load(ordering: .acquiring) == consumer.position
            && shared.endGeneration.load(ordering: .acquiring) == generation && !editPending()
    }

    /// Holds the device paused (hardware pause when possible) until resumed or flushed. With no
    /// device (paused before the first item opened it, e.g. a restored queue) it holds all the
    /// same: the decoder, its ring full, waits for the end of the pause either way.
    private func holdPause() {
        // The input's end reached and not yet ended (a pause that came as the last item ended,
        // before this thread looked: a player pausing at an item's end): end it as playing
        // would (drain, release the device, report), then hold, the same either way.
        if pcm != nil, inputEndedUnreported() { checkEndOfInput(pcm) }
        if pcm != nil, shared.stoppedGeneration.load(ordering: .relaxed) == generation {
            // Stopped, then paused (a player at rate 0 with no items): nothing the device holds
            // can play again (the flush dropped it), so release it as a stop does when playing.
            closeDevice()
            publishAllHeard()
        }
        // Lost since the last write (a sound server that died just before the pause): report it
        // from the last reading now; a dead stream's readings would put the heard frame back at
        // `heardFloor` (its delay is unknown, so everything written would count as unheard).
        if let pcm, pcm.isLost { deviceFailed(-ENODEV) }
        var hwPaused = false
        // Running, or started and not yet heard (a sound server filling up to its start would
        // start on its own): held in place.
        if let pcm, pcm.state() == .running || pcm.state() == .prepared {
            if pcm.configuration.canPause && settings.hardwarePause { hwPaused = pcm.pause(true) }
            if !hwPaused {
                // No hardware pause: drop what the device holds and tell the control plane how
                // many frames were lost, so it can re-seek there and nothing is skipped (the
                // published position, and the re-seek on resume, is the last frame heard).
                let dropped = dropUnheard(pcm)
                emit(.pausedByDrop, item: segmentItem, itemFrame: Int64(dropped))
            }
        }
        shared.outputPaused.store(true, ordering: .releasing)
        publishPosition()
        while shared.pauseRequested.load(ordering: .acquiring), shared.running.load(ordering: .relaxed),
              shared.generation.load(ordering: .acquiring) == generation {
            // The end published after the pause came: the decoder publishes it just after the
            // last item's end marker, which this thread may have passed already (a player pausing
            // at the end it was told of). With nothing of it unheard in the device, it ends as
            // above (the decoder wakes this thread when it publishes an end); with audio still
            // held (a pause that came just before the end was heard), that waits for the resume.
            if let pcm, inputEndedUnreported(), held(pcm).frames == 0 {
                if hwPaused { _ = pcm.pause(false) }
                hwPaused = false
                checkEndOfInput(pcm)
                continue
            }
            // No timeout: resume, flush or shutdown wakes it at once. A corked sound-server stream
            // is watched too: the server's death (its state change on the notification pipe) is
            // reported now, paused, as it is while playing; not by the next play.
            if let pcm {
                let spoke = pcm.waitWhilePaused(wake: shared.outputWake.readFD)
                shared.outputWake.drain()
                if spoke, pcm.isLost { deviceFailed(-ENODEV) }
            } else {
                sleepWakeable(-1)
            }
        }
        // Flushed while paused: stay paused; the flush drops the buffer without playing it. A
        // device that cannot be resumed because it is gone fails here, from the paused reading.
        if hwPaused, let pcm, shared.generation.load(ordering: .acquiring) == generation,
           !pcm.pause(false), pcm.isLost {
            deviceFailed(-ENODEV)
        }
        shared.outputPaused.store(false, ordering: .releasing)
        shared.wakeDecoder()  // it waits for this when it found the ring full during the pause
        publishPosition()  // advancing again: the position moves from here, not from the next write
    }
}

/// The engine's hold on its output thread, whatever the driver: start and join (not real-time).
protocol OutputThreadHandle: Sendable {
    func start()
    func join()
}
