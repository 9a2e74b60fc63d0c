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
    /// The transfer read from now. Its window (``HTTPTransfer/window``) says where it stands:
    /// every byte before `next` has been read from it or dropped.
    private var transfer: HTTPTransfer
    /// The resource's first bytes (up to `headLimit`), always a prefix of it: a reader that
    /// goes back to them (the decoder registry's sniff, a decoder opening again from the start,
    /// libmpg123 coming back from its ID3v1 look) reads them here, with no request.
    private var head: [UInt8] = []
    /// How many first bytes are kept: 64 KiB; all of a file up to
    /// ``HTTPOptions/wholeFileLimit`` from a server without ranges, which could not be read
    /// again otherwise (an M4A whose `moov` comes after its audio is read at its end first,
    /// then from the start); a larger one plays only where its decoder reads it front to back.
    private let headLimit: Int
    private static let firstBytes = 65536
    /// Whether all of the file is kept in `head`: a file from a server without ranges whose
    /// length is at most `headLimit` (up to ``HTTPOptions/wholeFileLimit``, or within the first
    /// bytes kept of every file where that limit is smaller). It seeks anywhere: back within
    /// what it keeps, on by reading.
    private let keptWhole: Bool
    /// The station's tags (`icy-name`, `icy-genre`, …) and the title heard last.
    private var station = TrackMetadata()
    private var pendingUpdate: TrackMetadata?
    /// Whether the stream has no end (no length, or Icecast).
    public let isLive: Bool
    /// Whether the server answers `Range` requests (a file whose response says
    /// `Accept-Ranges: bytes`): a seek may then start a new request.
    private let rangesServed: Bool
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
        rangesServed = !isLive && head.acceptsRanges
        headLimit = if !isLive && !rangesServed, let length, length <= options.wholeFileLimit { length } else { Self.firstBytes }
        keptWhole = !isLive && !rangesServed && (length ?? .max) <= headLimit
        isSeekable = rangesServed || keptWhole
        self.head.reserveCapacity(headLimit)
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

    /// Reads at ``position``: from the first bytes kept when it lies among them, else from a
    /// transfer that stands at or before it (`moveTransfer(to:)` finds or starts one).
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(MediaError) -> Int {
        guard buffer.count > 0 else { return 0 }
        if let length, position >= length { return 0 }
        if position < head.count {
            let n = min(buffer.count, head.count - position)
            head.withUnsafeBytes { h in buffer.baseAddress!.copyMemory(from: h.baseAddress! + position, byteCount: n) }
            position += n
            return n
        }
        try moveTransfer(to: position)
        if position > head.count, head.count < headLimit, transfer.window.next == head.count {
            // The transfer stands at the end of the first bytes kept (a reader coming back to
            // the parked transfer, or a live stream read on): those it passes over are kept, as
            // a read at the end of them keeps what it reads.
            let target = position
            position = head.count
            defer { position = target }
            try readOn(to: min(target, headLimit))
        }
        let n = try transfer.read(at: position, into: buffer)
        if position == head.count, head.count < headLimit {
            appendHead(UnsafeRawBufferPointer(rebasing: buffer[..<min(n, headLimit - head.count)]))
        }
        position += n
        if let p = parked, position - transfer.startOffset > Self.parkedReadLimit || monotonicNanos() - p.since >= Self.parkedNanos {
            // Read on this far from where it jumped, the reader is playing here, not looking;
            // or it has waited too long for its idle connection to be trusted.
            p.transfer.cancel()
            parked = nil
        }
        if let block = transfer.takeMark(at: position) { take(block) }
        return n
    }

    /// Moves ``position``. Nothing is requested here: the next read finds the bytes (so a
    /// decoder's several seeks in a row cost one request at most).
    /// - Throws: Where the source cannot seek (a live stream, a server without ranges): before
    ///   the first bytes' end and behind the transfer, or more than a buffer ahead of it (a file
    ///   kept whole reads on to anywhere).
    public func seek(to offset: Int) throws(MediaError) {
        guard offset >= 0 else { throw MediaError(.io, "seek before the start", item: name) }
        if !rangesServed && offset >= head.count {
            // Only forward, reading on (and not past a buffer's worth: a stream read on that
            // far would stall the decoder for as long as it takes to arrive).
            let next = transfer.window.next
            guard offset >= next && (offset - next <= options.bufferBytes || keptWhole) else {
                throw MediaError(.io, isLive ? "a live stream cannot seek" : "\(HTTPTransfer.host(name)) does not serve ranges: cannot seek", item: name)
            }
        }
        position = offset
    }

    /// Makes ``transfer`` one that stands at or before `offset`, close enough to read on to it.
    ///
    /// - The current transfer serves when `offset` lies within what it holds ahead (where the
    ///   server has no ranges, it always reads on).
    /// - Else the parked transfer, when it stands there (see below).
    /// - Else a new request from `offset` (`Range`).
    ///
    /// Opening a file, decoders read a tag or an index at its end and come back (libmpg123's
    /// ID3v1 check, 128 bytes before the end; an M4A's `moov` after its audio; opusfile's last
    /// page). The transfer from the start is then parked rather than cancelled: when the
    /// reader comes back to where it stood (or within what it has buffered since), it reads on
    /// from it, and opening takes two requests where it took three or four (each a round trip,
    /// and a TLS handshake on https). Only a transfer still within the first bytes
    /// (`firstBytes`) is parked, when the jump lands in the file's last `parkedReadLimit` bytes,
    /// one at a time; any other move drops it, and so does reading `parkedReadLimit` bytes
    /// from its replacement. It is taken up again only within `parkedNanos` (its connection
    /// idle meanwhile, a server may close it; a new request then serves instead).
    private func moveTransfer(to offset: Int) throws(MediaError) {
        let current = transfer.window
        if offset >= current.next && (offset - current.next <= current.buffered || !rangesServed) { return }
        if let p = parked {
            parked = nil
            let w = p.transfer.window
            if offset >= w.next, offset - w.next <= w.buffered, p.transfer.isUsable,
               monotonicNanos() - p.since < Self.parkedNanos {
                transfer.cancel()
                use(p.transfer)
                return
            }
            p.transfer.cancel()
        }
        guard rangesServed else {
            throw MediaError(.io, isLive ? "cannot go back in a live stream" : "\(HTTPTransfer.host(name)) does not serve ranges: cannot go back", item: name)
        }
        if current.next <= Self.firstBytes, offset > current.next, length.map({ $0 - offset <= Self.parkedReadLimit }) == true,
           transfer.isUsable {
            transfer.stopObserving()
            parked = (transfer, monotonicNanos())
        } else {
            transfer.cancel()
        }
        let next = HTTPTransfer(url: name, options: options, startOffset: offset)
        use(next)
        next.start()
    }

    private func appendHead(_ bytes: UnsafeRawBufferPointer) {
        head.append(contentsOf: bytes)
        headKept.value.store(head.count, ordering: .relaxed)
    }

    /// Reads from `t` from now on: it is the one a cancellation ends, and the one observed.
    private func use(_ t: HTTPTransfer) {
        transfer = t
        canceller.replace(t)
        if let observer { t.observe(observer) }
    }

    /// The transfer set aside by ``moveTransfer(to:)``, and when (monotonic ns).
    private var parked: (transfer: HTTPTransfer, since: Int)?
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
