import MediaCore

/// Which items have their long silences shortened (``PlaybackEngine/silenceTrimming``).
public enum SilenceTrimMode: UInt8, Sendable, CaseIterable {
    /// None (the default): every item as decoded.
    case off = 0
    /// Spoken word (MediaCore's `SpokenWord`: a podcast's or audiobook's genre, an `.m4b`).
    case spoken = 1
    /// Every item but live streams.
    case all = 2
}

/// How silences are shortened in the items ``PlaybackEngine/silenceTrimming`` takes: a run
/// of frames whose every sample is below ``threshold`` that lasts longer than ``kept`` is cut
/// to its first and last ``kept``/2 (so a word's quiet start and end, below the threshold, are
/// never cut, and a pause still sounds like one).
public struct SilenceTrimming: Sendable, Equatable {
    /// A sample below this (absolute, of full scale 1) is silent: −50 dBFS.
    public var threshold: Float = 0.003_162
    /// What is left of a long silence, seconds.
    public var kept: Double = 0.3

    public init(threshold: Float = 0.003_162, kept: Double = 0.3) {
        (self.threshold, self.kept) = (threshold, kept)
    }
}

/// An item's decoder with its long silences shortened (``SilenceTrimming``): what the decoder
/// thread writes into the ring for an item that trims silence. It wraps the item's decoder (a
/// ``StretchingDecoder`` too, at another rate), reads a block into its own buffer, and gives out
/// what is kept; each call ends at a cut, so the decoder thread places a marker at the ring
/// position where the audio after the cut starts (``takeCut()``: the content frame heard
/// there). The position thus stays content time: it jumps over what was cut.
final class SilenceTrimmingDecoder: AudioDecoder {
    let inner: any AudioDecoder
    /// Content frames per frame of `inner` (its stretch; 1 when not stretched).
    private let speed: Double
    /// The content frame of `inner`'s first frame (since it was opened, or last sought).
    private var firstFrame: Int
    private let threshold: Float
    /// Frames of a silence kept at its start and at its end.
    private let head: Int, tail: Int
    private let channels: Int
    /// One inner block, decoded here.
    private let scratch: UnsafeMutableRawBufferPointer
    /// Samples kept, waiting to be given out (interleaved), and the cuts among them.
    private var pending: [Float] = []
    /// Each cut: the frame of `pending` where the audio after it starts, and its content frame.
    private var cuts: [(frame: Int, content: Int)] = []
    /// A silence's last `tail` frames while it lasts: a circular buffer, `heldFrames` of them
    /// from frame `heldFirst` of it; the first of them is `inner`'s frame `heldStart`.
    private var held: [Float]
    private var heldFirst = 0, heldFrames = 0
    private var heldStart = 0
    /// Frames of the current silence so far, and frames of `inner` read so far.
    private var silent = 0
    private var read = 0
    /// Frames of the current silence dropped so far.
    private var dropped = 0
    private var inputDone = false
    /// The content frame heard after the cut the last call ended at (``takeCut()``).
    private var reached: Int?

    init(_ inner: any AudioDecoder, trimming: SilenceTrimming, speed: Double, firstFrame: Int) {
        self.inner = inner
        self.speed = speed
        self.firstFrame = firstFrame
        threshold = trimming.threshold
        channels = inner.format.channels
        let keep = max(2, Int(trimming.kept * Double(inner.format.rate)))
        head = keep / 2
        tail = keep - keep / 2
        scratch = .allocate(byteCount: max(inner.minimumRoom, 4096 * inner.format.bytesPerFrame), alignment: 16)
        pending.reserveCapacity(8192 * channels)
        held = [Float](repeating: 0, count: tail * channels)
    }

    deinit { scratch.deallocate() }

    var source: any ByteSource { inner.source }
    var format: StreamFormat { inner.format }
    var encoding: SampleEncoding { inner.encoding }
    var sourceChannels: Int { inner.sourceChannels }
    var formatName: String? { inner.formatName }
    /// Unknown: it depends on the silences still ahead.
    var lengthFrames: Int? { nil }
    var lengthAccuracy: LengthAccuracy { inner.lengthAccuracy }
    var metadata: TrackMetadata { inner.metadata }
    var minimumRoom: Int { inner.minimumRoom }
    var bitrate: Int? { inner.bitrate }
    func takeMetadataUpdate() -> TrackMetadata? { inner.takeMetadataUpdate() }

