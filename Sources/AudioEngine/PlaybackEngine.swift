import CALSA
import Logging
import Platform
import RingBuffer
import Synchronization
import Locking

/// Identifies one entry given to the engine (the same file queued twice gets two ids).
public struct ItemID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "#\(rawValue)" }
}

/// What the engine knows about an item once the decoder has opened it.
public struct ItemInfo: Sendable, Equatable {
    /// The engine's id for the entry.
    public var id: ItemID
    /// The file's path.
    public var path: String
    /// The decoded audio's format (rate and channels).
    public var format: StreamFormat
    /// The exact length in frames, encoder delay and padding removed (gapless).
    public var durationFrames: Int
    /// The file's tags.
    public var metadata: TrackMetadata
    /// What the file holds and how it plays (its format, and whether it is down-mixed).
    public var audio: AudioDescription?
    /// The ReplayGain scale it plays with (1: off, or unity), known once it is heard.
    public var replayGainScale: Float = 1
    /// A live stream (an Icecast mount): no end and no length (``durationFrames`` is 0), no seeking.
    public var isLive = false
    /// Duration in seconds.
    public var duration: Double { Double(durationFrames) / Double(format.rate) }
}

/// Engine events. Item events fire when the listener *hears* them (position-based), not when decoded.
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum EngineEvent: Sendable, Equatable {
    /// An item's first sample (or its first sample after a seek, with `fromSeek`) became audible.
    case itemStarted(ItemInfo, fromSeek: Bool)
    /// An item's last sample was heard.
    case itemEnded(ItemID)
    /// An item could not be (fully) decoded; whatever decoded was played first.
    case itemFailed(ItemID, path: String, error: MediaError)
    /// The output ran dry (the decoder fell behind); playback continues when data arrives.
    case underrun(count: Int)
    /// The input waits for the network and the ring ran dry: the device plays silence and the
    /// item holds its position, from the moment this is heard. Not an underrun: it ends by
    /// itself once enough is buffered (``stallEnded(_:)``), or the item fails.
    case stalled(ItemID)
    /// Enough is buffered again after a stall: the item is heard again from where it held.
    case stallEnded(ItemID)
    /// The device could not be opened or failed.
    case deviceError(MediaError)
    /// Everything queued has been played; the device is released.
    case endOfInput
    /// The decoder opened an item (ahead of it being heard; again when a seek reopens it):
    /// its format, exact length and tags are known. Delivered as soon as it happens.
    case itemLoaded(ItemInfo)
    /// The decoder could not (fully) decode an item, ahead of it being heard: the decoder has
    /// gone on to the next item it holds (if any). ``itemFailed(_:path:error:)`` follows when the listener
    /// reaches the failure. Delivered as soon as it happens, so whoever feeds the engine can
    /// queue what comes next without a gap.
    case itemDecodeFailed(ItemID, path: String, error: MediaError)
    /// The output device opened, with these settings. Delivered as soon as it happens.
    case deviceOpened(DeviceConfiguration)
    /// The item's tags changed within it (a chained Ogg stream's next link), heard now: the
    /// info carries the new tags (``PlaybackEngine/info(for:)`` answers them from now on).
    case metadataChanged(ItemInfo)
}

/// The audible position.
public struct PlaybackPosition: Sendable, Equatable {
    /// The item being heard.
    public var item: ItemID
    /// Frames into the item (after gapless trimming).
    public var frame: Int
    /// Sample rate of the item.
    public var rate: Int
    /// Seconds into the item.
    public var seconds: Double { Double(frame) / Double(rate) }
}

/// Engine configuration.
public struct EngineConfiguration: Sendable {
    /// ALSA output settings.
    public var output: OutputSettings
    /// How far ahead the decoder may run, in seconds of 48 kHz stereo float (sets the ring size).
    public var decodeAheadSeconds: Double
    /// Where the engine logs (from the control plane only).
    public var logger: Logger
    /// When set, every file the engine opens must lie beneath this directory (absolute, its
    /// links resolved), checked on the opened descriptor: an item whose file has become a link
    /// leading out of it since it was queued fails with that reason (a daemon confining its
    /// clients to the music directory). nil: any file.
    public var confinement: String?

