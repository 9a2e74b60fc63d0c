import Foundation
import MediaCore

/// The open formats' fixtures with their reference decodes, and a decoder's whole output: what
/// the decoder unit tests and the engine's bit-exact tests compare.
public enum FormatCases {
    /// A fixture and its reference decode, float32 interleaved.
    public struct Case: CustomStringConvertible {
        public var file: URL
        public var reference: () throws -> [Float]
        /// The largest difference allowed (0: bit-exact).
        public var tolerance: Float = 0
        public var description: String { file.lastPathComponent }

        public init(file: URL, reference: @escaping () throws -> [Float], tolerance: Float = 0) {
            (self.file, self.reference, self.tolerance) = (file, reference, tolerance)
        }
    }

    public static func all() throws -> [Case] {
        let s16 = try FormatFixtures.source("fmt-44k-stereo", seconds: 1.7)
        let s24hi = try FormatFixtures.source("fmt-96k-24", seconds: 1.1, rate: 96_000, bits: 24)
        let s24top = try FormatFixtures.source("fmt-192k-24-mono", seconds: 0.6, rate: 192_000, channels: 1, bits: 24)
        let mono8k = try FormatFixtures.source("fmt-8k-mono", seconds: 1.3, rate: 8000, channels: 1)
        let flac16 = try FormatFixtures.flac("fmt-flac16", from: s16)
        let flac24 = try FormatFixtures.flac("fmt-flac24-96k", from: s24hi)
        let flac192 = try FormatFixtures.flac("fmt-flac24-192k-mono", from: s24top)
        let flac8k = try FormatFixtures.flac("fmt-flac-8k-mono", from: mono8k)
        let opus = try FormatFixtures.opus("fmt-opus-from-44k", from: s16)
        let vorbis = try FormatFixtures.vorbis("fmt-vorbis", from: s16)
        let wavU8 = try FormatFixtures.sox("fmt-wav-u8", from: s16, ext: "wav", args: ["-e", "unsigned-integer", "-b", "8"])
        let wav24 = try FormatFixtures.sox("fmt-wav-s24", from: s24hi, ext: "wav", args: [])
        let wav32 = try FormatFixtures.sox("fmt-wav-s32", from: s16, ext: "wav", args: ["-e", "signed-integer", "-b", "32"])
        let wavF = try FormatFixtures.sox("fmt-wav-f32", from: s16, ext: "wav", args: ["-e", "floating-point", "-b", "32"])
        let aiff = try FormatFixtures.sox("fmt-aiff-s16", from: s16, ext: "aiff", args: [])
        let aiff24 = try FormatFixtures.sox("fmt-aiff-s24", from: s24hi, ext: "aiff", args: [])
        return [
            Case(file: flac16) { try FormatReference.flac(flac16, bits: 16) },
            Case(file: flac24) { try FormatReference.flac(flac24, bits: 24) },
            Case(file: flac192) { try FormatReference.flac(flac192, bits: 24) },
            Case(file: flac8k) { try FormatReference.flac(flac8k, bits: 16) },
            // opusdec's float path rounds once more than op_read_float's: within 2^-24.
            Case(file: opus, reference: { try FormatReference.opus(opus) }, tolerance: 6e-8),
            // oggdec's 16-bit output: within 1 LSB (its rounding of the same float decode).
            Case(file: vorbis, reference: { try FormatReference.vorbisS16(vorbis).map { Float($0) / 32768 } }, tolerance: 1.01 / 32768),
            Case(file: wavU8) { try FormatReference.sox(wavU8) },
            Case(file: wav24) { try FormatReference.sox(wav24) },
            Case(file: wav32) { try FormatReference.sox(wav32) },
            Case(file: wavF) { try FormatReference.sox(wavF) },
            Case(file: aiff) { try FormatReference.sox(aiff) },
            Case(file: aiff24) { try FormatReference.sox(aiff24) },
        ]
    }

    /// Every sample `d` decodes from where it stands, 16 K samples of room at a time.
    public static func decodeAll(_ d: any AudioDecoder) throws -> [Float] {
        var got: [Float] = []
        var buf = [Float](repeating: 0, count: 16384)
        while true {
            let (bytes, status) = try buf.withUnsafeMutableBytes { try d.decode(into: $0, spillingInto: .init(start: nil, count: 0)) }
            got += buf.prefix(bytes / 4)
            if status == .done { return got }
        }
    }


    /// The largest difference between two decodes, sample by sample.
    public static func maxDifference(_ a: [Float], _ b: [Float]) -> Float {
        zip(a, b).reduce(0) { max($0, abs($1.0 - $1.1)) }
    }
}
