import Control
import Glibc
import Library
import MediaCore

/// What finds music: MPD's filter expressions (run against a real library database) and
/// playlists (M3U, M3U8, PLS) resolved in a music directory.
enum LibraryTargets {
    /// A library (an empty music directory) the filters run against: what matters is that every
    /// filter that parses compiles to SQL SQLite takes.
    private static let library: MusicLibrary? = {
        let music = FuzzScratch.path("library-music")
        mkdir(music, 0o700)
        return try? MusicLibrary(path: FuzzScratch.path("library.sqlite"), musicDirectory: music)
    }()

    /// Filter arguments (NUL-separated; the first byte's low bit: `search`, folding case): a
    /// filter that parses is written back as one expression that parses to the same filter, and
    /// runs against the database with no database error (a value never becomes SQL).
    static let filter = FuzzTarget("filter", "SongFilter.parse; a parsed filter written as an expression parses the same; it runs in SQLite without a database error") { input throws(InvariantFailure) in
        guard let first = input.first else { return }
        let fold = first & 1 == 1
        let args = input.dropFirst().split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard let parsed = try? SongFilter.parse(args, fold: fold) else { return }
        if let text = expression(parsed) {
            let again: SongFilter
            do throws(LibraryError) { again = try SongFilter.parse([text], fold: fold) } catch {
                throw InvariantFailure("filter", "the written expression does not parse: \(shown(text)): \(error)")
            }
            try check(again == parsed, "filter", "round trip changed the filter: \(shown(text))")
        }
        guard let library else { throw InvariantFailure("filter", "cannot open the scratch library") }
        do throws(LibraryError) {
            _ = try library.songs(parsed)
            _ = try library.count(parsed)
        } catch {
            try check(error.kind != .database, "filter", "the filter made a database error: \(error.message)")
        }
    }

    /// `f` in MPD's expression syntax (nil for the empty conjunction, which has none).
    static func expression(_ f: SongFilter) -> String? {
        switch f {
        case .tag(let key, let op, let v, _): return "(\(key?.mpdName ?? "any") \(op.rawValue) \(quoted(v, "'")))"
        case .file(let op, let v, _): return "(file \(op.rawValue) \(quoted(v, "'")))"
        case .base(let d): return "(base \(quoted(d, "'")))"
        case .modifiedSince(let t): return "(modified-since \(quoted(String(t), "'")))"
        case .addedSince(let t): return "(added-since \(quoted(String(t), "'")))"
        case .audioFormat(let v, let mask): return "(AudioFormat \(mask ? "=~" : "==") \(quoted(v, "'")))"
        case .not(let inner): return expression(inner).map { "(!\($0))" }
        case .and(let parts):
            let written = parts.compactMap(expression)
            guard written.count == parts.count, !parts.isEmpty else { return nil }
            return parts.count == 1 ? written[0] : "(" + written.joined(separator: " AND ") + ")"
        }
    }

    /// A music directory with a file, a subdirectory, a link out of it and playlists naming
    /// each other (a cycle).
    private static let music: String = {
        let dir = FuzzScratch.path("music")
        mkdir(dir, 0o700)
        mkdir(dir + "/sub", 0o700)
        FuzzScratch.write(Array("x".utf8), to: dir + "/a.mp3")
        FuzzScratch.write(Array("x".utf8), to: dir + "/sub/b.flac")
        FuzzScratch.write(Array("x".utf8), to: FuzzScratch.path("outside.mp3"))
        symlink(FuzzScratch.path("outside.mp3"), dir + "/out.mp3")
        FuzzScratch.write(Array("a.mp3\nloop.m3u\n".utf8), to: dir + "/loop.m3u")
        FuzzScratch.write(Array("[playlist]\nFile1=sub/b.flac\nFile2=loop.m3u\n".utf8), to: dir + "/list.pls")
        return dir
    }()

    /// A playlist's text: every file it resolves to lies inside the music directory (links,
    /// `..` and absolute paths refused), and its entries written as Backline writes an M3U read
    /// back the same.
    static let playlist = FuzzTarget("playlist", "M3U/M3U8/PLS entries and resolution; nothing resolves outside the music directory; written entries read back the same") { input throws(InvariantFailure) in
        let text = String(decoding: input, as: UTF8.self)
        let entries = PathResolver.playlistEntries(text)
        let resolver = PathResolver(musicDirectory: music, allowAbsolutePaths: false, allowStreams: false)
        guard let root = resolver.root else { throw InvariantFailure("playlist", "no scratch music directory") }
        let r = resolver.expand(playlistText: text, relativeTo: root)
        for f in r.files {
            try check(f.hasPrefix(root + "/"), "playlist", "resolved outside the music directory: \(shown(f))")
        }
        try check(r.files.count <= max(1, entries.count) * 64, "playlist", "\(entries.count) entries resolved to \(r.files.count) files")
        // What a stored playlist holds comes back as it was stored.
        let store = PlaylistStore(directory: FuzzScratch.path("playlists"), musicRoot: root)
        let back: [String]
        do throws(CommandError) {
            try store.write("fuzz", entries: entries)
            back = try store.entries("fuzz")
        } catch {
            throw InvariantFailure("playlist", "cannot store or read back the entries: \(error)")
        }
        try check(back.count == entries.count, "playlist", "\(entries.count) entries stored, \(back.count) read back")
        // Each comes back as itself, or (one that cannot be a line of its own) as the same file.
        func absolute(_ e: String) -> String {
            let a = e.hasPrefix("/") ? e : root + "/" + e
            return "/" + a.split(separator: "/").joined(separator: "/")
        }
        for (e, b) in zip(entries, back) where b != e {
            try check(store.line(e) != e && absolute(b) == absolute(e), "playlist", "stored \(shown(e)), read back \(shown(b))")
        }
    }
}
