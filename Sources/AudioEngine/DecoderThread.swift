import Media
import MediaCore
import Platform
import RingBuffer
import Synchronization
import Locking

/// One item for the decoder: an identity, a file (or a clip of it), and where to start.
struct DecodeItem: Sendable {
    var id: UInt64
    var path: String
    /// The part of the file to play (nil: all of it); frames and seconds below are within it.
    var clip: PlaybackClip? = nil
    /// Where to start: a frame, or (when `startSeconds` is set) a time converted at the file's rate.
    var startFrame: Int
    var startSeconds: Double? = nil
    /// How it is stretched when the engine plays at another rate.
    var pitchAlgorithm: TimePitchAlgorithm = .timeDomain

    init(id: UInt64, path: String, startFrame: Int, startSeconds: Double? = nil) {
        (self.id, self.path, self.startFrame, self.startSeconds) = (id, path, startFrame, startSeconds)
    }

    init(id: UInt64, item: EngineItem, startFrame: Int = 0, startSeconds: Double? = nil) {
        (self.id, path, clip, self.startFrame, self.startSeconds) = (id, item.path, item.clip, startFrame, startSeconds)
        pitchAlgorithm = item.pitchAlgorithm
    }
}

/// What the decoder learns about an item, reported to the control plane as soon as it opens.
enum DecoderReport: Sendable {
    case opened(id: UInt64, format: StreamFormat, lengthFrames: Int, metadata: TrackMetadata, audio: AudioDescription, isLive: Bool)
    case failed(id: UInt64, error: MediaError)
    /// The item's tags change where the marker numbered `number` sits (a chained stream's next link).
    case metadata(id: UInt64, number: Int64, metadata: TrackMetadata)
    /// A `.splice` came too late (an item after its anchor was already opened) for `generation`.
    case spliceFailed(generation: UInt32)
}

/// The decoder thread: owns the decoders (any format, through the registry), decodes the current item and then the next
/// ones ahead into the PCM ring (as far as the ring's capacity allows), and writes in-band
/// markers before each item's audio.
///
/// Commands arrive through a mailbox (a `Mutex`-guarded list plus a wake pipe it polls); the
/// output thread writes to the same pipe when it frees ring space the decoder may be waiting for
/// (stale bytes discarded after a flush, a cut skipped). This thread is not real-time and may
/// block, allocate and log. It holds each decoder as `any AudioDecoder`: one dynamic call per
/// decoded block (an MPEG frame, a FLAC frame) on a thread that is not real-time, and the
/// format never reaches the ring, its records or the output.
final class DecoderThread: @unchecked Sendable {
    // @unchecked Sendable: `producer`, `markers` and the decode state are touched only by the
    // thread itself; the mailbox is a Mutex.
    enum Command: Sendable {
        /// Replace the whole plan (a flush): decode `items` for `generation`.
        case load([DecodeItem], generation: UInt32)
        /// Add items at the end of the plan (queue edit number `edit`).
        case append([DecodeItem], edit: UInt64)
        /// Replace the plan after item `after` with `items`, if nothing after it has been opened
        /// (queue edit number `edit`).
        case splice(after: UInt64, items: [DecodeItem], generation: UInt32, edit: UInt64)
    }

    private let shared: EngineShared
    private var producer: RingProducer
    private var markers: RingProducer
    private let mailbox = Lock<[Command]>([])
    private let report: @Sendable (DecoderReport) -> Void
    private var thread: PlatformThread?
    /// Files must lie beneath this directory (``EngineConfiguration/confinement``).
    private let confinement: String?

