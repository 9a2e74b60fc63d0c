import MediaCore

/// A source and the error a C library's read callback met (the library only sees -1 or 0).
final class SourceBox {
    let source: any ByteSource
    var error: MediaError?
    /// For a source that cannot seek, when asked for: its last bytes read, so that a library
    /// can step back over what it has just read (libmpg123 reads the header after a frame's end
    /// and goes back, to check a header before it believes it).
    private var window: Lookback?

    /// `lookback`: keep that many of the last bytes read from a source that cannot seek, and
    /// answer seeks within them (and forward, by reading on); 0: seeks go to the source.
    init(_ source: any ByteSource, lookback: Int = 0) {
        self.source = source
        if lookback > 0 && !source.isSeekable { window = Lookback(capacity: lookback, at: source.position) }
    }

    /// Whether seeks are answered from the kept bytes (the source itself cannot seek).
    var looksBack: Bool { window != nil }

    static func from(_ p: UnsafeMutableRawPointer?) -> SourceBox { Unmanaged<SourceBox>.fromOpaque(p!).takeUnretainedValue() }

    /// Starts again from the source's position (after the caller moved it): nothing kept.
    func restart() {
        if let w = window { window = Lookback(capacity: w.capacity, at: source.position) }
    }

    /// Reads into `buffer`; -1 (with ``error`` set) on failure.
    func read(_ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        guard let buffer, count > 0 else { return 0 }
        let into = UnsafeMutableRawBufferPointer(start: buffer, count: count)
        do {
            guard window != nil else { return try source.read(into: into) }
            if let n = window!.replay(into: into) { return n }
            let n = try source.read(into: into)
            window!.keep(UnsafeRawBufferPointer(rebasing: into[..<n]))
            return n
        } catch {
            self.error = error
            return -1
        }
    }

    /// `lseek` semantics; -1 when the source cannot.
    func seek(_ offset: Int64, _ whence: Int32) -> Int64 {
        if window != nil { return seekWithin(offset, whence) }
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

    /// A seek in a source that cannot: back within the kept bytes, or forward by reading on
    /// (to the end of the stream at most, where the position stops). From the end: -1, as the
    /// stream has no known length (no error: the library only asks).
    private func seekWithin(_ offset: Int64, _ whence: Int32) -> Int64 {
        let target: Int
        switch whence {
        case 0: target = Int(offset)
        case 1: target = window!.position + Int(offset)
        default: return -1
        }
        // Before the kept bytes: refused (libmpg123 reports that itself; no error of ours,
        // which would be taken for the cause of a later failure).
        if target < window!.oldest { return -1 }
        do {
            while target > window!.newest {
                let n = try window!.fetch(from: source, upTo: target - window!.newest)
                if n == 0 { break }
            }
        } catch {
            self.error = error
            return -1
        }
        window!.position = min(target, window!.newest)
        return Int64(window!.position)
    }
}

/// The last bytes read from a stream, in a ring, and a read position that can be among them.
/// Offsets count from the stream's start.
struct Lookback {
    let capacity: Int
    private var ring: [UInt8]
    /// The offset just past the newest byte read from the source.
    private(set) var newest: Int
    /// How many bytes before ``newest`` are kept.
    private var kept = 0
    /// The offset of the next byte to deliver: at ``newest``, or among the kept bytes.
    var position: Int

    init(capacity: Int, at offset: Int) {
        self.capacity = capacity
        ring = [UInt8](repeating: 0, count: capacity)
        newest = offset
        position = offset
    }

    /// The offset of the oldest byte kept.
    var oldest: Int { newest - kept }

    /// Delivers kept bytes from ``position`` into `buffer`; nil when the position is at the
    /// newest byte (the next bytes come from the source).
    mutating func replay(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        guard position < newest else { return nil }
        let n = min(buffer.count, newest - position)
        copy(from: position, count: n, into: buffer.baseAddress!)
        position += n
        return n
    }

    /// Keeps `bytes`, just read from the source at ``newest`` (the position moves past them).
    mutating func keep(_ bytes: UnsafeRawBufferPointer) {
        let tail = bytes.count > capacity ? UnsafeRawBufferPointer(rebasing: bytes[(bytes.count - capacity)...]) : bytes
        ring.withUnsafeMutableBytes { r in
            Self.spans(from: newest + bytes.count - tail.count, count: tail.count, capacity: capacity) { at, done, n in
                r.baseAddress!.advanced(by: at).copyMemory(from: tail.baseAddress!.advanced(by: done), byteCount: n)
            }
        }
        newest += bytes.count
        kept = min(capacity, kept + bytes.count)
        position = newest
    }

    /// Reads up to `count` bytes on from `source` (at most a ring's worth), keeping them;
    /// 0 at the stream's end.
    mutating func fetch(from source: any ByteSource, upTo count: Int) throws(MediaError) -> Int {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: min(count, capacity, 4096), alignment: 1)
        defer { chunk.deallocate() }
        let n = try source.read(into: chunk)
        keep(UnsafeRawBufferPointer(rebasing: chunk[..<n]))
        return n
    }

    private func copy(from offset: Int, count: Int, into dst: UnsafeMutableRawPointer) {
        ring.withUnsafeBytes { r in
            Self.spans(from: offset, count: count, capacity: capacity) { at, done, n in
                dst.advanced(by: done).copyMemory(from: r.baseAddress!.advanced(by: at), byteCount: n)
            }
        }
    }

    /// The ring's contiguous pieces holding `count` bytes from stream offset `offset`: `body`
    /// gets each piece's index in the ring, how many bytes came before it, and its length.
    private static func spans(from offset: Int, count: Int, capacity: Int, _ body: (Int, Int, Int) -> Void) {
        var at = offset % capacity
        var done = 0
        while done < count {
            let n = min(count - done, capacity - at)
            body(at, done, n)
            done += n
            at = (at + n) % capacity
        }
    }
}
