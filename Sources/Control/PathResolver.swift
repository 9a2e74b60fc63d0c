import BacklineWire
import FoundationEssentials
import Library
import Media
import MediaCore
import Platform

#if canImport(Glibc)
import Glibc
#endif

/// Turns what a client asks to `add` into files to queue: files, directories (recursively, in
/// natural name order) and M3U/PLS playlists, confined to the music directory.
///
/// Relative paths resolve against the music directory. Every file is resolved through its
/// symlinks (`realpath`) and must lie inside the music directory, unless absolute paths are
/// allowed; a symlink pointing out of it is refused like any other escape.
public struct PathResolver: Sendable {
    public let musicDirectory: String
    public let allowAbsolutePaths: Bool
    /// Whether URLs of a registered input (`http`, `https`) are taken (never confined to the
    /// music directory: they are not files).
    public let allowStreams: Bool
    /// The music directory, resolved.
    public let root: String?

    /// Extensions of the files taken from directories (every format the decoder registry
    /// plays: a walk goes by name, the decoder is chosen by content when it plays) and of playlists.
    public static let audioExtensions: Set<String> = DecoderRegistry.standard.suffixes
    public static let playlistExtensions: Set<String> = ["m3u", "m3u8", "pls"]
    /// The largest playlist read (a 100,000-line M3U is ~10 MB).
    public static let maximumPlaylistSize = 16 << 20
    /// The largest playlist fetched by URL (its body after decoding): a station's playlist is
    /// a few hundred bytes, and 1 MiB still holds ~10,000 entries.
    public static let maximumRemotePlaylistSize = 1 << 20
    /// How long the playlists one request fetches by URL may take in all, every path it names
    /// and nested ones included (one ``Walk``), seconds from the first fetch: past it the fetch
    /// under way is given up with the reason, and later ones are not begun. A server that drips,
    /// or sends a body that never ends, costs this long at most, however many URLs name it.
    public static let fetchSeconds = 10.0

    public init(musicDirectory: String, allowAbsolutePaths: Bool, allowStreams: Bool = true) {
        self.musicDirectory = musicDirectory
        self.allowAbsolutePaths = allowAbsolutePaths
        self.allowStreams = allowStreams
        root = Self.realPath(musicDirectory)
    }