    private var plan: [DecodeItem] = []
    /// Where recent items' audio ended in the ring (id → position), for late splices.
    private var endPositions: [UInt64: Int] = [:]
    private var index = 0
    private var generation: UInt32 = 0
    private var current: (any AudioDecoder)?
    /// `current` when it shortens silences (its cuts are marked in the ring).
    private var trimmer: SilenceTrimmingDecoder?
    /// The decoder a re-plan replaced, for the plan's first open (see `.load`).
    private var reusable: (path: String, decoder: any AudioDecoder)?
    /// Chooses each item's decoder by content.
    private let registry: DecoderRegistry
    /// What the output takes (asked when a file has more than two channels).
    private let options: DecoderOptions
    private var currentItem: DecodeItem?
    /// Frames left before the current item's clip ends (nil: decode to the file's end).
    private var remainingFrames: Int?
    /// Whether a decode burst is in progress, and how long to sleep when the ring is full.
    private var refilling = true
    private var backoffMillis = 5
    /// Numbers the tag changes reported (``DecoderReport/metadata(id:number:metadata:)``).
    private var metadataNumber: Int64 = 0
    /// (time, bytes consumed) at the previous full ring, to measure the drain rate over a cycle.
    private var lastDrainSample: (UInt64, Int)?
    /// The current item's frames from where it started to its end (nil: not known), and how
    /// many of them are in the ring: where a crossfade begins is counted from its end.
    private var currentFrames: Int?
    private var writtenFrames = 0
    /// The ReplayGain scales the current item's start marker carried.
    private var currentScales: (track: Float, album: Float) = (1, 1)
    /// Crossfade (see ``Crossfade``): the next item, opened ahead to decide how the current one
    /// joins it; the fade's length in frames once decided (0: joined gaplessly; nil: not yet);
    /// the item fading out beneath the current one; and the items that ended in a fade (a
    /// queue edit after one cannot be cut in the ring: its tail is mixed into what follows).
    private var prepared: Opened?
    private var fadePlan: Int?
    private var fading: FadingItem?
    private var fadedOut: Set<UInt64> = []

    init(shared: EngineShared, producer: consuming RingProducer, markers: consuming RingProducer,
         confinement: String?, registry: DecoderRegistry = .standard, options: DecoderOptions = .stereo,
         report: @escaping @Sendable (DecoderReport) -> Void) {
        self.confinement = confinement
        self.options = options
        self.registry = registry
        self.shared = shared
        self.producer = producer
        self.markers = markers
        self.report = report
    }

    func start() {
        thread = PlatformThread.start(name: "bl-decoder") { [self] in run() }
    }

    func send(_ command: Command) {
        if case .load = command {
            // A flush: whatever source the thread may be waiting on (a server connecting, a
            // stream stalled) lets go at once; the new plan is then read without delay.
            let pending = waiting.withLock { w in defer { w.removeAll() }; return w }
            for cancel in pending { cancel() }
        }
        mailbox.withLock { $0.append(command) }
        shared.wakeDecoder()
    }

    /// Cancellations of the network sources opened since the last flush (see
    /// `ByteSource.cancellation`).
    private let waiting = Lock<[@Sendable () -> Void]>([])

    /// Opens `location` (or `previous` again, from its start: a seek in what is playing) for the
    /// plan of `generation`, its cancellation kept for the next flush (cancelled at once if that
    /// flush already came: the control plane moves the generation before it takes the list).
    private func openSource(_ location: String, reopening previous: (any ByteSource)? = nil) throws(MediaError) -> any ByteSource {
        let g = generation
        if shared.generation.load(ordering: .acquiring) != g { throw MediaError(.io, "cancelled", item: location) }
        let register = { [self] (cancel: @escaping @Sendable () -> Void) in
            waiting.withLock { w in
                if w.count > 16 { w.removeFirst(w.count - 16) }
                w.append(cancel)
            }
            if shared.generation.load(ordering: .acquiring) != g || !shared.running.load(ordering: .acquiring) { cancel() }
        }
        return if let previous { try previous.reopened(register: register) } else { try InputSources.open(location, beneath: confinement, register: register) }
    }

    func join() {
        // A source waiting on a server (connecting, reconnecting) lets go at once.
        for cancel in waiting.withLock({ w in defer { w.removeAll() }; return w }) { cancel() }
        shared.wakeDecoder()
        thread?.join()
    }

    /// Sleeps up to `millis`, returning early when woken (a command, or ring space freed by
    /// the output).
    private func sleep(millis: Int) { shared.decoderWake.wait(millis: millis) }

