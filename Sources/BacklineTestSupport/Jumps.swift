import Foundation

extension Fixtures {
    /// White noise as MP3 (stereo, 44.1 kHz): every few milliseconds of it are unlike any other,
    /// so a recording can be mapped back onto the item's time by correlation, and it holds no
    /// silent run a jump's gap could hide in.
    public static func noise(_ name: String, seconds: Double) throws -> URL {
        let w = try wav(name, seconds: seconds, synth: ["whitenoise"], effects: ["gain", "-10"])
        return try mp3(from: w, name: name)
    }
}

/// What a listener heard around jumps (seek, skip, resume), read from a recording of the sink's
/// monitor: silent runs, and where a given moment of an item sounds.
///
/// Wall-clock moments (seconds on the test's clock) map to recording frames through an anchor
/// fitted on the straight path before the first jump (``fitAnchor(firstSound:samples:)``); the
/// checks then measure what the jumps do relative to that path, whose own accuracy the
/// item-change tests hold against the recording.
public struct HeardTimeline: Sendable {
    /// Interleaved stereo S16 at ``rate``.
    public let recording: [Int16]
    public let rate: Int
    /// Recording frame = anchor + wall seconds × framesPerSecond.
    public var anchor: Double = 0
    /// The sink's frames per second of the system clock (nominally ``rate``).
    public var framesPerSecond: Double
    /// Loudest |sample| still counted as silence.
    public static let silenceThreshold = 50

    public init(recording: [Int16], rate: Int) {
        self.recording = recording
        self.rate = rate
        framesPerSecond = Double(rate)
    }

    public var frameCount: Int { recording.count / 2 }

    /// The recording frame heard at `wall` seconds.
    public func frame(atWall wall: Double) -> Int { Int((anchor + wall * framesPerSecond).rounded()) }
    /// The wall time (seconds) at which recording frame `frame` was heard.
    public func wall(atFrame frame: Int) -> Double { (Double(frame) - anchor) / framesPerSecond }

    /// The first frame with sound (either channel above the silence threshold).
    public func firstSound(from: Int = 0) -> Int? {
        var f = max(0, from)
        while f < frameCount {
            if abs(Int(recording[2 * f])) > Self.silenceThreshold || abs(Int(recording[2 * f + 1])) > Self.silenceThreshold {
                return f
            }
            f += 1
        }
        return nil
    }

    /// The longest run of silent frames (both channels within the threshold) inside
    /// `[from, to)`, counting only its part inside the window; in seconds.
    public func longestSilence(from: Int, to: Int) -> Double {
        let lo = max(0, from), hi = min(frameCount, to)
        var run = 0, longest = 0
        recording.withUnsafeBufferPointer { r in
            var f = lo
            while f < hi {
                let silent = abs(Int(r[2 * f])) <= Self.silenceThreshold && abs(Int(r[2 * f + 1])) <= Self.silenceThreshold
                run = silent ? run + 1 : 0
                longest = max(longest, run)
                f += 1
            }
        }
        return Double(longest) / Double(rate)
    }

    /// Where frame `frame` of `reference` (interleaved stereo) sounds in the recording, searched
    /// within `radius` frames of `near`, by normalised cross-correlation of 512 frames of the
    /// left channel. Nil when nothing there correlates above 0.8 (silence, or other audio).
    public func locate(_ reference: [Int16], frame: Int, near: Int, radius: Int) -> (frame: Int, correlation: Double)? {
        let n = 512
        guard frame >= 0, frame + n <= reference.count / 2 else { return nil }
        let lo = max(0, near - radius), hi = min(frameCount - n, near + radius)
        guard lo <= hi else { return nil }
        var needle = [Float](repeating: 0, count: n)
        var nn: Float = 0
        for i in 0..<n {
            needle[i] = Float(reference[2 * (frame + i)])
            nn += needle[i] * needle[i]
        }
        guard nn > 0 else { return nil }
        var hay = [Float](repeating: 0, count: hi + n - lo)
        for i in hay.indices { hay[i] = Float(recording[2 * (lo + i)]) }
        var best = (frame: lo, correlation: -2.0)
        needle.withUnsafeBufferPointer { nd in
            hay.withUnsafeBufferPointer { h in
                // Running energy of the haystack window.
                var hh: Float = 0
                for i in 0..<n { hh += h[i] * h[i] }
                for off in 0...(hi - lo) {
                    if off > 0 {
                        let out = h[off - 1], inn = h[off + n - 1]
                        hh += inn * inn - out * out
                    }
                    var dot: Float = 0
                    var i = 0
                    let base = h.baseAddress! + off, ndl = nd.baseAddress!
                    while i < n {  // (a plain loop: this runs unoptimised in debug test builds)
                        dot += base[i] * ndl[i]
                        i += 1
                    }
                    let c = hh > 0 ? Double(dot) / (Double(nn) * Double(max(hh, 1))).squareRoot() : 0
                    if c > best.correlation { best = (lo + off, c) }
                }
            }
        }
        return best.correlation >= 0.8 ? best : nil
    }

