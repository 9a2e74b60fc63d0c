import AudioEngine
import Broadcast
import Dispatch
import FoundationEssentials
import Library
import Lifecycle
import Media
import MediaCore
import NowPlaying
import Platform
import PlayQueue
import Player
import Session
import Synchronization
import Locking

/// What a ``Playback`` is built from.
public struct PlaybackConfiguration: Sendable {
    /// The output device (`default`, `pulse`, `null`, any ALSA name).
    public var device: String
    public var bufferMilliseconds: Int
    /// The device sample format tried first (the other one if the device refuses it).
    public var preferredFormat: DeviceSampleFormat = .float32
    /// The most channels sent to the device (see `OutputSettings.maxChannels`).
    public var maxChannels = 8
    /// How many items after the current one the player holds (see ``PlayQueue/lookahead``).
    public var lookahead = 1
    public var category: SessionCategory
    /// Seconds of background grace before an idle app is suspended.
    public var backgroundGrace: Double
    /// Where relative paths resolve, and what `add` is confined to.
    public var musicDirectory: String
    public var allowAbsolutePaths: Bool
    /// Whether `add` takes http and https URLs (`allow-streams`; the HTTP input must be registered).
    public var allowStreams = true
    /// Where the audio-session registry lives (nil: the default).
    public var registryDirectory: String?
    /// Where stored playlists live (nil: none can be stored).
    public var playlistDirectory: String?
    /// The music library's database (nil: no library; `browse` still lists the directory).
    public var libraryPath: String?

    public init(device: String, bufferMilliseconds: Int = 200, category: SessionCategory = .playback,
                backgroundGrace: Double = 5, musicDirectory: String, allowAbsolutePaths: Bool = false,
                registryDirectory: String? = nil, playlistDirectory: String? = nil) {
        self.device = device
        self.bufferMilliseconds = bufferMilliseconds
        self.category = category
        self.backgroundGrace = backgroundGrace
        self.musicDirectory = musicDirectory
        self.allowAbsolutePaths = allowAbsolutePaths
        self.registryDirectory = registryDirectory
        self.playlistDirectory = playlistDirectory
    }
}

/// The one route into playback that every command takes: it owns the play queue, the player,
/// the audio session, the app life cycle, the now-playing info, the tag cache, the path
/// resolver and the sleep timer, and reports what happens as typed ``ControlEvent``s.
public final class Playback: Sendable {
    public let configuration: PlaybackConfiguration
    /// The partition it plays for (``Partitions``; `default` for the daemon's own).
    public let partition: String
    public let session: AudioSession
    public let application: Application
    public let player: QueuePlayer
    public let queue: PlayQueue
    public let nowPlaying: NowPlayingInfoCenter
    let nowPlayingBinding: NowPlayingBinding
    /// The remote command center: other processes' commands arrive here when this is the
    /// now-playing app; the ``CommandDispatcher`` binds it to the same commands.
    public let remote: RemoteCommandCenter
    public let tags: TagCache
    public let resolver: PathResolver
    /// Stored playlists (nil without a playlist directory).
    public let playlists: PlaylistStore?
    /// The music library (nil without one).
    public let library: MusicLibrary?
    /// Where podcasts and audiobooks were left (shared by the partitions), which the queue
    /// starts them at when played again.
    public let bookmarks: Bookmarks
    /// Plays, skips and resume positions kept as the library's stickers (with a library).
    let listening: ListeningStickers?
    private let broadcaster = Broadcaster<ControlEvent>(buffering: 4096)
    private let taps = Lock<[@Sendable (ControlEvent) -> Void]>([])
    /// Timers and observers.
    let work = DispatchQueue(label: "backline.playback")

