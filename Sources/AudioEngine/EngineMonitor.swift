// The monitor: the engine's events from the output thread's event ring (MonitorThread) and the
// decoder's reports, emitted when heard, and delivered to handlers and streams.

import Logging
import MediaCore
import Platform
import RingBuffer
import Synchronization
import Locking

extension PlaybackEngine {
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

    func decoderReport(_ r: DecoderReport) {
        state.withLock { s in
            switch r {
            case .opened(let id, let format, let length, let metadata, let audio, let isLive):
                let path = s.queue.first { $0.id.rawValue == id }?.item.path ?? ""
                let info = ItemInfo(id: ItemID(rawValue: id), path: path, format: format,
                                    durationFrames: length, metadata: metadata, audio: audio, isLive: isLive)
                s.infos[info.id] = info
                if !metadata.chapters.isEmpty { s.chapterStarts[info.id] = metadata.chapters.map(\.start) }
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
                    s.segments.append(Segment(deviceFrame: e.deviceFrame, item: id, itemFrame: Int(e.itemFrame), rate: Int(e.rate),
                                           announced: quiet, seek: seek, frozen: false, continuation: false, speed: e.speed))
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
                    s.segments.append(Segment(deviceFrame: e.deviceFrame, item: id, itemFrame: Int(e.itemFrame), rate: Int(e.rate),
                                           announced: false, seek: false, frozen: stalled, continuation: true, speed: e.speed))
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
                case .resumed:
                    // A silence cut: the item goes on from a later content frame here.
                    if let seg = s.segments.last(where: { $0.item == id && $0.deviceFrame <= e.deviceFrame }) {
                        let expected = seg.itemFrame(after: e.deviceFrame - seg.deviceFrame)
                        s.infos[id]?.silenceTrimmed += Double(max(0, Int(e.itemFrame) - expected)) / Double(max(1, e.rate))
                    }
                    s.segments.append(Segment(deviceFrame: e.deviceFrame, item: id, itemFrame: Int(e.itemFrame), rate: Int(e.rate),
                                           announced: false, seek: false, frozen: false, continuation: true, speed: e.speed))
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
                // An item started from its beginning (again) announces its chapter again.
                if !seg.continuation && !seg.seek && s.heardChapter?.item == seg.item { s.heardChapter = nil }
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
            let nextChapter = Self.chapterHeard(&s, heard: heard, due: &due)
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
            let nextFrames = (s.segments.filter { !$0.announced }.map(\.deviceFrame) + s.pending.map(\.deviceFrame) + [nextChapter].compactMap { $0 })
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

extension PlaybackEngine {
    /// Announces the chapter heard at device frame `heard` when it is not the one last announced
    /// (appended to `due` at `heard`: after the item's start in the same batch), and returns the
    /// device frame at which the next chapter's first frame will be heard (nil: none coming in
    /// the audible stretch), so the monitor wakes for it.
    fileprivate static func chapterHeard(_ s: inout State, heard: Int,
                                         due: inout [(frame: Int, rank: Int, event: EngineEvent)]) -> Int? {
        guard !s.chapterStarts.isEmpty, let seg = s.segments.last(where: { $0.deviceFrame <= heard && $0.announced }),
              let seconds = s.chapterStarts[seg.item] else { return nil }
        let rate = Double(max(1, seg.rate))
        let frame = seg.itemFrame(after: max(0, heard - seg.deviceFrame))
        // Chapter starts as frames (rounded as a seek to them is), compared with the heard frame.
        let starts = seconds.map { Int(($0 * rate).rounded()) }
        let index = starts.lastIndex { $0 <= frame }
        if s.heardChapter?.item != seg.item || s.heardChapter?.chapter != index {
            s.heardChapter = (seg.item, index)
            due.append((heard, 1, .chapterChanged(seg.item, chapter: index)))
        }
        let next = index.map { $0 + 1 } ?? 0
        guard !seg.frozen, next < starts.count, seg.speed > 0 else { return nil }
        return seg.deviceFrame + Int((Double(starts[next] - seg.itemFrame) / seg.speed).rounded(.up))
    }
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
