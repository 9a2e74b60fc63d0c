// The playback engine's control plane: `PlaybackEngine`, its threads made and joined, and its
// commands (queue, transport, volume, device settings) sent to the decoder and output threads.
// The position timeline is in EngineTimeline.swift, the monitor and events in
// EngineMonitor.swift, the value types in EngineTypes.swift.

import CALSA
import Logging
import MediaCore
import Platform
import RingBuffer
import Synchronization
import Locking

/// The playback engine's control plane: a queue of files played gaplessly through one decoder
/// thread, a lock-free PCM ring, and one ALSA output thread.
///
/// Every method may be called from any thread. Commands reach the threads through atomics and the
/// decoder's mailbox; nothing here blocks on a C call. Events are delivered on the engine's own
/// monitor thread to ``onEvent(_:)`` handlers and to every ``events()`` stream.
public final class PlaybackEngine: Sendable {
    let shared = EngineShared()
    private let decoder: DecoderThread
    private let output: any OutputThreadHandle
    /// The output driver for the configured device (see ``OutputDrivers``).
    let driver: any AudioOutput.Type
    let monitor: MonitorThread
    let state: Lock<State>
    let logger: Logger
    /// The configuration the engine was made with.
    public let configuration: EngineConfiguration

    struct State {
        var queue: [(id: ItemID, item: EngineItem)] = []
        /// The id the next enqueued item gets.
        var nextID: UInt64 = 1
        var infos: [ItemID: ItemInfo] = [:]
        /// The chapter starts (seconds) of the items that have chapters: what the monitor looks
        /// up at each wake, without copying an item's info and tags.
        var chapterStarts: [ItemID: [Double]] = [:]
        /// Tag changes the decoder marked in the ring, by number, until the output reaches them
        /// (the oldest dropped past 64: those of flushed audio never arrive).
        var timedMetadata: [Int64: (ItemID, TrackMetadata)] = [:]
        var failures: [ItemID: MediaError] = [:]
        /// Audible timeline: segment starts by device frame.
        var segments: [Segment] = []
        var pending: [(deviceFrame: Int, event: EngineEvent)] = []
        var handlers: [UInt64: @Sendable (EngineEvent) -> Void] = [:]
        var nextHandler: UInt64 = 1
        var continuations: [UInt64: AsyncStream<EngineEvent>.Continuation] = [:]
        var generation: UInt32 = 0
        var paused = false
        var volume: Float = 1
        var muted = false
        var seekOrigin: Set<ItemID> = []
        /// Where items queued to start past their beginning start (seconds), for a re-plan
        /// before anything of them was heard (a speed set before the first play).
        var startSeconds: [ItemID: Double] = [:]
        /// Items restarted to continue where they were heard (no new `itemStarted`).
        var quietRestart: Set<ItemID> = []
        /// Events delivered at the monitor's next pass, ahead of the timeline's.
        var immediate: [EngineEvent] = []
        var rtLogged = false
        /// What the device agreed to when it last opened.
        var device: DeviceConfiguration?
        var pausedByDropFrames: Int?
        /// After a flush: the position to report until the new generation's first segment is
        /// registered (the seek target), and whether that segment is still awaited.
        var flushTarget: PlaybackPosition?
        var awaitingSegment = false
        /// The largest heard frame returned in the current device run (see `heardFrame`).
        var heardHigh: (floor: Int, frame: Int) = (0, 0)
        /// The item and chapter last announced as heard (``EngineEvent/chapterChanged(_:chapter:)``).
        var heardChapter: (item: ItemID, chapter: Int?)?
        /// Until this monotonic time (ns), or until a segment is heard, the monitor looks every
        /// 2 ms: items were just queued, so their first events are due within milliseconds.
        var watchClosely = 0
    }

