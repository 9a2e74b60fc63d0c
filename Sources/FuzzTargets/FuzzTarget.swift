/// One parser of untrusted bytes, as a function libFuzzer can drive (`scripts/fuzz`) and the
/// test suite replays (every committed seed and finding, `Tests/FuzzCorpus/<name>/`).
///
/// A target checks invariants, not only that nothing crashes: what it parses round-trips through
/// its writer, what it loads re-saves identically, what it reports stays in range. A broken
/// invariant is thrown as an ``InvariantFailure``; a crash is a crash.
public struct FuzzTarget: Sendable {
    /// The name `scripts/fuzz` takes and the corpus directory's.
    public let name: String
    /// What it feeds and what it checks (`scripts/fuzz --list`).
    public let summary: String
    /// Runs one input.
    public let run: @Sendable (_ input: [UInt8]) throws(InvariantFailure) -> Void
    /// Makes what every input shares (a daemon core), once, before the first input: what it
    /// allocates then is not taken for a leak of that input.
    public let prepare: @Sendable () -> Void

    /// A target.
    public init(_ name: String, _ summary: String, prepare: @escaping @Sendable () -> Void = {},
                run: @escaping @Sendable (_ input: [UInt8]) throws(InvariantFailure) -> Void) {
        self.name = name
        self.summary = summary
        self.prepare = prepare
        self.run = run
    }
}

/// A broken invariant: what was expected, and what was found.
public struct InvariantFailure: Error, CustomStringConvertible, Sendable {
    /// The target's name.
    public let target: String
    /// What went wrong.
    public let message: String
    /// A failure of `target`.
    public init(_ target: String, _ message: String) {
        self.target = target
        self.message = message
    }
    public var description: String { "\(target): \(message)" }
}

/// Every target, by name.
public enum FuzzTargets {
    /// All of them, in `--list` order.
    public static let all: [FuzzTarget] = [
        ProtocolTargets.json,
        ProtocolTargets.jsonRequest,
        ProtocolTargets.mpdRequest,
        WebTargets.httpRequest,
        WebTargets.webSocket,
        LibraryTargets.filter,
        LibraryTargets.playlist,
        StoreTargets.state,
        StoreTargets.config,
        StreamTargets.icy,
        StreamTargets.icyHeaders,
        TagTargets.id3,
        TagTargets.vorbisComments,
        TagTargets.flacPicture,
        DecoderTargets.decoder,
    ]

    /// The target named `name`.
    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// Throws unless `condition` holds.
@inline(__always)
func check(_ condition: Bool, _ target: String, _ message: @autoclosure () -> String) throws(InvariantFailure) {
    if !condition { throw InvariantFailure(target, message()) }
}

/// `bytes` as text shown in a failure: printable ASCII as it is, the rest escaped, at most 200 bytes.
func shown(_ s: String) -> String {
    var out = ""
    for b in s.utf8.prefix(200) {
        out += (0x20..<0x7F).contains(b) && b != 0x5C ? String(UnicodeScalar(b)) : "\\x" + String(b, radix: 16)
    }
    return s.utf8.count > 200 ? out + "…" : out
}
