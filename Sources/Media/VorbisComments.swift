import MediaCore
import Platform

/// Vorbis comments (FLAC's `VORBIS_COMMENT` block, Ogg Vorbis's and Opus's comment headers)
/// read as mpd 0.23 reads them (`src/lib/xiph/VorbisComments.cxx`, `XiphTags.cxx`): each
/// `NAME=value` in file order; the name matched ignoring case against mpd's tag names, then
/// its Xiph aliases (`TRACKNUMBER`, `DISCNUMBER`, `ALBUM ARTIST`, `DESCRIPTION`, …); two
/// `ARTIST` comments are two artists. `METADATA_BLOCK_PICTURE` (base64 FLAC picture) is the
/// artwork; `REPLAYGAIN_*` and `R128_*` the gains.
package enum VorbisComments {
    /// Xiph names that are not mpd's own tag names (`XiphTags.cxx`).
    private static let aliases: [String: TagKey] = [
        "tracknumber": .track, "discnumber": .disc, "album artist": .albumArtist, "album_artist": .albumArtist, "description": .comment,
        "movementname": .movement, "movement": .movementNumber,
    ]

    /// Parses a comment header body: vendor length and string, count, then each comment.
    /// `data` starts at the vendor length (after any packet type and magic).
    package static func parse(_ data: ArraySlice<UInt8>, into meta: inout TrackMetadata) {
        var r = ByteReader(data, bigEndian: false)
        guard let vendorLength = r.u32(), r.skip(Int(vendorLength)), let count = r.u32() else { return }
        var comments: [ArraySlice<UInt8>] = []
        for _ in 0..<min(Int(count), 100_000) {
            guard let n = r.u32(), let bytes = r.bytes(Int(n)) else { break }
            comments.append(bytes)
        }
        apply(comments, into: &meta)
    }

    /// Reads comments given as C arrays (libvorbis's `vorbis_comment`, opusfile's `OpusTags`).
    static func apply(count: Int32, comments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                      lengths: UnsafeMutablePointer<Int32>?, into meta: inout TrackMetadata) {
        guard let comments, let lengths, count > 0 else { return }
        let list = (0..<Int(count)).compactMap { i -> ArraySlice<UInt8>? in
            guard let p = comments[i] else { return nil }
            return Array(UnsafeRawBufferPointer(start: p, count: Int(lengths[i])))[...]
        }
        apply(list, into: &meta)
    }

    /// Reads each `NAME=value` comment, in order.
    static func apply(_ comments: [ArraySlice<UInt8>], into meta: inout TrackMetadata) {
        var track: String?, disc: String?, trackTotal: String?, discTotal: String?
        for bytes in comments {
            guard let eq = bytes.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let name = String(decoding: bytes[bytes.startIndex..<eq], as: UTF8.self)
            let valueBytes = Array(bytes[(eq + 1)...])
            let value = String(decoding: valueBytes, as: UTF8.self)
            let lower = name.lowercased()
            if lower != "metadata_block_picture" { meta.comments.append(TagPair(name: name, value: value)) }
            switch lower {
            case "metadata_block_picture":
                if meta.artwork == nil || isFrontCover(value),
                   let raw = Base64.decode(value), let art = FLACPicture.parse(raw[...]) { meta.artwork = art.artwork }
                continue
            case "replaygain_track_gain", "replaygain_track_peak", "replaygain_album_gain", "replaygain_album_peak",
                 "r128_track_gain", "r128_album_gain":
                meta.replayGain.take(lower, value)
            case "tracktotal", "totaltracks": trackTotal = trackTotal ?? value
            case "disctotal", "totaldiscs": discTotal = discTotal ?? value
            default: break
            }
            guard let key = TagKey(mpdName: name) ?? aliases[lower] else { continue }
            if key == .track { track = track ?? value }
            if key == .disc { disc = disc ?? value }
            meta.addTag(key, bytes: valueBytes)
        }
        meta.deriveFields(track: track, disc: disc, trackTotal: trackTotal, discTotal: discTotal)
        let chapters = ChapterComments.chapters(meta.comments)
        if !chapters.isEmpty { meta.chapters = chapters }
    }

    /// Whether a base64 picture block is a front cover (type 3), without decoding it all.
    private static func isFrontCover(_ b64: String) -> Bool {
        guard let head = Base64.decode(String(b64.prefix(8))), head.count >= 4 else { return false }
        return head[3] == 3 && head[0] == 0 && head[1] == 0 && head[2] == 0
    }
}

/// A FLAC `PICTURE` block (also base64 in Ogg's `METADATA_BLOCK_PICTURE`).
package enum FLACPicture {
    /// The picture type (3: front cover) and the artwork.
    package static func parse(_ data: ArraySlice<UInt8>) -> (type: UInt32, artwork: TrackMetadata.Artwork)? {
        var r = ByteReader(data, bigEndian: true)
        guard let type = r.u32(), let mimeLength = r.u32(), let mime = r.bytes(Int(mimeLength)),
              let descLength = r.u32(), r.skip(Int(descLength)), r.skip(16), let size = r.u32(),
              let bytes = r.bytes(Int(size)), !bytes.isEmpty else { return nil }
        let mimeType = String(decoding: mime, as: UTF8.self)
        return (type, .init(data: Array(bytes), mimeType: mimeType.isEmpty ? "application/octet-stream" : mimeType))
    }
}

/// Standard base64 (RFC 4648), ignoring whitespace; nil on other characters.
package enum Base64 {
    package static func decode(_ s: String) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count * 3 / 4)
        var acc: UInt32 = 0, bits = 0
        for c in s.utf8 {
            let v: UInt32
            switch c {
            case 0x41...0x5A: v = UInt32(c - 0x41)
            case 0x61...0x7A: v = UInt32(c - 0x61 + 26)
            case 0x30...0x39: v = UInt32(c - 0x30 + 52)
            case 0x2B: v = 62
            case 0x2F: v = 63
            case 0x3D: continue
            case 0x20, 0x0A, 0x0D, 0x09: continue
            default: return nil
            }
            acc = acc << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((acc >> UInt32(bits)) & 0xFF))
            }
        }
        return out
    }
}