    /// Creates the engine and starts its threads (the device opens when something plays).
    public init(configuration: EngineConfiguration = EngineConfiguration()) {
        self.configuration = configuration
        logger = configuration.logger
        // Failures reach the caller as typed errors (code and message); ALSA's own stderr lines are dropped.
        backline_alsa_silence_errors()
        let bytes = max(Int(configuration.decodeAheadSeconds * 48_000 * 8), 1 << 16)
        // The decode-ahead asked for (48 kHz stereo float32), rounded up to a multiple of every
        // frame size's alignment (so no frame of 1 to 8 channels straddles the wrap), not to the
        // next power of two (2 s: 755 KiB, where a power of two would lock 1 MiB).
        let multiple = DecoderThread.ringMultiple
        let pcmRing = SPSCRing(exactCapacity: (bytes + multiple - 1) / multiple * multiple)
        pcmRing.lockMemory()
        let markerRing = SPSCRing(minimumCapacity: Marker.stride * 1024)
        let eventRing = SPSCRing(minimumCapacity: OutputEvent.stride * 1024)
        state = Lock(State())
        let shared = self.shared
        let reportBox = ReportBox()
        driver = OutputDrivers.driver(for: configuration.output.device)
        decoder = DecoderThread(shared: shared, producer: pcmRing.makeProducer(), markers: markerRing.makeProducer(),
                                confinement: configuration.confinement,
                                options: OutputDrivers.decoderOptions(driver, shared: shared, settings: configuration.output),
                                report: { reportBox.engine?.decoderReport($0) })
        output = OutputDrivers.thread(driver, shared: shared, settings: configuration.output, consumer: pcmRing.makeConsumer(),
                                      markers: markerRing.makeConsumer(), events: eventRing.makeProducer())
        monitor = MonitorThread(events: eventRing.makeConsumer(), shared: shared)
        reportBox.engine = self
        monitor.engine = self
        decoder.start()
        output.start()
        monitor.start()
    }

    /// Stops playback and the engine's threads. The engine cannot be used afterwards.
    public func shutdown() {
        guard shared.running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        decoder.join()
        output.join()
        monitor.stop()
        state.withLock { s in
            for c in s.continuations.values { c.finish() }
            s.continuations = [:]
        }
    }

    deinit { shutdown() }

    // MARK: - Queue and transport

    /// Appends files to the queue; returns their ids. Playback continues gaplessly into them.
    @discardableResult
    public func enqueue(_ paths: [String]) -> [ItemID] { enqueue(items: paths.map { EngineItem(path: $0) }) }

    /// Appends items (files, or parts of them) to the queue; returns their ids. Playback
    /// continues gaplessly into them.
    @discardableResult
    public func enqueue(items new: [EngineItem]) -> [ItemID] {
        let items = state.withLock { s -> [DecodeItem] in
            s.watchClosely = monotonicNanos() + 1_000_000_000
            let items = new.map { item in
                let id = ItemID(rawValue: s.nextID)
                s.nextID += 1
                s.queue.append((id, item))
                return DecodeItem(id: id.rawValue, item: item)
            }
            sendEdit { .append(items, edit: $0) }
            return items
        }
        monitor.poke()
        return items.map { ItemID(rawValue: $0.id) }
    }

    /// Replaces everything queued by `paths` in one flush, the first from `seconds` in (its start
    /// when nil; sample-accurate, announced as a seek), paused or not. Unlike ``stop()`` then
    /// ``enqueue(_:)`` the output never sees an empty queue in between, so it keeps the device
    /// (one server stream) and the new audio follows the last frame heard: a jump, not a stop
    /// and a start.
    /// - Returns: the new items' ids (`paths` order).
    @discardableResult
    public func replaceAll(with paths: [String], startingAt seconds: Double? = nil, paused: Bool) -> [ItemID] {
        replaceAll(withItems: paths.map { EngineItem(path: $0) }, startingAt: seconds, paused: paused)
    }

