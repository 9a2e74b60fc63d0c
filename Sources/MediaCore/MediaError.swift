/// The one error type of every byte source, decoder and output: what failed, for which item,
/// and (when a C library said so) the library and its code.
///
/// ``description`` is for people and never a library's internal wording alone:
/// `t.m4a: unsupported format: MPEG-4 audio (AAC)`, `a.flac: corrupt data: lost sync (libFLAC)`.
public struct MediaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure.
    ///
    /// Cases may be added in a minor version: `switch` over it with a `default:` case, as over
    /// Apple's non-frozen enums.
    public enum Kind: String, Sendable, Equatable {
        /// The content is not a format any decoder plays (or a variant one does not).
        case unsupportedFormat = "unsupported format"
        /// The data is broken: a decoder could not make sense of it.
        case corrupt = "corrupt data"
        /// Reading failed (missing file, permissions, not a regular file, a network error).
        case io = "cannot read"
        /// The data ends before its headers said it would.
        case truncated = "truncated"
        /// The audio device failed.
        case device = "device"
    }

    /// What kind of failure.
    public var kind: Kind
    /// What went wrong, for people (`no such file`, `MPEG-4 audio (AAC)`).
    public var message: String
    /// The C library that reported it (`libmpg123`, `libFLAC`, `ALSA`), when one did.
    public var library: String?
    /// That library's error code (0 when none).
    public var code: Int32
    /// The item: a path or URL (empty when not about one item).
    public var item: String

    /// An error of `kind` about `item`.
    /// - Parameters:
    ///   - kind: What kind of failure.
    ///   - message: What went wrong, for people.
    ///   - library: The C library that reported it.
    ///   - code: That library's code.
    ///   - item: The path or URL.
    public init(_ kind: Kind, _ message: String, library: String? = nil, code: Int32 = 0, item: String = "") {
        self.kind = kind
        self.message = message
        self.library = library
        self.code = code
        self.item = item
    }

    /// The same error about `item`.
    public func about(_ item: String) -> MediaError {
        var e = self
        e.item = item
        return e
    }

    /// The reason alone (`unsupported format: MPEG-4 audio (AAC)`, `truncated: it ends after
    /// 1152 of 44100 frames`), with the library and code when there is one.
    public var reason: String {
        let what = kind == .io || kind == .device ? message : "\(kind.rawValue): \(message)"
        guard let library else { return what }
        return code != 0 ? "\(what) (\(library) code \(code))" : "\(what) (\(library))"
    }

    /// The item and the reason, for people.
    public var description: String { item.isEmpty ? reason : "\(item): \(reason)" }
}