    /// A configuration with the default device and a 2-second decode-ahead unless given.
    /// - Parameters:
    ///   - output: The output device's settings.
    ///   - decodeAheadSeconds: How far ahead the decoder may run, seconds.
    ///   - logger: Where the engine logs.
    ///   - confinement: The directory every file must lie beneath (nil: anywhere).
    public init(output: OutputSettings = OutputSettings(), decodeAheadSeconds: Double = 2,
                logger: Logger = Logger(label: "backline.engine"), confinement: String? = nil) {
        self.confinement = confinement
        self.output = output
        self.decodeAheadSeconds = decodeAheadSeconds
        self.logger = logger
    }
}

/// The playback engine's control plane: a queue of files played gaplessly through one decoder
/// thread, a lock-free PCM ring, and one ALSA output thread.
///
/// Every method may be called from any thread. Commands reach the threads through atomics and the
/// decoder's mailbox; nothing here blocks on a C call. Events are delivered on the engine's own
/// monitor thread to ``onEvent(_:)`` handlers and to every ``events()`` stream.
public final class PlaybackEngine: Sendable {
    private let shared = EngineShared()
    private let decoder: DecoderThread
    private let output: any OutputThreadHandle
    /// The output driver for the configured device (see ``OutputDrivers``).
    private let driver: any AudioOutput.Type
    private let monitor: MonitorThread
    /// A stretch of the device timeline: from `deviceFrame`, `item` from `itemFrame` (held
    /// there, not advancing, while `frozen`: a stall's silence). A `continuation` (a stall's
    /// start or end) goes on with the item already started: it announces nothing.
    typealias Segment = (deviceFrame: Int, item: ItemID, itemFrame: Int, rate: Int, announced: Bool, seek: Bool,
                         frozen: Bool, continuation: Bool)
    private let state: Lock<State>
    private let logger: Logger
    /// The configuration the engine was made with.
    public let configuration: EngineConfiguration

    struct State {
        var queue: [(id: ItemID, item: EngineItem)] = []
        /// The id the next enqueued item gets.
        var nextID: UInt64 = 1
        var infos: [ItemID: ItemInfo] = [:]
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
            return new.enumerated().map { n, item in
                let id = ItemID(rawValue: s.nextID)
                s.nextID += 1
                s.queue.append((id, item))
                let start = n == 0 ? seconds.map { max(0, $0) } : nil
                if start != nil { s.seekOrigin.insert(id) }
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

    // MARK: - Position

    /// The audible item and position: frames written to the device minus what it still holds,
    /// mapped onto the item whose frames those are.
    public var position: PlaybackPosition? {
        let reading = shared.position()
        return state.withLock { s in
            if let target = s.flushTarget { return target }
            let heard = Self.heardFrame(reading, segments: s.segments, high: &s.heardHigh)
            guard let seg = s.segments.last(where: { $0.deviceFrame <= heard }) ?? s.segments.first else { return nil }
            let inItem = seg.frozen ? 0 : max(0, heard - seg.deviceFrame)
            // (A live stream, or anything of unknown length, is not held to a length.)
            let length = s.infos[seg.item].flatMap { $0.durationFrames > 0 ? $0.durationFrames : nil } ?? Int.max
            return PlaybackPosition(item: seg.item, frame: min(length, seg.itemFrame + inItem), rate: seg.rate)
        }
    }

    /// The device frame heard now: the last (framesWritten − delay) reading, advanced by the
    /// time since at the playing segment's rate (the reading is refreshed once per period), and
    /// never past what was written. Within one device run it never goes back: when the device
    /// corrects its latency estimate downwards (PulseAudio's, once its timing arrives) or the
    /// advance overshot, the heard frame holds until the audio catches up (`high`, the largest
    /// frame returned in the run).
    private static func heardFrame(_ r: PositionReading, segments: [Segment], high: inout (floor: Int, frame: Int)) -> Int {
        var heard = r.framesWritten - r.delay
        if let t = r.stampNanos {
            let rate = (segments.last(where: { $0.deviceFrame <= heard }) ?? segments.first)?.rate ?? 0
            let elapsed = max(0, monotonicNanos() - t)
            heard = min(r.framesWritten, heard + Int(Double(elapsed) * Double(rate) / 1e9))
        }
        if high.floor == r.floor { heard = max(heard, high.frame) }
        high = (r.floor, heard)
        return heard
    }

    // MARK: - Events

    /// Registers a handler called (on the engine's monitor thread) for every event; returns a token.
    @discardableResult
    public func onEvent(_ handler: @escaping @Sendable (EngineEvent) -> Void) -> UInt64 {
        state.withLock { s in
            let t = s.nextHandler
            s.nextHandler += 1
            s.handlers[t] = handler
            return t
        }
    }

    /// Removes a handler added with ``onEvent(_:)``. Events are delivered outside the engine's
    /// lock, so a delivery already under way when this is called may still reach the handler once.
    public func removeHandler(_ token: UInt64) { _ = state.withLock { $0.handlers.removeValue(forKey: token) } }

    /// A stream of every event from now on.
    public func events() -> AsyncStream<EngineEvent> {
        let (stream, continuation) = AsyncStream<EngineEvent>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let token = state.withLock { s in
            let t = s.nextHandler
            s.nextHandler += 1
            s.continuations[t] = continuation
            return t
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: token) }
        }
        return stream
    }