    private func run() {
        while shared.running.load(ordering: .acquiring) {
            for command in mailbox.withLock({ box in defer { box = [] }; return box }) {
                handle(command)
            }
            let progressed = decodeStep()
            // Whatever this pass published (audio, a marker, the end of input, a cut), an
            // output asleep with nothing to read hears of it now; one waiting with a device
            // open, once a period is ready.
            shared.notifyIdleOutput()
            shared.notifyWaitingOutput(at: producer.position)
            if !progressed {
                // Idle (nothing planned), or stuck for room while the output holds a pause
                // (nothing drains until it resumes, and then it wakes this thread): nothing
                // changes until a command or the output wakes it, so no timeout.
                let flushPending = shared.generation.load(ordering: .acquiring) != generation
                let waitForWake = !flushPending && (idle || shared.outputPaused.load(ordering: .acquiring))
                sleep(millis: waitForWake ? -1 : backoffMillis)
            }
        }
        current = nil
        trimmer = nil
        fading = nil
        prepared = nil
    }

    private var idle: Bool { current == nil && index >= plan.count }

    private func handle(_ command: Command) {
        switch command {
        case .load(let items, let g):
            // A seek (or any re-plan) that starts with the item being decoded opens it again
            // from the source already open (``ByteSource/reopened()``), not by path: a
            // file deleted or swapped since it began still seeks within what is playing.
            reusable = current.flatMap { d in currentItem.map { ($0.path, d) } }
            if let f = fading, f.item.path == items.first?.path { reusable = (f.item.path, f.decoder) }
            fading = nil
            prepared = nil
            fadePlan = nil
            fadedOut = []
            plan = items
            index = 0
            generation = g
            current = nil
            trimmer = nil
            currentItem = nil
            shared.endPosition.store(-1, ordering: .releasing)
            // A flush: the listener waits for this plan's first samples, so decode at once
            // (a burst) whatever the pacing was. The ring may still hold the old plan's bytes
            // until the output discards them; it wakes this thread when it has.
            refilling = true
            backoffMillis = 1
            lastDrainSample = nil
        case .append(let items, let edit):
            defer { shared.editsHandled.store(edit, ordering: .releasing) }
            plan += items
            shared.endPosition.store(-1, ordering: .releasing)
        case .splice(let anchor, let items, let g, let edit):
            // Handled (applied, refused or superseded) once this returns; the cut, the plan
            // and the withdrawn end are published first.
            defer { shared.editsHandled.store(edit, ordering: .releasing) }
            guard g == generation else { return }  // a newer load already carries the new plan
            // The item after the current one may change: how the current one ends is decided again.
            prepared = nil
            fadePlan = nil
            // Withdraw the end of input first: the output must not take the old plan's end (or,
            // after the cut below, the cut's end) for the end of everything and release the
            // device while the new items are still being opened. The idle decoder stores it again.
            shared.endPosition.store(-1, ordering: .releasing)
            // Opened so far: plan[..<index], and plan[index] while `current` is set.
            let firstUnopened = current == nil ? index : index + 1
            guard let a = plan.firstIndex(where: { $0.id == anchor }) else {
                report(.spliceFailed(generation: g))
                return
            }
            if a + 1 < firstUnopened {
                // The anchor's tail is mixed into the next item's start: no cut can separate
                // them. The engine re-plans from the heard frame instead.
                if fadedOut.contains(anchor) {
                    report(.spliceFailed(generation: g))
                    return
                }
                // Items after the anchor are already in the ring. If the output has not reached
                // the anchor's end, cut them out there and decode the new plan after them.
                let consumed = producer.position - (producer.capacity - producer.availableToWrite())
                guard let end = endPositions[anchor], consumed < end else {
                    report(.spliceFailed(generation: g))
                    return
                }
                current = nil
                trimmer = nil
                currentItem = nil
                fading = nil  // (a fade into an item the cut removes is gone with it)
                index = a + 1
                shared.cutFrom.store(end, ordering: .relaxed)
                shared.cutTo.store(producer.position, ordering: .relaxed)
                shared.cutGeneration.store(generation, ordering: .relaxed)
                shared.cutAnchor.store(anchor, ordering: .relaxed)
                shared.cutLastRemoved.store(plan[firstUnopened - 1].id, ordering: .relaxed)
                shared.cutSeq.add(1, ordering: .releasing)
            }
            plan = Array(plan[...a]) + items
        }
    }