    struct SleepState {
        /// When it pauses.
        enum Until: Equatable {
            /// At this monotonic time (seconds).
            case time(Double)
            case endOfItem
            /// Where the next chapter starts, or at the end of the item, whichever is heard first.
            case endOfChapter
        }
        var until: Until
        var fade: Double  // seconds of fade-out (0: stop at once)
        var timer: (any DispatchSourceTimer)?
        /// Whether the queue stops after the current item for it.
        var stopsAfterItem: Bool {
            if case .time = until { return false }
            return true
        }
    }

    private struct Timers {
        var sleep: SleepState?
        var fading: (any DispatchSourceTimer)?
        var fadeStep = 0
        var stopped = false
    }

    private let timers = Lock(Timers())
    /// ReplayGain as set (`auto` kept: resolved against the shuffle whenever either changes).
    private let replayGainSettings = Lock(ReplayGainSettings.off)

    /// ReplayGain: mode, preamps, limiting. Applies from the next item; `auto` is `album`
    /// unless the queue is shuffled, then `track` (mpd's rule), following the shuffle.
    public var replayGain: ReplayGainSettings {
        get { replayGainSettings.withLock { $0 } }
        set {
            replayGainSettings.withLock { $0 = newValue }
            applyReplayGain()
            // An option changed (MPD's `options` idle; the daemon saves it).
            post(.modes(repeatMode: queue.repeatMode, shuffle: queue.shuffle, stopAfterCurrent: queue.stopAfterCurrent, consume: queue.consume))
        }
    }

    /// Crossfade in seconds (0: off): each item's end overlaps the next one's start, except
    /// consecutive tracks of one album (see `Crossfade`). From the next join the decoder decides.
    public var crossfade: Double {
        get { player.crossfade }
        set {
            player.crossfade = newValue
            // An option changed (MPD's `options` idle; the daemon saves it).
            post(.modes(repeatMode: queue.repeatMode, shuffle: queue.shuffle, stopAfterCurrent: queue.stopAfterCurrent, consume: queue.consume))
        }
    }

    /// How far a skip without seconds goes, forward and back (Apple Podcasts' 30 s and 15 s,
    /// unless configured); the remote command center offers them as its preferred intervals.
    public var skipIntervals: (forward: Double, backward: Double) {
        get { skipSetting.withLock { $0 } }
        set {
            skipSetting.withLock { $0 = newValue }
            remote.skipForwardCommand.preferredIntervals = [newValue.forward]
            remote.skipBackwardCommand.preferredIntervals = [newValue.backward]
        }
    }
    private let skipSetting = Lock((forward: 30.0, backward: 15.0))

    /// Which items have their long silences shortened (the engine's `silenceTrimming`: off,
    /// spoken word, all): items opened from now on.
    public var silenceTrimming: SilenceTrimMode {
        get { player.engine.silenceTrimming }
        set { player.engine.silenceTrimming = newValue }
    }

    /// The rate items play at, 0.5…3 (the player's default rate): playing, heard at once (the
    /// engine replaces what it buffered from the frame heard); paused, from the next play.
    public var speed: Double {
        get { Double(player.defaultRate) }
        set {
            let s = Float(min(3, max(0.5, newValue)))
            player.defaultRate = s
            if player.rate != 0 { player.rate = s }
            // An option changed (MPD's `options` idle; the daemon saves it).
            post(.modes(repeatMode: queue.repeatMode, shuffle: queue.shuffle, stopAfterCurrent: queue.stopAfterCurrent, consume: queue.consume))
        }
    }

    /// Hands the engine the settings with `auto` resolved by the queue's shuffle.
    private func applyReplayGain() {
        var s = replayGainSettings.withLock { $0 }
        s.mode = s.mode.resolved(shuffle: queue.shuffle)
        player.replayGain = s
    }

    /// The current entry's tags as the stream changed them (a chained stream's next link).
    private let streamTags = Lock<(id: Int, metadata: TrackMetadata)?>(nil)

