import AudioEngine
import Dispatch
import FoundationEssentials
import MediaCore
import Platform
import Player
import Synchronization
import Locking

/// Connects a `QueuePlayer` to a ``NowPlayingInfoCenter`` (opt-in): fills the info from the
/// current item's tags (the file name when untagged) and writes (elapsed, rate) on play, pause,
/// seek, item change, stall and interruption — never on a timer, since readers extrapolate —
/// keeping the queue index and count current.
public final class NowPlayingBinding: Sendable {
    /// The rates a binding offers on the remote command center
    /// (`changePlaybackRateCommand.supportedPlaybackRates`): Apple Podcasts' and Books' steps,
    /// within the player's `QueuePlayer.supportedRates`.
    public static let playbackRates: [Float] = [0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.5, 3]

    /// The player whose item, position and rate the binding writes.
    public let player: QueuePlayer
    /// The store the binding writes to (``NowPlayingInfoCenter/default`` unless given).
    public let center: NowPlayingInfoCenter
    private let queue = DispatchQueue(label: "backline.nowplaying.binding")
    private let token = Lock<ObserverToken?>(nil)
    /// Items that left the queue while bound (played, skipped, failed): the zero-based index;
    /// the item current last, and the items counted lately (so none counts twice).
    private let done = Lock((count: 0, current: PlayerItem?.none, counted: [PlayerItem]()))
    /// Where the queue index and count come from when a queue above the player owns them.
    private let queuePosition: (@Sendable () -> (index: Int, count: Int)?)?
    /// Where the current item's stable id comes from (the queue index otherwise).
    private let identifier: (@Sendable () -> String?)?

    /// Binds `player` to `center`. `queuePosition`, when given, supplies the queue index and
    /// count (a play queue that feeds the player only its next items knows them; call
    /// ``refresh()`` when it changes); otherwise they are counted from the player's own queue.
    /// `identifier`, when given, supplies the current item's stable id
    /// (``NowPlayingInfo/externalContentIdentifier``).
    public init(player: QueuePlayer, center: NowPlayingInfoCenter = .default,
                identifier: (@Sendable () -> String?)? = nil,
                queuePosition: (@Sendable () -> (index: Int, count: Int)?)? = nil) {
        self.player = player
        self.center = center
        self.identifier = identifier
        self.queuePosition = queuePosition
        let current = player.currentItem
        done.withLock { $0.current = current }
        let t = player.addObserver(queue: queue) { [weak self] e in self?.handle(e) }
        token.withLock { $0 = t }
        queue.async { [self] in write() }
    }

    /// Stops updating the center (the info stays as last written).
    public func unbind() {
        if let t = token.withLock({ $0 }) { player.removeObserver(t) }
    }

    deinit { unbind() }

    /// Writes the info again now (after a change the player does not see, such as a queue edit
    /// above it).
    public func refresh() {
        queue.async { [self] in write() }
    }

    private func handle(_ e: PlayerEvent) {
        switch e {
        case .itemDidPlayToEnd(let item), .itemFailedToPlayToEnd(let item, _):
            count(item)
        case .currentItemChanged(let item):
            // The item current before, gone from the queue without an end: skipped.
            if let before = done.withLock({ d in defer { d.current = item }; return d.current }),
               !player.items().contains(where: { $0 === before }) {
                count(before)
            }
            write()
        case .rateChanged, .timeJumped, .playbackStalled, .timeControlStatusChanged:
            write()
        case .itemStatusChanged(let item, .readyToPlay) where item === player.currentItem:
            write()
        case .timedMetadata(let item, _) where item === player.currentItem:
            write()  // the stream's new title, as it is heard
        case .chapterChanged(let item, _) where item === player.currentItem:
            write()  // the chapter number, as its first sample is heard
        default:
            break
        }
    }

    private func count(_ item: PlayerItem) {
        done.withLock { d in
            guard !d.counted.contains(where: { $0 === item }) else { return }
            d.count += 1
            d.counted.append(item)
            if d.counted.count > 16 { d.counted.removeFirst() }
        }
    }