    /// Does one unit of work. Returns false when it could not progress (ring full, or idle).
    private func decodeStep() -> Bool {
        if shared.generation.load(ordering: .acquiring) != generation {
            // A flush is on its way through the mailbox; write nothing stale meanwhile.
            backoffMillis = 1
            return false
        }
        if current == nil {
            guard index < plan.count else {
                if shared.endPosition.load(ordering: .relaxed) != producer.position {
                    shared.endGeneration.store(generation, ordering: .relaxed)
                    shared.endPosition.store(producer.position, ordering: .releasing)
                    // An output holding a pause looks for it too (it may have passed the last
                    // item's end marker before this was published: OutputThread.holdPause).
                    shared.wakeOutput()
                }
                return false
            }
            return openNext()
        }
        guard let decoder = current, let item = currentItem else { return false }
        let bytesPerFrame = decoder.format.bytesPerFrame
        let room = decoder.minimumRoom
        // Decode in bursts: once the ring is full, wait until a quarter of it is free again,
        // sleeping about as long as the output needs to play that quarter (a few wake-ups per
        // second instead of one per period).
        // The drain rate is measured (real time on a sound card, far faster into ALSA's `null`).
        let free = producer.availableToWrite()
        if free < (refilling ? room : producer.capacity / 4) {
            refilling = false
            let t = UInt64(monotonicNanos())
            let consumed = producer.position - (producer.capacity - free)
            let needed = Double(producer.capacity / 4 - free)
            if let (t0, c0) = lastDrainSample, t > t0 {
                // At least real-time speed; faster when measured so (keep the older sample
                // until the consumer has moved, so a short look never reads as "stopped").
                if consumed > c0 {
                    let measured = Double(consumed - c0) * 1e9 / Double(t - t0)
                    let bytesPerSecond = max(Double(decoder.format.rate * bytesPerFrame), measured)
                    backoffMillis = max(1, min(250, Int(needed / bytesPerSecond * 1000)))
                    lastDrainSample = (t, consumed)
                } else {
                    // Nothing drained since the last look: the output is starting (a device
                    // that may drain far faster than real time) or paused. Look again soon,
                    // then less and less often (while it holds a pause, not until it resumes).
                    backoffMillis = min(250, max(2, backoffMillis * 2))
                }
            } else {
                backoffMillis = 2  // no drain rate measured yet: look again soon
                lastDrainSample = (t, consumed)
            }
            // The output wakes this thread when the quarter is free (the timed sleep stays the
            // bound: a wake-up missed costs no more than the estimate did).
            shared.roomWanted.store(consumed + (producer.capacity / 4 - free), ordering: .releasing)
            return false
        }
        refilling = true
        // Crossfade: near its end, decide how the item joins the next; at the fade's start the
        // next item begins and this one fades out beneath it. `split`: the frames of this block
        // that still come before the fade.
        var split: Int?
        if fading == nil, let total = currentFrames {
            let left = total - writtenFrames
            if fadePlan == nil { fadePlan = planCrossfade(left: left) }
            if let f = fadePlan, f > 0, prepared != nil {
                if left <= f { return beginCrossfade(length: max(0, left), pending: [], ended: false) }
                split = left - f
            }
        }
        if let r = remainingFrames, r <= 0 {
            // The clip's end: the rest of the file is not played.
            guard pushMarker(.end, item: item, format: decoder.format) else { return false }
            finishCurrent()
            return true
        }
        do throws(MediaError) {
            // One block (an MPEG frame synthesised straight into the ring, a FLAC frame, …);
            // where the ring's free space wraps inside it, the decoder writes both pieces.
            let (a, b) = producer.writableRegions(max: free)
            var (bytes, status) = try decoder.decode(into: a, spillingInto: b)
            if let r = remainingFrames {
                // A clip ends inside this block: keep its frames up to the end, drop the rest.
                if bytes >= r * bytesPerFrame {
                    bytes = r * bytesPerFrame
                    status = .done
                }
                remainingFrames = r - bytes / bytesPerFrame
            }
            var tail: [Float] = []
            if let s = split, bytes > s * bytesPerFrame {
                // The fade starts inside this block: the rest is the ending item's tail, kept
                // to be mixed beneath the next item.
                tail = Self.floats(a, b, from: s * bytesPerFrame, to: bytes)
                bytes = s * bytesPerFrame
            }
            if let f = fading {
                // The next item's first frames, over the ending one's tail.
                let frames = min(bytes / bytesPerFrame, f.length - f.mixed)
                let ratio = Self.ratio(from: f.scales, to: currentScales, mode: shared.replayGainMode.load(ordering: .relaxed))
                let inA = min(frames, a.count / bytesPerFrame)
                f.mix(into: UnsafeMutableRawBufferPointer(rebasing: a[..<(inA * bytesPerFrame)]), frames: inA, ratio: ratio)
                if frames > inA {
                    f.mix(into: UnsafeMutableRawBufferPointer(rebasing: b[..<((frames - inA) * bytesPerFrame)]), frames: frames - inA, ratio: ratio)
                }
                if f.mixed >= f.length { fading = nil }
            }
            producer.commit(bytes)
            writtenFrames += bytes / bytesPerFrame
            if let trimmer, let content = trimmer.takeCut() {
                // Marked at the ring position of the first frame after the cut.
                while !pushMarker(.resumed, item: item, format: decoder.format, itemFrame: Int64(content)) {
                    if shared.generation.load(ordering: .acquiring) != generation { return false }
                    sleep(millis: 5)
                }
            }
            if !tail.isEmpty {
                return beginCrossfade(length: fadePlan ?? 0, pending: tail, ended: status == .done)
            }
            if let update = decoder.takeMetadataUpdate() ?? streamUpdate(decoder.source) {
                // Marked at the ring position of the first frame the new tags belong to.
                metadataNumber += 1
                report(.metadata(id: item.id, number: metadataNumber, metadata: update))
                while !pushMarker(.metadata, item: item, format: decoder.format, itemFrame: metadataNumber) {
                    if shared.generation.load(ordering: .acquiring) != generation { return false }
                    sleep(millis: 5)
                }
            }
            if status == .done {
                guard pushMarker(.end, item: item, format: decoder.format) else { return false }
                finishCurrent()
            }
        } catch {
            // A read cut short by a flush: the new plan replaces this one.
            if shared.generation.load(ordering: .acquiring) != generation { return false }
            // The reason first, then the marker: the output may reach the marker, and the monitor
            // announce the failure, before a later report arrived (it said "decoding failed"
            // instead of the reason under ThreadSanitizer's slower threads).
            report(.failed(id: item.id, error: error.about(item.path)))
            guard pushMarker(.failed, item: item, format: decoder.format) else { return false }
            finishCurrent()
        }
        return true
    }