    /// The tags entry `id` carries now when its stream changed them while it plays (nil: the
    /// file's own, as the tag cache reads them).
    public func streamMetadata(for id: Int) -> TrackMetadata? {
        if let m = streamTags.withLock({ $0?.id == id ? $0?.metadata : nil }) { return m }
        // A stream's own tags (its station's name, the title on air) once it is open: no file has them.
        guard queue.current?.id == id, let item = player.currentItem, item.status == .readyToPlay,
              InputSources.isStream(item.path) else { return nil }
        return item.metadata
    }
    /// The alarms (Alarms.swift).
    let alarmBook = Lock(AlarmBook())
    let alarmAction = Lock<(@Sendable (Alarm) -> Void)?>(nil)

    /// Builds the player, queue and session (nothing plays yet).
    /// - Parameters:
    ///   - base: Another partition's playback (see ``Partitions``) whose session, app, tag
    ///     cache, stored playlists and library this one shares (nil: its own).
    ///   - partition: The partition's name.
    public init(configuration: PlaybackConfiguration, sharing base: Playback? = nil,
                partition: String = Partitions.defaultName) throws(CommandError) {
        self.configuration = configuration
        self.partition = partition
        if let base {
            (session, application, resolver, library, tags) = (base.session, base.application, base.resolver, base.library, base.tags)
            bookmarks = base.bookmarks
        } else {
            session = AudioSession(registryDirectory: configuration.registryDirectory)
            do {
                try session.setCategory(configuration.category)
            } catch {
                throw .sessionError("category: \(error)")
            }
            bookmarks = Bookmarks()
            application = Application(configuration: ApplicationConfiguration(suspensionGracePeriod: configuration.backgroundGrace),
                                      handlerQueue: DispatchQueue(label: "backline.application.handlers"))
            resolver = PathResolver(musicDirectory: configuration.musicDirectory, allowAbsolutePaths: configuration.allowAbsolutePaths,
                                    allowStreams: configuration.allowStreams)
            if let path = configuration.libraryPath {
                do {
                    library = try MusicLibrary(path: path, musicDirectory: configuration.musicDirectory)
                } catch {
                    throw .failed(error.message)
                }
            } else {
                library = nil
            }
            // What a client queued is opened only beneath the music directory (checked on the
            // opened descriptor: a link swapped in after `add` cannot lead out of it).
            tags = TagCache(confinement: configuration.allowAbsolutePaths ? nil : resolver.root, library: library)
        }
        let confinement = configuration.allowAbsolutePaths ? nil : resolver.root
        var output = OutputSettings(device: configuration.device, bufferMillis: configuration.bufferMilliseconds,
                                    preferredFormat: configuration.preferredFormat)
        output.maxChannels = configuration.maxChannels
        player = QueuePlayer(configuration: EngineConfiguration(output: output, confinement: confinement),
            session: session, application: application)
        // The daemon and the command-line player stand for the whole app: they resume after an
        // interruption that ends with shouldResume, as an app's handler would.
        player.resumesAfterInterruption = true
        queue = PlayQueue(player: player, lookahead: configuration.lookahead)
        if let library { listening = ListeningStickers(library: library, bookmarks: bookmarks) } else { listening = nil }
        queue.resumePositions = listening ?? bookmarks
        nowPlaying = NowPlayingInfoCenter()
        nowPlayingBinding = NowPlayingBinding(player: player, center: nowPlaying, identifier: { [queue] in
            queue.current.map { String($0.id) }
        }) { [queue] in
            queue.currentIndex.map { ($0, queue.entries.count) }
        }
        // Handlers on a queue of their own: `play` keeps the main thread in its loop, and the
        // daemon's main thread waits for the service, so neither runs the main queue.
        remote = RemoteCommandCenter(handlerQueue: DispatchQueue(label: "backline.remote"), application: application)
        playlists = base?.playlists ?? configuration.playlistDirectory.map { [resolver] in PlaylistStore(directory: $0, musicRoot: resolver.root) }
        _ = queue.addObserver(queue: work) { [weak self] e in self?.queueEvent(e) }
        _ = player.addObserver(queue: work) { [weak self] e in
            if case .timeControlStatusChanged(let status, let reason) = e {
                self?.bufferingChanged(status == .waitingToPlayAtSpecifiedRate && reason == .toMinimizeStalls)
            }
            // Heard to its end: it starts from the beginning next time.
            if case .itemDidPlayToEnd(let item) = e {
                self?.bookmarks.forget([item.path])
                self?.listening?.bookmark(item.path, position: nil)
                self?.listening?.heardToEnd(item.path)
            }
        }
        listening?.changed.withLock { $0 = { [weak self] e in self?.post(e) } }
        // The session, the app and the library are told once, by the partition that owns them.
        guard base == nil else { return }
        _ = session.addObserver(queue: work) { [weak self] e in self?.post(.session(e)) }
        library?.observe { [weak self] u in self?.post(.update(u)) }
        _ = application.addObserver(queue: work) { [weak self] e in
            guard let self else { return }
            post(.lifecycle(e, state: application.applicationState))
        }
    }

