import Control
import FoundationEssentials
import Library
import MediaCore
import NIOCore
import Platform

#if canImport(Glibc)
import Glibc
#endif
import PlayQueue

/// MPD's database commands over the music library: `find`, `search`, `findadd`, `searchadd`,
/// `searchaddpl`, `list`, `count`, `lsinfo`, `listall`, `listallinfo`, `stats`, `update`,
/// `rescan`, answered as mpd 0.23 answers them (`src/command/DatabaseCommands.cxx`). Without
/// a library, each answers `No database`, as an mpd without one does.
extension MPDProtocol {
    /// The library, or mpd's answer without one.
    func library() throws(MPDError) -> MusicLibrary {
        guard let l = playback.library else { throw MPDError.noDatabase }
        return l
    }

    /// A library failure in mpd's terms.
    static func error(_ e: LibraryError) -> MPDError {
        switch e.kind {
        case .badFilter: MPDError(.arg, e.message)
        case .notFound: MPDError(.noExist, e.message)
        case .tooLarge: MPDError(.updateAlready, e.message)
        case .newerSchema, .database, .cancelled: MPDError(.system, e.message)
        }
    }

    /// What follows a filter: `sort TAG`, `window START:END` and (for the adding commands)
    /// `position POS`, taken from the end as mpd does.
    struct Selection {
        var filter: SongFilter
        var sort: SongSort?
        var window: Range<Int>?
        var position: QueueTarget?
    }

    /// Takes `window START:END` from the end of `args` when it is there (and `args` has at least
    /// `minimum` words with it), as mpd does.
    func takeWindow(_ args: inout [String], minimum: Int = 2) throws(MPDError) -> Range<Int>? {
        guard args.count >= minimum, args[args.count - 2] == "window" else { return nil }
        let w = args[args.count - 1]
        try MPDArgument.range.check(w)
        let window = try range(w, count: Int(Int32.max), clamp: true)
        args.removeLast(2)
        return window
    }

    func selection(_ r: MPDRequest, fold: Bool, position allowed: Bool = false, from start: Int = 0) throws(MPDError) -> Selection {
        var args = Array(r.args.dropFirst(start))
        var position: QueueTarget?
        if allowed, args.count >= 2, args[args.count - 2] == "position" {
            position = try target(args[args.count - 1])
            args.removeLast(2)
        }
        let window = try takeWindow(&args)
        var sort: SongSort?
        if args.count >= 2, args[args.count - 2] == "sort" {
            do { sort = try SongSort(mpd: args[args.count - 1]) } catch { throw Self.error(error) }
            args.removeLast(2)
        }
        guard !args.isEmpty else { throw MPDError(.arg, "too few arguments for \"\(r.name)\"") }
        do throws(LibraryError) {
            return Selection(filter: try SongFilter.parse(args, fold: fold), sort: sort, window: window, position: position)
        } catch { throw Self.error(error) }
    }

    func songs(_ s: Selection, _ r: MPDRequest) throws(MPDError) -> [LibrarySong] {
        let library = try library()
        do throws(LibraryError) {
            return try library.songs(s.filter, sort: s.sort, window: s.window, cancellation: r.state.cancellation)
        } catch { throw Self.error(error) }
    }

    /// `find` / `search`: song blocks, in walk order or `sort`, cut to `window`.
    func find(_ r: MPDRequest, fold: Bool, into out: inout ByteBuffer) throws(MPDError) {
        _ = try library()
        let found = try songs(selection(r, fold: fold), r)
        let start = out.writerIndex
        for s in found {
            write(s, r.state, into: &out)
            try check(&out, from: start)
        }
    }

    /// mpd's output limit, checked as a reply is written: past it, what was written goes and
    /// the command fails with mpd's words.
    func check(_ out: inout ByteBuffer, from start: Int) throws(MPDError) {
        guard out.writerIndex - start > Self.maximumResponse else { return }
        out.moveWriterIndex(to: start)
        throw MPDError(.system, "Output buffer is full")
    }

    /// `findadd` / `searchadd`: queues what find/search takes (at `position`).
    func findAdd(_ r: MPDRequest, fold: Bool) throws(MPDError) -> MPDText {
        _ = try library()
        let s = try selection(r, fold: fold, position: true)
        let found = try songs(s, r)
        guard !found.isEmpty, let root = playback.resolver.root else { return "" }
        _ = try run(AddCommand(paths: found.map { root + "/" + $0.path }, target: s.position, partial: true, refusesPastEnd: true))
        return ""
    }

    /// `searchaddpl NAME FILTER…`: appends what search takes to a stored playlist (created if
    /// need be; nothing found, nothing created).
    func searchAddPlaylist(_ r: MPDRequest) throws(MPDError) -> MPDText {
        _ = try library()
        let found = try songs(selection(r, fold: true, from: 1), r)
        guard !found.isEmpty, let root = playback.resolver.root else { return "" }
        _ = try runPlaylist(PlaylistAddCommand(name: r.args[0], paths: found.map { root + "/" + $0.path }))
        return ""
    }

