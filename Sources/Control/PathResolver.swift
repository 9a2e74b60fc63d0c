import BacklineWire
import FoundationEssentials
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
    public func expand(_ request: String) throws(Refusal) -> Resolution {
        var r = Resolution()
        r.files = try expand(request, relativeTo: nil, chain: [], into: &r)
        return r
    }

    /// The files a playlist's text names (M3U/M3U8, or PLS when it starts with `[playlist]`),
    /// relative entries resolved against `base`: a playlist read from standard input.
    public func expand(playlistText text: String, relativeTo base: String) -> Resolution {
        var r = Resolution()
        for entry in Self.playlistEntries(text) {
            do { r.files += try expand(entry, relativeTo: base, chain: [], into: &r) } catch { r.skipped.append(error) }
        }
        return r
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

    /// How many directories deep a directory's expansion goes (each level holds a directory
    /// open while the walk is below it). A directory with any deeper is refused, saying so.
    public static let maximumDirectoryDepth = 64

    /// How many playlists deep an expansion follows (a playlist naming a playlist…).
    public static let maximumPlaylistDepth = 8

    private func expand(_ request: String, relativeTo base: String?, chain: [String],
                        into r: inout Resolution) throws(Refusal) -> [String] {
        if let scheme = InputSources.scheme(of: request), scheme != "file" {
            return try expandURL(request, scheme: scheme, chain: chain, into: &r)
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
            guard Self.walk(path, prefix: "", into: &names, skipped: &r.skipped, tooDeep: &tooDeep, depth: 0) else {
                throw Refusal(code: .notFound, path: request, message: "cannot read the directory")
            }
            // Refused whole rather than added in part: what lies deeper would be left out unseen.
            if let tooDeep {
                throw Refusal(code: .tooLarge, path: request, message: "directories nested more than \(Self.maximumDirectoryDepth) levels below it (\(tooDeep)): nothing added; add a directory further down")
            }
            var found: [String] = []
            for rel in names {
                let ext = Path.extension(rel).lowercased()
                guard Self.audioExtensions.contains(ext) else {
                    r.ignored.append(path + "/" + rel)
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
                } catch { r.skipped.append(error) }
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
            for entry in entries {
                do { files += try expand(entry, relativeTo: dir, chain: chain + [path], into: &r) } catch { r.skipped.append(error) }
                guard files.count <= Limits.playlistEntries else {
                    throw Refusal(code: .tooLarge, path: request, message: "playlist names more than \(Limits.playlistEntries) files")
                }
            }
            return files
        }
        return [path]
    }

    /// A URL: a stream as it is, or a playlist (by its name: `.m3u`, `.m3u8`, `.pls`) fetched
    /// and expanded, its entries URLs (relative ones against it) or nothing.
    private func expandURL(_ url: String, scheme: String, chain: [String], into r: inout Resolution) throws(Refusal) -> [String] {
        guard allowStreams else {
            throw Refusal(code: .forbidden, path: url, message: "streams are not allowed here (allow-streams = no)")
        }
        guard InputSources.isStream(url) else {
            let known = InputSources.schemes.joined(separator: ", ")
            throw Refusal(code: .unsupported, path: url, message: "no input for \(scheme): URLs\(known.isEmpty ? "" : " (\(known) are played)")")
        }
        let name = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
        guard Self.playlistExtensions.contains(Path.extension(name).lowercased()) else { return [url] }
        guard !chain.contains(url), chain.count < Self.maximumPlaylistDepth else {
            throw Refusal(code: .unsupported, path: url, message: "playlists nested too deeply, or including themselves")
        }
        let text: String
        do throws(MediaError) {
            let source = try InputSources.open(url)
            let bytes = try source.read(count: Self.maximumPlaylistSize)
            guard let t = String(validating: bytes, as: UTF8.self) ?? String(bytes: bytes, encoding: .isoLatin1) else {
                throw MediaError(.corrupt, "not text", item: url)
            }
            text = t
        } catch {
            throw Refusal(code: .unsupported, path: url, message: "playlist: \(error.reason)")
        }
        if text.contains("#EXT-X-") {
            throw Refusal(code: .unsupported, path: url, message: "HLS is not supported")
        }
        let entries = Self.playlistEntries(text)
        guard entries.count <= Limits.playlistEntries else {
            throw Refusal(code: .tooLarge, path: url, message: "playlist has more than \(Limits.playlistEntries) entries")
        }
        var out: [String] = []
        for entry in entries {
            // Entries are URLs; one without a scheme is relative to the playlist's URL.
            let absolute = InputSources.scheme(of: entry) != nil ? entry : Self.resolve(entry, against: name)
            do { out += try expandURL(absolute, scheme: InputSources.scheme(of: absolute) ?? "", chain: chain + [url], into: &r) }
            catch { r.skipped.append(error) }
        }
        return out
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
    /// not valid UTF-8 cannot be named in the protocol (its text is UTF-8), so it is skipped
    /// with that reason and its bytes shown as `\xNN`, as mpd skips what it cannot convert.
    /// False when `dir` itself cannot be read. A directory more than
    /// ``maximumDirectoryDepth`` levels down is not read: its path goes in `tooDeep`.
    private static func walk(_ dir: String, prefix: String, into names: inout [String],
                             skipped: inout [Refusal], tooDeep: inout String?, depth: Int) -> Bool {
        guard depth < maximumDirectoryDepth else {
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
            guard let name = String(validating: raw, as: UTF8.self) else {
                let ext = Path.extension(String(decoding: raw, as: UTF8.self)).lowercased()
                guard isDirectory || audioExtensions.contains(ext) else { continue }  // (not music anyway)
                let shown = raw.map { $0 < 0x80 ? String(UnicodeScalar($0)) : "\\x" + String($0, radix: 16, uppercase: true) }.joined()
                skipped.append(Refusal(code: .unsupported, path: dir + "/" + shown, message: "the file name is not valid UTF-8"))
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
            guard raw.first != 46, let name = String(validating: raw, as: UTF8.self) else { continue }  // hidden, ".", "..", not UTF-8
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