    /// Whether it has an output to play through (a new partition has none until one moves in).
    public var hasOutput: Bool { !configuration.device.isEmpty }

    /// Fails unless it has an output.
    func requireOutput() throws(CommandError) {
        guard hasOutput else {
            throw .outputUnavailable("partition \"\(partition)\" has no output: move one into it (move-output)")
        }
    }

    /// The id of the item at queue position `position`; `bad-argument` "Bad song index" (mpd's
    /// words) when there is none.
    func id(atPosition position: Int) throws(CommandError) -> Int {
        let entries = queue.entries
        guard entries.indices.contains(position) else { throw .badArgument("Bad song index") }
        return entries[position].id
    }

    /// Throws `not-playing` when `required` and the queue is stopped (MPD's `next`,
    /// `previous` and `seekcur`, checked under the command lock with the command).
    func requirePlayback(_ required: Bool) throws(CommandError) {
        if required, queue.playbackState == .stopped { throw .notPlaying("Not playing") }
    }

    // MARK: - Events

    /// Calls `handler` on `queue` for every event, in order.
    @discardableResult
    public func addObserver(queue: DispatchQueue, _ handler: @escaping @Sendable (ControlEvent) -> Void) -> UInt64 {
        broadcaster.addObserver(queue: queue, handler)
    }

    /// Stops calling an observer.
    public func removeObserver(_ token: UInt64) { broadcaster.removeObserver(token) }

    /// Calls `tap` with every event synchronously, on the thread that posts it, before any
    /// observer: an event a command causes (volume, sleep) is seen before the command returns.
    /// It must be quick and must not block (a protocol's fan-out enqueuing lines, say).
    public func tap(_ tap: @escaping @Sendable (ControlEvent) -> Void) {
        taps.withLock { $0.append(tap) }
    }

    /// Reports `event` to the taps, then to every observer.
    public func post(_ event: ControlEvent) {
        for t in taps.withLock({ $0 }) { t(event) }
        broadcaster.post(event)
    }

    /// Whether the last `buffering` event said so.
    private let buffering = Lock(false)
    /// The item and chapter the last `chapter` event told (an end-of-chapter sleep waits for
    /// the next one).
    private let heardChapter = Lock<(id: Int, index: Int?)?>(nil)

    /// Seconds spent playing so far, and since when it has been playing (monotonic ns).
    private let played = Lock<(total: Double, since: Int?)>((0, nil))

    /// How long the player has been playing since the start (MPD's `stats` `playtime`).
    public var playedSeconds: Double {
        played.withLock { p in p.total + (p.since.map { Double(monotonicNanos() - $0) / 1e9 } ?? 0) }
    }

    /// Tells clients when playback starts or stops waiting for the network.
    private func bufferingChanged(_ on: Bool) {
        guard buffering.withLock({ b in defer { b = on }; return b != on }) else { return }
        post(.buffering(on))
    }

