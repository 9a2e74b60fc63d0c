import AudioEngine
import Control
import Foundation
import Logging
import MPRIS
import NowPlaying
import PlayQueue
import Player
import Synchronization

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
        options.openURI = { uri in
            guard uri.hasPrefix("file://"), let path = URL(string: uri)?.path, !path.isEmpty else {
                return "only file:// URIs can be opened (got \(uri))"
            }
            switch dispatcher.execute(AddCommand(paths: [path])) {
            case .failure(let e): return e.message
            case .success(.added(let ids, _)):
                if let first = ids.first, case .failure(let e) = dispatcher.execute(PlayCommand(item: first)) { return e.message }
                return nil
            case .success: return nil
            }
        }
        options.canPlay = { !queue.entries.isEmpty }
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
    func notifyNowPlaying(_ item: QueueItem) {
        guard let center = notifications.withLock({ $0 }) else { return }
        let art = playback.tags.cached(item.path)?.metadata.artwork
        let icon = art.flatMap { MPRISService.artworkFile($0, directory: MPRISOptions(identity: "").artDirectory) }
        let body = [item.artist, item.album].compactMap { $0 }.joined(separator: " — ")
        center.present(LocalNotification(alertTitle: item.title, alertBody: body, icon: icon ?? "audio-x-generic",
                                         replacesPrevious: true, userInfo: ["item": String(item.id)]))
    }
}
