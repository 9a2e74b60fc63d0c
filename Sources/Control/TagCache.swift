import AudioEngine
import Media
import Dispatch
import Library
import FoundationEssentials
import MediaCore
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// Tags and exact durations of queued files, read once per file through the decoder registry's
/// tag readers (headers and tags, no audio decoded) and kept while the daemon runs.
public final class TagCache: Sendable {
    /// What a file says about itself; `error` when it cannot be opened.
    public struct Info: Sendable, Equatable {
        public var metadata: TrackMetadata
        public var duration: Double?
        public var error: String?
        /// The decoded stream's sample rate and channels (MPD's `Format:` and `audio:`).
        public var rate: Int? = nil
        public var channels: Int? = nil
        /// The average bitrate in kbit/s (the file's size over its duration, or the stream's own).
        public var bitrate: Int? = nil
        /// How the file stores samples (MPD's `Format:` sample field).
        public var encoding: SampleEncoding? = nil
        /// When the file was last modified (MPD's `Last-Modified:`).
        public var modified: Date? = nil
    }

    private let cache = Lock<[String: Info]>([:])
    /// Paths a background read is already under way for (so repeated lookups, e.g. `status`
    /// polled while a file is still being scanned, start one read, not one each).
    private let fetching = Lock<Set<String>>([])
    /// Where prefetches run: a serial queue (no global queue in the daemon; see `DaemonCommand`).
    private let prefetchQueue = DispatchQueue(label: "backline.tags", qos: .utility)

    /// Files must lie beneath this directory (checked on the opened descriptor; nil: anywhere).
    public let confinement: String?

    /// The formats read (the registry's tag readers).
    public let registry: DecoderRegistry

    /// Where songs are read from before their files are opened (nil: none).
    public let library: MusicLibrary?

    public init(confinement: String? = nil, registry: DecoderRegistry = .standard, library: MusicLibrary? = nil) {
        self.confinement = confinement
        self.registry = registry
        self.library = library
    }

    /// The info for `path`, reading the file the first time.
    public func info(_ path: String) -> Info {
        if let i = cache.withLock({ $0[path] }) { return i }
        let info = read(path, library: true)
        cache.withLock { $0[path] = info }
        return info
    }

    /// Reads `path`'s info (from the library when `library` and it knows the file).
    private func read(_ path: String, library: Bool = false) -> Info {
        // A stream is not fetched for its tags: what it carries is known when it plays.
        if InputSources.isStream(path) { return Info(metadata: TrackMetadata(), duration: nil, error: nil) }
        if library, let known = fromLibrary(path) { return known }
        do {
            let t = try registry.info(path: path, beneath: confinement)
            var info = Info(metadata: t.metadata, duration: t.duration, error: nil, rate: t.format?.rate, channels: t.format?.channels,
                            bitrate: t.bitrate, encoding: t.encoding)
            var st = stat()
            if stat(path, &st) == 0 { info.modified = PathResolver.modified(st) }
            return info
        } catch {
            return Info(metadata: TrackMetadata(), duration: nil, error: "\(error)")
        }
    }

    /// What the library knows of `path`, when it is one of its songs and unchanged since the
    /// scan (same size and time), and has no picture (the picture is read from the file).
    private func fromLibrary(_ path: String) -> Info? {
        guard let library, let root = library.root, path.hasPrefix(root + "/") else { return nil }
        guard let song = try? library.song(String(path.dropFirst(root.count + 1))), !song.hasArtwork else { return nil }
        var st = stat()
        guard stat(path, &st) == 0, Int(st.st_size) == song.size, Int(st.st_mtim.tv_sec) == song.modified else { return nil }
        let encoding: SampleEncoding? = song.bits.map { $0 == "f" ? .float(bits: 32) : .integer(bits: Int($0) ?? 16) }
        return Info(metadata: song.metadata, duration: song.duration, error: nil, rate: song.rate, channels: song.channels,
                    bitrate: song.bitrate, encoding: encoding,
                    modified: Date(timeIntervalSince1970: TimeInterval(song.modified)))
    }

    /// The info, read now if it was not read already, without keeping it (a whole library
    /// walked once need not stay in memory).
    public func peek(_ path: String) -> Info { cached(path) ?? read(path) }

    /// The info read from the file now, whatever is cached or in the library (free-form
    /// comments and ReplayGain, which the library does not keep).
    public func readFile(_ path: String) -> Info { read(path) }

    /// The info if it was read already.
    public func cached(_ path: String) -> Info? { cache.withLock { $0[path] } }

    /// The info if it was read already; otherwise nil, and it is read in the background (for
    /// callers that must not touch the file system, such as the network thread).
    public func lookup(_ path: String) -> Info? {
        if let i = cached(path) { return i }
        prefetch([path])
        return nil
    }

    /// Reads `paths` in the background (those not read yet and not being read already).
    public func prefetch(_ paths: [String]) {
        let todo = fetching.withLock { f -> [String] in
            var out: [String] = []
            for p in paths where !f.contains(p) && cached(p) == nil {
                f.insert(p)
                out.append(p)
            }
            return out
        }
        guard !todo.isEmpty else { return }
        prefetchQueue.async { [self] in
            for p in todo {
                _ = info(p)
                _ = fetching.withLock { $0.remove(p) }
            }
        }
    }
}