    private func queueEvent(_ e: PlayQueueEvent) {
        switch e {
        case .state(let s):
            played.withLock { p in
                if s == .playing, p.since == nil { p.since = monotonicNanos() }
                if s != .playing, let since = p.since { p.total += Double(monotonicNanos() - since) / 1e9; p.since = nil }
            }
            // An end-of-item sleep timer has fired when the queue stops: cleared before the
            // state is told, so a client that reads the status on "stopped" sees it gone.
            if s == .stopped, timers.withLock({ $0.sleep?.stopsAfterItem == true }) { sleepFired(fade: 0) }
            if s == .stopped { listening?.stopped() }
            post(.state(s))
        case .current(let entry):
            streamTags.withLock { if $0?.id != entry?.id { $0 = nil } }  // the stream's tags end with it
            listening?.current(entry?.path)
            nowPlayingBinding.refresh()  // the index is the play queue's, which may settle after the player's event
            post(.current(entry.map { describe($0, index: queue.currentIndex, current: true) }))
        case .queue(let version, let count):
            nowPlayingBinding.refresh()
            post(.queue(version: version, count: count))
        case .modes(let r, let sh, let sac, let consume):
            // The remote command center shows the modes, as an app sets MPChangeRepeatModeCommand's.
            remote.changeRepeatModeCommand.currentRepeatType = r == .one ? .one : r == .all ? .all : .off
            remote.changeShuffleModeCommand.currentShuffleType = sh ? .items : .off
            applyReplayGain()  // `auto` follows the shuffle
            post(.modes(repeatMode: r, shuffle: sh, stopAfterCurrent: sac, consume: consume))
        case .failed(let entry, let reason):
            post(.failed(item: entry.id, path: entry.path, reason: reason))
        case .seeked(let id, let time):
            post(.seeked(item: id, time: time))
        case .chapter(let id, let index):
            let chapters = currentChapters
            guard queue.current?.id == id, !chapters.isEmpty else { break }
            let before = heardChapter.withLock { h in defer { h = (id, index) }; return h }
            post(.chapter(item: id, ChapterPosition(chapters, index: index)))
            chapterAdvanced(id: id, from: before, to: index, chapters: chapters)
        case .metadata(let id, let metadata):
            streamTags.withLock { $0 = (id, metadata) }
            // Told as the current item again, with its new tags (MPD's `player` idle, JSON's `current`).
            if let e = queue.current, e.id == id { post(.current(describe(e, index: queue.currentIndex, current: true))) }
        }
    }

    // MARK: - Snapshots

    /// An entry as replies show it. With `read`, the file's tags are read if need be (off the
    /// network thread only); without, tags not read yet are left out (and fetched in the background).
    public func describe(_ e: PlayQueueEntry, index: Int?, current: Bool, read: Bool = false) -> QueueItem {
        let info = read ? tags.info(e.path) : tags.lookup(e.path) ?? TagCache.Info(metadata: TrackMetadata(), duration: nil, error: nil)
        var m = info.metadata
        if let live = streamMetadata(for: e.id) {
            let artwork = m.artwork
            m = live
            if m.artwork == nil { m.artwork = artwork }
        }
        // Untitled: a stream by its station's name or its URL, a file by its name.
        let untitled = InputSources.isStream(e.path) ? m.values(.name).first ?? e.path : Path.lastComponent(e.path)
        return QueueItem(id: e.id, index: index, path: e.path, title: m.title ?? untitled,
                        artist: m.artist, album: m.album, track: m.trackNumber, duration: QueueItem.playedLength(info.duration, e.clip),
                        isCurrent: index != nil ? current : nil, error: e.failure ?? info.error, priority: e.priority, tags: m.tags,
                        clip: e.clip)
    }

    /// The current item, described.
    public var currentItem: QueueItem? {
        queue.current.map { describe($0, index: queue.currentIndex, current: true) }
    }

    public var volumeState: VolumeState { VolumeState(volume: player.volume, muted: player.isMuted) }

