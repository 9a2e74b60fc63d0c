import FoundationEssentials
import Platform

#if canImport(Glibc)
import Glibc
#endif

/// Stored playlists: one M3U file per playlist (`NAME.m3u`) in a directory of their own, written
/// atomically. Entries inside the music directory are stored relative to it (the files stay
/// valid when the music directory moves), others absolute.
public struct PlaylistStore: Sendable {
    /// Where the `.m3u` files live.
    public let directory: String
    /// The music directory, resolved (entries inside it are stored relative to it).
    public let musicRoot: String?

    public init(directory: String, musicRoot: String?) {
        self.directory = directory
        self.musicRoot = musicRoot
    }

    /// A stored playlist's name and when it last changed.
    public struct Info: Sendable, Equatable {
        public var name: String
        public var modified: Date
    }

    /// Checks a playlist name: not empty, at most 200 bytes, no `/`, no control characters,
    /// not starting with a dot (names are file names).
    public static func check(_ name: String) throws(CommandError) {
        guard !name.isEmpty, name.utf8.count <= 200 else { throw .badArgument("a playlist name is 1 to 200 bytes") }
        guard !name.hasPrefix("."), !name.contains("/"), !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .badArgument("a playlist name may not start with a dot or hold '/' or control characters: \(name)")
        }
    }

    func file(_ name: String) -> String { directory + "/" + name + ".m3u" }

    /// Every stored playlist, by name.
    public func all() -> [Info] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.filter { $0.hasSuffix(".m3u") && !$0.hasPrefix(".") }.compactMap { f -> Info? in
            var st = stat()  // (lstat: a link placed there is not a playlist)
            guard lstat(directory + "/" + f, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
            return Info(name: String(f.dropLast(4)), modified: PathResolver.modified(st))
        }.sorted { $0.name < $1.name }
    }

    /// Whether `name` exists.
    public func exists(_ name: String) -> Bool {
        var st = stat()
        return stat(file(name), &st) == 0
    }

    /// The entries of `name` as stored (relative to the music directory, or absolute).
    public func entries(_ name: String) throws(CommandError) -> [String] {
        try Self.check(name)
        // Only a file of the playlist directory itself: a link placed there (to /etc/shadow, say)
        // is not read through (checked on the opened descriptor).
        guard let dir = PathResolver.realPath(directory) else { throw .notFound("no playlist named \"\(name)\"") }
        switch readRegularFile(file(name), limit: PathResolver.maximumPlaylistSize, beneath: dir) {
        case .success(let data):
            var entries: [String] = []
            for line in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
                let text = line.trimmingBlanks()
                guard !text.isEmpty, !text.hasPrefix("#") else { continue }
                let entry = entry(line: text)
                guard entries.count < Limits.playlistEntries else {
                    throw .tooLarge("playlist \"\(name)\" has more than \(Limits.playlistEntries) entries")
                }
                entries.append(entry)
            }
            return entries
        case .failure(let e) where e.code == ENOENT: throw .notFound("no playlist named \"\(name)\"")
        case .failure(let e): throw .failed("playlist \"\(name)\": \(e.message)")
        }
    }

    /// Writes `entries` as `name` (replacing it).
    public func write(_ name: String, entries: [String]) throws(CommandError) {
        try Self.check(name)
        do {
            try makeDirectories(directory)
            try writeFileAtomically(Data(("#EXTM3U\n" + entries.map { line($0) + "\n" }.joined()).utf8), to: file(name))
        } catch {
            throw .failed("cannot save the playlist \"\(name)\": \(error)")
        }
    }

    /// Deletes `name`.
    public func remove(_ name: String) throws(CommandError) {
        try Self.check(name)
        guard unlink(file(name)) == 0 else {
            if errno == ENOENT { throw .notFound("no playlist named \"\(name)\"") }
            throw .failed("cannot delete the playlist \"\(name)\": \(String(cString: strerror(errno)))")
        }
    }

    /// Renames `name` to `new` (which must not exist).
    public func rename(_ name: String, to new: String) throws(CommandError) {
        try Self.check(name)
        try Self.check(new)
        guard exists(name) else { throw .notFound("no playlist named \"\(name)\"") }
        guard !exists(new) else { throw .exists("a playlist named \"\(new)\" exists") }
        guard Glibc.rename(file(name), file(new)) == 0 else {
            throw .failed("cannot rename the playlist \"\(name)\": \(String(cString: strerror(errno)))")
        }
    }

    /// The M3U line for `entry`: the entry itself, unless it would not read back as itself (a
    /// line break in a file's name, blanks at either end, a leading `#`, a `file://` of its own),
    /// then a `file://` URL of its absolute path, percent-escaped (fuzz finding
    /// playlist/line-break: such an entry became two, or none).
    public func line(_ entry: String) -> String {
        let plain = !entry.isEmpty && !entry.contains(where: \.isNewline) && entry.trimmingBlanks() == entry
            && !entry.hasPrefix("#") && !entry.hasPrefix("file://")
        if plain { return entry }
        let absolute = entry.hasPrefix("/") || musicRoot == nil ? entry : musicRoot! + "/" + entry
        var url = "file://"
        for b in absolute.utf8 {
            let safe = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "/") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "~")
            if safe { url.unicodeScalars.append(Unicode.Scalar(b)) } else {
                url += "%" + String(b >> 4, radix: 16, uppercase: true) + String(b & 15, radix: 16, uppercase: true)
            }
        }
        return url
    }

    /// The entry an M3U line stands for: a `file:///…` URL (see ``line(_:)``) decoded to its
    /// path, relative to the music directory when inside it; any other line as it is.
    public func entry(line: String) -> String {
        guard line.hasPrefix("file:///") else { return line }
        var bytes: [UInt8] = []
        let u = Array(line.utf8.dropFirst(7))
        var i = 0
        while i < u.count {
            if u[i] == UInt8(ascii: "%"), i + 2 < u.count, let v = UInt8(String(decoding: u[(i + 1)...(i + 2)], as: UTF8.self), radix: 16) {
                bytes.append(v)
                i += 3
            } else {
                bytes.append(u[i])
                i += 1
            }
        }
        return entry(for: String(decoding: bytes, as: UTF8.self))
    }

    /// How an absolute file path is stored: relative to the music directory when inside it.
    public func entry(for path: String) -> String {
        guard let musicRoot, path.hasPrefix(musicRoot + "/") else { return path }
        // (`ROOT//x` is `x`, not `/x`: fuzz finding playlist/double-slash.)
        let relative = path.dropFirst(musicRoot.count + 1).drop { $0 == "/" }
        return relative.isEmpty ? path : String(relative)
    }
}
