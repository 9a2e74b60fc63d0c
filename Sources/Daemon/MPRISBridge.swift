import AudioEngine
import Control
import Media
import FoundationEssentials
import Glibc
import Logging
import MPRIS
import MediaCore
import NowPlaying
import PlayQueue
import Player
import Synchronization
import Locking

extension DaemonCore {
    /// Publishes the daemon as an MPRIS2 player (`org.mpris.MediaPlayer2.backline` on the
    /// session bus): what the now-playing info center holds, and the remote command center
    /// answering, which runs the same typed commands as the JSON and MPD protocols. The
    /// volume, opening a URI and the capabilities go through typed commands too. No bus (or
    /// the name taken): a debug line, and the daemon goes on without it.
    @discardableResult
    public func publishMPRIS(on bus: MPRISBus = .sessionBus(name: "backline")) -> Bool {
        var options = MPRISOptions(identity: "Backline", desktopEntry: "backline")
        let dispatcher = self.dispatcher
        let queue = playback.queue
        options.volume = { [playback] in Double(playback.player.volume) }
        options.setVolume = { v in _ = dispatcher.execute(VolumeCommand(change: .set(v * 100))) }
        options.quit = { kill(getpid(), SIGTERM) }  // the graceful stop a signal starts
        let streams = playback.configuration.allowStreams ? InputSources.schemes : []
        options.supportedUriSchemes = ["file"] + streams
        /// Queues `target` and plays it; why not, or nil.
        @Sendable func open(_ target: String) -> String? {
            switch dispatcher.execute(AddCommand(paths: [target])) {
            case .failure(let e): return e.message
            case .success(.added(let ids, _)):
                if let first = ids.first, case .failure(let e) = dispatcher.execute(PlayCommand(item: first)) { return e.message }
                return nil
            case .success: return nil
            }
        }
        let (opens, logger) = (mprisOpens, self.logger)
        options.openURI = { uri in
            // A stream as it is (http, https); a file by its path.
            let target: String
            if let scheme = InputSources.scheme(of: uri), streams.contains(scheme) {
                target = uri
            } else if uri.hasPrefix("file://"), let path = URL(string: uri)?.path, !path.isEmpty {
                target = path
            } else {
                return "only \((["file"] + streams).map { "\($0)://" }.joined(separator: ", ")) URIs can be opened (got \(uri))"
            }
            // A playlist by URL is fetched, for up to 10 s: not on the bus's thread, which
            // answers every MPRIS call (each waited as long). OpenUri returns nothing, so the
            // call is answered at once and a failure is logged.
            guard !PathResolver.isPlaylistURL(target) else {
                opens.run {
                    if let why = open(target) { logger.warning("cannot open the URI", metadata: ["uri": "\(uri)", "error": "\(why)"]) }
                }
                return nil
            }
            return open(target)
        }
        options.canPlay = { !queue.entries.isEmpty }
        // The TrackList interface: the play queue by its stable ids, edited with the same commands.
        let playback = self.playback
        @Sendable func path(_ uri: String) -> String? { uri.hasPrefix("file://") ? URL(string: uri)?.path : nil }
        options.trackList = MPRISTrackList(
            tracks: { queue.entries.map { String($0.id) } },
            info: { ids in
                let entries = queue.entries
                var index: [Int: Int] = [:]
                for (k, e) in entries.enumerated() { index[e.id] = k }
                return ids.map { id in
                    guard let n = Int(id), let k = index[n] else { return nil }
                    let item = playback.describe(entries[k], index: k, current: false, read: true)
                    var i = NowPlayingInfo()
                    (i.title, i.artist, i.albumTitle, i.albumTrackNumber) = (item.title, item.artist, item.album, item.track)
                    (i.playbackDuration, i.assetURL, i.externalContentIdentifier) = (item.duration, NowPlayingBinding.fileURL(item.path), id)
                    return i
                }
            },
            goTo: { id in
                if case .failure(let e) = dispatcher.execute(PlayCommand(item: Int(id) ?? -1)) { return e.message }
                return nil
            },
            add: { uri, after, play in
                guard let p = path(uri) else { return "only file:// URIs can be added (got \(uri))" }
                let at = after.flatMap { a in queue.entries.firstIndex { String($0.id) == a } }.map { $0 + 1 } ?? 0
                switch dispatcher.execute(AddCommand(paths: [p], position: at)) {
                case .failure(let e): return e.message
                case .success(.added(let ids, _)):
                    if play, let first = ids.first, case .failure(let e) = dispatcher.execute(PlayCommand(item: first)) { return e.message }
                    return nil
                case .success: return nil
                }
            },
            remove: { id in
                if case .failure(let e) = dispatcher.execute(RemoveCommand(ids: [Int(id) ?? -1])) { return e.message }
                return nil
            })
        options.canGoNext = { queue.status().next != nil }
        options.canGoPrevious = { queue.current != nil }
        do {
            let service = try playback.nowPlaying.publish(on: bus, commands: playback.remote, options: options)
            mpris.withLock { $0 = service }
            logger.info("published on the session bus", metadata: ["name": "\(service.busName)"])
            return true
        } catch {
            logger.debug("no MPRIS: \(error)")
            return false
        }
    }
}

extension DaemonCore {
    /// Turns on "now playing" desktop notifications (org.freedesktop.Notifications on the
    /// session bus), each replacing the one before. No bus: a debug line.
    @discardableResult
    public func enableNotifications(address: String? = nil) -> Bool {
        do {
            let center = try LocalNotificationCenter(appName: "Backline", address: address)
            notifications.withLock { $0 = center }
            return true
        } catch {
            logger.debug("no notifications: \(error)")
            return false
        }
    }

    /// Posts the item that became current.
    func notifyNowPlaying(_ current: QueueItem) {
        guard let center = notifications.withLock({ $0 }) else { return }
        // The event's description may predate the tags' reading (a lookup that does not wait):
        // read them now (on the daemon's work queue), so the notification has the title.
        let item = playback.queue.entries.first { $0.id == current.id }
            .map { playback.describe($0, index: nil, current: true, read: true) } ?? current
        let art = playback.tags.cached(item.path)?.metadata.artwork
        let icon = art.flatMap { MPRISService.artworkFile($0, directory: MPRISOptions(identity: "").artDirectory) }
        let body = [item.artist, item.album].compactMap { $0 }.joined(separator: " — ")
        center.present(LocalNotification(alertTitle: item.title, alertBody: body, icon: icon ?? "audio-x-generic",
                                         replacesPrevious: true, userInfo: ["item": String(item.id)]))
    }
}
