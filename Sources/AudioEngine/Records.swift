import CALSA
import MediaCore
import RingBuffer
import Synchronization
#if canImport(Glibc)
import Glibc
import Locking
#endif

/// An in-band record from the decoder thread to the output thread, placed in the marker ring
/// *before* the PCM bytes it describes. `position` is the PCM ring's absolute byte position at
/// which it takes effect, so the output thread knows exactly which item every sample belongs to.
struct Marker: BitwiseCopyable {
    enum Kind: UInt32 {
        /// Audio of `item` begins (from `itemFrame`), in format `rate`/`channels`.
        case start = 1
        /// `item` decoded to its end.
        case end = 2
        /// `item` failed; the audio before the failure (if any) precedes this marker.
        case failed = 3
        /// Filler up to the next marker, never played: keeps every item's first frame aligned to
        /// 8 bytes and to its frame size (the ring's size is a multiple of both), so no frame
        /// straddles the ring's wrap (a mono item can end half-way, a 5.1 item anywhere).
        case pad = 4
        /// `item`'s tags change here (their number, from the decoder's report, in `itemFrame`).
        case metadata = 5
        /// `item` goes on here from its content frame `itemFrame`: the frames before it were
        /// cut (a silence shortened, ``SilenceTrimmingDecoder``).
        case resumed = 6
    }
    var kind: Kind
    var generation: UInt32
    var position: Int
    var item: UInt64
    var rate: Int32
    var channels: Int32
    var itemFrame: Int64
    /// `.start`: the item's ReplayGain scales for track and album mode (1 when off), worked out
    /// by the decoder thread from the file's values and the settings when it opened the item.
    var trackScale: Float = 1
    var albumScale: Float = 1
    /// `.start`: content frames per frame of the item's audio in the ring (1, or the rate it
    /// was stretched to on the decoder thread).
    var speed: Double = 1
    static let stride = 64
}

/// An event from the output thread to the control plane. `deviceFrame` is the output's running
/// frame count (frames ever written to any device) at the moment the event applies; the
/// listener hears it when `framesWritten - delay` reaches it.
struct OutputEvent: BitwiseCopyable {
    enum Kind: UInt32 {
        case segmentStarted = 1
        case itemEnded = 2
        case itemFailed = 3
        case endOfInput = 4
        case underrun = 5
        case deviceOpened = 6
        case deviceError = 7
        case pausedByDrop = 8
        /// A cut (see `EngineShared.cutSeq`) came after the output had passed its start.
        case cutMissed = 9
        /// `item`'s tags change at `deviceFrame` (their number in `itemFrame`).
        case metadataChanged = 10
        /// The ring ran dry while the input waited for the network: from `deviceFrame` the
        /// device plays silence, `item` held at `itemFrame`.
        case stalled = 11
        /// Enough is buffered again: `item` goes on from `itemFrame` at `deviceFrame`.
        case stallEnded = 12
        /// `item` goes on from `itemFrame` at `deviceFrame`, after a cut (a silence shortened).
        case resumed = 13
    }
    var kind: Kind
    var generation: UInt32
    var item: UInt64
    var deviceFrame: Int
    var itemFrame: Int64
    var rate: Int32
    var code: Int32
    /// Content frames per device frame in the segment the event starts or continues.
    var speed: Double = 1
    static let stride = 64
}

extension RingProducer {
    /// Writes one marker, or returns false when the marker ring is full.
    mutating func push(_ record: Marker) -> Bool {
        let (a, _) = writableRegions(max: Marker.stride)
        guard a.count == Marker.stride, let base = a.baseAddress else { return false }
        base.storeBytes(of: record, as: Marker.self)
        commit(Marker.stride)
        return true
    }

    /// Writes one output event, or returns false when the event ring is full.
    @_noLocks @_noAllocation
    mutating func push(_ record: OutputEvent) -> Bool {
        let (a, _) = writableRegions(max: OutputEvent.stride)
        guard a.count == OutputEvent.stride, let base = a.baseAddress else { return false }
        base.storeBytes(of: record, as: OutputEvent.self)
        commit(OutputEvent.stride)
        return true
    }
}