    /// ``replaceAll(with:startingAt:paused:)`` for items (files, or parts of them); `seconds` is
    /// within the first item's clip.
    @discardableResult
    public func replaceAll(withItems new: [EngineItem], startingAt seconds: Double? = nil, paused: Bool) -> [ItemID] {
        let items = state.withLock { s -> [DecodeItem] in
            s.queue = []
            s.segments = []
            s.pending = []
            s.flushTarget = nil
            s.paused = paused
            s.pausedByDropFrames = nil
            s.watchClosely = monotonicNanos() + 1_000_000_000
            s.startSeconds = [:]
            return new.enumerated().map { n, item in
                let id = ItemID(rawValue: s.nextID)
                s.nextID += 1
                s.queue.append((id, item))
                let start = n == 0 ? seconds.map { max(0, $0) } : nil
                if let start {
                    s.seekOrigin.insert(id)
                    s.startSeconds[id] = start
                }
                return DecodeItem(id: id.rawValue, item: item, startSeconds: start)
            }
        }
        // Paused before the new generation's audio can reach the device; unpaused only after the
        // flush, so the old buffer never sounds again in between.
        if paused { shared.pauseRequested.store(true, ordering: .releasing) }
        flush(with: items)
        if !paused {
            shared.pauseRequested.store(false, ordering: .releasing)
            shared.wakeOutput()
        }
        return items.map { ItemID(rawValue: $0.id) }
    }

    /// Appends one file that starts `seconds` in (sample-accurate), e.g. to restore a saved position.
    @discardableResult
    public func enqueue(_ path: String, startingAt seconds: Double) -> ItemID { enqueue(EngineItem(path: path), startingAt: seconds) }

    /// Appends one item that starts `seconds` into its clip (sample-accurate).
    @discardableResult
    public func enqueue(_ engineItem: EngineItem, startingAt seconds: Double) -> ItemID {
        let item = state.withLock { s -> DecodeItem in
            let id = ItemID(rawValue: s.nextID)
            s.nextID += 1
            s.queue.append((id, engineItem))
            s.seekOrigin.insert(id)
            s.startSeconds[id] = max(0, seconds)
            s.watchClosely = monotonicNanos() + 1_000_000_000
            let item = DecodeItem(id: id.rawValue, item: engineItem, startSeconds: max(0, seconds))
            sendEdit { .append([item], edit: $0) }
            return item
        }
        monitor.poke()
        return ItemID(rawValue: item.id)
    }

    /// Ids of the items not yet finished, the audible one first.
    public var queuedItems: [ItemID] { state.withLock { $0.queue.map(\.id) } }

    /// Info for an item the decoder has opened (nil before that, or for an unknown id).
    public func info(for id: ItemID) -> ItemInfo? { state.withLock { $0.infos[id] } }

    /// What the network input has loaded for `id`, while it is the item whose bytes are being
    /// loaded (the one the decoder reads, or last read, over a network); nil otherwise, and
    /// for files.
    public func inputProgress(for id: ItemID) -> InputProgress? {
        guard shared.loadedItem.load(ordering: .acquiring) == id.rawValue else { return nil }
        let start = shared.loadedStart.load(ordering: .relaxed), end = shared.loadedEnd.load(ordering: .relaxed)
        let length = shared.loadedLength.load(ordering: .relaxed)
        return InputProgress(waiting: shared.inputWaitingItem.load(ordering: .relaxed) == id.rawValue,
                             loaded: start..<max(start, end), length: length < 0 ? nil : length)
    }

    /// Pauses: the device holds its buffer (hardware pause) and resumes without losing or
    /// repeating a sample. Returns once the output thread holds (within a period; at most a
    /// second): a ``position`` read after it is the frame heard last, and stands still, as
    /// AVPlayer's `currentTime` after `pause()` (read before the hold, it was still moving).
    public func pause() {
        state.withLock { $0.paused = true }
        shared.pauseRequested.store(true, ordering: .releasing)
        shared.wakeOutput()
        waitForOutputHold(seconds: 1)
    }

    /// Waits until the output thread holds paused (it answers within a period), at most
    /// `seconds`, or until it has stopped.
    private func waitForOutputHold(seconds: Double) {
        for _ in 0..<Int(seconds * 2000) where !shared.outputPaused.load(ordering: .acquiring) && shared.running.load(ordering: .relaxed) {
            usleep(500)
        }
    }

