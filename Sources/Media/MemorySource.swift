import MediaCore

/// A `ByteSource` over bytes in memory: a file already read, or a test's bytes. Seekable, with
/// no descriptor (the decoders read it through `read(into:)`, as they read a network stream).
public final class MemorySource: ByteSource {
    /// The name errors and logs give the item.
    public let name: String
    /// The bytes.
    public let bytes: [UInt8]
    /// The offset of the next byte read.
    public private(set) var position = 0
    public var length: Int? { bytes.count }
    public var isSeekable: Bool { true }

    /// A source named `name` over `bytes`.
    public init(name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(MediaError) -> Int {
        let n = min(buffer.count, bytes.count - position)
        guard n > 0 else { return 0 }
        bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + position, byteCount: n) }
        position += n
        return n
    }

    /// Moves to `offset` (past the end: at the end). A negative offset is an I/O error.
    public func seek(to offset: Int) throws(MediaError) {
        guard offset >= 0 else { throw MediaError(.io, "seek to \(offset)", item: name) }
        position = min(offset, bytes.count)
    }

    public func reopened() throws(MediaError) -> any ByteSource { MemorySource(name: name, bytes: bytes) }
}