    /// Why a path cannot be added.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public enum Code: String, Sendable {
            case notFound = "not-found", forbidden = "forbidden", unsupported = "unsupported", tooLarge = "too-large"
        }
        public let code: Code
        public let path: String
        public let message: String
        public var description: String { "\(path): \(message)" }
    }

    /// What a request expands to.
    public struct Resolution: Sendable, Equatable {
        /// The files to queue, in order (symlinks resolved).
        public var files: [String] = []
        /// Entries of directories and playlists that could not be used, each with its reason.
        public var skipped: [Refusal] = []
        /// Files found in directories that are not in a format the decoder registry plays (by extension), left out as mpd leaves them.
        public var ignored: [String] = []
    }

    /// The files `request` names, in order, and the entries skipped inside directories and
    /// playlists (each with its reason). Throws when `request` itself cannot be used.
    public func resolve(_ request: String) throws(Refusal) -> (files: [String], skipped: [Refusal]) {
        let r = try expand(request)
        return (r.files, r.skipped)
    }

    /// Like ``resolve(_:)``, and also names the files of directories left out as not audio Backline plays.
    /// `request` alone has its bounds (``Walk``); a request naming several paths expands each
    /// into one walk (``expand(_:into:)``).
    public func expand(_ request: String) throws(Refusal) -> Resolution {
        var w = Walk()
        try expand(request, into: &w)
        return w.r
    }

    /// Expands `request`, one of the paths a request names, into `walk`: its files and the entries
    /// skipped are appended to the walk's, within the bounds the walk keeps for the whole request
    /// (entries read from playlists, the time for fetches by URL). Throws when `request` itself
    /// cannot be used (then nothing of it is kept), or when the whole request is past its bounds
    /// (``Walk/exhausted``: the caller refuses the request rather than skipping `request`).
    public func expand(_ request: String, into walk: inout Walk) throws(Refusal) {
        let (skipped, ignored) = (walk.r.skipped.count, walk.r.ignored.count)
        do throws(Refusal) {
            walk.r.files += try expand(request, relativeTo: nil, chain: [], into: &walk)
        } catch {
            walk.r.skipped.removeSubrange(skipped...)
            walk.r.ignored.removeSubrange(ignored...)
            throw error
        }
    }

    /// The files a playlist's text names (M3U/M3U8, or PLS when it starts with `[playlist]`),
    /// relative entries resolved against `base`: a playlist read from standard input.
    public func expand(playlistText text: String, relativeTo base: String) -> Resolution {
        var w = Walk()
        let entries = Self.playlistEntries(text)
        do throws(Refusal) {
            try w.count(entries.count, in: "-")
            for entry in entries {
                do { w.r.files += try expand(entry, relativeTo: base, chain: [], into: &w) } catch where !w.exhausted {
                    w.r.skipped.append(error)
                }
            }
        } catch {
            w.r.skipped.append(error)
        }
        return w.r
    }

    /// One request's expansion, across every path it names and every level of nesting: what
    /// it found so far, and its bounds. One walk serves the whole request (``expand(_:into:)``
    /// for each path), so a request naming many paths costs what one naming them all in a
    /// single playlist costs: 6,000 paths naming a playlist of 100,000 entries each, each path
    /// with a walk of its own, were read to 600 million files before the queue refused them,
    /// and 6,000 slow playlist URLs waited 10 s each.
    public struct Walk: Sendable {
        var r = Resolution()
        /// Entries read from playlists so far, nested ones included.
        var entries = 0
        /// When the fetches of playlists by URL must be done (monotonic ns), set by the first.
        var fetchDeadline: Int?
        /// Past the bound of entries: no further entry is expanded. The daemon then refuses the
        /// whole request; ``expand(playlistText:relativeTo:)`` returns what it gathered before,
        /// with the refusal in ``Resolution/skipped``.
        public private(set) var exhausted = false

        public init() {}

        /// What the request expanded to so far.
        public var resolution: Resolution { r }
        /// The files found so far, in order.
        public var files: [String] { r.files }
        /// Records `refusal` (a path of the request that cannot be used) as skipped.
        public mutating func skip(_ refusal: Refusal) { r.skipped.append(refusal) }

        /// Counts the `n` entries of a playlist just read (`shown`), before any is expanded:
        /// past ``Limits/playlistEntries`` in all (every path of the request), the walk is
        /// ``exhausted``. An `add` can
        /// never queue more than the queue holds (that many), so reading more can only fail
        /// later, after memory grew (2,000 nested playlists of 100,000 entries each were read
        /// to 10.7 million entries, 983 MiB, before the queue refused them).
        mutating func count(_ n: Int, in shown: String) throws(Refusal) {
            entries += n
            guard entries <= Limits.playlistEntries else {
                exhausted = true
                throw Refusal(code: .tooLarge, path: shown,
                              message: "playlists name more than \(Limits.playlistEntries) entries in all (every path of the request, nested ones included)")
            }
        }
    }

    /// The entries of a playlist in order: PLS (`[playlist]`, `FileN=…`, ordered by N) or M3U
    /// (every line that is not blank or a `#` comment). `file://` URLs become paths.
    public static func playlistEntries(_ text: String) -> [String] {
        let body = text.hasPrefix("\u{FEFF}") ? text.dropFirst() : Substring(text)  // (a byte-order mark)
        let lines = body.split(whereSeparator: \.isNewline).map { $0.trimmingBlanks() }
        // (A `file://HOST` URL with no path stays as it is: it named no file, and as an empty
        // path it vanished. Fuzz finding playlist/file-url-host.)
        func path(_ s: String) -> String {
            guard s.hasPrefix("file://"), let p = URL(string: s)?.path, p.hasPrefix("/") else { return s }
            return p
        }
        if lines.first(where: { !$0.isEmpty })?.lowercased() == "[playlist]" {
            var numbered: [(Int, String)] = []
            for line in lines {
                guard line.lowercased().hasPrefix("file"), let eq = line.firstIndex(of: "="),
                      let n = Int(line[line.index(line.startIndex, offsetBy: 4)..<eq]) else { continue }
                let value = line[line.index(after: eq)...].trimmingBlanks()
                if !value.isEmpty { numbered.append((n, path(value))) }
            }
            return numbered.enumerated().sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }.map(\.element.1)
        }
        return lines.filter { !$0.isEmpty && !$0.hasPrefix("#") }.map(path)
    }

    /// How many playlists deep an expansion follows (a playlist naming a playlist…).
    public static let maximumPlaylistDepth = 8

    /// Why a request (a path, a URL, a playlist's entry) holding a control character is refused.
    public static let controlCharacterMessage = "holds a control character"

    private func expand(_ request: String, relativeTo base: String?, chain: [String],
                        into w: inout Walk) throws(Refusal) -> [String] {
        // No file the library lists has one, and in a URL a line end would split the lines
        // of a protocol that names it (MPD's `file:`): refused wherever it comes from.
        guard !request.containsControlCharacter else {
            throw Refusal(code: .unsupported, path: escapedName(request), message: Self.controlCharacterMessage)
        }
        if let scheme = InputSources.scheme(of: request), scheme != "file" {
            return try expandURL(request, scheme: scheme, chain: chain, into: &w)
        }
        let path = try locate(request, relativeTo: base)
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw Refusal(code: .notFound, path: request, message: "no such file or directory")
        }
        // A FIFO, socket or device named like music would hang whoever reads it: refused here.
        let kind = st.st_mode & S_IFMT
        guard kind == S_IFDIR || kind == S_IFREG else {
            throw Refusal(code: .unsupported, path: request, message: "not a regular file (\(fileKind(st.st_mode)))")
        }
        if kind == S_IFDIR {
            var names: [String] = []
            var tooDeep: String?
            guard Self.walk(path, prefix: "", into: &names, skipped: &w.r.skipped, tooDeep: &tooDeep, depth: 0) else {
                throw Refusal(code: .notFound, path: request, message: "cannot read the directory")
            }
            // Refused whole rather than added in part: what lies deeper would be left out unseen.
            if let tooDeep {
                throw Refusal(code: .tooLarge, path: request, message: "directories nested more than \(MusicLibrary.maximumDirectoryDepth) levels below it (\(tooDeep)): nothing added; add a directory further down")
            }
            var found: [String] = []
            for rel in names {
                let ext = Path.extension(rel).lowercased()
                guard Self.audioExtensions.contains(ext) else {
                    w.r.ignored.append(path + "/" + rel)
                    continue
                }
                let full = path + "/" + rel
                do throws(Refusal) {
                    let file = try confine(full, shown: full)
                    var fst = stat()
                    guard stat(file, &fst) == 0 else {
                        throw Refusal(code: .notFound, path: full, message: "no such file or directory")
                    }
                    guard fst.st_mode & S_IFMT == S_IFREG else {
                        throw Refusal(code: .unsupported, path: full, message: "not a regular file (\(fileKind(fst.st_mode)))")
                    }
                    found.append(file)
                } catch { w.r.skipped.append(error) }
            }
            return found.sorted { $0.precedesInFileOrder($1) }
        }
        let ext = Path.extension(path).lowercased()
        if Self.playlistExtensions.contains(ext) {
            guard !chain.contains(path) else {
                throw Refusal(code: .unsupported, path: request, message: "the playlist includes itself")
            }
            guard chain.count < Self.maximumPlaylistDepth else {
                throw Refusal(code: .unsupported, path: request, message: "playlists nested too deeply")
            }
            let data: Data
            switch readRegularFile(path, limit: Self.maximumPlaylistSize, beneath: allowAbsolutePaths ? nil : root) {
            case .success(let d): data = d
            case .failure(let e): throw Refusal(code: .unsupported, path: request, message: "playlist: \(e.message)")
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw Refusal(code: .unsupported, path: request, message: "playlist is not UTF-8 text")
            }
            let dir = Path.deletingLastComponent(path)
            var files: [String] = []
            let entries = Self.playlistEntries(text)
            guard entries.count <= Limits.playlistEntries else {
                throw Refusal(code: .tooLarge, path: request, message: "playlist has more than \(Limits.playlistEntries) entries")
            }
            try w.count(entries.count, in: request)
            for entry in entries {
                do { files += try expand(entry, relativeTo: dir, chain: chain + [path], into: &w) } catch where !w.exhausted {
                    w.r.skipped.append(error)
                }
                guard files.count <= Limits.playlistEntries else {
                    throw Refusal(code: .tooLarge, path: request, message: "playlist names more than \(Limits.playlistEntries) files")
                }
            }
            return files
        }
        return [path]
    }

    /// A URL: a stream as it is, or a playlist (by its name: `.m3u`, `.m3u8`, `.pls`) fetched
    /// whole (``Media/InputSources/fetch(_:limit:deadline:)``: at most
    /// ``maximumRemotePlaylistSize``, all fetches of the request within ``fetchSeconds``) and
    /// expanded, its entries URLs (relative ones against it) or nothing. A body that is not text
    /// (binary, or compressed in a way that was not undone) is refused; an entry that is no URL
    /// is skipped with the reason.
    private func expandURL(_ url: String, scheme: String, chain: [String], into w: inout Walk) throws(Refusal) -> [String] {
        guard !url.containsControlCharacter else {
            throw Refusal(code: .unsupported, path: escapedName(url), message: Self.controlCharacterMessage)
        }
        guard allowStreams else {
            throw Refusal(code: .forbidden, path: url, message: "streams are not allowed here (allow-streams = no)")
        }
        guard InputSources.isStream(url) else {
            let known = InputSources.schemes.joined(separator: ", ")
            throw Refusal(code: .unsupported, path: url, message: "no input for \(scheme): URLs\(known.isEmpty ? "" : " (\(known) are played)")")
        }
        let name = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
        guard Self.isPlaylistURL(url) else { return [url] }
        guard !chain.contains(url), chain.count < Self.maximumPlaylistDepth else {
            throw Refusal(code: .unsupported, path: url, message: "playlists nested too deeply, or including themselves")
        }
        let deadline = w.fetchDeadline ?? monotonicNanos() + Int(Self.fetchSeconds * 1e9)
        w.fetchDeadline = deadline
        let bytes: [UInt8]
        do throws(MediaError) {
            bytes = try InputSources.fetch(url, limit: Self.maximumRemotePlaylistSize, deadline: deadline)
        } catch {
            // (libcurl's timer, set from the deadline, may end the transfer a few ms before it.)
            let late = monotonicNanos() + 50_000_000 >= deadline ? " (playlists by URL have \(Int(Self.fetchSeconds)) s in all per request, nested ones included)" : ""
            throw Refusal(code: chain.isEmpty && error.message.hasPrefix("larger than") ? .tooLarge : .unsupported, path: url,
                          message: "playlist: \(error.reason)\(late)")
        }
        let text: String
        switch Self.playlistText(bytes) {
        case .success(let t): text = t
        case .failure(let why): throw Refusal(code: .unsupported, path: url, message: "playlist: \(why.message)")
        }
        if text.contains("#EXT-X-") {
            throw Refusal(code: .unsupported, path: url, message: "HLS is not supported")
        }
        let entries = Self.playlistEntries(text)
        guard entries.count <= Limits.playlistEntries else {
            throw Refusal(code: .tooLarge, path: url, message: "playlist has more than \(Limits.playlistEntries) entries")
        }
        try w.count(entries.count, in: url)
        var out: [String] = []
        for entry in entries {
            // Entries are URLs; one without a scheme is relative to the playlist's URL.
            // (A blank in a name is escaped, as a browser would: `My Song.mp3`.)
            let named = entry.replacing(" ", with: "%20")
            let absolute = InputSources.scheme(of: named) != nil ? named : Self.resolve(named, against: name)
            do throws(Refusal) {
                if let problem = Self.urlProblem(absolute) { throw Refusal(code: .unsupported, path: escapedName(entry), message: problem) }
                out += try expandURL(absolute, scheme: InputSources.scheme(of: absolute) ?? "", chain: chain + [url], into: &w)
            } catch where !w.exhausted {
                w.r.skipped.append(error)
            }
        }
        return out
    }

    /// Why a playlist's bytes are not its text, or the text: UTF-8 (a byte-order mark allowed),
    /// or Latin-1 where that is not valid (older playlists); never a control character other
    /// than tab, line feed, carriage return and form feed (a gzip body starts with 0x1F 0x8B;
    /// read as text, its bytes became 65 garbage URLs).
    static func playlistText(_ bytes: [UInt8]) -> Result<String, TextProblem> {
        if let i = bytes.firstIndex(where: { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D && $0 != 0x0C || $0 == 0x7F }) {
            let hex = String(bytes[i], radix: 16, uppercase: true)
            return .failure(TextProblem(message: "not text (byte 0x\(hex.count == 1 ? "0" : "")\(hex) at offset \(i): binary, or compressed)"))
        }
        if let t = String(validating: bytes, as: UTF8.self) { return .success(t) }
        var latin1 = String.UnicodeScalarView()
        latin1.append(contentsOf: bytes.map { Unicode.Scalar($0) })
        return .success(String(latin1))
    }

    /// Whether `request` names a playlist by URL (a URL of a scheme other than `file` whose name,
    /// before any query, ends `.m3u`, `.m3u8` or `.pls`): expanding it fetches it, which may
    /// take up to ``fetchSeconds``.
    public static func isPlaylistURL(_ request: String) -> Bool {
        guard let scheme = InputSources.scheme(of: request), scheme != "file" else { return false }
        let name = request.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request
        return playlistExtensions.contains(Path.extension(name).lowercased())
    }

    /// Why bytes are not a playlist's text.
    struct TextProblem: Error { let message: String }

    /// Why `url` cannot be a URL to fetch or play, or nil: a control character or a blank in
    /// it, no host.
    static func urlProblem(_ url: String) -> String? {
        if url.unicodeScalars.contains(where: { $0.isControlCharacter || $0 == " " }) {
            return "not a URL (a blank or a control character in it)"
        }
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return "not a URL" }
        let rest = url[url.index(colon, offsetBy: 3)...]
        let host = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if host.isEmpty { return "not a URL (no host)" }
        return nil
    }

    /// `relative` against the URL `base` (`a.mp3` next to it, `/x` at its host's root).
    static func resolve(_ relative: String, against base: String) -> String {
        guard let colon = base.firstIndex(of: ":"), base[colon...].hasPrefix("://") else { return relative }
        let afterScheme = base.index(colon, offsetBy: 3)
        let hostEnd = base[afterScheme...].firstIndex(of: "/") ?? base.endIndex
        if relative.hasPrefix("/") { return String(base[..<hostEnd]) + relative }
        let dirEnd = base.lastIndex(of: "/").map { $0 >= hostEnd ? base.index(after: $0) : base.endIndex } ?? base.endIndex
        return String(base[..<dirEnd]) + (dirEnd == base.endIndex && !base.hasSuffix("/") ? "/" : "") + relative
    }

    /// The absolute, symlink-free path of `request`, checked against the music directory.
    private func locate(_ request: String, relativeTo base: String?) throws(Refusal) -> String {
        guard !request.isEmpty, !request.contains("\0") else {
            throw Refusal(code: .notFound, path: request, message: "empty path")
        }
        let joined: String
        if request.hasPrefix("/") {
            joined = request
        } else {
            guard let root = base ?? root else {
                throw Refusal(code: .notFound, path: request, message: "the music directory \(musicDirectory) does not exist")
            }
            joined = root + "/" + request
        }
        do {
            return try confine(joined, shown: request)
        } catch where error.code == .notFound && base == nil && !request.hasPrefix("/") {
            // What a relative path is relative to, said where it matters.
            throw Refusal(code: .notFound, path: request, message: "no such file or directory in the music directory \(musicDirectory)")
        }
    }

    /// Resolves symlinks and refuses anything outside the music directory (unless allowed).
    private func confine(_ path: String, shown: String) throws(Refusal) -> String {
        guard let real = Self.realPath(path) else {
            throw Refusal(code: .notFound, path: shown, message: "no such file or directory")
        }
        if allowAbsolutePaths { return real }
        guard let root, real == root || real.hasPrefix(root == "/" ? "/" : root + "/") else {
            throw Refusal(code: .forbidden, path: shown, message: "outside the music directory \(musicDirectory)")
        }
        return real
    }

    /// Appends the paths (relative to `dir`, prefixed by `prefix`) of everything below `dir`,
    /// descending into subdirectories but not into symlinks to them (no cycles). A name that is
    /// not valid UTF-8 cannot be named in the protocol (its text is UTF-8), and one holding a
    /// control character would split a protocol line: each is skipped with its reason and its
    /// bytes shown as `\xNN`, as mpd skips what it cannot convert and names with a newline.
    /// False when `dir` itself cannot be read. A directory more than
    /// `MusicLibrary.maximumDirectoryDepth` levels down (the library scan's depth) is not
    /// read: its path goes in `tooDeep`.
    private static func walk(_ dir: String, prefix: String, into names: inout [String],
                             skipped: inout [Refusal], tooDeep: inout String?, depth: Int) -> Bool {
        guard depth <= MusicLibrary.maximumDirectoryDepth else {
            if tooDeep == nil { tooDeep = prefix.isEmpty ? dir : String(prefix.dropLast()) }
            return true
        }
        guard let d = opendir(dir) else { return false }
        defer { closedir(d) }
        while let e = readdir(d) {
            let (raw, isDirectory): ([UInt8], Bool) = withUnsafeBytes(of: e.pointee.d_name) { b in
                (Array(b.prefix { $0 != 0 }), e.pointee.d_type == UInt8(DT_DIR))
            }
            if raw == [46] || raw == [46, 46] { continue }  // "." and ".."
            guard let name = String(validating: raw, as: UTF8.self), !name.containsControlCharacter else {
                let ext = Path.extension(String(decoding: raw, as: UTF8.self)).lowercased()
                guard isDirectory || audioExtensions.contains(ext) else { continue }  // (not music anyway)
                let message = String(validating: raw, as: UTF8.self) == nil
                    ? "the file name is not valid UTF-8" : "the file name holds a control character"
                skipped.append(Refusal(code: .unsupported, path: escapedName(dir) + "/" + escapedName(raw), message: message))
                continue
            }
            var descend = isDirectory
            if e.pointee.d_type == UInt8(DT_UNKNOWN) {  // (file systems that do not say: ask)
                var st = stat()
                descend = lstat(dir + "/" + name, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
            }
            if descend {
                _ = walk(dir + "/" + name, prefix: prefix + name + "/", into: &names, skipped: &skipped, tooDeep: &tooDeep, depth: depth + 1)
            } else {
                names.append(prefix + name)
            }
        }
        return true
    }

    /// One entry of a music-directory listing.
    public struct Listed: Sendable, Equatable {
        public enum Kind: String, Sendable { case directory, audio, playlist, other }
        /// Relative to the music directory.
        public var path: String
        public var kind: Kind
        /// The file it resolves to (symlinks followed).
        public var file: String
        public var size: Int
        public var modified: Date
    }

    /// The entries of the directory `relative` (to the music directory; "" is its root), in
    /// name order, as MPD browses: the files, then each directory followed (when `recursive`)
    /// by what is in it. Confined as `add` is: a symlink leading out of the music directory,
    /// or to nothing, is left out; hidden names too. Throws when the directory is not one, or
    /// when there are more than `limit` entries.
    public func browse(_ relative: String, recursive: Bool, limit: Int = 200_000) throws(Refusal) -> [Listed] {
        let rel = relative.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        guard let root else { throw Refusal(code: .notFound, path: relative, message: "the music directory \(musicDirectory) does not exist") }
        let dir = rel.isEmpty ? root : try confine(root + "/" + rel, shown: relative)
        var st = stat()
        guard stat(dir, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
            throw Refusal(code: .notFound, path: relative, message: "no such directory")
        }
        var out: [Listed] = []
        try list(dir, as: rel, recursive: recursive, into: &out, limit: limit, depth: 0)
        return out
    }

    private func list(_ dir: String, as rel: String, recursive: Bool, into out: inout [Listed], limit: Int, depth: Int) throws(Refusal) {
        guard depth < 64, let d = opendir(dir) else { return }
        var names: [String] = []
        while let e = readdir(d) {
            let raw = withUnsafeBytes(of: e.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            // Not listed: hidden names, ".", "..", names that are not UTF-8 or hold a control character.
            guard raw.first != 46, let name = String(validating: raw, as: UTF8.self), !name.containsControlCharacter else { continue }
            names.append(name)
        }
        closedir(d)
        names.sort { $0.precedesInFileOrder($1) }
        var directories: [(Listed, String)] = []
        for name in names {
            let shown = rel.isEmpty ? name : rel + "/" + name
            guard let file = try? confine(dir + "/" + name, shown: shown) else { continue }
            var st = stat()
            guard stat(file, &st) == 0 else { continue }
            let ext = Path.extension(name).lowercased()
            let kind: Listed.Kind = st.st_mode & S_IFMT == S_IFDIR ? .directory
                : st.st_mode & S_IFMT != S_IFREG ? .other
                : Self.audioExtensions.contains(ext) ? .audio : Self.playlistExtensions.contains(ext) ? .playlist : .other
            let entry = Listed(path: shown, kind: kind, file: file, size: Int(st.st_size),
                               modified: Self.modified(st))
            if kind == .directory { directories.append((entry, file)) } else { out.append(entry) }
            guard out.count + directories.count <= limit else {
                throw Refusal(code: .tooLarge, path: rel, message: "more than \(limit) entries")
            }
        }
        for (entry, file) in directories {
            out.append(entry)
            // Not into a directory reached through a symlink (no cycles), as `add` walks.
            var lst = stat()
            if recursive, lstat(dir + "/" + Path.lastComponent(entry.path), &lst) == 0, lst.st_mode & S_IFMT == S_IFDIR {
                try list(file, as: entry.path, recursive: true, into: &out, limit: limit, depth: depth + 1)
            }
        }
    }

    /// When a `stat` says the file was last modified (whole seconds, as listings show it).
    public static func modified(_ st: stat) -> Date { Date(timeIntervalSince1970: TimeInterval(st.st_mtim.tv_sec)) }

    /// When `p` was last modified; nil when it cannot be read.
    public static func modified(_ p: String) -> Date? {
        var st = stat()
        return stat(p, &st) == 0 ? modified(st) : nil
    }

    /// `p` with its symlinks resolved (`realpath`); nil when it does not exist.
    public static func realPath(_ p: String) -> String? { Path.realPath(p) }
}