    private func finishCurrent() {
        if let item = currentItem { noteEnd(item.id) }
        fading = nil  // an item shorter than its fade-in: the rest of the fade-out is not heard
        fadePlan = nil
        currentFrames = nil
        remainingFrames = nil
        current = nil
        trimmer = nil
        currentItem = nil
        index += 1
    }

    /// An item opened but not yet begun: its decoder at its first frame, and what the control
    /// plane is told of it.
    struct Opened {
        var item: DecodeItem
        var decoder: any AudioDecoder
        /// Frames left before its clip ends (nil: to the file's end).
        var remaining: Int?
        /// Its frames from its start to its end, when known.
        var frames: Int?
        /// Its length (the clip's), 0 when not known.
        var lengthFrames: Int
        var audio: AudioDescription
        /// Its tags: the decoder's, with a stream's own over them.
        var metadata: TrackMetadata
        /// A live stream: no end, no length.
        var isLive: Bool
        /// Content frames per frame out (1: as decoded; else `decoder` is a ``StretchingDecoder``).
        var speed: Double = 1
    }

    /// Opens `item` (by content) and moves it to its first frame; nothing reaches the ring.
    private func open(_ item: DecodeItem) throws(MediaError) -> Opened {
        var item = item
        let previous = reusable
        reusable = nil
        let reopen = previous.flatMap { $0.path == item.path && !$0.decoder.source.isLive ? $0.decoder.source : nil }
        let source = try openSource(item.path, reopening: reopen)
        let id = item.id
        source.observeProgress { [shared] progress in shared.reportInput(item: id, progress) }
        let (plugin, decoder) = try registry.openWithPlugin(source, options: options)
        if source.isLive {
            // A live stream plays from now: a saved position or a clip means nothing in it.
            (item.startFrame, item.startSeconds, item.clip) = (0, nil, nil)
        }
        // A clip: the item's frames are the clip's (its frame 0 is the clip's start).
        let rate = decoder.format.rate
        let (clipFirst, clipEnd) = item.clip?.frames(rate: rate, length: decoder.lengthFrames) ?? (0, decoder.lengthFrames)
        let clipLength = clipEnd.map { $0 - clipFirst }
        if let seconds = item.startSeconds {
            item.startFrame = min(clipLength ?? Int.max, Int((seconds * Double(rate)).rounded()))
            item.startSeconds = nil
        }
        let first = clipFirst + item.startFrame
        if first > 0 { try decoder.seek(toFrame: first) }
        let audio = AudioDescription(formatName: decoder.formatName ?? plugin.formatName, encoding: decoder.encoding, rate: rate,
                                     sourceChannels: decoder.sourceChannels, channels: decoder.format.channels,
                                     bitrate: decoder.bitrate)
        // A stream's own tags (a station's name, the title on air) over the decoder's.
        var metadata = decoder.metadata
        if let own = source.metadata { metadata.merge(own) }
        var remaining = item.clip == nil ? nil : clipEnd.map { $0 - first }
        var frames = clipEnd.map { max(0, $0 - first) }
        // Another rate: the audio stretched on its way to the ring (a live stream plays at its
        // own pace: faster, it would run out). Frames from here on are output frames.
        let speed = source.isLive ? 1 : shared.speed
        var played: any AudioDecoder = decoder
        if speed != 1 {
            played = try StretchingDecoder(decoder, speed: speed, algorithm: item.pitchAlgorithm, limit: remaining)
            remaining = nil
            frames = frames.map { Int((Double($0) / speed).rounded()) }
        }
        // Long silences shortened (a clip's end counts output frames: a clip is played whole).
        if !source.isLive, item.clip == nil, trims(item.path, metadata) {
            played = SilenceTrimmingDecoder(played, trimming: SilenceTrimming(), speed: speed, firstFrame: item.startFrame)
            frames = nil  // (its length is not known ahead: it joins the next without a crossfade)
        }
        return Opened(item: item, decoder: played, remaining: remaining, frames: frames, lengthFrames: clipLength ?? 0, audio: audio,
                      metadata: metadata, isLive: source.isLive, speed: speed)
    }

