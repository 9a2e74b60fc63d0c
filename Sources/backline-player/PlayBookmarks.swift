import Control
import FoundationEssentials
import Platform
import Player

/// `play --resume`: where `backline play` left podcasts and audiobooks, kept in a file of its own
/// (`$XDG_STATE_HOME/backline/play-bookmarks.json`; the daemon keeps its own in its state file).
/// Read when the run starts, so each item qualifying (the daemon's rules: at least 10 minutes
/// long, or spoken word) starts where it was left less 5 s; written when the run ends (q, the
/// end, Ctrl-C, SIGTERM), with the item heard then. A kill -9 loses what the run added.
enum PlayBookmarks {
    /// The file: `$XDG_STATE_HOME/backline/play-bookmarks.json`, or under `~/.local/state`.
    static func path(_ environment: [String: String]) -> String {
        let state = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? "/tmp") + "/.local/state"
        return state + "/backline/play-bookmarks.json"
    }

    /// The bookmarks kept at `path` into `bookmarks`; a missing file is none, a damaged one is
    /// said on stderr and left as it is (the run's end writes a good one).
    static func load(_ path: String, into bookmarks: Bookmarks) {
        guard case .success(let data) = readRegularFile(path, limit: 4 << 20) else { return }
        do {
            let saved = try JSONDecoder().decode([String: Bookmark].self, from: data)
            bookmarks.restore(saved.filter { $0.value.position.isFinite && $0.value.position >= 0 })
        } catch {
            Terminal.error("backline: \(path): not a bookmarks file, ignored (\(error))", tty: false)
        }
    }

    /// Writes `bookmarks` and where `item` is heard now (`time`) to `path`, atomically.
    static func save(_ bookmarks: Bookmarks, current item: PlayerItem?, at time: Double, to path: String) {
        let all = bookmarks.withCurrent(item, at: time)
        do {
            let data = try JSONEncoder().encode(all)
            try makeDirectories(Path.deletingLastComponent(path))
            try writeFileAtomically(data, to: path)
        } catch {
            Terminal.error("backline: cannot keep the bookmarks in \(path): \(error)", tty: false)
        }
    }
}
