import MediaCore

/// Where a decoder that produces its own blocks (libFLAC's frames, vorbisfile's and opusfile's
/// float buffers, WAV's converted bytes) keeps a block until the ring has room: interleaved
/// float32 at the ring's channel count, handed out in whole frames over the ring's two free
/// regions. More than two source channels play as they are, in the output's channel order, when
/// the output takes that many; otherwise they are down-mixed to stereo on the way in (``Downmix``).
///
/// Allocated once per decoder (the largest block); nothing is allocated per block.
final class PCMStage {
    /// Float32 samples, interleaved at ``channels``.
    private var samples: UnsafeMutablePointer<Float>
    private var capacityFrames: Int
    /// The ring's channel count: the source's, or 2 when it is down-mixed.
    let channels: Int
    /// Frames staged, and how many of them were handed out.
    private(set) var frames = 0
    private var taken = 0
    /// The down-mix weights (source channel → left, right) when the source has more than 2 channels.
    let downmix: Downmix?
    /// For each ring channel, the source channel it takes, when the output's order differs
    /// from the source's (more than two channels played as they are).
    let order: [Int]?

    /// A stage for blocks of up to `maxFrames` frames from a source with `sourceChannels` in
    /// `layout` order (WAVE's when nil), for an output taking `output` (asked only when the
    /// source has more than two channels).
    init(maxFrames: Int, sourceChannels: Int, layout: [Downmix.Position]? = nil, output: @autoclosure () -> OutputChannels = .stereo) {
        let layout = layout ?? Downmix.waveOrder(sourceChannels)
        let takes = sourceChannels > 2 ? output() : .stereo
        if sourceChannels <= 2 {
            (downmix, order, channels) = (nil, nil, sourceChannels)
        } else if sourceChannels <= takes.maximum {
            let o = Downmix.mapping(from: layout, to: Downmix.order(takes.order, sourceChannels))
            (downmix, order, channels) = (nil, o == Array(0..<sourceChannels) ? nil : o, sourceChannels)
        } else {
            (downmix, order, channels) = (Downmix(layout), nil, 2)
        }
        capacityFrames = max(1, maxFrames)
        samples = .allocate(capacity: capacityFrames * channels)
    }

    deinit { samples.deallocate() }

    /// Frames still waiting to be handed out.
    var pending: Int { frames - taken }

    /// Makes room for a block of `count` frames (growing only when a block is larger than any before).
    private func reserve(_ count: Int) {
        guard count > capacityFrames else { return }
        samples.deallocate()
        capacityFrames = count
        samples = .allocate(capacity: count * channels)
    }

    /// Stages a block of planar samples (`planes[c][i]`), each scaled by `scale`.
    func putPlanar(_ count: Int, channels source: Int, scale: Float, sample: (_ channel: Int, _ index: Int) -> Float) {
        reserve(count)
        taken = 0
        frames = count
        if let downmix {
            for i in 0..<count {
                var l: Float = 0, r: Float = 0
                for c in 0..<source {
                    let v = sample(c, i) * scale
                    l += v * downmix.left[c]
                    r += v * downmix.right[c]
                }
                samples[2 * i] = l
                samples[2 * i + 1] = r
            }
        } else if source > 2 {
            let order = order ?? Array(0..<source)
            for i in 0..<count {
                for (k, c) in order.enumerated() { samples[source * i + k] = sample(c, i) * scale }
            }
        } else if source == 2 {
            for i in 0..<count {
                samples[2 * i] = sample(0, i) * scale
                samples[2 * i + 1] = sample(1, i) * scale
            }
        } else {
            for i in 0..<count { samples[i] = sample(0, i) * scale }
        }
    }

    /// Stages a block of interleaved float samples (`count` frames of `source` channels).
    func putInterleaved(_ data: UnsafePointer<Float>, frames count: Int, channels source: Int) {
        if downmix == nil, order == nil {
            reserve(count)
            taken = 0
            frames = count
            samples.update(from: data, count: count * channels)
        } else {
            putPlanar(count, channels: source, scale: 1) { c, i in data[i * source + c] }
        }
    }

    /// Hands out as many whole staged frames as fit in `a` and `b` together (the ring's free
    /// space up to its end, then from its start: a frame may straddle the two); returns the
    /// bytes written.
    func drain(into a: UnsafeMutableRawBufferPointer, _ b: UnsafeMutableRawBufferPointer) -> Int {
        let bpf = channels * 4
        let n = min(pending, (a.count + b.count) / bpf)
        guard n > 0 else { return 0 }
        let bytes = n * bpf
        let from = UnsafeRawPointer(samples + taken * channels)
        let first = min(bytes, a.count)
        if first > 0, let dst = a.baseAddress { dst.copyMemory(from: from, byteCount: first) }
        if bytes > first, let dst = b.baseAddress { dst.copyMemory(from: from + first, byteCount: bytes - first) }
        taken += n
        return bytes
    }