    /// Whether the item at `path` with `metadata` has its long silences shortened.
    private func trims(_ path: String, _ metadata: TrackMetadata) -> Bool {
        switch SilenceTrimMode(rawValue: shared.silenceTrimMode.load(ordering: .relaxed)) ?? .off {
        case .off: false
        case .all: true
        case .spoken: SpokenWord.matches(path: path, genre: metadata.genre)
        }
    }

    private func openNext() -> Bool {
        let item = plan[index]
        let opened: Opened
        if let p = prepared, p.item.id == item.id {
            opened = p  // opened ahead for a crossfade that was not made
        } else {
            do throws(MediaError) {
                opened = try open(item)
            } catch {
                prepared = nil
                // Opening was cut short by a flush: the new plan replaces it, nothing failed.
                if shared.generation.load(ordering: .acquiring) != generation { return false }
                report(.failed(id: item.id, error: error.about(item.path)))
                while !pushMarker(.failed, item: item, format: StreamFormat(rate: 0, channels: 0)) {
                    if shared.generation.load(ordering: .acquiring) != generation { return false }
                    sleep(millis: 5)
                }
                noteEnd(item.id)
                index += 1
                return true
            }
        }
        prepared = nil
        return begin(opened)
    }

    /// Makes `o` (plan[index]) the current item: reports it, aligns the ring and writes its
    /// start marker. False when a flush came meanwhile.
    private func begin(_ o: Opened) -> Bool {
        let decoder = o.decoder
        let item = o.item
        plan[index] = item
        report(.opened(id: item.id, format: decoder.format, lengthFrames: o.lengthFrames,
                       metadata: o.metadata, audio: o.audio, isLive: o.isLive))
        currentMetadata = o.metadata
        // Align to a whole frame and 8 bytes (filler the output skips), then the start marker
        // goes in before any of the item's audio: with the ring's size a multiple of every
        // such alignment (``DecoderThread/ringMultiple``), no frame straddles its wrap.
        let align = Self.alignment(bytesPerFrame: decoder.format.bytesPerFrame)
        let misalignment = producer.position % align
        if misalignment != 0 {
            while !pushMarker(.pad, item: item, format: decoder.format) {
                if shared.generation.load(ordering: .acquiring) != generation { return false }
                sleep(millis: 5)
            }
            while !writeFiller(align - misalignment) {
                if shared.generation.load(ordering: .acquiring) != generation { return false }
                sleep(millis: 5)
            }
        }
        let rg = shared.replayGainSettings.withLock { $0 }
        let scales = (rg.scale(for: o.metadata.replayGain, mode: .track), rg.scale(for: o.metadata.replayGain, mode: .album))
        while !pushMarker(.start, item: item, format: decoder.format, scales: scales, speed: o.speed) {
            if shared.generation.load(ordering: .acquiring) != generation { return false }
            sleep(millis: 5)
        }
        current = decoder
        trimmer = decoder as? SilenceTrimmingDecoder
        currentItem = item
        fading = nil  // (a crossfade sets its own after this)
        fadedOut.remove(item.id)
        currentScales = scales
        remainingFrames = o.remaining
        currentFrames = o.frames
        writtenFrames = 0
        fadePlan = nil
        return true
    }