    private func deliver(_ events: [EngineEvent]) {
        guard !events.isEmpty else { return }
        let (handlers, continuations) = state.withLock { s in (Array(s.handlers.values), Array(s.continuations.values)) }
        for e in events {
            for h in handlers { h(e) }
            for c in continuations { c.yield(e) }
        }
    }

    // MARK: - Reports from the threads

    fileprivate func decoderReport(_ r: DecoderReport) {
        state.withLock { s in
            switch r {
            case .opened(let id, let format, let length, let metadata, let audio, let isLive):
                let path = s.queue.first { $0.id.rawValue == id }?.item.path ?? ""
                let info = ItemInfo(id: ItemID(rawValue: id), path: path, format: format,
                                    durationFrames: length, metadata: metadata, audio: audio, isLive: isLive)
                s.infos[info.id] = info
                s.immediate.append(.itemLoaded(info))
            case .failed(let id, let error):
                s.failures[ItemID(rawValue: id)] = error
                let path = s.queue.first { $0.id.rawValue == id }?.item.path ?? error.item
                s.immediate.append(.itemDecodeFailed(ItemID(rawValue: id), path: path, error: error))
            case .metadata(let id, let number, let metadata):
                s.timedMetadata[number] = (ItemID(rawValue: id), metadata)
                if s.timedMetadata.count > 64, let oldest = s.timedMetadata.keys.min() { s.timedMetadata[oldest] = nil }
            case .spliceFailed:
                break
            }
        }
        switch r {
        case .metadata: break
        case .opened, .failed: monitor.poke()
        case .spliceFailed(let generation):
            // The decoder had already opened an item after the splice point: re-plan from what
            // is heard now (sample-exact; the device buffer is refilled).
            guard state.withLock({ $0.generation == generation }) else { return }
            replanFromHeard()
        }
    }