    /// Fits the wall→recording map from position samples taken on the straight path from the
    /// start of an item that began at recording frame `firstSound`: a least-squares line through
    /// (wall, `firstSound + time × rate`). Its slope is the sink's own clock against the system
    /// clock (a null sink, like a sound card, runs up to ~0.2 % off it).
    public mutating func fitAnchor(firstSound: Int, samples: [(wall: Double, time: Double)]) {
        let r = Double(rate)
        let xs = samples.map(\.wall), ys = samples.map { Double(firstSound) + $0.time * r }
        guard xs.count >= 2 else {
            anchor = xs.first.map { ys[0] - $0 * r } ?? 0
            return
        }
        let mx = xs.reduce(0, +) / Double(xs.count), my = ys.reduce(0, +) / Double(ys.count)
        var sxy = 0.0, sxx = 0.0
        for (x, y) in zip(xs, ys) {
            sxy += (x - mx) * (y - my)
            sxx += (x - mx) * (x - mx)
        }
        framesPerSecond = sxx > 0 ? sxy / sxx : r
        anchor = my - framesPerSecond * mx
    }

    /// Re-fits only the offset of the wall→recording map (keeping the slope) from position
    /// samples `(wall, file, time)` of the items whose decodes are `references`, located in the
    /// recording near where the current map puts them: the map near a given moment, free of
    /// the small drift a long recording accumulates.
    public mutating func refitOffset(references: [[Int16]], samples: [(wall: Double, file: Int, time: Double)]) {
        var offsets: [Double] = []
        for s in samples {
            let f = Int((s.time * Double(rate)).rounded())
            if let hit = locate(references[s.file], frame: f, near: frame(atWall: s.wall), radius: Int(0.15 * Double(rate))) {
                offsets.append(Double(hit.frame) - s.wall * framesPerSecond)
            }
        }
        if !offsets.isEmpty { anchor = median(offsets) }
    }

    /// How far (seconds) the reported `time` of the item whose decode is `reference`, read at
    /// `wall`, is from what the recording holds at that moment: positive when the report runs
    /// ahead of the listener. Nil when that moment of the item is not heard within `radius`
    /// seconds (a wrong item or time).
    public func positionError(reference: [Int16], time: Double, wall: Double, radius: Double = 0.12) -> Double? {
        let expected = frame(atWall: wall)
        let f = Int((time * Double(rate)).rounded())
        guard let hit = locate(reference, frame: f, near: expected, radius: Int(radius * Double(rate))) else { return nil }
        return Double(hit.frame - expected) / Double(rate)
    }

    /// When (wall seconds) frame `time` of `reference` was first heard, searched from `after`
    /// up to `within` seconds later.
    public func heardWall(reference: [Int16], time: Double, after: Double, within: Double = 1) -> Double? {
        let lo = frame(atWall: after)
        let span = Int(within * Double(rate))
        let f = Int((time * Double(rate)).rounded())
        guard let hit = locate(reference, frame: f, near: lo + span / 2, radius: span / 2 + 1) else { return nil }
        return wall(atFrame: hit.frame)
    }
}

/// The median of `values` (the upper one of an even count); 0 when empty.
public func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    return s.isEmpty ? 0 : s[s.count / 2]
}
