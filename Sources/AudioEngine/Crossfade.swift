import MediaCore
#if canImport(Glibc)
import Glibc
#endif

/// Crossfade: how one item joins the next when ``PlaybackEngine/crossfade`` is set.
///
/// The mix is made on the decoder thread, before the ring: for the fade's length the next item's
/// decoded frames are scaled by `sin` and the ending item's by `cos` of the same angle, which runs
/// from 0 to π/2 across the fade (equal power: the two gains' squares always sum to 1). The next
/// item's `start` marker sits at the fade's first frame, so it is the current item, with its
/// position counting from its own first frame, from the moment the fade begins to be heard; the
/// ending item's `end` marker sits there too. Nothing after the ring knows a fade happened.
public enum Crossfade {
    /// The gains of frame `k` of a fade `length` frames long: (ending item, next item).
    /// Equal power: `cos²θ + sin²θ = 1`, with θ at the middle of the frame.
    @inline(__always)
    public static func gains(frame k: Int, of length: Int) -> (out: Float, in: Float) {
        let theta = (Double(k) + 0.5) / Double(length) * (Double.pi / 2)
        return (Float(cos(theta)), Float(sin(theta)))
    }

    /// Whether `next` continues `previous`'s album in order, so the two are joined gaplessly and
    /// never crossfaded (as Apple Music and mpd's MixRamp users expect of a live album or a DJ
    /// mix): the same album name, the same album artist and MusicBrainz album id where both files
    /// have them, and `next` the following track (the next number on the same disc, or the first
    /// track of the next disc). Without track numbers the order cannot be told, and the same
    /// album is enough: gapless wins.
    public static func continuesAlbum(_ previous: TrackMetadata, _ next: TrackMetadata) -> Bool {
        guard let album = previous.album, !album.isEmpty, next.album == album else { return false }
        if let a = previous.albumArtist, let b = next.albumArtist, a != b { return false }
        if let a = previous.values(.musicBrainzAlbumID).first, let b = next.values(.musicBrainzAlbumID).first, a != b { return false }
        guard let t0 = previous.trackNumber, let t1 = next.trackNumber else { return true }
        let (d0, d1) = (previous.discNumber ?? 1, next.discNumber ?? 1)
        return (d1 == d0 && t1 == t0 + 1) || (d1 == d0 + 1 && t1 == 1)
    }
}

/// The item fading out beneath the next one during a crossfade (decoder thread only): its
/// decoder, the frames it decoded past the fade's start that are not mixed yet, and how far the
/// fade has gone.
final class FadingItem {
    let decoder: any AudioDecoder
    let item: DecodeItem
    /// The ReplayGain scales its start marker carried (the output applies the next item's from
    /// the fade's start: this one's samples are scaled by the ratio).
    let scales: (track: Float, album: Float)
    /// The fade's length in frames, and the frames mixed so far.
    let length: Int
    var mixed = 0
    private let channels: Int
    /// Decoded samples waiting to be mixed, from `read`.
    private var pending: [Float]
    private var read = 0
    /// Its clip's frames left (nil: to the file's end); whether it has ended.
    private var remaining: Int?
    private var ended: Bool
    private var scratch: UnsafeMutableRawBufferPointer

    init(decoder: any AudioDecoder, item: DecodeItem, scales: (track: Float, album: Float), length: Int,
         pending: [Float], remaining: Int?, ended: Bool) {
        self.decoder = decoder
        self.item = item
        self.scales = scales
        self.length = length
        self.channels = decoder.format.channels
        self.pending = pending
        self.remaining = remaining
        self.ended = ended
        scratch = .allocate(byteCount: max(decoder.minimumRoom, 16384), alignment: 16)
    }

    deinit { scratch.deallocate() }

    /// Mixes the next `frames` frames of the fade into `buffer` (the next item's audio, float32
    /// interleaved, already in the ring): the next item's samples times the rising gain plus this
    /// one's times the falling gain and `ratio` (its ReplayGain over the next item's). Past its
    /// end this item adds silence.
    func mix(into buffer: UnsafeMutableRawBufferPointer, frames: Int, ratio: Float) {
        let out = buffer.bindMemory(to: Float.self)
        for f in 0..<frames {
            let (gOut, gIn) = Crossfade.gains(frame: mixed + f, of: length)
            let g = gOut * ratio
            for c in 0..<channels {
                let i = f * channels + c
                out[i] = out[i] * gIn + nextSample() * g
            }
        }
        mixed += frames
    }

    private func nextSample() -> Float {
        if read == pending.count && !refill() { return 0 }
        defer { read += 1 }
        return pending[read]
    }

    /// Decodes the next block; false once the item has ended (its end, its clip's end, or an error).
    private func refill() -> Bool {
        pending.removeAll(keepingCapacity: true)
        read = 0
        var empty = 0
        while pending.isEmpty && !ended {
            do throws(MediaError) {
                var (bytes, status) = try decoder.decode(into: scratch, spillingInto: UnsafeMutableRawBufferPointer(start: nil, count: 0))
                _ = decoder.takeMetadataUpdate()  // its tags no longer matter: the next item is current
                empty = bytes == 0 ? empty + 1 : 0
                if empty > 64 { status = .done }  // a decoder that makes no progress
                let bytesPerFrame = decoder.format.bytesPerFrame
                if let r = remaining {
                    bytes = min(bytes, r * bytesPerFrame)
                    remaining = r - bytes / bytesPerFrame
                    if remaining! <= 0 { status = .done }
                }
                pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[..<bytes]).bindMemory(to: Float.self))
                if status == .done { ended = true }
            } catch {
                ended = true  // what it could not decode fades out as silence
            }
        }
        return !pending.isEmpty
    }
}
