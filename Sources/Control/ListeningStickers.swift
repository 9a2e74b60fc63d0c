import Dispatch
import FoundationEssentials
import Library
import Locking
import Player
import PlayQueue
import Synchronization

/// What the daemon keeps on songs of the library as they are played, as stickers under the
/// names myMPD uses (so MPD clients, scripts and the JSON protocol read the same values):
/// `playCount` and `lastPlayed` (seconds since 1970) when a song is heard to its end,
/// `skipCount` and `lastSkipped` when the listener leaves it before its end for another song,
/// and `elapsed` (whole seconds) while a podcast or audiobook has a resume position.
///
/// Writes run on a queue of their own, never under the play queue's lock nor on the engine's
/// threads: a scan's batch may hold the database for a moment. Songs outside the music
/// directory keep nothing here.
///
/// One per partition (each has its own queue), over the library and bookmarks they share: the
/// queue's ``ResumePositions``, it keeps the bookmarks and hears which song was left.
final class ListeningStickers: ResumePositions, Sendable {
    static let playCount = "playCount", lastPlayed = "lastPlayed", skipCount = "skipCount"
    static let lastSkipped = "lastSkipped", elapsed = "elapsed"

    let library: MusicLibrary
    let bookmarks: Bookmarks
    /// Told of every sticker written (the partition posts it to clients).
    let changed = Lock<(@Sendable (ControlEvent) -> Void)?>(nil)
    private let writes = DispatchQueue(label: "backline.stickers")
    /// The song the listener left before its end (the queue told it so), until the queue
    /// says what is current after it.
    private let left = Lock<String?>(nil)

    init(library: MusicLibrary, bookmarks: Bookmarks) {
        self.library = library
        self.bookmarks = bookmarks
    }

    // MARK: ResumePositions

    /// The bookmark's start; without one (the state file lost, or the file moved since), the
    /// song's `elapsed` less the rewind.
    func start(for entry: PlayQueueEntry) -> Double? {
        if let s = bookmarks.start(for: entry) { return s }
        guard entry.clip == nil, let e = elapsed(entry.path) else { return nil }
        return max(0, e - bookmarks.settings.rewind)
    }

    func left(_ entry: PlayQueueEntry, item: PlayerItem, at time: Double) {
        leftBeforeEnd(entry.path)
        bookmarks.left(entry, item: item, at: time)
        if let b = bookmarks.bookmark(for: entry.path), b.position == time { bookmark(entry.path, position: time) }
    }

    /// `path` (absolute, as queued) relative to the music directory; nil outside it.
    func relative(_ path: String) -> String? {
        let r = StickerCommand.relative(path, library)
        return r == path ? nil : r
    }

    /// The song at `path` was heard to its end.
    func heardToEnd(_ path: String) {
        left.withLock { if $0 == path { $0 = nil } }
        guard let song = relative(path) else { return }
        write(song) { lib throws(LibraryError) in
            try lib.addToSticker(song, Self.playCount, 1)
            try lib.setSticker(song, Self.lastPlayed, String(Int(Date().timeIntervalSince1970)))
            return [Self.playCount, Self.lastPlayed]
        }
    }

    /// The queue let go of the song at `path` before its end (see ``current(_:)``).
    func leftBeforeEnd(_ path: String) { left.withLock { $0 = path } }

    /// The queue's current entry is now `path` (nil: none). A song left before its end for
    /// another one was skipped; left for nothing (stopped, cleared), or played again, it was not.
    func current(_ path: String?) {
        guard let skipped = left.withLock({ l -> String? in defer { l = nil }; return l }),
              let path, path != skipped, let song = relative(skipped) else { return }
        write(song) { lib throws(LibraryError) in
            try lib.addToSticker(song, Self.skipCount, 1)
            try lib.setSticker(song, Self.lastSkipped, String(Int(Date().timeIntervalSince1970)))
            return [Self.skipCount, Self.lastSkipped]
        }
    }

    /// Playback stopped: what was left was not skipped.
    func stopped() { left.withLock { $0 = nil } }

    /// A resume position was kept for `path` (nil: forgotten).
    func bookmark(_ path: String, position: Double?) {
        guard let song = relative(path) else { return }
        write(song) { lib throws(LibraryError) in
            if let position {
                try lib.setSticker(song, Self.elapsed, String(Int(position)))
            } else if try !lib.deleteSticker(song, Self.elapsed) {
                return []
            }
            return [Self.elapsed]
        }
    }

    /// Where the song at `path` was left, from its `elapsed` sticker: the song's, so it holds
    /// after the file moved within the music directory.
    func elapsed(_ path: String) -> Double? {
        guard let song = relative(path), let v = try? library.sticker(song, Self.elapsed), let s = Double(v), s > 0 else { return nil }
        return s
    }

    /// Runs `body` on the write queue; tells clients of the names it changed. A song the
    /// library does not have (not scanned yet) keeps nothing.
    private func write(_ song: String, _ body: @escaping @Sendable (MusicLibrary) throws(LibraryError) -> [String]) {
        writes.async { [self] in
            guard let names = try? body(library), let post = changed.withLock({ $0 }) else { return }
            for n in names { post(.sticker(path: song, name: n)) }
        }
    }

    /// Waits until every write asked for so far is done (tests, and a daemon stopping).
    func flush() { writes.sync {} }
}