    private func write() {
        let items = player.items()
        guard let item = items.first else {
            center.nowPlayingInfo = nil
            center.playbackState = .stopped
            return
        }
        var info = NowPlayingInfo()
        let m = item.metadata
        info.title = m.title ?? Path.lastComponent(item.path)
        info.artist = m.artist
        info.albumTitle = m.album
        info.albumArtist = m.albumArtist
        info.albumTrackNumber = m.trackNumber
        info.albumTrackCount = m.trackCount
        info.discNumber = m.discNumber
        info.discCount = m.discCount
        info.genre = m.genre
        info.tags = m.tags
        info.composer = m.composer
        info.playbackDuration = item.duration
        info.artwork = m.artwork
        info.mediaType = .audio
        info.isLiveStream = item.isLive
        if !m.chapters.isEmpty {
            info.chapterCount = m.chapters.count
            info.chapterNumber = player.currentChapterIndex
        }
        info.elapsedPlaybackTime = player.currentTime()
        let status = player.timeControlStatus
        // Only audible playback advances: a waiting or paused player is written with rate 0,
        // so nothing drifts while it is not heard.
        info.playbackRate = status == .playing ? Double(player.rate) : 0
        info.defaultPlaybackRate = Double(player.defaultRate)
        if let queuePosition {
            let position = queuePosition()
            info.playbackQueueIndex = position?.index
            info.playbackQueueCount = position?.count
        } else {
            let index = done.withLock { $0.count }
            info.playbackQueueIndex = index
            info.playbackQueueCount = index + items.count
        }
        info.assetURL = Self.fileURL(item.path)
        info.externalContentIdentifier = identifier?() ?? info.playbackQueueIndex.map(String.init)
        center.nowPlayingInfo = info
        center.playbackState = player.rate != 0 ? .playing : (player.isInterrupted ? .interrupted : .paused)
    }
}

extension NowPlayingBinding {
    /// `path` as a `file://` URL (RFC 3986: everything but unreserved characters and `/`
    /// percent-encoded).
    public static func fileURL(_ path: String) -> String {
        var out = "file://"
        for b in path.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(UnicodeScalar(b))
            default:
                out += "%" + String(b >> 4, radix: 16, uppercase: true) + String(b & 15, radix: 16, uppercase: true)
            }
        }
        return out
    }
}

/// The default remote-command handlers for a `QueuePlayer`: play, pause, toggle, stop (pause
/// and back to the start), next, previous (restarts the item when more than 3 s in, otherwise
/// goes back to the item played before, from a history this binding keeps), seek
/// (changePlaybackPosition), skip forward 30 s and back 15 s (Apple Podcasts'), and the playback rate (``NowPlayingBinding/playbackRates``).
/// Seek forward/backward (press and hold) are disabled; repeat, shuffle and feedback are
/// left without handlers (a play queue above the player provides them).
public final class RemoteCommandBinding: Sendable {
    /// The player the commands act on.
    public let player: QueuePlayer
    /// The center whose commands the binding handles (``RemoteCommandCenter/shared`` unless given).
    public let center: RemoteCommandCenter
    private let queue = DispatchQueue(label: "backline.remote.binding")
    private let tokens = Lock<[(RemoteCommand, RemoteCommand.Target)]>([])
    private let observer = Lock<ObserverToken?>(nil)
    /// Paths of the items played before the current one (most recent last).
    private let history = Lock<[String]>([])
    /// How far into an item "previous" restarts it instead of going back.
    public static let restartThreshold = 3.0

