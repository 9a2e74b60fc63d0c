/// Icecast/SHOUTcast in-band metadata (`icy-metaint`): every `interval` bytes of audio, one
/// length byte L, then L × 16 bytes of `StreamTitle='…';StreamUrl='…';` padded with NULs.
///
/// Fed the response body in whatever pieces the network gives; hands back the audio bytes and,
/// at the audio offset where each block sat, the block's text.
public struct ICYDemuxer: Sendable {
    /// Audio bytes between two metadata blocks.
    public let interval: Int
    /// Audio bytes left before the next block.
    private var untilBlock: Int
    /// Inside a block: its length once read, and the bytes so far.
    private var blockLength: Int?
    private var block: [UInt8] = []

    /// The smallest `icy-metaint` taken, bytes: a stream that asks for metadata more often is
    /// refused. Servers use 8192 (SHOUTcast) or 16000 (Icecast); a tiny interval is only a way
    /// to make a listener work (`icy-metaint: 1` with a 4,080-byte title after every audio byte
    /// took a core and 2 GB), and 1024 is an eighth of the smallest in use.
    public static let minimumInterval = 1024

    /// A demuxer for `icy-metaint: interval` (> 0).
    public init(interval: Int) {
        self.interval = interval
        untilBlock = interval
    }

    /// One piece of the body: calls `audio` with each run of audio bytes and `metadata` with
    /// each non-empty block's raw bytes (trailing NULs removed), in stream order.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, audio: (UnsafeRawBufferPointer) -> Void, metadata: ([UInt8]) -> Void) {
        var i = 0
        while i < bytes.count {
            if let length = blockLength {
                let n = min(length - block.count, bytes.count - i)
                block.append(contentsOf: bytes[i..<(i + n)])
                i += n
                if block.count == length {
                    var text = block
                    while text.last == 0 { text.removeLast() }
                    if !text.isEmpty { metadata(text) }
                    block.removeAll(keepingCapacity: true)
                    blockLength = nil
                    untilBlock = interval
                }
            } else if untilBlock == 0 {
                let length = Int(bytes[i]) * 16
                i += 1
                if length == 0 { untilBlock = interval } else { blockLength = length }
            } else {
                let n = min(untilBlock, bytes.count - i)
                audio(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + n)]))
                untilBlock -= n
                i += n
            }
        }
    }

    /// The fields of a metadata block: `StreamTitle='Artist - Title';StreamUrl='…';` → the
    /// pairs, values decoded as UTF-8, or as Latin-1 where they are not valid UTF-8 (older
    /// SHOUTcast servers). A quote inside a value is kept: a field ends at `';` only.
    public static func fields(_ block: [UInt8]) -> [(key: String, value: String)] {
        var out: [(String, String)] = []
        var rest = block[...]
        while let eq = rest.firstIndex(of: UInt8(ascii: "=")) {
            let key = String(decoding: rest[..<eq], as: UTF8.self).trimmingCharacters(in: " ;\r\n")
            var valueStart = rest.index(after: eq)
            guard valueStart < rest.endIndex, rest[valueStart] == UInt8(ascii: "'") else { break }
            valueStart += 1
            // The value runs to the next `';` (or to the end).
            var end = rest.endIndex
            var j = valueStart
            while j < rest.endIndex {
                if rest[j] == UInt8(ascii: "'"), j + 1 == rest.endIndex || rest[j + 1] == UInt8(ascii: ";") { end = j; break }
                j += 1
            }
            out.append((key, text(rest[valueStart..<end])))
            rest = end < rest.endIndex ? rest[min(rest.endIndex, end + 2)...] : rest[rest.endIndex...]
        }
        return out
    }

    /// `bytes` as UTF-8 when valid, else as Latin-1.
    static func text(_ bytes: ArraySlice<UInt8>) -> String {
        if let s = String(validating: bytes, as: UTF8.self) { return s }
        return String(bytes.map { Character(Unicode.Scalar($0)) })
    }
}

/// The ICY blocks not yet reached by the reader, each at the audio offset where it sat, at most
/// ``capacity`` of them: past that, the oldest goes (the newest wins: the title heard a moment
/// later is the one that counts). Blocks are at most 4,080 bytes, so this holds at most
/// ``capacity`` × 4,080 bytes whatever a server sends while nobody reads.
package struct ICYMarks: Sendable {
    /// Blocks kept at once. A 512 KiB network buffer holds 32 of Icecast's 16000-byte intervals.
    package static let capacity = 64
    private var marks: [(offset: Int, block: [UInt8])] = []

    package init() {}

    /// How many are kept.
    package var count: Int { marks.count }
    /// The bytes of the blocks kept.
    package var bytes: Int { marks.reduce(0) { $0 + $1.block.count } }
    /// The offset of the next one.
    package var nextOffset: Int? { marks.first?.offset }

    /// Keeps `block`, at audio offset `offset` (not before the last one's); the oldest goes
    /// when ``capacity`` are kept already.
    package mutating func add(_ block: [UInt8], at offset: Int) {
        if marks.count == Self.capacity { marks.removeFirst() }
        marks.append((offset, block))
    }

    /// The last block at or before `offset`, once; those before it go too.
    package mutating func take(through offset: Int) -> [UInt8]? {
        let passed = marks.prefix { $0.offset <= offset }.count
        guard passed > 0 else { return nil }
        let last = marks[passed - 1].block
        marks.removeFirst(passed)
        return last
    }
}

extension String {
    /// Without the characters of `set` at either end.
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
