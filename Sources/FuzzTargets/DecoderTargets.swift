import Media
import MediaCore

/// The decoder front door: sniffing, opening and the first seconds of decoding, through every
/// decoder (libmpg123, libFLAC, libvorbisfile, opusfile, the WAVE and AIFF readers, FFmpeg).
enum DecoderTargets {
    /// The name the bytes come under (the first byte's low bits pick it): the suffix only breaks
    /// ties. Its high bit makes the bytes a live stream (``LiveBytes``), as a radio's are.
    static let names = ["fuzz.mp3", "fuzz.flac", "fuzz.ogg", "fuzz.opus", "fuzz.wav", "fuzz.aiff", "fuzz.m4a", "fuzz"]

    /// A file's bytes: it opens or fails with a media error; what it decodes is whole frames of
    /// finite samples in the format it declared, no more than a length declared exact; tags fit a
    /// protocol line; a seek within the length lands or fails cleanly.
    static let decoder = FuzzTarget("decoder", "Sniff, DecoderRegistry and each decoder's first seconds, of a file or a live stream; whole frames of finite samples within an exact declared length; seeks land or fail cleanly") { input throws(InvariantFailure) in
        guard let first = input.first else { return }
        let name = names[Int(first & 0x7F) % names.count]
        let bytes = Array(input.dropFirst())
        let live = first & 0x80 != 0
        func source() -> any ByteSource {
            live ? LiveBytes(name: name, bytes: bytes) : MemorySource(name: name, bytes: bytes)
        }
        if !live, let info = try? DecoderRegistry.standard.info(source()) {
            try tagsAreLines(info.metadata, "decoder")
        }
        guard let (plugin, d) = try? DecoderRegistry.standard.openWithPlugin(source()) else { return }
        let f = d.format
        try check((1...768_000).contains(f.rate) && (1...8).contains(f.channels), "decoder", "\(plugin.name): format \(f.rate) Hz × \(f.channels)")
        try check(d.minimumRoom >= f.channels * 4, "decoder", "\(plugin.name): minimum room \(d.minimumRoom) is less than a frame")
        if let n = d.lengthFrames { try check(n >= 0, "decoder", "\(plugin.name): length \(n)") }
        try tagsAreLines(d.metadata, "decoder")
        let frameBytes = f.channels * 4
        let room = max(d.minimumRoom, 16384 * frameBytes)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: room, alignment: 16)
        defer { buffer.deallocate() }
        var frames = 0
        // At most four seconds, or 64 calls.
        for _ in 0..<64 where frames < f.rate * 4 {
            let r: (bytes: Int, status: DecodeStatus)
            do {
                r = try d.decode(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<(room / 2)]),
                                 spillingInto: UnsafeMutableRawBufferPointer(rebasing: buffer[(room / 2)...]))
            } catch {
                break
            }
            try check(r.bytes >= 0 && r.bytes <= room && r.bytes % frameBytes == 0, "decoder", "\(plugin.name): \(r.bytes) bytes decoded (room \(room), frame \(frameBytes))")
            let samples = UnsafeBufferPointer(start: buffer.baseAddress!.assumingMemoryBound(to: Float.self), count: r.bytes / 4)
            try check(samples.allSatisfy(\.isFinite), "decoder", "\(plugin.name): a sample that is not finite")
            frames += r.bytes / frameBytes
            if r.status == .done { break }
        }
        if let n = d.lengthFrames, d.lengthAccuracy == .exact {
            try check(frames <= n, "decoder", "\(plugin.name): \(frames) frames decoded of an exact length of \(n)")
        }
        if let n = d.lengthFrames, n > 0 {
            try? d.seek(toFrame: n / 2)
        }
    }
}

/// Bytes as a live stream arrives (an Icecast mount), with `HTTPSource`'s rules for one: no
/// length; the first 64 KiB kept while reading in order, to be read again (the decoders'
/// sniffing); a seek back only into them, or forward by reading on (within the network
/// buffer's 512 KiB); a read on past the kept bytes after going back fails.
final class LiveBytes: ByteSource {
    let name: String
    private let bytes: [UInt8]
    private(set) var position = 0
    /// How far the stream has been read.
    private var delivered = 0
    /// How many of the first bytes are kept.
    private var kept = 0
    var length: Int? { nil }
    var isSeekable: Bool { false }
    var isLive: Bool { true }

    init(name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(MediaError) -> Int {
        guard buffer.count > 0 else { return 0 }
        var n: Int
        if position < delivered {
            guard position < kept else { throw MediaError(.io, "cannot go back in a live stream", item: name) }
            n = min(buffer.count, delivered - position, kept - position)
        } else {
            n = min(buffer.count, bytes.count - position)
            guard n > 0 else { return 0 }
            if position < 65536, kept == position { kept = min(65536, position + n) }
        }
        bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + position, byteCount: n) }
        position += n
        delivered = max(delivered, position)
        return n
    }

    func seek(to offset: Int) throws(MediaError) {
        guard offset >= 0 else { throw MediaError(.io, "seek before the start", item: name) }
        if offset <= delivered && (offset < kept || offset == delivered) {
            position = offset
            return
        }
        guard offset > delivered, offset - delivered < 512 * 1024 else { throw MediaError(.io, "a live stream cannot seek", item: name) }
        position = delivered
        try readOn(to: offset)
    }

    func reopened() throws(MediaError) -> any ByteSource { LiveBytes(name: name, bytes: bytes) }
}