    /// Resumes after ``pause()``.
    public func resume() {
        let reseek = state.withLock { s -> Int? in
            s.paused = false
            defer { s.pausedByDropFrames = nil }
            return s.pausedByDropFrames
        }
        if reseek != nil, let pos = position {
            // The device had no hardware pause and dropped its buffer: continue exactly where
            // the listener stopped hearing.
            restart(at: pos.item, frame: pos.frame, seek: false)
        }
        shared.pauseRequested.store(false, ordering: .releasing)
        shared.wakeOutput()
        monitor.poke()
    }

    /// Whether playback is paused.
    public var isPaused: Bool { state.withLock { $0.paused } }

    /// Stops: clears the queue, flushes the device and releases it.
    public func stop() {
        state.withLock { s in
            s.queue = []
            s.segments = []
            s.pending = []
        }
        flush(with: [])
        shared.pauseRequested.store(false, ordering: .releasing)
        shared.wakeOutput()
        state.withLock { $0.paused = false }
    }

    /// Which items have their long silences shortened on the decoder thread (off by default):
    /// a silence longer than 0.3 s keeps its first and last 0.15 s (``SilenceTrimming``). The
    /// position stays content time (it jumps over each cut as it is heard); what was cut is
    /// each item's ``ItemInfo/silenceTrimmed``. Items opened from now on follow it (those
    /// already decoded ahead keep theirs); a clipped item or a live stream is never trimmed.
    public var silenceTrimming: SilenceTrimMode {
        get { SilenceTrimMode(rawValue: shared.silenceTrimMode.load(ordering: .relaxed)) ?? .off }
        set { shared.silenceTrimMode.store(newValue.rawValue, ordering: .relaxed) }
    }

    /// The rate items play at, 0.5…3 (1: as decoded, bit-exact): each item's audio stretched on
    /// the decoder thread by its ``EngineItem/pitchAlgorithm``; ``position`` stays content time.
    /// A change is heard at once: what is buffered is replaced from the frame heard, as a seek
    /// there (a live stream plays at its own pace whatever the rate).
    public var speed: Double {
        get { shared.speed }
        set {
            let s = min(TimeStretchers.rates.upperBound, max(TimeStretchers.rates.lowerBound, newValue))
            guard s != shared.speed else { return }
            shared.speedBits.store(s.bitPattern, ordering: .relaxed)
            if let pos = position {
                restart(at: pos.item, frame: pos.frame, seek: false)
            } else {
                // Nothing heard yet (set before the first play): what was decoded ahead at the
                // old speed is decoded again, each item from where it was to start.
                let items = state.withLock { s in
                    s.queue.map { q in DecodeItem(id: q.id.rawValue, item: q.item, startSeconds: s.startSeconds[q.id]) }
                }
                if !items.isEmpty { flush(with: items) }
            }
        }
    }

    /// Seeks within the audible item to `seconds` (sample-accurate). Returns false with nothing playing.
    @discardableResult
    public func seek(to seconds: Double) -> Bool {
        guard let pos = position else { return false }
        let frame = Int((seconds * Double(pos.rate)).rounded())
        restart(at: pos.item, frame: max(0, frame), seek: true)
        return true
    }

    /// Replaces the items queued after `anchor` with `paths` (insert, remove, reorder), keeping
    /// what plays now untouched and gapless: when the decoder has not yet opened anything after
    /// `anchor`, its plan is edited in place; when it has (it decodes ahead) and the output has not
    /// reached the anchor's end, the items after it are cut out of the ring; only when the output
    /// is already past that point is playback re-planned from the audible frame (a short gap).
    /// - Returns: the new items' ids (`paths` order), or nil if `anchor` is not queued.
    @discardableResult
    public func replaceItems(after anchor: ItemID, with paths: [String]) -> [ItemID]? {
        replaceItems(after: anchor, withItems: paths.map { EngineItem(path: $0) })
    }

