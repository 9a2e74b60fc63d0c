import Media
import MediaCore
import Platform
import Synchronization
import Locking

/// An `http://` or `https://` resource as a `ByteSource`: every decoder reads it as
/// it reads a file. libcurl runs the request on its own thread into a bounded buffer
/// (``HTTPOptions``); this side, on the decoder thread, reads from the buffer.
///
/// - A resource with a length that accepts ranges (an HTTP file) seeks with a new `Range`
///   request (the bytes already buffered ahead are used where they cover the target).
/// - A live stream (no length, or Icecast/SHOUTcast) cannot seek, but its first 64 KiB stay
///   readable again, so the decoder registry can sniff and the decoder reopen from the start.
///   When it drops it is connected again with back-off; the decoder waits meanwhile (a stall).
/// - Icecast's in-band titles (`icy-metaint`) are taken out of the audio and handed to the
///   decoder thread, by ``takeMetadataUpdate()``, when the reader has passed their place: the
///   ring marks them there, so each title changes when that audio is heard.
public final class HTTPSource: ByteSource {
    public let name: String
    public let length: Int?
    public let isSeekable: Bool
    public private(set) var position = 0
    private let options: HTTPOptions
    private var transfer: HTTPTransfer
    /// The stream's first bytes (up to `headLimit`), for reading again from the start.
    private var head: [UInt8] = []
    private static let headLimit = 65536
    /// How far into the stream the transfer has been read (what `head` covers when smaller
    /// than its limit).
    private var delivered = 0
    /// The station's tags (`icy-name`, `icy-genre`, …) and the title heard last.
    private var station = TrackMetadata()
    private var pendingUpdate: TrackMetadata?
    /// Whether the stream has no end (no length, or Icecast).
    public let isLive: Bool
    /// The response's MIME type.
    public let contentType: String?

    /// Requests `url` and waits for the response's head (after redirects), on the calling
    /// thread (the decoder's); the closure given to `register`, called from another thread, ends
    /// that wait and every later one (reads then throw).
    /// - Throws: `MediaError` (`.io`) with the reason: the HTTP status and host, an HTML page,
    ///   an HLS playlist, a connection, name or TLS failure, a timeout.
    /// - Parameters:
    ///   - url: The `http://` or `https://` URL.
    ///   - options: Buffer, timeouts, redirects and reconnects.
    ///   - register: Given the source's cancellation before it waits for the server, so a
    ///     flush can end even that wait.
    public init(url: String, options: HTTPOptions = HTTPOptions(),
                register: (@escaping @Sendable () -> Void) -> Void = { _ in }) throws(MediaError) {
        name = url
        self.options = options
        transfer = HTTPTransfer(url: url, options: options)
        canceller = Canceller(transfer)
        register { [canceller] in canceller.cancel() }
        transfer.start()
        let head = try transfer.waitForHead()
        contentType = head.contentType
        isLive = head.contentLength == nil || head.icyMetaInterval != nil
        length = isLive ? nil : (head.totalLength ?? head.contentLength)
        isSeekable = !isLive && head.acceptsRanges
        station = Self.stationTags(head)
    }

    /// Cancels the source's transfer, and any it starts later (thread-safe).
    public final class Canceller: Sendable {
        /// The transfer (held weakly: a finished source is not kept by a list of cancellations),
        /// and whether the source was cancelled (a transfer started after that is cancelled too).
        private struct State { weak var transfer: HTTPTransfer?; var cancelled = false }
        private let lock = Lock(State())
        init(_ t: HTTPTransfer) { lock.withLock { $0.transfer = t } }
        func replace(_ t: HTTPTransfer) {
            lock.withLock { s in
                s.transfer = t
                if s.cancelled { t.cancel() }
            }
        }
        /// Ends every wait of the source's transfer at once, and of any it starts later.
        public func cancel() {
            lock.withLock { s in
                s.cancelled = true
                s.transfer?.cancel()
            }
        }
    }

    private let canceller: Canceller