extension RingConsumer {
    /// The next marker without consuming it, or nil.
    @_noLocks @_noAllocation
    mutating func peekMarker() -> Marker? {
        let (a, _) = readableRegions(max: Marker.stride)
        guard a.count == Marker.stride, let base = a.baseAddress else { return nil }
        return base.loadUnaligned(as: Marker.self)
    }

    /// The next output event without consuming it, or nil.
    mutating func peekEvent() -> OutputEvent? {
        let (a, _) = readableRegions(max: OutputEvent.stride)
        guard a.count == OutputEvent.stride, let base = a.baseAddress else { return nil }
        return base.loadUnaligned(as: OutputEvent.self)
    }
}

/// State shared between the control plane and the two engine threads: atomics only, plus a
/// seqlock publishing the output position. Lives as long as the engine.
final class EngineShared: Sendable {
    /// Bumped by the control plane to flush: everything of an older generation is discarded.
    let generation = Atomic<UInt32>(0)
    /// Control → output: pause requested.
    let pauseRequested = Atomic<Bool>(false)
    /// Control → output: software gain target (Float bit pattern).
    let gainBits = Atomic<UInt32>(Float(1).bitPattern)
    /// Control → threads: keep running.
    let running = Atomic<Bool>(true)
    /// Decoder → output: PCM ring position where input ends (nothing more to decode), or -1.
    /// Tagged with the generation in the upper 32 bits of `endGeneration`.
    let endPosition = Atomic<Int>(-1)
    let endGeneration = Atomic<UInt32>(0)
    /// Output → control: underruns so far.
    let underruns = Atomic<Int>(0)
    /// Output → control: 1 real-time scheduling granted, 2 refused, 3 not requested, 0 not yet known.
    let realtimeStatus = Atomic<Int>(0)
    /// Decoder → output: a cut. The bytes in [cutFrom, cutTo) of the PCM ring, and the markers
    /// there (but an item's end at `cutFrom`), are to be skipped: items decoded ahead that a
    /// queue edit replaced. Published by bumping `cutSeq` (release) after the other three.
    let cutFrom = Atomic<Int>(0)
    let cutTo = Atomic<Int>(0)
    let cutGeneration = Atomic<UInt32>(0)
    /// The item whose end marker sits at `cutFrom` and is kept.
    let cutAnchor = Atomic<UInt64>(0)
    /// The last item the cut removed: its end (or failure) marker sits at `cutTo` and is skipped.
    let cutLastRemoved = Atomic<UInt64>(0)
    let cutSeq = Atomic<UInt64>(0)
    /// Control → decoder → output: queue edits (appends, splices) numbered as they are sent,
    /// and the number of the last one the decoder has handled. While they differ the output
    /// holds at item ends and at the end of input (see `OutputThread.editPending`).
    let editsRequested = Atomic<UInt64>(0)
    let editsHandled = Atomic<UInt64>(0)
    /// Output → control and decoder: whether the output is holding a pause (its device paused,
    /// or no device yet); it wakes the decoder when the pause ends.
    let outputPaused = Atomic<Bool>(false)
    /// Control → output: the output thread polls this beside the device, so a pause, resume or
    /// flush is acted on at once instead of after the current period.
    let outputWake = WakePipe()
    /// Control → output: the generation of the last flush to an empty plan (a stop). Paused
    /// in it, the output releases the device: nothing it holds can play again.
    let stoppedGeneration = Atomic<UInt32>(.max)
    /// Output → monitor: an event (the end of input, a device error) or the position starting to
    /// advance is handled at once instead of after the monitor's sleep.
    let monitorWake = WakePipe()
    /// Control/output → decoder: the decoder sleeps on this (its mailbox, a full ring, idle), so a
    /// command, or the output freeing ring space after a flush or a cut, wakes it at once instead
    /// of after its back-off.
    let decoderWake = WakePipe()
    /// Output → decoder: set (sequentially consistent, with a fence) while the output sleeps
    /// with no device and nothing to read, with no timeout. The decoder, after anything the
    /// output reads (audio, a marker, the end of input, a cut), clears it and wakes the output;
    /// see ``notifyIdleOutput()``. Nothing polls while nothing plays.
    let outputIdle = Atomic<Bool>(false)
    /// Output ↔ decoder: the most channels the device takes (0: not known yet), set by the
    /// output thread at each open and by the decoder thread's probe before the first; held
    /// while opening, so a probe never opens the device beside the output's own open.
    let deviceChannels = Lock<Int>(0)
    /// Control → output: the ReplayGain mode items start with (0 off, 1 track, 2 album; `auto`
    /// resolved by whoever knows the shuffle), read at each item's first frame.
    let replayGainMode = Atomic<UInt8>(0)
    /// Control → decoder: the preamps and limiting, read as each item is opened.
    let replayGainSettings = Lock(ReplayGainSettings.off)
    /// Control → decoder: the crossfade's length in seconds (Double bit pattern; 0: off), read
    /// when the decoder nears an item's end and decides how it joins the next.
    let crossfadeBits = Atomic<UInt64>(0)
    /// Control → decoder: the rate items play at (Double bit pattern; 1: as decoded), read
    /// when the decoder opens an item: a change re-plans from the frame heard.
    let speedBits = Atomic<UInt64>(1.0.bitPattern)
    /// Control → decoder: which items have their silences shortened (``SilenceTrimMode``),
    /// read when the decoder opens an item.
    let silenceTrimMode = Atomic<UInt8>(0)
    /// The rate items play at (``speedBits``).
    var speed: Double { Double(bitPattern: speedBits.load(ordering: .relaxed)) }
    /// Decoder → output: the PCM ring's read position at which the decoder, asleep on a full
    /// ring, wants waking (a quarter of the ring free again); -1 when it does not wait. The
    /// output wakes it once there: on a device faster than real time (ALSA's `null`, `file`)
    /// the refill starts at once instead of after the decoder's estimate of the drain time.
    let roomWanted = Atomic<Int>(-1)
    /// Output → decoder: the PCM ring's write position at which the output, with a device open
    /// and nothing to read, wants waking (a period's audio ready); -1 when it does not wait. It
    /// looks again within a millisecond regardless: on a card that ran dry this changes nothing,
    /// on a device faster than real time it takes the audio a period at a time.
    let dataWanted = Atomic<Int>(-1)