    /// How the current item, `left` frames from its end, joins the next: nil while that cannot
    /// be told yet (the next item not planned), 0 for gaplessly, else the fade's length in
    /// frames. Decided once the end is within the fade plus one ring of audio (a decode writes
    /// at most a ring's worth), by opening the next item ahead: no fade across a change of
    /// rate or channels (the device would reopen), into an item of unknown length, out of or
    /// into one whose length is estimated from its bit rate (raw AAC: the fade would start at a
    /// guessed end and cut off what is past it), or between consecutive tracks of one album
    /// (``Crossfade/continuesAlbum(_:_:)``); at most half of either item.
    private func planCrossfade(left: Int) -> Int? {
        let seconds = Double(bitPattern: shared.crossfadeBits.load(ordering: .relaxed))
        guard seconds > 0 else { return nil }  // set while the item plays: it applies to its end
        guard let decoder = current, let item = currentItem, let total = currentFrames else { return 0 }
        let format = decoder.format
        let wanted = Int(seconds * Double(format.rate))
        guard left <= wanted + producer.capacity / format.bytesPerFrame else { return nil }
        guard index + 1 < plan.count else { return nil }
        let next = plan[index + 1]
        if prepared?.item.id != next.id {
            do throws(MediaError) {
                prepared = try open(next)
            } catch {
                prepared = nil  // it fails in its turn, with its reason
                return 0
            }
        }
        guard let p = prepared, p.decoder.format == format, let nextFrames = p.frames,
              decoder.lengthAccuracy != .estimated, p.decoder.lengthAccuracy != .estimated,
              !Crossfade.continuesAlbum(decoder.metadata, p.decoder.metadata) else { return 0 }
        return max(0, min(wanted, (total + item.startFrame) / 2, nextFrames / 2))
    }

