import Testing

/// Drops runs of silence (|x| ≤ 2: the sound server's rounding leaves stray ±1 values)
/// longer than `minRun` samples: the silence from pause, start and end.
public func removingSilence(_ s: [Int16], minRun: Int) -> [Int16] {
    func quiet(_ x: Int16) -> Bool { x >= -2 && x <= 2 }
    var out: [Int16] = []
    out.reserveCapacity(s.count)
    var i = 0
    while i < s.count {
        if quiet(s[i]) {
            var j = i
            while j < s.count && quiet(s[j]) { j += 1 }
            // Leading and trailing silence goes whatever its length.
            if j - i < minRun && i > 0 && j < s.count { out.append(contentsOf: s[i..<j]) }
            i = j
        } else {
            out.append(s[i])
            i += 1
        }
    }
    return out
}

/// The recording (silence removed) holds the whole decode, sample for sample (±2 LSB for the
/// sound server's float→S16 conversion), except at most the first 20 ms, which a new PulseAudio
/// stream delivers as zeros (see harness.md): nothing else missing, nothing extra.
public func expectSameAudio(_ got: [Int16], _ ref: [Int16], sourceLocation: SourceLocation = #_sourceLocation) throws {
    let probe = 8820  // 0.1 s into the reference
    let hit = PCM.locate(ref, at: probe, in: got, near: probe, radius: 4000)
    #expect(hit.correlation > 0.999, "correlation \(hit.correlation)", sourceLocation: sourceLocation)
    let lostAtStart = probe - hit.index  // reference samples before the recording's first one
    #expect(lostAtStart >= 0 && lostAtStart <= 1764, "lost at start: \(lostAtStart) samples",
            sourceLocation: sourceLocation)
    guard lostAtStart >= 0 else { return }
    let n = min(ref.count - lostAtStart, got.count)
    let diff = PCM.maxDifference(got[..<n], ref[lostAtStart..<(lostAtStart + n)])
    #expect(diff <= 2, "max difference \(diff) LSB", sourceLocation: sourceLocation)
    #expect(abs(got.count - (ref.count - lostAtStart)) <= 64,
            "recording has \(got.count) samples, the decode \(ref.count - lostAtStart) after the start; extra tail \(Array(got[n...].prefix(12)))",
            sourceLocation: sourceLocation)
}