    /// `count FILTER [group TAG]` and `count group TAG`.
    func count(_ r: MPDRequest) throws(MPDError) -> MPDText {
        let library = try library()
        var args = r.args
        var group: TagKey?
        if args.count >= 2, args[args.count - 2] == "group" {
            guard let k = TagKey(mpdName: args[args.count - 1]) else { throw MPDError(.arg, "Unknown tag type: \(args[args.count - 1])") }
            group = k
            args.removeLast(2)
        }
        do throws(LibraryError) {
            let filter = args.isEmpty ? SongFilter.all : try SongFilter.parse(args, fold: false)
            guard let group else {
                let c = try library.count(filter, cancellation: r.state.cancellation)
                return "songs: \(c.songs)\nplaytime: \(Int(c.playtime))\n"
            }
            return try library.counts(filter, group: group, cancellation: r.state.cancellation).map { "\(group.mpdName): \($0.value)\nsongs: \($0.songs)\nplaytime: \(Int($0.playtime))\n" }.joined()
        } catch { throw Self.error(error) }
    }

    /// `list TAG [FILTER] [group TAG…]`: unique values in byte order, each group's value
    /// printed once before the values under it (the last `group` is the outermost); `list file`
    /// lists the songs' files in walk order; `list Album ARTIST` is mpd's old form.
    func list(_ r: MPDRequest) throws(MPDError) -> MPDText {
        let library = try library()
        var args = r.args
        let tagName = args.removeFirst()
        let isFile = tagName.lowercased() == "file"
        guard let tag = TagKey(mpdName: tagName) ?? (isFile ? .title : nil) else { throw MPDError(.arg, "Unknown tag type: \(tagName)") }
        var groups: [TagKey] = []
        while args.count >= 2, args[args.count - 2] == "group" {
            guard let g = TagKey(mpdName: args[args.count - 1]) else { throw MPDError(.arg, "Unknown tag type: \(args[args.count - 1])") }
            guard g != tag || isFile, !groups.contains(g) else { throw MPDError(.arg, "Conflicting group") }
            groups.append(g)
            args.removeLast(2)
        }
        let out: [MPDText]
        do throws(LibraryError) {
            var filter = SongFilter.all
            if args.count == 1, !args[0].hasPrefix("(") {
                // mpd's three-argument form: `list album ARTIST`.
                guard tag == .album else { throw LibraryError(.badFilter, "should be \"Album\" for 3 arguments") }  // (mpd's words)
                filter = .tag(.artist, .equals, args[0], fold: false)
            } else if !args.isEmpty {
                filter = try SongFilter.parse(args, fold: false)
            }
            if isFile {
                out = try library.songs(filter, cancellation: r.state.cancellation).map { "file: \($0.path)\n" as MPDText }
            } else {
                let rows = try library.values(tag, filter: filter, groups: groups, cancellation: r.state.cancellation)
                let names = (groups + [tag]).map(\.mpdName)
                var lines: [MPDText] = []
                var previous: [String]?
                for row in rows {
                    // A group's value once, before what is under it.
                    let first = previous.map { p in zip(p, row).prefix(row.count - 1).prefix { $0.0 == $0.1 }.count } ?? 0
                    for level in first..<row.count { lines.append("\(names[level]): \(row[level])\n") }
                    previous = row
                }
                out = lines
            }
        } catch { throw Self.error(error) }
        return try limited(out)
    }

    /// `lsinfo`, `listall`, `listallinfo`: from the library when there is one, else the music
    /// directory itself.
    func listing(_ uri: String, recursive: Bool, info: Bool, _ state: MPDClientState, into out: inout ByteBuffer) throws(MPDError) {
        guard let library = playback.library else {
            out.writeMPD(try listing(uri, recursive: recursive, info: info, state))
            return
        }
        try libraryListing(library, uri, recursive: recursive, info: info, state, into: &out)
    }

    /// `lsinfo`, `listall`, `listallinfo` from the library: a directory's songs, playlist files
    /// and subdirectories (recursively for the `listall`s); the root of `lsinfo` also lists the
    /// stored playlists; a song's URI lists that song.
    func libraryListing(_ library: MusicLibrary, _ uri: String, recursive: Bool, info: Bool, _ state: MPDClientState,
                        into out: inout ByteBuffer) throws(MPDError) {
        let path = uri == "/" ? "" : uri
        let nodes: [LibraryNode]
        do throws(LibraryError) {
            nodes = try library.entries(path, recursive: recursive, limit: 1_000_000)
        } catch {
            if error.kind == .notFound, !path.isEmpty, let s = try? library.song(path) {
                if info { write(s, state, into: &out) } else { out.writeMPD("file: \(s.path)\n") }
                return
            }
            throw Self.error(error)
        }
        let start = out.writerIndex
        let top = path.split(separator: "/").joined(separator: "/")
        if recursive, !top.isEmpty {
            out.writeMPD("directory: \(top)\n")
            if info, let d = try? library.directory(top) { out.writeMPD("Last-Modified: \(JSONCodec.iso8601(d.modified))\n") }
        }
        for n in nodes {
            switch n {
            case .directory(let d):
                out.writeMPD("directory: \(d.path)\n")
                if info { out.writeMPD("Last-Modified: \(JSONCodec.iso8601(d.modified))\n") }
            case .playlist(let p):
                out.writeMPD("playlist: \(p.path)\n")
                if info { out.writeMPD("Last-Modified: \(JSONCodec.iso8601(p.modified))\n") }
            case .song(let s): if info { write(s, state, into: &out) } else { out.writeMPD("file: \(s.path)\n") }
            }
            try check(&out, from: start)
        }
        if !recursive, top.isEmpty, let store = playback.playlists {
            for p in store.all() { out.writeMPD("playlist: \(p.name)\nLast-Modified: \(JSONCodec.iso8601(p.modified))\n") }
        }
    }