    /// ``replaceItems(after:with:)`` for items (files, or parts of them).
    @discardableResult
    public func replaceItems(after anchor: ItemID, withItems new: [EngineItem]) -> [ItemID]? {
        let planned = state.withLock { s -> [DecodeItem]? in
            guard let i = s.queue.firstIndex(where: { $0.id == anchor }) else { return nil }
            let items = new.map { item -> DecodeItem in
                let id = ItemID(rawValue: s.nextID)
                s.nextID += 1
                return DecodeItem(id: id.rawValue, item: item)
            }
            s.queue = Array(s.queue[...i]) + zip(items, new).map { (ItemID(rawValue: $0.id), $1) }
            let generation = s.generation
            sendEdit { .splice(after: anchor.rawValue, items: items, generation: generation, edit: $0) }
            return items
        }
        guard let items = planned else { return nil }
        monitor.poke()
        return items.map { ItemID(rawValue: $0.id) }
    }

    /// Numbers a queue edit and hands it to the decoder. Called under the state lock, so edits
    /// reach the mailbox in number order. Until the decoder has handled the edit, the output
    /// thread does not cross an item's end or the end of input (for a bounded time): an edit
    /// made before the listener reaches a boundary is applied there gaplessly, however late
    /// the decoder thread gets to run.
    private func sendEdit(_ command: (UInt64) -> DecoderThread.Command) {
        let n = shared.editsRequested.add(1, ordering: .acquiringAndReleasing).newValue
        decoder.send(command(n))
    }

    /// Skips to the next item (the audible one is dropped from the queue).
    public func skipToNext() {
        let current = position?.item ?? state.withLock { $0.queue.first?.id }
        guard let current else { return }
        state.withLock { s in
            if let i = s.queue.firstIndex(where: { $0.id == current }) { s.queue.removeSubrange(...i) }
            // Nothing is audible until the next item's segment registers (a few ms).
            s.flushTarget = nil
            s.segments = []
        }
        let items = state.withLock { s in s.queue.map { DecodeItem(id: $0.id.rawValue, item: $0.item) } }
        flush(with: items)
    }

    /// Software volume 0…1 (smoothed over 20 ms, so changes never click).
    public var volume: Float {
        get { state.withLock { $0.volume } }
        set {
            let v = min(1, max(0, newValue))
            let g = state.withLock { s -> Float in s.volume = v; return s.muted ? 0 : v }
            shared.gainBits.store(g.bitPattern, ordering: .relaxed)
        }
    }

    /// Mute (keeps ``volume``).
    public var isMuted: Bool {
        get { state.withLock { $0.muted } }
        set {
            let g = state.withLock { s -> Float in s.muted = newValue; return newValue ? 0 : s.volume }
            shared.gainBits.store(g.bitPattern, ordering: .relaxed)
        }
    }

    /// The error for a device failure with the errno-style `code` the output reported (ALSA's
    /// own, or the code a lost sound server maps to).
    static func deviceError(_ code: Int32, device: String, driver: any AudioOutput.Type = ALSAPCM.self) -> MediaError {
        // A driver that can say why in its own words (a pipe: which FIFO, and what is wrong).
        if let reason = driver.failureReason(device: device) {
            return MediaError(.device, reason, code: code, item: "audio output (\(device))")
        }
        let server = PulseStream.sink(forDevice: device) != nil
        return MediaError(.device, String(cString: snd_strerror(code)), library: server ? "PulseAudio" : "ALSA", code: code,
                          item: "audio output (\(device))")
    }

    /// Whether the configured device can be opened now (opened and closed at once, from the
    /// calling thread; the output thread is not involved). `soundServer` says whether it is a
    /// sound-server plugin (PulseAudio/PipeWire: ALSA's I/O plugin type), whose return after a
    /// loss means the media services restarted.
    public func probeDevice() -> (available: Bool, soundServer: Bool) { driver.probe(device: configuration.output.device) }

    /// What the output device agreed to when it last opened (nil until it has opened).
    public var deviceConfiguration: DeviceConfiguration? { state.withLock { $0.device } }

    /// ReplayGain: the mode and preamps items start with (`auto` plays as `album`: resolve it
    /// first, as `QueuePlayer` does with the shuffle it knows). A change applies from the next
    /// item opened; the mode from the next item heard.
    public var replayGain: ReplayGainSettings {
        get { shared.replayGainSettings.withLock { $0 } }
        set {
            shared.replayGainSettings.withLock { $0 = newValue }
            let mode: UInt8 = switch newValue.mode {
            case .off: 0
            case .track: 1
            case .album, .auto: 2
            }
            shared.replayGainMode.store(mode, ordering: .relaxed)
        }
    }

