import MediaCore

/// Holds a decoder to its stream's format: a frame in another rate or channel count (a false
/// header met in a resync, a damaged one) is dropped, and more than ``limit`` in a row fail the
/// item, as a real change of format: the engine plays one format per item (a chained Ogg
/// stream that changes it ends there), and played on, the audio would be at the wrong speed or
/// its channels mixed up.
struct FormatGuard {
    /// The stream's rate and channel count (the decoder's own, before any down-mix).
    let rate: Int
    let channels: Int
    /// More frames than this in a row in another format fail the item.
    static let limit = 8
    /// Frames in another format in a row, so far.
    private var foreign = 0

    init(rate: Int, channels: Int) {
        self.rate = rate
        self.channels = channels
    }

    /// Whether a frame of `rate` Hz and `channels` is played (else dropped).
    /// - Throws: `MediaError` (`.unsupportedFormat`) once more than ``limit`` frames in a row
    ///   were in another format.
    mutating func admits(rate: Int, channels: Int, library: String, item: String) throws(MediaError) -> Bool {
        guard rate != self.rate || channels != self.channels else {
            foreign = 0
            return true
        }
        foreign += 1
        guard foreign <= Self.limit else {
            throw MediaError(.unsupportedFormat, "the format changes mid-stream to \(rate) Hz, \(channels) channel\(channels == 1 ? "" : "s")",
                             library: library, item: item)
        }
        return false
    }
}