    /// The parts joined, unless they pass mpd's output limit: then mpd's error (mpd closes the
    /// connection instead; an ACK tells the client why).
    func limited(_ parts: [MPDText]) throws(MPDError) -> MPDText {
        var size = 0
        for p in parts {
            size += p.byteCount
            if size > Self.maximumResponse { throw MPDError(.system, "Output buffer is full") }
        }
        return parts.joined()
    }

    /// `stats`, in mpd's order (`artists` and `albums` count distinct values, as mpd).
    func stats() throws(MPDError) -> MPDText {
        let uptime = Int(ProcessInfo.processInfo.systemUptime - MPDProtocol.started)
        let played = Int(playback.playedSeconds)
        guard let library = playback.library else {
            return "uptime: \(uptime)\nplaytime: \(played)\nartists: 0\nalbums: 0\nsongs: 0\ndb_playtime: 0\n"
        }
        let s: LibraryStats
        do throws(LibraryError) { s = try library.stats() } catch { throw Self.error(error) }
        return "uptime: \(uptime)\nplaytime: \(played)\nartists: \(s.artists)\nalbums: \(s.albums)\nsongs: \(s.songs)\n"
            + "db_playtime: \(Int(s.playtime))\ndb_update: \(s.updated)\n"
    }

    /// `update [URI]` / `rescan [URI]`: `updating_db: JOB`.
    func update(_ r: MPDRequest) throws(MPDError) -> MPDText {
        let library = try library()
        var path = r.args.first ?? ""
        if path == "/" { path = "" }
        do throws(LibraryError) {
            return "updating_db: \(try library.update(path, rescan: r.name == "rescan"))\n"
        } catch {
            throw error.kind == .tooLarge ? MPDError(.updateAlready, "Update queue is full") : Self.error(error)
        }
    }

    /// A library song, as mpd prints a database song: `file`, `Last-Modified`, `Added`,
    /// `Format`, the tags the client wants (in the file's order, one line per value), `Time`
    /// and `duration`; written straight into the reply (a `search` writes thousands).
    func write(_ s: LibrarySong, _ state: MPDClientState, into out: inout ByteBuffer) {
        out.writeStaticString("file: ")
        out.writeMPDField(s.path)
        out.writeStaticString("\nLast-Modified: ")
        Self.writeTime(s.modified, into: &out)
        out.writeStaticString("\nAdded: ")
        Self.writeTime(s.added, into: &out)
        out.writeStaticString("\n")
        if let rate = s.rate, let channels = s.channels {
            out.writeStaticString("Format: ")
            out.writeMPD("\(rate):\(s.bits ?? "f"):\(channels)\n")
        }
        let all = state.tags.count == Self.tagTypes.count
        for t in s.tags {
            let name = t.key.mpdName
            guard all || state.tags.contains(name) else { continue }
            out.writeMPDField(name)
            out.writeStaticString(": ")
            out.writeMPDField(t.key == .track || t.key == .disc ? Self.decimal(t.value) : t.value)
            out.writeStaticString("\n")
        }
        if let d = s.duration {
            out.writeWithUnsafeMutableBytes(minimumWritableBytes: 96) { raw in
                var w = ASCIIWriter(raw)
                w.put("Time: "); w.put(Int(d.rounded())); w.put("\nduration: "); w.putSeconds(d); w.put("\n")
                return w.count
            }
        }
    }

    /// Seconds since 1970 as ISO 8601 in UTC (`2026-11-23T15:04:05Z`), without a `String`.
    static func writeTime(_ seconds: Int, into out: inout ByteBuffer) {
        var t = time_t(seconds)
        var tm = tm()
        gmtime_r(&t, &tm)
        out.writeWithUnsafeMutableBytes(minimumWritableBytes: 64) { raw in  // (ASCIIWriter wants 20 free for a number)
            var w = ASCIIWriter(raw)
            func two(_ n: Int32) { if n < 10 { w.put("0") }; w.put(Int(n)) }
            w.put(Int(tm.tm_year + 1900)); w.put("-"); two(tm.tm_mon + 1); w.put("-"); two(tm.tm_mday)
            w.put("T"); two(tm.tm_hour); w.put(":"); two(tm.tm_min); w.put(":"); two(tm.tm_sec); w.put("Z")
            return w.count
        }
    }
}