    public var sessionSnapshot: SessionSnapshot {
        var options: [String] = []
        let o = session.categoryOptions
        if o.contains(.interruptSpokenAudioAndMixWithOthers) { options.append("interruptSpokenAudioAndMixWithOthers") }
        else if o.contains(.duckOthers) { options.append("duckOthers") }
        if o.contains(.mixWithOthers) { options.append("mixWithOthers") }
        return SessionSnapshot(category: session.category, options: options, active: session.isActive,
                               interrupted: player.isInterrupted, silentSwitch: session.silentSwitch,
                               screenLocked: session.screenLocked, silenced: session.isOutputSilenced,
                               ducked: session.isDucked, nowPlayingApp: session.isNowPlayingApp)
    }

    public var status: StatusSnapshot {
        let c = queue.current
        // (The item heard, looked up once: its format, ReplayGain scale and silence cut.)
        let heard = player.engine.position.flatMap { player.engine.info(for: $0.item) }
        return StatusSnapshot(
            state: queue.playbackState,
            buffering: player.timeControlStatus == .waitingToPlayAtSpecifiedRate && player.reasonForWaitingToPlay == .toMinimizeStalls,
            current: currentItem, elapsed: queue.elapsed,
            duration: c.flatMap { e in QueueItem.playedLength(tags.lookup(e.path)?.duration, e.clip) }, volume: volumeState, rate: Double(player.rate),
            index: queue.currentIndex, count: queue.entries.count, queueVersion: queue.version,
            repeatMode: queue.repeatMode, shuffle: queue.shuffle, stopAfterCurrent: queue.stopAfterCurrent,
            stopAfterEach: queue.stopAfterEach, consume: queue.consume,
            session: sessionSnapshot, app: application.applicationState, device: configuration.device,
            output: player.engine.deviceConfiguration,
            audio: heard?.audio,
            replayGain: replayGain,
            replayGainScale: heard?.replayGainScale,
            crossfade: crossfade, speed: speed,
            silenceTrimmed: heard?.silenceTrimmed ?? 0,
            chapter: ChapterPosition(currentChapters, at: queue.elapsed),
            underruns: player.engine.underrunCount, sleep: sleepSnapshot,
            musicDirectory: resolver.root ?? resolver.musicDirectory)
    }

    /// The current entry's chapters: the player's item's once it is open, else those read with
    /// its tags (empty when it has none).
    public var currentChapters: [Chapter] {
        guard let e = queue.current else { return [] }
        if let item = player.currentItem, item.path == e.path, item.status == .readyToPlay { return item.chapters }
        return tags.lookup(e.path)?.metadata.chapters ?? []
    }

    public var nowPlayingSnapshot: NowPlayingSnapshot? {
        guard let i = nowPlaying.nowPlayingInfo, let c = queue.current else { return nil }
        return NowPlayingSnapshot(item: c.id, info: i, elapsed: nowPlaying.elapsed(), playbackState: "\(nowPlaying.playbackState)")
    }

    // MARK: - Sleep timer

    public var sleepSnapshot: SleepSnapshot? {
        timers.withLock { t in
            t.sleep.map { s in
                var remaining: Double?
                if case .time(let deadline) = s.until { remaining = max(0, deadline - Self.now()) }
                return SleepSnapshot(remaining: remaining, endOfItem: s.until == .endOfItem, endOfChapter: s.until == .endOfChapter, fade: s.fade)
            }
        }
    }

    /// Pauses after `minutes` (fading out over the last `fade` seconds), replacing any timer.
    func setSleep(minutes: Double, fade: Double) {
        cancelSleep()
        timers.withLock { t in
            let timer = DispatchSource.makeTimerSource(queue: work)
            timer.schedule(deadline: .now() + max(0, minutes * 60 - fade))  // the fade ends at the deadline
            timer.setEventHandler { [weak self] in self?.sleepFired(fade: fade) }
            t.sleep = SleepState(until: .time(Self.now() + minutes * 60), fade: fade, timer: timer)
            timer.resume()
        }
        post(.sleep(.set(minutes: minutes, endOfItem: false)))
    }

