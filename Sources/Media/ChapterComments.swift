import MediaCore

/// Chapters given as Vorbis comments (the Ogg chapter convention, as FFmpeg and mkvtoolnix
/// write them): `CHAPTER001=00:00:00.000` and `CHAPTER001NAME=Title`, numbered from 000 or 001,
/// in any order. A number with no valid time is left out; each chapter ends where the next
/// starts (the last at the item's end).
enum ChapterComments {
    static func chapters(_ comments: [TagPair]) -> [Chapter] {
        var starts: [Int: Double] = [:], names: [Int: String] = [:]
        for c in comments {
            let name = c.name.uppercased()
            guard name.hasPrefix("CHAPTER") else { continue }
            let rest = name.dropFirst(7)
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 3, let n = Int(digits) else { continue }
            switch rest.dropFirst(digits.count) {
            case "": if let t = time(c.value) { starts[n] = t }
            case "NAME": names[n] = c.value
            default: continue
            }
        }
        let ordered = starts.keys.sorted()
        return ordered.enumerated().map { k, n in
            Chapter(title: names[n], start: starts[n]!, end: k + 1 < ordered.count ? starts[ordered[k + 1]] : nil)
        }
    }

    /// `HH:MM:SS.mmm` (the fraction's digits any number, or none) as seconds.
    static func time(_ s: String) -> Double? {
        let parts = s.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let h = Int(parts[0]), let m = Int(parts[1]), (0..<60).contains(m),
              let sec = Double(parts[2]), sec >= 0, sec < 60, h >= 0,
              parts[2].allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }) else { return nil }
        return Double(h * 3600 + m * 60) + sec
    }
}