    /// Drops whatever is staged (after a seek).
    func clear() {
        frames = 0
        taken = 0
    }
}

/// The stereo down-mix of 3 to 8 channels: ITU-R BS.775 weights (centre and surrounds at −3 dB,
/// the LFE channel left out), each side normalised so that full-scale input cannot clip (as
/// FFmpeg's default matrix, `swresample`'s `normalize`).
public struct Downmix: Sendable, Equatable {
    /// A speaker position.
    public enum Position: Sendable, Equatable {
        case frontLeft, frontRight, frontCenter, lfe, backLeft, backRight, backCenter, sideLeft, sideRight
    }

    /// Weight of each source channel in the left and right output.
    public let left: [Float]
    public let right: [Float]

    /// The down-mix of channels in `layout` order.
    public init(_ layout: [Position]) {
        let h: Float = 0.70710677
        var l: [Float] = [], r: [Float] = []
        for p in layout {
            switch p {
            case .frontLeft: l.append(1); r.append(0)
            case .frontRight: l.append(0); r.append(1)
            case .frontCenter: l.append(h); r.append(h)
            case .lfe: l.append(0); r.append(0)
            case .backLeft, .sideLeft: l.append(h); r.append(0)
            case .backRight, .sideRight: l.append(0); r.append(h)
            case .backCenter: l.append(h * h); r.append(h * h)
            }
        }
        let ls = l.reduce(0, +), rs = r.reduce(0, +)
        left = l.map { ls > 1 ? $0 / ls : $0 }
        right = r.map { rs > 1 ? $0 / rs : $0 }
    }

    /// The default channel order of WAVE, FLAC and AIFF-C for `n` channels.
    public static func waveOrder(_ n: Int) -> [Position] {
        switch n {
        case 3: [.frontLeft, .frontRight, .frontCenter]
        case 4: [.frontLeft, .frontRight, .backLeft, .backRight]
        case 5: [.frontLeft, .frontRight, .frontCenter, .backLeft, .backRight]
        case 6: [.frontLeft, .frontRight, .frontCenter, .lfe, .backLeft, .backRight]
        case 7: [.frontLeft, .frontRight, .frontCenter, .lfe, .backCenter, .sideLeft, .sideRight]
        default: [.frontLeft, .frontRight, .frontCenter, .lfe, .backLeft, .backRight, .sideLeft, .sideRight]
        }
    }

    /// The order of `n` channels on an output numbering them in `order`.
    public static func order(_ order: ChannelOrder, _ n: Int) -> [Position] {
        switch (order, n) {
        case (.alsa, 5): [.frontLeft, .frontRight, .backLeft, .backRight, .frontCenter]
        case (.alsa, 6): [.frontLeft, .frontRight, .backLeft, .backRight, .frontCenter, .lfe]
        case (.alsa, 8): [.frontLeft, .frontRight, .backLeft, .backRight, .frontCenter, .lfe, .sideLeft, .sideRight]
        default: waveOrder(n)
        }
    }

    /// For each position of `target`, the index in `source` holding it (a back channel stands
    /// for a side one the source lacks, and the reverse); the source's own order when the two
    /// hold different speakers.
    static func mapping(from source: [Position], to target: [Position]) -> [Int] {
        func alias(_ p: Position) -> Position? {
            switch p {
            case .backLeft: .sideLeft
            case .backRight: .sideRight
            case .sideLeft: .backLeft
            case .sideRight: .backRight
            default: nil
            }
        }
        let identity = Array(source.indices)
        guard source.count == target.count else { return identity }
        var used = Set<Int>(), out: [Int] = []
        for p in target {
            guard let i = source.indices.first(where: { source[$0] == p && !used.contains($0) })
                    ?? alias(p).flatMap({ a in source.indices.first { source[$0] == a && !used.contains($0) } }) else {
                return identity
            }
            used.insert(i)
            out.append(i)
        }
        return out
    }

    /// The Vorbis (and Opus family 1) channel order for `n` channels.
    public static func vorbisOrder(_ n: Int) -> [Position] {
        switch n {
        case 3: [.frontLeft, .frontCenter, .frontRight]
        case 4: [.frontLeft, .frontRight, .backLeft, .backRight]
        case 5: [.frontLeft, .frontCenter, .frontRight, .backLeft, .backRight]
        case 6: [.frontLeft, .frontCenter, .frontRight, .backLeft, .backRight, .lfe]
        case 7: [.frontLeft, .frontCenter, .frontRight, .sideLeft, .sideRight, .backCenter, .lfe]
        default: [.frontLeft, .frontCenter, .frontRight, .sideLeft, .sideRight, .backLeft, .backRight, .lfe]
        }
    }
}