    /// Crossfade, in seconds (0: off, the default): each item's last seconds are mixed with the
    /// next one's first, with an equal-power curve, on the decoder thread (see ``Crossfade``).
    /// The next item is the current one, heard from its first frame, from the fade's start.
    /// Not across a change of rate or channels, into an item of unknown length, or between
    /// consecutive tracks of one album (``Crossfade/continuesAlbum(_:_:)``: those stay gapless);
    /// at most half of either item. Applies to the next join the decoder has not decided yet.
    public var crossfade: Double {
        get { Double(bitPattern: shared.crossfadeBits.load(ordering: .relaxed)) }
        set {
            let seconds = newValue.isFinite ? min(max(newValue, 0), 3600) : 0
            shared.crossfadeBits.store(seconds.bitPattern, ordering: .relaxed)
        }
    }

    /// Underruns since the engine started.
    public var underrunCount: Int { shared.underruns.load(ordering: .relaxed) }

    /// Whether the output thread got real-time scheduling (nil until it has tried).
    public var isRealtime: Bool? {
        switch shared.realtimeStatus.load(ordering: .acquiring) {
        case 1: true
        case 2, 3: false
        default: nil
        }
    }

    private func restart(at item: ItemID, frame: Int, seek: Bool) {
        let items = state.withLock { s -> [DecodeItem] in
            guard let i = s.queue.firstIndex(where: { $0.id == item }) else { return [] }
            s.queue.removeSubrange(..<i)
            if seek { s.seekOrigin.insert(item) } else { s.quietRestart.insert(item) }
            if let rate = s.infos[item]?.format.rate {
                s.flushTarget = PlaybackPosition(item: item, frame: frame, rate: rate)
            }
            return s.queue.enumerated().map { n, q in
                DecodeItem(id: q.id.rawValue, item: q.item, startFrame: n == 0 ? frame : 0)
            }
        }
        flush(with: items)
    }

    private func flush(with items: [DecodeItem]) {
        let g = state.withLock { s -> UInt32 in
            s.generation &+= 1
            // Everything not yet heard is discarded with the flush (the output takes those
            // frames off the device timeline, which goes on from the last frame heard).
            s.pending = []
            s.segments.removeAll { !$0.announced }
            s.awaitingSegment = !items.isEmpty
            if items.isEmpty { s.flushTarget = nil }
            return s.generation
        }
        if items.isEmpty { shared.stoppedGeneration.store(g, ordering: .relaxed) }
        // Generation first: the output starts discarding at once, and the decoder, woken by the
        // load, never sees its new plan with an old generation.
        shared.generation.store(g, ordering: .releasing)
        shared.wakeOutput()
        decoder.send(.load(items, generation: g))
        monitor.poke()
    }

    /// Re-plans decoding from the frame heard now, sample-exact: the output is paused first (so
    /// the heard frame stands still while it is read), the device buffer is dropped and refilled
    /// from that frame, and playback resumes after a gap of a few milliseconds. The last resort
    /// of a queue edit (the cut in the ring is the normal path): through PulseAudio the restart
    /// measured 4 ms off (192 frames, the sound server's stream restart), not bit-exact.
    func replanFromHeard() {
        let wasPaused = state.withLock { $0.paused }
        if !wasPaused {
            shared.pauseRequested.store(true, ordering: .releasing)
            shared.wakeOutput()
            waitForOutputHold(seconds: 0.05)
        }
        let at = position ?? state.withLock { s in s.queue.first.map { PlaybackPosition(item: $0.id, frame: 0, rate: 0) } }
        if let at { restart(at: at.item, frame: at.frame, seek: false) }
        if !wasPaused, !state.withLock({ $0.paused }) {
            shared.pauseRequested.store(false, ordering: .releasing)
            shared.wakeOutput()
        }
    }
}

private final class ReportBox: @unchecked Sendable {
    // @unchecked Sendable: written once before the decoder thread starts.
    weak var engine: PlaybackEngine?
}
