/// Sequential reads of integers (in one byte order) and byte runs from a header's bytes; nil
/// past the end.
struct ByteReader {
    private var data: ArraySlice<UInt8>
    let bigEndian: Bool

    init(_ data: ArraySlice<UInt8>, bigEndian: Bool) {
        self.data = data
        self.bigEndian = bigEndian
    }

    /// The next `T.bitWidth / 8` bytes as an integer.
    mutating func integer<T: FixedWidthInteger & UnsignedInteger>(_: T.Type = T.self) -> T? {
        guard let b = bytes(T.bitWidth / 8) else { return nil }
        let ordered = bigEndian ? Array(b) : b.reversed()
        return ordered.reduce(T.zero) { $0 << 8 | T($1) }
    }

    mutating func u16() -> UInt16? { integer() }
    mutating func u32() -> UInt32? { integer() }

    mutating func bytes(_ n: Int) -> ArraySlice<UInt8>? {
        guard n >= 0, data.count >= n else { return nil }
        defer { data = data.dropFirst(n) }
        return data.prefix(n)
    }

    mutating func skip(_ n: Int) -> Bool { bytes(n) != nil }
}