    /// Moves the inner decoder to content frame `frame`; what was kept or held is let go.
    func seek(toFrame frame: Int) throws(MediaError) {
        try inner.seek(toFrame: frame)
        firstFrame = frame
        pending.removeAll(keepingCapacity: true)
        cuts.removeAll()
        (heldFirst, heldFrames, silent, read, dropped, inputDone, reached) = (0, 0, 0, 0, 0, false, nil)
    }

    /// The content frame heard from the ring position the last call's audio ended at, when it
    /// ended at a cut (once).
    func takeCut() -> Int? {
        defer { reached = nil }
        return reached
    }

    func decode(into buffer: UnsafeMutableRawBufferPointer, spillingInto rest: UnsafeMutableRawBufferPointer)
        throws(MediaError) -> (bytes: Int, status: DecodeStatus) {
        let bytesPerFrame = format.bytesPerFrame
        let room = (buffer.count + rest.count) / bytesPerFrame
        // Enough kept to fill the room (or a cut, or the end, before it).
        while !inputDone, pending.count / channels < room, cuts.isEmpty {
            let (got, status) = try inner.decode(into: scratch, spillingInto: UnsafeMutableRawBufferPointer(start: nil, count: 0))
            inputDone = status == .done
            take(scratch.baseAddress!.assumingMemoryBound(to: Float.self), frames: got / bytesPerFrame)
            if inputDone { finish() }
        }
        // Out: up to the room, and never past the next cut.
        var frames = min(room, pending.count / channels)
        if let cut = cuts.first { frames = min(frames, cut.frame) }
        let bytes = frames * bytesPerFrame
        pending.withUnsafeBytes { p in
            let inA = min(bytes, buffer.count)
            buffer.baseAddress!.copyMemory(from: p.baseAddress!, byteCount: inA)
            if bytes > inA { rest.baseAddress!.copyMemory(from: p.baseAddress! + inA, byteCount: bytes - inA) }
        }
        pending.removeFirst(frames * channels)
        for i in cuts.indices { cuts[i].frame -= frames }
        if let cut = cuts.first, cut.frame == 0 {
            reached = cut.content
            cuts.removeFirst()
        }
        let done = inputDone && pending.isEmpty && cuts.isEmpty && reached == nil
        return (bytes, done ? .done : .more)
    }

    /// Sorts `frames` of `inner`'s audio into what is kept and what is cut.
    private func take(_ p: UnsafePointer<Float>, frames: Int) {
        for f in 0..<frames {
            let frame = p + f * channels
            var quiet = true
            for c in 0..<channels where abs(frame[c]) >= threshold { quiet = false; break }
            if quiet {
                silent += 1
                if silent <= head {
                    pending.append(contentsOf: UnsafeBufferPointer(start: frame, count: channels))
                } else {
                    if heldFrames == 0 { heldStart = read }
                    if heldFrames == tail {
                        // Full: its oldest frame is dropped, this one takes its place.
                        heldFirst = (heldFirst + 1) % tail
                        heldStart += 1
                        dropped += 1
                    } else {
                        heldFrames += 1
                    }
                    let slot = (heldFirst + heldFrames - 1) % tail
                    for c in 0..<channels { held[slot * channels + c] = frame[c] }
                }
            } else {
                if silent > 0 { endSilence() }
                pending.append(contentsOf: UnsafeBufferPointer(start: frame, count: channels))
            }
            read += 1
        }
    }

    /// A silence ended (sound again, or the item's end): its held end follows what was kept,
    /// after a cut when some of it was dropped.
    private func endSilence() {
        if dropped > 0 {
            cuts.append((pending.count / channels, firstFrame + Int((Double(heldStart) * speed).rounded())))
        }
        for i in 0..<heldFrames {
            let slot = (heldFirst + i) % tail
            pending.append(contentsOf: held[(slot * channels)..<((slot + 1) * channels)])
        }
        heldFirst = 0
        heldFrames = 0
        silent = 0
        dropped = 0
    }

    private func finish() {
        if silent > 0 { endSilence() }
    }
}