    /// Stops at the end of the current item (`orChapter`: or where its next chapter starts,
    /// whichever is heard first), replacing any timer.
    func setSleepAtEndOfItem(orChapter: Bool = false) {
        cancelSleep()
        queue.setStopAfterCurrent(true)
        timers.withLock { $0.sleep = SleepState(until: orChapter ? .endOfChapter : .endOfItem, fade: 0, timer: nil) }
        post(.sleep(orChapter ? .setAtEndOfChapter : .set(minutes: nil, endOfItem: true)))
    }

    /// The chapter heard moved from `from` to `to` in item `id`: an end-of-chapter sleep timer
    /// fires when it is the next chapter of the same item (a chapter played to its end, not a
    /// seek elsewhere). The queue pauses and goes back to the new chapter's first sample,
    /// so play resumes with all of it.
    private func chapterAdvanced(id: Int, from: (id: Int, index: Int?)?, to: Int?, chapters: [Chapter]) {
        guard let to, let from, from.id == id, to == (from.index.map { $0 + 1 } ?? 0),
              timers.withLock({ $0.sleep?.until == .endOfChapter }) else { return }
        timers.withLock { $0.sleep = nil }
        queue.setStopAfterCurrent(false)
        queue.pause()
        try? queue.seek(to: chapters[to].start)
        post(.sleep(.fired))
    }

    /// Cancels the sleep timer (and the stop at the end of the item it set).
    func cancelSleep() {
        let endOfItem = timers.withLock { t -> Bool in
            t.sleep?.timer?.cancel()
            t.fading?.cancel()
            t.fading = nil
            defer { t.sleep = nil }
            return t.sleep?.stopsAfterItem ?? false
        }
        if endOfItem { queue.setStopAfterCurrent(false) }
    }

    /// The sleep timer is due: fade the volume out over `fade` seconds, then pause (so play
    /// resumes where the listener fell asleep) and put the volume back.
    private func sleepFired(fade: Double) {
        guard timers.withLock({ $0.sleep != nil }) else { return }
        let volume = player.volume
        let finish: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            timers.withLock { t in
                t.fading?.cancel()
                t.fading = nil
                t.sleep = nil
            }
            queue.pause()
            player.volume = volume
            post(.sleep(.fired))
        }
        guard fade > 0 else { return finish() }
        let steps = max(1, Int(fade / 0.05))
        timers.withLock { t in
            let timer = DispatchSource.makeTimerSource(queue: work)
            timer.schedule(deadline: .now(), repeating: fade / Double(steps))
            timer.setEventHandler { [weak self] in
                guard let self else { return }
                let k = timers.withLock { t in
                    t.fadeStep += 1
                    return t.fadeStep
                }
                if k >= steps { finish() } else { player.volume = volume * Float(steps - k) / Float(steps) }
            }
            t.fadeStep = 0
            t.fading = timer
            timer.resume()
        }
    }

    // MARK: - Shutdown

    /// Stops a partition that shares another's app: its timers, its player and its engine's
    /// threads (the app goes on).
    public func close() {
        timers.withLock { t in
            t.stopped = true
            t.sleep?.timer?.cancel()
            t.fading?.cancel()
        }
        player.pause()
        player.engine.shutdown()
    }

    /// Cancels the timers, pauses and lets go of the device; the app terminates.
    public func shutdown() {
        let first = timers.withLock { t -> Bool in
            defer { t.stopped = true }
            t.sleep?.timer?.cancel()
            t.fading?.cancel()
            return !t.stopped
        }
        alarmBook.withLock { b in
            for t in b.timers.values { t.cancel() }
            b.timers = [:]
        }
        guard first else { return }
        player.pause()
        player.engine.shutdown()
        listening?.flush()  // (a play counted just before the stop is kept)
        application.terminate()
    }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}
