/// Which ReplayGain values an item plays with (mpd's `replay_gain_mode`).
public enum ReplayGainMode: String, Sendable, CaseIterable, Codable {
    /// None: the samples as decoded.
    case off
    /// The track's gain (the album's when the track has none).
    case track
    /// The album's gain (the track's when the album has none).
    case album
    /// The album's, unless the queue is shuffled: then the track's (mpd's `auto`).
    case auto

    /// `auto` resolved for a queue that is (or is not) shuffled.
    public func resolved(shuffle: Bool) -> ReplayGainMode {
        self == .auto ? (shuffle ? .track : .album) : self
    }
}

/// How ReplayGain is applied: the mode, the preamps and peak limiting, with mpd's arithmetic
/// (`ReplayGainInfo.cxx`): scale = 10^(gain/20) × preamp, at most 15; limited to 1/peak when
/// limiting is on and scale × peak > 1; an item with no values gets the missing preamp.
public struct ReplayGainSettings: Sendable, Equatable, Codable {
    public var mode: ReplayGainMode
    /// Added to a file's gain, dB (mpd's `replaygain_preamp`, default 0).
    public var preamp: Double
    /// The gain of files without ReplayGain values, dB (mpd's `replaygain_missing_preamp`, default 0).
    public var missingPreamp: Double
    /// Whether the scale is kept below 1/peak, so a peak never clips (mpd's `replaygain_limit`, default on).
    public var limit: Bool

    /// Settings from their parts; off by default.
    public init(mode: ReplayGainMode = .off, preamp: Double = 0, missingPreamp: Double = 0, limit: Bool = true) {
        (self.mode, self.preamp, self.missingPreamp, self.limit) = (mode, preamp, missingPreamp, limit)
    }

    /// Off.
    public static let off = ReplayGainSettings()

    /// The linear scale for a file's `values` in `mode` (already resolved from `auto`).
    public func scale(for values: TrackMetadata.ReplayGain, mode: ReplayGainMode) -> Float {
        guard mode != .off else { return 1 }
        let track = values.track, album = values.album
        let chosen = mode == .album ? (album ?? track) : (track ?? album)
        guard let (gain, peak) = chosen else { return Float(Self.linear(missingPreamp)) }
        var scale = Self.linear(gain) * Self.linear(preamp)
        scale = min(scale, 15)
        if limit, let peak, peak > 0, scale * peak > 1 { scale = 1 / peak }
        return Float(scale)
    }

    /// 10^(dB/20), as e^(dB/20 · ln 10) (this module imports nothing, not even libm).
    public static func linear(_ db: Double) -> Double { exp(db / 20 * 2.302585092994046) }

    /// e^x by range reduction and a Taylor series (plenty for gains of ±200 dB; clamped beyond).
    static func exp(_ x: Double) -> Double {
        guard x.isFinite else { return x > 0 ? .infinity : 0 }
        let x = min(max(x, -700), 700)
        let k = (x / 0.6931471805599453).rounded()
        let r = x - k * 0.6931471805599453
        var term = 1.0, sum = 1.0
        for n in 1...20 {
            term *= r / Double(n)
            sum += term
        }
        return sum * Double(sign: .plus, exponent: Int(k), significand: 1)
    }
}

extension TrackMetadata.ReplayGain {
    /// Takes a tag named `name` (any case) when it is a ReplayGain or R128 value: `REPLAYGAIN_TRACK_GAIN`
    /// (`-6.50 dB`), `…_PEAK`, `…_ALBUM_…`, `R128_TRACK_GAIN` (Q7.8). Returns whether it was one.
    @discardableResult
    public mutating func take(_ name: String, _ value: String) -> Bool {
        let v = value.trimmingSpaces
        // A gain within ±100 dB (mpd counts −100 and below as none), a peak finite and ≥ 0:
        // anything else (`nan`, `inf`, `1e30`) is no value.
        func decibels() -> Double? {
            var t = v
            if t.lowercased().hasSuffix("db") { t = String(t.dropLast(2)).trimmingSpaces }
            guard let g = Double(t.hasPrefix("+") ? String(t.dropFirst()) : t), g.isFinite, g > -100, g <= 100 else { return nil }
            return g
        }
        func peak() -> Double? { Double(v).flatMap { $0.isFinite && $0 >= 0 ? $0 : nil } }
        switch name.lowercased() {
        case "replaygain_track_gain": trackGain = decibels()
        case "replaygain_track_peak": trackPeak = peak()
        case "replaygain_album_gain": albumGain = decibels()
        case "replaygain_album_peak": albumPeak = peak()
        case "r128_track_gain": r128TrackGain = Int(v).map { Double($0) / 256 }
        case "r128_album_gain": r128AlbumGain = Int(v).map { Double($0) / 256 }
        default: return false
        }
        return true
    }

    /// The track's gain (dB) and peak: ReplayGain's tag, else Opus's R128 gain + 5 dB (R128's
    /// −23 LUFS reference to ReplayGain's −18; the header's output gain is already in the
    /// decoded samples). Nil with neither (no +5 dB for a file with no R128 tag).
    public var track: (gain: Double, peak: Double?)? {
        if let g = trackGain { return (g, trackPeak) }
        if let r = r128TrackGain { return (r + 5, nil) }
        return nil
    }

    /// The album's gain and peak, as ``track``.
    public var album: (gain: Double, peak: Double?)? {
        if let g = albumGain { return (g, albumPeak) }
        if let r = r128AlbumGain { return (r + 5, nil) }
        return nil
    }
}
