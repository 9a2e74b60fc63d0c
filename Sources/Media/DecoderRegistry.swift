import Locking
import Synchronization
import MediaCore
import Platform

/// The formats Backline plays, chosen by content: the first bytes of a file (after any ID3v2
/// tag in front) pick the decoder; the file name's suffix only breaks ties, and lets an MP3
/// with junk in front still reach libmpg123 (which resyncs). One registry answers "which files
/// would play" for folder walks, `add`, browsing and MPD's `decoders`.
///
/// Adding a format: its `DecoderPlugin` in one file, and one line in `builtIn`; or, from
/// outside the module, ``register(_:)`` before the first item opens.
public struct DecoderRegistry: Sendable {
    /// The plugins, in the order they are tried.
    public let plugins: [DecoderPlugin]

    /// A registry of `plugins`.
    public init(_ plugins: [DecoderPlugin]) { self.plugins = plugins }

    /// The formats this module plays, in the order they are tried.
    static let builtIn: [DecoderPlugin] = [
        .mpg123,
        .flac,
        .vorbis,
        .opus,
        .wave,
        .aiff,
        .ffmpeg,  // last: what no dedicated decoder takes
    ]

    /// Plugins registered from outside the module, in the order they were, before the
    /// built-in ones. One instance (``shared``) is what ``standard`` holds; tests make their own.
    final class Registrations: Sendable {
        private let plugins = Lock<[DecoderPlugin]>([])

        /// Adds `plugin` (a second plugin of the same name is ignored).
        func register(_ plugin: DecoderPlugin) {
            plugins.withLock { all in
                guard !all.contains(where: { $0.name == plugin.name }) else { return }
                all.append(plugin)
            }
        }

        /// The registered plugins first (a registered format takes the bytes it matches before a
        /// built-in one), then the built-in ones.
        var registry: DecoderRegistry { DecoderRegistry(plugins.withLock { $0 } + DecoderRegistry.builtIn) }
    }

    /// The process's registrations.
    static let shared = Registrations()

    /// Every format Backline plays: the registered plugins first, then the built-in ones. What
    /// opens an item takes the registry as it is then: register at start-up.
    public static var standard: DecoderRegistry { shared.registry }

    /// Registers `plugin` in ``standard`` (a second plugin of the same name is ignored).
    public static func register(_ plugin: DecoderPlugin) { shared.register(plugin) }

    /// Every suffix a plugin claims (lower case, no dot).
    public var suffixes: Set<String> { Set(plugins.flatMap(\.suffixes)) }

    /// Whether a file named `path` would be taken by a folder walk or `add` (by its suffix: a
    /// walk does not open every file; the decoder is still chosen by content when it plays).
    public func claims(_ path: String) -> Bool {
        let ext = Path.extension(path).lowercased()
        return plugins.contains { $0.suffixes.contains(ext) }
    }

    /// The plugin for `source` (read from its start; the source is left at its start), by
    /// content, the suffix of its name breaking ties.
    /// - Throws: `MediaError` `.unsupportedFormat` with what the bytes look like.
    public func plugin(for source: any ByteSource) throws(MediaError) -> DecoderPlugin {
        try source.seek(to: 0)
        var header = try source.read(count: Sniff.headerBytes)
        // An ID3v2 tag in front (MP3, and some FLAC and WAV writers): what follows decides. A
        // stream that cannot seek still moves within what it has kept of its start.
        if let tag = ID3Scan.tagSize(header), (try? source.seek(to: tag)) != nil {
            let after = try source.read(count: Sniff.headerBytes)
            if !after.isEmpty { header = after }
        }
        try source.seek(to: 0)
        let ext = Self.suffix(of: source.name)
        // The declared type, where the name says nothing (`http://host/live`).
        let mime = source.contentType.map { $0.split(separator: ";").first.map(String.init)?.trimming(" ").lowercased() ?? "" }
        let named: (DecoderPlugin) -> Bool = { p in
            p.suffixes.contains(ext) || (!self.suffixes.contains(ext) && mime.map { p.mimeTypes.contains($0) } == true)
        }
        let matching = plugins.filter { $0.matches(header) }
        if let p = matching.first(where: named) ?? matching.first { return p }
        // Nothing recognised: an MPEG stream may start with junk (libmpg123 resyncs: an Icecast
        // mount joined mid-frame) if it is named or declared so, unless another format's magic
        // claims the bytes (an `.mp3` that is AAC says so).
        if Sniff.recognised(header) == nil, let p = plugins.first(where: { $0.name == "mpg123" && named($0) }) {
            return p
        }
        throw MediaError(.unsupportedFormat, Sniff.describe(header), item: source.name)
    }

    /// The suffix of a path or URL (a URL's query and fragment left out), lower case.
    static func suffix(of name: String) -> String {
        guard isURL(name) else { return Path.extension(name).lowercased() }
        let path = name.prefix { $0 != "?" && $0 != "#" }
        return Path.extension(String(path)).lowercased()
    }

    /// Whether `name` holds `://`, read byte by byte: String's `contains` of a string is the
    /// string-processing library's searcher, whose code a `play` would page in for this alone
    /// (some 150 KiB of resident memory).
    private static func isURL(_ name: String) -> Bool {
        var last: (UInt8, UInt8) = (0, 0)
        for b in name.utf8 {
            if b == UInt8(ascii: "/"), last == (UInt8(ascii: ":"), UInt8(ascii: "/")) { return true }
            last = (last.1, b)
        }
        return false
    }

    /// Opens a decoder for `source`, chosen by content, for an output as `options` say.
    public func open(_ source: any ByteSource, options: DecoderOptions = .stereo) throws(MediaError) -> any AudioDecoder {
        try openWithPlugin(source, options: options).decoder
    }

    /// Opens a decoder for `source`, chosen by content, and says which plugin it is.
    public func openWithPlugin(_ source: any ByteSource, options: DecoderOptions = .stereo)
        throws(MediaError) -> (plugin: DecoderPlugin, decoder: any AudioDecoder) {
        let plugin = try plugin(for: source)
        let decoder: any AudioDecoder
        do {
            decoder = try plugin.open(source, options)
        } catch {
            throw error.about(source.name)
        }
        // A format no device takes is the file's failure here, whatever the decoder read from
        // its header (fuzz findings decoder/wave-rate, decoder/ffmpeg-rate: 1.6 GHz, 707 MHz).
        let f = decoder.format
        guard (1...768_000).contains(f.rate), (1...8).contains(f.channels) else {
            throw MediaError(.unsupportedFormat, "\(f.channels) channels at \(f.rate) Hz", item: source.name)
        }
        return (plugin, decoder)
    }

    /// Opens `location` (a path or a `file:` URI, see ``InputSources``) and a decoder for it.
    public func open(path location: String, beneath root: String? = nil, options: DecoderOptions = .stereo)
        throws(MediaError) -> any AudioDecoder {
        try open(InputSources.open(location, beneath: root), options: options)
    }

    /// Tags, format and length of `source`, without decoding audio.
    public func info(_ source: any ByteSource) throws(MediaError) -> TrackInfo {
        let plugin = try plugin(for: source)
        do {
            return try plugin.info(source)
        } catch {
            throw error.about(source.name)
        }
    }

    /// Tags, format and length of `location` (a path or a `file:` URI).
    public func info(path location: String, beneath root: String? = nil) throws(MediaError) -> TrackInfo {
        try info(InputSources.open(location, beneath: root))
    }
}