    /// Ends the current item at the fade's start and begins the next (opened by
    /// ``planCrossfade(left:)``), the ending one fading out beneath it for `length` frames
    /// from `pending` (its frames decoded past the fade's start) on.
    private func beginCrossfade(length: Int, pending: [Float], ended: Bool) -> Bool {
        guard let decoder = current, let item = currentItem, let next = prepared, index + 1 < plan.count,
              plan[index + 1].id == next.item.id else {
            fadePlan = 0
            return true
        }
        while !pushMarker(.end, item: item, format: decoder.format) {
            if shared.generation.load(ordering: .acquiring) != generation { return false }
            sleep(millis: 5)
        }
        if fadedOut.count > 64 { fadedOut = [] }
        fadedOut.insert(item.id)
        let fade = length > 0 ? FadingItem(decoder: decoder, item: item, scales: currentScales, length: length,
                                           pending: pending, remaining: remainingFrames, ended: ended) : nil
        finishCurrent()
        prepared = nil
        guard begin(next) else { return false }
        fading = fade
        return true
    }

    /// The current item's tags as last reported (a stream's change merges into them).
    private var currentMetadata = TrackMetadata()

    /// A stream's own tag change (an Icecast title), over the item's other tags.
    private func streamUpdate(_ source: any ByteSource) -> TrackMetadata? {
        guard let own = source.takeMetadataUpdate() else { return nil }
        currentMetadata.merge(own)
        return currentMetadata
    }

    /// The ReplayGain ratio the ending item's samples are mixed with: the output applies the next
    /// item's scale from the fade's start, so the ending one's is divided by it.
    private static func ratio(from a: (track: Float, album: Float), to b: (track: Float, album: Float), mode: UInt8) -> Float {
        let (x, y) = mode == 1 ? (a.track, b.track) : mode == 2 ? (a.album, b.album) : (1, 1)
        return y > 0 ? x / y : 1
    }

    /// The float32 samples in bytes [from, to) of the two regions a block was decoded into.
    private static func floats(_ a: UnsafeMutableRawBufferPointer, _ b: UnsafeMutableRawBufferPointer, from: Int, to: Int) -> [Float] {
        var out: [Float] = []
        out.reserveCapacity((to - from) / 4)
        if from < a.count {
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: a[from..<min(to, a.count)]).bindMemory(to: Float.self))
        }
        if to > a.count {
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: b[max(0, from - a.count)..<(to - a.count)]).bindMemory(to: Float.self))
        }
        return out
    }

    /// Remembers where `id`'s audio ended (the ring position of its end or failed marker).
    private func noteEnd(_ id: UInt64) {
        if endPositions.count > 64 { endPositions = [:] }
        endPositions[id] = producer.position
    }

    private var fillerPending = 0

    /// The alignment of an item's first frame in the ring: a multiple of 8 bytes and of its frame.
    static func alignment(bytesPerFrame: Int) -> Int {
        var (a, b) = (8, bytesPerFrame)
        while b != 0 { (a, b) = (b, a % b) }
        return 8 / a * bytesPerFrame
    }

    /// What the PCM ring's size is a multiple of: every ``alignment(bytesPerFrame:)`` of 1 to 8
    /// float32 channels (8, 24, 16, 40, 24, 56, 32 bytes) and 64.
    static let ringMultiple = 6720

    /// Writes `count` filler bytes after a pad marker; returns false (to be retried) while the ring is full.
    private func writeFiller(_ count: Int) -> Bool {
        if fillerPending == 0 { fillerPending = count }
        let (a, _) = producer.writableRegions(max: fillerPending)
        producer.commit(a.count)
        fillerPending -= a.count
        return fillerPending == 0
    }

    private func pushMarker(_ kind: Marker.Kind, item: DecodeItem, format: StreamFormat, itemFrame: Int64? = nil,
                            scales: (track: Float, album: Float) = (1, 1), speed: Double = 1) -> Bool {
        let m = Marker(kind: kind, generation: generation, position: producer.position, item: item.id,
                       rate: Int32(format.rate), channels: Int32(format.channels), itemFrame: itemFrame ?? Int64(item.startFrame),
                       trackScale: scales.track, albumScale: scales.album, speed: speed)
        return markers.push(m)
    }
}
