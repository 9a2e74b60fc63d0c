import Foundation

/// Reading raw PCM and comparing signals.
public enum PCM {
    /// Interleaved native-endian (little-endian here) S16 samples of a raw file.
    public static func readS16(_ url: URL) throws -> [Int16] {
        let data = try Data(contentsOf: url)
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self).prefix(data.count / 2)) }
    }

    /// Interleaved native float32 samples of a raw file.
    public static func readF32(_ url: URL) throws -> [Float] {
        let data = try Data(contentsOf: url)
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self).prefix(data.count / 4)) }
    }

    /// Root mean square of S16 samples, normalised to full scale (0…1).
    public static func rms(_ s: ArraySlice<Int16>) -> Double {
        guard !s.isEmpty else { return 0 }
        var sum = 0.0
        for v in s { sum += Double(v) * Double(v) }
        return (sum / Double(s.count)).squareRoot() / 32768
    }

    /// Root mean square of S16 samples, normalised to full scale (0…1).
    public static func rms(_ s: [Int16]) -> Double { rms(s[...]) }

    /// Index of the first sample whose magnitude exceeds `threshold`, or nil.
    public static func firstNonSilent(_ s: [Int16], threshold: Int16 = 64) -> Int? {
        s.firstIndex { abs(Int32($0)) > Int32(threshold) }
    }

    /// The offset (in samples of `haystack`) where `needle` lines up best, searched over the even
    /// offsets (frame starts) of `range`, by normalised cross-correlation; returns the offset and
    /// the correlation (−1…1).
    public static func align(_ needle: ArraySlice<Int16>, in haystack: [Int16], offsets range: Range<Int>)
        -> (offset: Int, correlation: Double)
    {
        var best = (offset: range.lowerBound, correlation: -2.0)
        let n = needle.count
        let needleArr = Array(needle)
        var nn = 0.0
        for v in needleArr { nn += Double(v) * Double(v) }
        for off in stride(from: range.lowerBound, to: range.upperBound, by: 2) where off >= 0 && off + n <= haystack.count {
            var dot = 0.0, hh = 0.0
            haystack.withUnsafeBufferPointer { h in
                for i in 0..<n {
                    let x = Double(h[off + i])
                    dot += x * Double(needleArr[i])
                    hh += x * x
                }
            }
            let c = (nn > 0 && hh > 0) ? dot / (nn * hh).squareRoot() : 0
            if c > best.correlation { best = (off, c) }
        }
        return best
    }

    /// Where the run `reference[at..<at+length]` appears in `recording`, searched within `radius`
    /// samples (kept even, i.e. whole stereo frames) of `near`. Returns the recording index and the
    /// normalised correlation there.
    public static func locate(_ reference: [Int16], at: Int, length: Int = 2048, in recording: [Int16],
                              near: Int, radius: Int) -> (index: Int, correlation: Double) {
        let needle = reference[at..<min(reference.count, at + length)]
        let lo = max(0, (near - radius) & ~1), hi = max(lo + 1, min(recording.count - needle.count, near + radius))
        let r = align(needle, in: recording, offsets: lo..<hi)
        return (r.offset, r.correlation)
    }

    /// Largest absolute difference between two equally long sample runs.
    public static func maxDifference(_ a: ArraySlice<Int16>, _ b: ArraySlice<Int16>) -> Int {
        zip(a, b).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
    }

    /// Drops zero samples at the end (players may pad the last period with silence).
    public static func trimTrailingZeros<T: Numeric>(_ s: [T]) -> ArraySlice<T> {
        var end = s.count
        while end > 0 && s[end - 1] == 0 { end -= 1 }
        return s[..<end]
    }
}

/// The reference decoder: the `mpg123` command-line tool, i.e. libmpg123 itself.
public enum ReferenceDecoder {
    /// Decodes gaplessly to interleaved S16 in the file's own rate and channels.
    public static func decodeS16(_ file: URL) throws -> [Int16] {
        let r = try runProcess("mpg123", ["-q", "--gapless", "-e", "s16", "-s", file.path])
        guard r.status == 0 else { throw HarnessError("mpg123 failed on \(file.path): \(r.stderr)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// Decodes to interleaved float32 in the file's own rate and channels: gaplessly, or every
    /// frame whole (as a live stream plays, with no end to trim).
    public static func decodeF32(_ file: URL, gapless: Bool = true) throws -> [Float] {
        let r = try runProcess("mpg123", ["-q", gapless ? "--gapless" : "--no-gapless", "-e", "f32", "-s", file.path])
        guard r.status == 0 else { throw HarnessError("mpg123 failed on \(file.path): \(r.stderr)") }
        return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }
}

/// ALSA's stock `file` plugin over `null`: unpaced, bit-exact capture of everything played.
public struct ALSAFileCapture: Sendable {
    /// The raw file the device writes (re-created on every open of the device).
    public let file: URL
    /// The ALSA device name to play into.
    public var device: String { "file:FILE=\(file.path),FORMAT=raw" }

    /// A capture into a new file in `directory`.
    public init(in directory: URL, name: String = "capture") {
        file = directory.appendingPathComponent("\(name).raw")
    }

    /// The captured samples as S16.
    public func s16() throws -> [Int16] { try PCM.readS16(file) }
    /// The captured samples as float32.
    public func f32() throws -> [Float] { try PCM.readF32(file) }

    /// The captured samples as float32, once the file holds at least `count` of them, or after
    /// `timeout` seconds with whatever it holds. A player reports an item heard when the device
    /// took its last frame; the file plugin writes behind the device, and its tail lands when
    /// the device drains and closes, a moment later on a loaded machine.
    public func f32(waitingFor count: Int, timeout: Double = 5) throws -> [Float] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
            if size >= count * 4 { break }
            usleep(5_000)
        }
        return try PCM.readF32(file)
    }
}