    /// Network source (its progress observer, on its transfer or the decoder thread) → output
    /// and control: the item whose source waits for bytes now (0: none). The output, finding
    /// the ring empty while it is set, stalls (silence, no underrun) instead of running dry.
    let inputWaitingItem = Atomic<UInt64>(0)
    /// Network source → control: the item whose bytes are being loaded, the byte range its
    /// current request has received, and its length (-1: unknown). Read for
    /// `loadedTimeRanges`; the four are not read together atomically (a display value).
    let loadedItem = Atomic<UInt64>(0)
    let loadedStart = Atomic<Int>(0)
    let loadedEnd = Atomic<Int>(0)
    let loadedLength = Atomic<Int>(-1)

    /// A network source's report for `item` (any thread).
    func reportInput(item: UInt64, _ p: InputProgress) {
        if p.waiting {
            inputWaitingItem.store(item, ordering: .releasing)
        } else {
            _ = inputWaitingItem.compareExchange(expected: item, desired: 0, ordering: .acquiringAndReleasing)
        }
        loadedStart.store(p.loaded.lowerBound, ordering: .relaxed)
        loadedEnd.store(p.loaded.upperBound, ordering: .relaxed)
        loadedLength.store(p.length ?? -1, ordering: .relaxed)
        loadedItem.store(item, ordering: .releasing)
        if p.waiting { outputWake.wake() }  // an output waiting for audio looks at the stall now
    }

    /// Decoder thread, after writing audio: wakes the output if it waits for this much.
    @inline(__always)
    func notifyWaitingOutput(at position: Int) {
        let wanted = dataWanted.load(ordering: .relaxed)
        if wanted >= 0, position >= wanted, dataWanted.exchange(-1, ordering: .acquiringAndReleasing) >= 0 {
            outputWake.wake()
        }
    }

    deinit {
        for p in [outputWake, monitorWake, decoderWake] { p.close() }
    }

    /// Any thread: wakes the monitor thread.
    func wakeMonitor() { monitorWake.wake() }
    /// Any thread, the output thread included: wakes the decoder thread.
    func wakeDecoder() { decoderWake.wake() }
    /// Any thread: wakes the output thread (from its device wait or its pause/idle wait).
    func wakeOutput() { outputWake.wake() }