    /// Re-plans decoding from the frame heard now, sample-exact: the output is paused first (so
    /// the heard frame stands still while it is read), the device buffer is dropped and refilled
    /// from that frame, and playback resumes after a gap of a few milliseconds. The last resort
    /// of a queue edit (the cut in the ring is the normal path): through PulseAudio the restart
    /// measured 4 ms off (192 frames, the sound server's stream restart), not bit-exact.
    private func replanFromHeard() {
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

    /// Called by the monitor thread with output events; emits engine events when heard.
    /// - Returns: how long the monitor may sleep before the next event can become audible
    ///   (microseconds): short just before a due event, longer while nothing is pending;
    ///   `UInt32.max` while the position stands still (until woken).
    fileprivate func process(_ raw: [OutputEvent]) -> UInt32 {
        var immediate: [EngineEvent] = []
        var replan = false
        let rtStatus = shared.realtimeStatus.load(ordering: .acquiring)
        if rtStatus != 0, !state.withLock({ $0.rtLogged }), let rt = isRealtime {
            state.withLock { $0.rtLogged = true }
            if rtStatus == 3 {
                logger.debug("output thread runs at normal priority (real-time not requested)")
            } else if rt {
                logger.debug("output thread runs with SCHED_FIFO")
            } else {
                logger.info("output thread runs at normal priority (no permission for SCHED_FIFO)")
            }
        }
        let reading = shared.position()
        let due: ([EngineEvent], UInt32) = state.withLock { s in
            let heard = Self.heardFrame(reading, segments: s.segments, high: &s.heardHigh)
            immediate = s.immediate + immediate
            s.immediate = []
            for e in raw where e.generation == s.generation {
                let id = ItemID(rawValue: e.item)
                switch e.kind {
                case .segmentStarted:
                    s.flushTarget = nil
                    s.awaitingSegment = false
                    let seek = s.seekOrigin.remove(id) != nil
                    let quiet = s.quietRestart.remove(id) != nil
                    s.segments.append((e.deviceFrame, id, Int(e.itemFrame), Int(e.rate), quiet, seek, false, false))
                    s.infos[id]?.replayGainScale = Float(bitPattern: UInt32(bitPattern: e.code))
                case .itemEnded:
                    s.pending.append((e.deviceFrame, .itemEnded(id)))
                case .itemFailed:
                    let err = s.failures[id] ?? MediaError(.corrupt, "decoding failed")
                    let path = s.queue.first { $0.id == id }?.item.path ?? err.item
                    s.pending.append((e.deviceFrame, .itemFailed(id, path: path, error: err)))
                case .endOfInput:
                    s.pending.append((e.deviceFrame, .endOfInput))
                case .underrun:
                    immediate.append(.underrun(count: shared.underruns.load(ordering: .relaxed)))
                case .stalled, .stallEnded:
                    // The item holds (or goes on) from this device frame, announced when heard.
                    let stalled = e.kind == .stalled
                    s.segments.append((e.deviceFrame, id, Int(e.itemFrame), Int(e.rate), false, false, stalled, true))
                    s.pending.append((e.deviceFrame, stalled ? .stalled(id) : .stallEnded(id)))
                case .deviceError:
                    immediate.append(.deviceError(Self.deviceError(e.code, device: configuration.output.device, driver: driver)))
                case .deviceOpened:
                    let c = DeviceConfiguration(
                        rate: Int(e.rate), channels: Int((e.code >> 8) & 0xFF), sampleFormat: e.code & 3 == 1 ? .float32 : .s16,
                        bufferFrames: Int(e.itemFrame), periodFrames: Int(e.item), canPause: e.code & 4 != 0,
                        mmap: e.code & 8 != 0, maxChannels: Int(e.code >> 16))
                    s.device = c
                    immediate.append(.deviceOpened(c))
                case .pausedByDrop:
                    s.pausedByDropFrames = Int(e.itemFrame)
                case .cutMissed:
                    replan = true
                case .metadataChanged:
                    if let (item, metadata) = s.timedMetadata.removeValue(forKey: e.itemFrame), item == id, var info = s.infos[id] {
                        info.metadata = metadata
                        s.pending.append((e.deviceFrame, .metadataChanged(info)))
                    }
                }
            }
            // Everything now audible, in timeline order; at one device frame an item's end
            // comes before the next item's start, and the end of input last.
            var due: [(frame: Int, rank: Int, event: EngineEvent)] = []
            // A segment is heard once its first frame has played (`<`: a device filling up to
            // its start threshold holds the heard frame at the segment's start).
            for i in s.segments.indices where !s.segments[i].announced && s.segments[i].deviceFrame < heard {
                s.segments[i].announced = true
                s.watchClosely = 0  // the start was heard: back to sleeping until the next event
                let seg = s.segments[i]
                if !seg.continuation, let info = s.infos[seg.item] { due.append((seg.deviceFrame, 1, .itemStarted(info, fromSeek: seg.seek))) }
            }
            for (frame, e) in s.pending where frame <= heard {
                switch e {
                case .itemEnded(let id), .itemFailed(let id, _, _):
                    s.queue.removeAll { $0.id == id }
                    due.append((frame, 0, e))
                case .metadataChanged(let info):
                    s.infos[info.id]?.metadata = info.metadata
                    due.append((frame, 1, e))
                case .endOfInput:
                    // Input that ended; an item appended after the output passed the end starts
                    // at this frame or later (the device drained, then reopened), and stays.
                    s.segments.removeAll { $0.deviceFrame < frame }
                    due.append((frame, 2, e))
                default:
                    due.append((frame, 1, e))
                }
            }
            s.pending.removeAll { $0.deviceFrame <= heard }
            let out = due.enumerated().sorted {
                ($0.element.frame, $0.element.rank, $0.offset) < ($1.element.frame, $1.element.rank, $1.offset)
            }.map(\.element.event)
            // Keep only the audible segment and later ones.
            if let last = s.segments.lastIndex(where: { $0.deviceFrame <= heard && $0.announced }), last > 0 {
                s.segments.removeFirst(last)
            }
            // Sleep until the next event is due: at least 1 ms, at most half the device buffer
            // (20–250 ms): the output reports an item boundary when it reads it, a buffer ahead of
            // it being heard, so half a buffer still announces it on time. Commands wake the
            // monitor at once through `poke()`.
            let cap = UInt32(min(250, max(20, configuration.output.bufferMillis / 2)) * 1_000)
            let rate = max(1, s.segments.last?.rate ?? 44100)
            let nextFrames = (s.segments.filter { !$0.announced }.map(\.deviceFrame) + s.pending.map(\.deviceFrame))
                .min().map { $0 - heard }
            let sleep: UInt32
            if s.awaitingSegment || monotonicNanos() < s.watchClosely {
                sleep = 2_000  // a flush is on its way through: register its segment promptly
            } else if reading.stampNanos == nil {
                // The position stands still (paused, stopped, the device refilling): nothing
                // becomes due until it advances, and the output wakes this thread then (as it
                // does for each event it posts, and a command does): no timeout.
                sleep = .max
            } else if let nextFrames {
                sleep = UInt32(max(1_000, min(Int(cap), nextFrames * 1_000_000 / rate)))
            } else {
                sleep = cap  // advancing, nothing due yet: look again within half a buffer
            }
            return (out, sleep)
        }
        deliver(immediate + due.0)
        if replan { replanFromHeard() }
        return due.1
    }
}

private final class ReportBox: @unchecked Sendable {
    // @unchecked Sendable: written once before the decoder thread starts.
    weak var engine: PlaybackEngine?
}

/// Drains the output thread's event queue every few milliseconds on an ordinary thread and
/// turns it into engine events (the output thread itself never signals or blocks).
final class MonitorThread: @unchecked Sendable {
    // @unchecked Sendable: `events` is used only by the monitor thread; `engine` is set before start.
    private var events: RingConsumer
    weak var engine: PlaybackEngine?
    private let shared: EngineShared
    private let running = Atomic<Bool>(true)
    private var thread: PlatformThread?

    /// Wakes the monitor now (after a command: the next events come sooner than its sleep).
    func poke() { shared.wakeMonitor() }

    init(events: consuming RingConsumer, shared: EngineShared) {
        self.events = events
        self.shared = shared
    }

    func start() {
        thread = PlatformThread.start(name: "bl-monitor") { [self] in
            while running.load(ordering: .acquiring) {
                var batch: [OutputEvent] = []
                while let e = events.peekEvent() {
                    events.commit(OutputEvent.stride)
                    batch.append(e)
                }
                let sleep = engine?.process(batch) ?? 20_000
                // Sleep until due, or until the output posts an event or a command pokes.
                shared.monitorWake.wait(millis: sleep == .max ? -1 : Int(max(1, (sleep + 999) / 1000)))
            }
        }
    }

    func stop() {
        if running.exchange(false, ordering: .acquiringAndReleasing) {
            shared.wakeMonitor()
            thread?.join()
        }
    }
}
