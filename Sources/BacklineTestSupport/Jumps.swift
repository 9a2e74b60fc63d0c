import Foundation
import Testing

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
    ///
    /// The moment is found by what follows it in the item or, failing that, by what precedes it:
    /// a position reported at the edge of a jump or a stop sounds for only a few milliseconds
    /// before the cut, and one just after a jump has nothing of the item before it.
    public func positionError(reference: [Int16], time: Double, wall: Double, radius: Double = 0.12) -> Double? {
        let expected = frame(atWall: wall)
        let f = Int((time * Double(rate)).rounded())
        let r = Int(radius * Double(rate))
        let n = 512  // `locate`'s window
        if let hit = locate(reference, frame: f, near: expected, radius: r) {
            return Double(hit.frame - expected) / Double(rate)
        }
        guard f >= n, let hit = locate(reference, frame: f - n, near: expected - n, radius: r) else { return nil }
        return Double(hit.frame + n - expected) / Double(rate)
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

/// One jump in a real-time test: what was asked, when, and what should be heard next.
public struct JumpRecord: Sendable {
    public var kind: String
    /// Wall seconds (the test's clock) when the command was given.
    public var wall: Double
    /// The file (an index into the references) and its time that should sound next.
    public var file: Int
    public var time: Double
    /// Events that must come for this jump (each within a period after its target is heard).
    public var events: [String]
    /// Events checked the same way when they come.
    public var optionalEvents: [String]

    public init(kind: String, wall: Double, file: Int, time: Double, events: [String] = [], optionalEvents: [String] = []) {
        (self.kind, self.wall, self.file, self.time, self.events, self.optionalEvents) = (kind, wall, file, time, events, optionalEvents)
    }

    /// A resume continues where the pause was heard, up to a sink render later: where its audio
    /// begins is searched a little later and stepped back.
    public var isResume: Bool { kind.contains("pause") }
}

/// A reported position: at `wall` seconds, `time` seconds into `file`.
public struct PositionSample: Sendable {
    public var wall: Double
    public var file: Int
    public var time: Double
    public init(wall: Double, file: Int, time: Double) { (self.wall, self.file, self.time) = (wall, file, time) }
}

/// Checks jumps against the recording of the sink's monitor, as the listener heard them: the
/// silence at each jump (median per kind ≤ `maxMedianSilence`), the positions reported after it
/// (monotonic within an item, each within `period` of what the recording holds at that moment)
/// and its events (each after its target is first heard, within `period` plus delivery).
///
/// `samples[0]` is the straight path from the first sound (the map wall→recording is fitted on
/// it); `samples[n + 1]` the stretch after `jumps[n]`. `events` are (name, wall) of everything
/// the test saw. `observers` are other reports of the position (a time observer's calls), each
/// set held to its own bound on the error (positive: ahead of the listener). Returns the
/// silences per kind, in seconds, for the test's report.
@discardableResult
public func checkJumps(recording: [Int16], rate: Int, references: [[Int16]], jumps: [JumpRecord],
                       samples: [[PositionSample]], events: [(name: String, wall: Double)], period: Double,
                       observers: [(name: String, reports: [PositionSample], bound: ClosedRange<Double>)] = [],
                       maxMedianSilence: Double = 0.02,
                       sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: [Double]] {
    var heard = HeardTimeline(recording: recording, rate: rate)
    let first = try #require(heard.firstSound(), "nothing recorded", sourceLocation: sourceLocation)
    // The sink's clock against ours, from the straight path before the first jump.
    heard.fitAnchor(firstSound: first, samples: samples[0].filter { $0.wall > (samples[0].first?.wall ?? 0) + 0.3 }.map { ($0.wall, $0.time) })
    var silences: [String: [Double]] = [:]
    var worst = 0.0
    var anchors: [Double] = []  // the map's offset near each jump
    func ms(_ t: Double) -> String { String(format: "%.3f", t) }
    for (n, j) in jumps.enumerated() {
        // Wall↔recording near this jump, from the stretch just before it.
        heard.refitOffset(references: references, samples: samples[n].suffix(8).map { ($0.wall, $0.file, $0.time) })
        anchors.append(heard.anchor)
        let lead = j.isResume ? 0.05 : 0
        let begin = heard.locate(references[j.file], frame: Int((j.time + lead) * Double(rate)),
                                 near: heard.frame(atWall: j.wall + 0.3), radius: Int(0.35 * Double(rate)))
            .map { $0.frame - Int(lead * Double(rate)) }
        #expect(begin != nil, "\(j.kind) at \(ms(j.wall)): \(j.time) s of file \(j.file) never heard", sourceLocation: sourceLocation)
        guard let begin else { continue }
        let heardAt = heard.wall(atFrame: begin)
        // The silence the listener hears: the silent run just before the new audio; after a
        // pause, from the play command to the sound.
        silences[j.kind, default: []].append(j.isResume ? max(0, heardAt - j.wall)
            : heard.longestSilence(from: begin - Int(0.3 * Double(rate)), to: begin))
        let next = n + 1 < jumps.count ? jumps[n + 1].wall : .infinity
        for name in j.events + j.optionalEvents {
            let at = events.first { $0.name == name && $0.wall >= j.wall && $0.wall < next }?.wall
            if j.events.contains(name) {
                #expect(at != nil, "\(j.kind) at \(ms(j.wall)): no \(name)", sourceLocation: sourceLocation)
            }
            // (The wall↔recording map is good to a few milliseconds on a loaded machine.)
            if let at {
                #expect(at >= heardAt - 0.006 && at <= heardAt + period + 0.01,
                        "\(j.kind) at \(ms(j.wall)): \(name) at \(ms(at)), target heard at \(ms(heardAt))", sourceLocation: sourceLocation)
            }
        }
        // Positions after the jump: monotonic, and within one period of the recording.
        let run = samples[n + 1]
        for (a, b) in zip(run, run.dropFirst()) where a.file == b.file {
            #expect(b.time >= a.time, "after \(j.kind): position went back \(a.time) → \(b.time) at \(ms(b.wall))", sourceLocation: sourceLocation)
        }
        for s in run {
            let err = heard.positionError(reference: references[s.file], time: s.time, wall: s.wall)
            #expect(err != nil, "after \(j.kind): \(s.time) s of file \(s.file) not heard near \(ms(s.wall))", sourceLocation: sourceLocation)
            if let err {
                worst = max(worst, abs(err))
                #expect(abs(err) <= period, "after \(j.kind) at \(ms(s.wall)): reported \(s.time), \(String(format: "%+.1f", err * 1000)) ms from what was heard", sourceLocation: sourceLocation)
            }
        }
    }
    for (name, reports, bound) in observers {
        for r in reports {
            // The map near this report: as near the last jump before it.
            let n = jumps.lastIndex { $0.wall <= r.wall } ?? 0
            if n < anchors.count { heard.anchor = anchors[n] }
            let err = heard.positionError(reference: references[r.file], time: r.time, wall: r.wall)
            #expect(err != nil, "\(name): \(r.time) s of file \(r.file) not heard near \(ms(r.wall))", sourceLocation: sourceLocation)
            if let err {
                #expect(bound.contains(err), "\(name) at \(ms(r.wall)): \(r.time) s, \(String(format: "%+.1f", err * 1000)) ms from what was heard", sourceLocation: sourceLocation)
            }
        }
    }
    print("jump silences (ms): \(silences.mapValues { $0.map { Int(($0 * 1000).rounded()) } }); worst position error \(Int((worst * 1000).rounded())) ms")
    for (kind, values) in silences {
        #expect(median(values) <= maxMedianSilence, "\(kind): median silence \(median(values)) s (\(values))", sourceLocation: sourceLocation)
    }
    return silences
}

/// The sink inputs (their `Sink Input #N` headers) that process `pid` has on the server.
public func sinkInputs(ofProcess pid: pid_t, environment: [String: String]) -> [String] {
    let text = (try? runProcess("pactl", ["list", "sink-inputs"], environment: environment))?.stdoutText ?? ""
    return text.components(separatedBy: "Sink Input #").dropFirst().filter {
        $0.contains("application.process.id = \"\(pid)\"")
    }.compactMap { $0.split(separator: "\n").first.map(String.init) }
}
