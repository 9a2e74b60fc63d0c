import MediaCore

/// A source and the error a C library's read callback met (the library only sees -1 or 0).
final class SourceBox {
    let source: any ByteSource
    var error: MediaError?
    init(_ source: any ByteSource) { self.source = source }

    static func from(_ p: UnsafeMutableRawPointer?) -> SourceBox { Unmanaged<SourceBox>.fromOpaque(p!).takeUnretainedValue() }

    /// Reads into `buffer`; -1 (with ``error`` set) on failure.
    func read(_ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        guard let buffer, count > 0 else { return 0 }
        do { return try source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: count)) } catch {
            self.error = error
            return -1
        }
    }

    /// `lseek` semantics; -1 when the source cannot.
    func seek(_ offset: Int64, _ whence: Int32) -> Int64 {
        guard source.isSeekable else { return -1 }
        let target: Int
        switch whence {
        case 0: target = Int(offset)
        case 1: target = source.position + Int(offset)
        case 2:
            guard let n = source.length else { return -1 }
            target = n + Int(offset)
        default: return -1
        }
        do {
            try source.seek(to: target)
            return Int64(target)
        } catch {
            self.error = error
            return -1
        }
    }
}