    /// Decoder thread, after publishing something the output reads: wakes the output if it is
    /// asleep in its idle wait. The fence orders the publication before the flag's load (the
    /// output orders its flag store before its re-check the same way), so either the output's
    /// re-check sees the publication or this sees the flag: a wake-up is never lost.
    @inline(__always)
    func notifyIdleOutput() {
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if outputIdle.load(ordering: .relaxed), outputIdle.exchange(false, ordering: .acquiringAndReleasing) {
            outputWake.wake()
        }
    }

    // Seqlock over (framesWritten, delay, stamp, floor): stamp is CLOCK_MONOTONIC nanoseconds of
    // the delay reading, negated while the device is not running (paused, prepared, stopped);
    // floor is the output's `heardFloor`, which changes exactly when the device restarts empty.
    private let seq = Atomic<UInt64>(0)
    private let framesWritten = Atomic<Int>(0)
    private let floor = Atomic<Int>(0)
    private let delay = Atomic<Int>(0)
    private let stamp = Atomic<Int>(0)

    /// Output thread only: publishes a consistent (framesWritten, delay) pair, measured at
    /// `stampNanos` (monotonic); `advancing` says whether the device is playing it out; `floor`
    /// identifies the device run (heard frames only ever grow within one).
    @_noLocks @_noAllocation
    func publish(framesWritten fw: Int, delay d: Int, floor f: Int, stampNanos: Int = 0, advancing: Bool = false) {
        let s = seq.load(ordering: .relaxed)
        seq.store(s &+ 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        framesWritten.store(fw, ordering: .relaxed)
        delay.store(d, ordering: .relaxed)
        floor.store(f, ordering: .relaxed)
        stamp.store(advancing ? stampNanos : -1, ordering: .relaxed)
        seq.store(s &+ 2, ordering: .releasing)
    }

    /// Any thread: the latest consistent (framesWritten, delay) pair, when it was measured
    /// (nil while the device is not advancing), and the device run it belongs to.
    func position() -> PositionReading {
        while true {
            let s1 = seq.load(ordering: .acquiring)
            let fw = framesWritten.load(ordering: .relaxed)
            let d = delay.load(ordering: .relaxed)
            let f = floor.load(ordering: .relaxed)
            let t = stamp.load(ordering: .relaxed)
            atomicMemoryFence(ordering: .acquiring)
            let s2 = seq.load(ordering: .relaxed)
            if s1 == s2 && s1 & 1 == 0 { return PositionReading(framesWritten: fw, delay: d, stampNanos: t >= 0 ? t : nil, floor: f) }
        }
    }
}

/// One consistent reading of the output's position (see `EngineShared.position()`).
struct PositionReading {
    var framesWritten: Int
    var delay: Int
    var stampNanos: Int?
    var floor: Int
}

/// A non-blocking, close-on-exec pipe one thread sleeps on (`wait`, or `poll` on `readFD` beside
/// other descriptors) and any thread wakes with one byte. A write to it takes no lock and never
/// blocks (a full pipe already means "wake up", so a failed write loses nothing), and draining it
/// reads into a stack buffer: both are allowed on the output thread. (Not marked `@_noLocks`: the
/// checker rejects every C call, `write` included.)
struct WakePipe: Sendable {
    let readFD: Int32
    private let writeFD: Int32

    init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
        }
        (readFD, writeFD) = (fds[0], fds[1])
    }

    func wake() {
        var one: UInt8 = 1
        _ = write(writeFD, &one, 1)
    }

    /// Empties the pipe (after `poll` reported it readable).
    func drain() {
        var bytes: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        while withUnsafeMutableBytes(of: &bytes, { read(readFD, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// Sleeps up to `millis` (forever when negative), returning early (and draining) when
    /// woken; true when woken. A wake before the wait is not lost: its byte stays in the pipe.
    @discardableResult
    func wait(millis: Int) -> Bool {
        var p = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(millis)) > 0 else { return false }
        drain()
        return true
    }

    func close() {
        for fd in [readFD, writeFD] where fd >= 0 { Glibc.close(fd) }
    }
}