    /// Adds the default handlers for `player` to `center`'s commands, and disables seek
    /// forward/backward; ``unbind()`` removes them.
    /// - Parameters:
    ///   - player: The player the commands act on.
    ///   - center: The command center (the process's shared one by default).
    public init(player: QueuePlayer, center: RemoteCommandCenter = .shared) {
        self.player = player
        self.center = center
        let o = player.addObserver(queue: queue) { [weak self] e in
            if case .itemDidPlayToEnd(let item) = e { self?.remember(item.path) }
        }
        observer.withLock { $0 = o }
        center.seekForwardCommand.isEnabled = false
        center.seekBackwardCommand.isEnabled = false
        center.skipForwardCommand.preferredIntervals = [30]
        center.skipBackwardCommand.preferredIntervals = [15]
        center.changePlaybackRateCommand.supportedPlaybackRates = NowPlayingBinding.playbackRates

        add(center.playCommand) { p, _ in
            guard p.currentItem != nil else { return .noActionableNowPlayingItem }
            p.play()
            return .success
        }
        add(center.pauseCommand) { p, _ in
            guard p.currentItem != nil else { return .noActionableNowPlayingItem }
            p.pause()
            return .success
        }
        add(center.togglePlayPauseCommand) { p, _ in
            guard p.currentItem != nil else { return .noActionableNowPlayingItem }
            if p.rate == 0 { p.play() } else { p.pause() }
            return .success
        }
        add(center.stopCommand) { p, _ in
            guard p.currentItem != nil else { return .noActionableNowPlayingItem }
            p.pause()
            p.seek(to: 0)
            return .success
        }
        add(center.nextTrackCommand) { [weak self] p, _ in
            let items = p.items()
            guard items.count >= 2 else { return .noSuchContent }
            self?.remember(items[0].path)
            p.advanceToNextItem()
            return .success
        }
        add(center.previousTrackCommand) { [weak self] p, _ in
            guard let self else { return .commandFailed }
            let current = p.currentItem
            if current != nil, p.currentTime() > Self.restartThreshold {
                p.seek(to: 0)
                return .success
            }
            guard let path = history.withLock({ $0.popLast() }) else {
                guard current != nil else { return .noActionableNowPlayingItem }
                p.seek(to: 0)
                return .success
            }
            let previous = PlayerItem(path: path)
            guard let current else {
                p.insert(previous, after: nil)
                return .success
            }
            // Put the previous item first and the current one (a fresh copy) after it.
            p.insert(previous, after: current)
            p.insert(PlayerItem(path: current.path), after: previous)
            p.advanceToNextItem()
            return .success
        }
        add(center.changePlaybackPositionCommand) { p, e in
            guard p.currentItem != nil else { return .noActionableNowPlayingItem }
            guard case .position(let t) = e.payload else { return .commandFailed }
            p.seek(to: t)
            return .success
        }
        add(center.skipForwardCommand) { p, e in
            guard p.currentItem != nil else { return .noActionableNowPlayingItem }
            guard case .skip(let interval) = e.payload else { return .commandFailed }
            p.seek(to: p.currentTime() + interval)
            return .success
        }
        add(center.skipBackwardCommand) { p, e in
            guard p.currentItem != nil else { return .noActionableNowPlayingItem }
            guard case .skip(let interval) = e.payload else { return .commandFailed }
            p.seek(to: max(0, p.currentTime() - interval))
            return .success
        }
        add(center.changePlaybackRateCommand) { p, e in
            guard case .rate(let r) = e.payload else { return .commandFailed }
            do { try p.setRate(r) } catch { return .commandFailed }
            return .success
        }
    }

    private func add(_ command: RemoteCommand,
                     _ handler: @escaping @Sendable (QueuePlayer, RemoteCommandEvent) -> RemoteCommandHandlerStatus) {
        let t = command.addTarget { [weak self] e in
            guard let self else { return .commandFailed }
            return handler(player, e)
        }
        tokens.withLock { $0.append((command, t)) }
    }

    private func remember(_ path: String) {
        history.withLock { h in
            h.append(path)
            if h.count > 200 { h.removeFirst(h.count - 200) }
        }
    }

    /// The played-items history, oldest first.
    public var playedPaths: [String] { history.withLock { $0 } }

    /// Removes the handlers this binding added.
    public func unbind() {
        for (c, t) in tokens.withLock({ $0 }) { c.removeTarget(t) }
        tokens.withLock { $0 = [] }
        if let o = observer.withLock({ $0 }) { player.removeObserver(o) }
    }

    deinit { unbind() }
}
