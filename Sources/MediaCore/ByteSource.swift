/// Where a decoder's bytes come from: a regular file today, an HTTP stream next. Decoders read
/// only through this, so every format plays from any source.
///
/// Not thread-safe: a source belongs to the one decoder (and thread) reading it.
public protocol ByteSource: AnyObject {
    /// The item's name for errors and logs: a path or a URL.
    var name: String { get }
    /// The length in bytes, when known.
    var length: Int? { get }
    /// Whether ``seek(to:)`` works (a file; an HTTP resource with ranges).
    var isSeekable: Bool { get }
    /// The offset of the next byte ``read(into:)`` returns.
    var position: Int { get }
    /// Reads up to `buffer.count` bytes; returns how many (0 only at the end).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(MediaError) -> Int
    /// Moves to `offset` from the start.
    func seek(to offset: Int) throws(MediaError)
    /// A fresh reader of the same bytes, from the start (a file: the same open file, even when
    /// deleted or replaced since; a stream: a new request).
    func reopened() throws(MediaError) -> any ByteSource
    /// The same, for a source that may wait on a network: it gives `register` a way to end its
    /// waits, from any thread, before it first waits (a flush then never waits for a server).
    func reopened(register: (@escaping @Sendable () -> Void) -> Void) throws(MediaError) -> any ByteSource
    /// A regular file's open descriptor, for a library that reads a file itself more cheaply
    /// than through callbacks (libmpg123's per-frame reads); nil for every other source, which
    /// such a library then reads through ``read(into:)`` as usual. The library may move the
    /// descriptor's offset: a source that offers it reads with positioned reads.
    var fileDescriptor: Int32? { get }
    /// Whether it is a live stream: no end and no length (an Icecast mount), so the item's
    /// duration is indefinite and it cannot seek.
    var isLive: Bool { get }
    /// Tags the source itself carries (an Icecast station's name, genre and title heard now),
    /// merged over the decoder's; nil when it carries none.
    var metadata: TrackMetadata? { get }
    /// Tags that take effect at the next byte ``read(into:)`` returns (an Icecast title), taken
    /// once: the decoder thread asks after every block, as ``AudioDecoder/takeMetadataUpdate()``.
    func takeMetadataUpdate() -> TrackMetadata?
    /// Reports what a source reading from a network holds: `observer` is called (on any
    /// thread, under the source's own lock: it must only store the values) when its reader
    /// starts or stops waiting for bytes, and as bytes arrive (at most ten times a second).
    /// A file never waits: the default does nothing.
    func observeProgress(_ observer: @escaping @Sendable (InputProgress) -> Void)
    /// The MIME type the source declares (an HTTP `Content-Type`, parameters dropped), or nil.
    /// The decoder registry reads it where the name has no suffix it knows (`/live`).
    var contentType: String? { get }
}

/// What a network source holds (``ByteSource/observeProgress(_:)``): AVPlayerItem's
/// `isPlaybackBufferEmpty` and `loadedTimeRanges` come from it.
public struct InputProgress: Sendable, Equatable {
    /// The reader waits for bytes now (the network is behind the decoder).
    public var waiting: Bool
    /// The bytes of the resource received by the current request: from where it started (0,
    /// or a seek's `Range`) to the last byte received.
    public var loaded: Range<Int>
    /// The resource's length in bytes, nil when unknown (a live stream).
    public var length: Int?

    /// A report.
    /// - Parameters:
    ///   - waiting: Whether the reader waits for bytes now.
    ///   - loaded: The bytes received by the current request.
    ///   - length: The resource's length, if known.
    public init(waiting: Bool, loaded: Range<Int>, length: Int?) {
        self.waiting = waiting
        self.loaded = loaded
        self.length = length
    }
}

extension ByteSource {
    /// No descriptor: read through ``read(into:)``.
    public var fileDescriptor: Int32? { nil }
    /// A file: it ends.
    public var isLive: Bool { false }
    /// No tags of its own.
    public var metadata: TrackMetadata? { nil }
    /// No tags of its own change.
    public func takeMetadataUpdate() -> TrackMetadata? { nil }
    /// Never waits on a network: nothing to report.
    public func observeProgress(_ observer: @escaping @Sendable (InputProgress) -> Void) {}
    /// No declared type: the name's suffix and the content decide.
    public var contentType: String? { nil }
    /// Never waits on a network: as ``reopened()``.
    public func reopened(register: (@escaping @Sendable () -> Void) -> Void) throws(MediaError) -> any ByteSource { try reopened() }

    /// Reads on from ``position``, discarding, until it reaches `offset` or the source ends: a
    /// seek forward where the source cannot seek.
    public func readOn(to offset: Int) throws(MediaError) {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16384, alignment: 8)
        defer { scratch.deallocate() }
        while position < offset {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: scratch[..<min(offset - position, scratch.count)]))
            if n == 0 { break }
        }
    }

    /// Reads until `buffer` is full or the source ends; returns the bytes read.
    public func readFully(into buffer: UnsafeMutableRawBufferPointer) throws(MediaError) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]))
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Up to `count` bytes from the current position (fewer at the end).
    public func read(count: Int) throws(MediaError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let n = try bytes.withUnsafeMutableBytes { raw in Result { () throws(MediaError) in try readFully(into: raw) } }.get()
        bytes.removeLast(count - n)
        return bytes
    }

    /// Exactly `count` bytes at `offset` (seeking there), or nil when the source is shorter or
    /// cannot seek there.
    public func read(count: Int, at offset: Int) -> [UInt8]? {
        guard (try? seek(to: offset)) != nil, let bytes = try? read(count: count), bytes.count == count else { return nil }
        return bytes
    }
}