    deinit {
        transfer.cancel()
        parked?.transfer.cancel()
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(MediaError) -> Int {
        guard buffer.count > 0 else { return 0 }
        if let length, position >= length { return 0 }
        if position < delivered {
            if position < head.count {
                // Again from the first bytes kept.
                let n = min(buffer.count, delivered - position, head.count - position)
                head.withUnsafeBytes { h in buffer.baseAddress!.copyMemory(from: h.baseAddress! + position, byteCount: n) }
                position += n
                return n
            }
            guard isSeekable else { throw MediaError(.io, "cannot go back in a live stream", item: name) }
            restart(at: position)
        }
        if position > delivered, head.count == delivered, delivered < Self.headLimit {
            // Ahead of the transfer (back on the parked one, see `restart`), within the first
            // bytes: those passed over are kept too, for a reader that comes back to them.
            let target = position
            position = delivered
            do throws(MediaError) {
                try readOn(to: min(target, Self.headLimit))
            } catch {
                position = target
                throw error
            }
            position = target
        }
        let n = try transfer.read(at: position, into: buffer)
        if position < Self.headLimit, head.count == position {
            head.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<min(n, Self.headLimit - position)]))
            headKept.value.store(head.count, ordering: .relaxed)
        }
        position += n
        delivered = max(delivered, position)
        if let p = parked, delivered - transfer.startOffset > Self.parkedReadLimit {
            // Read on this far from where it jumped, the reader is playing here, not looking.
            p.transfer.cancel()
            parked = nil
        }
        if let block = transfer.takeMark(at: position) { take(block) }
        return n
    }

    public func seek(to offset: Int) throws(MediaError) {
        guard offset >= 0 else { throw MediaError(.io, "seek before the start", item: name) }
        if offset <= delivered && (offset < head.count || offset == delivered) {
            position = offset  // within the first bytes kept, or where the transfer is
            return
        }
        if offset > delivered, offset < delivered + transfer.buffered || !isSeekable && offset - delivered < options.bufferBytes {
            // Ahead, within what is buffered (or, in a stream, not far ahead): read up to it.
            position = delivered
            try readOn(to: offset)
            return
        }
        guard isSeekable else { throw MediaError(.io, "a live stream cannot seek", item: name) }
        position = offset  // the next read requests it (none at or past the end)
        if length.map({ offset < $0 }) ?? true { restart(at: offset) }
    }

    /// Moves the reading to `offset` of a file when what the transfer holds does not reach it:
    /// back to the parked transfer when it stands there, else a new request from `offset`
    /// (`Range`).
    ///
    /// Opening a file, decoders read a tag or an index at its end and come back (libmpg123's
    /// ID3v1 check, 128 bytes before the end; an M4A's `moov` after its audio). The transfer
    /// from the start is then parked rather than cancelled: when the reader comes back to
    /// where it stood (or within what it has buffered since), it reads on from it, and opening
    /// takes two requests where it took three or four (each a round trip, and a TLS handshake
    /// on https). Only a transfer still within the first bytes (`headLimit`) is parked, when
    /// the jump lands in the file's last `parkedReadLimit` bytes, one at a time; any other move
    /// drops it, and so does reading `parkedReadLimit` bytes from its replacement. It is taken
    /// up again only within `parkedNanos` (its connection idle meanwhile, a server may close
    /// it; a new request then serves instead). A user's seek (a fresh source, see the decoder
    /// thread) parks nothing unless it lands in the last MiB.
    private func restart(at offset: Int) {
        if let p = parked {
            parked = nil
            if offset >= p.at, offset - p.at <= p.transfer.buffered, p.transfer.isUsable,
               monotonicNanos() - p.since < Self.parkedNanos {
                transfer.cancel()
                transfer = p.transfer
                canceller.replace(transfer)
                if let observer { transfer.observe(observer) }
                delivered = p.at  // (the next read reads on to `offset`)
                return
            }
            p.transfer.cancel()
        }
        if delivered <= Self.headLimit, offset > delivered, length.map({ $0 - offset <= Self.parkedReadLimit }) == true,
           transfer.isUsable {
            transfer.stopObserving()
            parked = (transfer, delivered, monotonicNanos())
        } else {
            transfer.cancel()
        }
        transfer = HTTPTransfer(url: name, options: options, startOffset: offset)
        canceller.replace(transfer)
        if let observer { transfer.observe(observer) }
        transfer.start()
        delivered = offset
    }

    /// The transfer set aside by `restart(at:)`, where it stands (every byte before `at` was
    /// read from it), and when (monotonic ns).
    private var parked: (transfer: HTTPTransfer, at: Int, since: Int)?
    /// A jump into the file's last this many bytes parks the first transfer, which is let go
    /// once the reader has read as much from the one that replaced it (an M4A's index is
    /// rarely larger: 1 MiB is about 1.5 hours of AAC's sample table).
    private static let parkedReadLimit = 1 << 20
    /// A parked transfer is taken up again within this long (30 s), no later.
    private static let parkedNanos = 30_000_000_000

    /// The progress observer, the source's length filled in, for every transfer it starts.
    private var observer: (@Sendable (InputProgress) -> Void)?

    /// How many of the first bytes `head` holds (for the progress observer, on another thread).
    private let headKept = SharedCount()

    /// An integer shared with another thread.
    final class SharedCount: Sendable {
        let value = Atomic<Int>(0)
    }

    public func observeProgress(_ observer: @escaping @Sendable (InputProgress) -> Void) {
        let length = length
        let headKept = headKept
        let wrapped: @Sendable (InputProgress) -> Void = { p in
            var p = p
            p.length = length
            // A request from within the first bytes kept (libmpg123 reads the end for a tag,
            // then goes back): those are loaded too.
            if p.loaded.lowerBound <= headKept.value.load(ordering: .relaxed) { p.loaded = 0..<p.loaded.upperBound }
            observer(p)
        }
        self.observer = wrapped
        transfer.observe(wrapped)
    }

    public func reopened() throws(MediaError) -> any ByteSource {
        try HTTPSource(url: name, options: options)
    }

    /// A fresh request, its cancellation registered before it waits (see ``init(url:options:register:)``).
    public func reopened(register: (@escaping @Sendable () -> Void) -> Void) throws(MediaError) -> any ByteSource {
        try HTTPSource(url: name, options: options, register: register)
    }

    /// The station's tags, and the title in effect (Icecast's `StreamTitle`).
    public var metadata: TrackMetadata? { station }

    public func takeMetadataUpdate() -> TrackMetadata? {
        defer { pendingUpdate = nil }
        return pendingUpdate
    }

    /// An ICY block the reader passed: its `StreamTitle` becomes the title from here on.
    private func take(_ block: [UInt8]) {
        guard let m = Self.station(station, taking: block) else { return }
        station = m
        pendingUpdate = m
    }

    /// The station's tags after an ICY block: its `StreamTitle` as the title; nil when the
    /// block changes nothing.
    package static func station(_ station: TrackMetadata, taking block: [UInt8]) -> TrackMetadata? {
        guard let title = ICYDemuxer.fields(block).first(where: { $0.key == "StreamTitle" })?.value else { return nil }
        var m = station
        m.replaceTag(.title, with: title.isEmpty ? nil : title)
        return m == station ? nil : m
    }

    /// `icy-name` as mpd's `Name`, `icy-genre`, `icy-description` as the comment.
    package static func stationTags(_ head: ResponseHead) -> TrackMetadata {
        var m = TrackMetadata()
        if let name = head.icy["icy-name"], !name.isEmpty { m.replaceTag(.name, with: name) }
        if let genre = head.icy["icy-genre"], !genre.isEmpty { m.replaceTag(.genre, with: genre) }
        if let d = head.icy["icy-description"], !d.isEmpty { m.replaceTag(.comment, with: d) }
        if let url = head.icy["icy-url"], !url.isEmpty { m.comments.append(TagPair(name: "icy-url", value: url)) }
        if let br = head.icy["icy-br"], !br.isEmpty { m.comments.append(TagPair(name: "icy-br", value: br)) }
        return m
    }
}

extension TrackMetadata {
    /// Sets `key`'s one value (nil: none), keeping the single fields in step.
    /// The value is fixed as every tag value is (``TrackMetadata/addTag(_:_:)``: a control
    /// character a server sends, a newline in a `StreamTitle`, becomes a space), so that it can
    /// never split a protocol line.
    mutating func replaceTag(_ key: TagKey, with value: String?) {
        tags.removeAll { $0.key == key }
        if let value { addTag(key, value) }
        let fixed = tags.last { $0.key == key }?.value
        switch key {
        case .title: title = fixed
        case .genre: genre = fixed
        default: break
        }
    }
}
