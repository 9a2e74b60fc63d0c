import Media
import MediaCore

/// The tag readers Backline wrote itself (the decoders' libraries read the rest).
enum TagTargets {
    /// A file's ID3 tags (v2 at the start, else v1 at the end): every value fits a protocol line.
    static let id3 = FuzzTarget("id3", "ID3v2 frames and ID3v1; every tag value is text with no control characters; numbers are numbers") { input throws(InvariantFailure) in
        try tagsAreLines(ID3Scan.metadata(MemorySource(name: "fuzz.mp3", bytes: input)), "id3")
        try tagsAreLines(ID3Scan.metadata(bytes: input[...]), "id3")
    }

    /// A Vorbis comment header (FLAC, Ogg Vorbis, Opus), with `METADATA_BLOCK_PICTURE`.
    static let vorbisComments = FuzzTarget("vorbis-comments", "Vorbis comments and METADATA_BLOCK_PICTURE; every tag value fits a protocol line; gains are finite") { input throws(InvariantFailure) in
        var m = TrackMetadata()
        VorbisComments.parse(input[...], into: &m)
        try tagsAreLines(m, "vorbis-comments")
        for g in [m.replayGain.trackGain, m.replayGain.albumGain, m.replayGain.trackPeak, m.replayGain.albumPeak] {
            if let g { try check(g.isFinite, "vorbis-comments", "a gain or peak that is not finite: \(g)") }
        }
    }

    /// A FLAC `PICTURE` block, and the base64 that carries one in Ogg: a picture's bytes lie
    /// within the block; any bytes base64-encoded decode back to themselves.
    static let flacPicture = FuzzTarget("flac-picture", "FLAC PICTURE blocks and base64; artwork is non-empty and within the block; encoded bytes decode back") { input throws(InvariantFailure) in
        if let p = FLACPicture.parse(input[...]) {
            try check(!p.artwork.data.isEmpty && p.artwork.data.count <= input.count - 32, "flac-picture", "artwork of \(p.artwork.data.count) bytes from a block of \(input.count)")
            try check(!p.artwork.mimeType.isEmpty, "flac-picture", "no MIME type")
        }
        let encoded = base64(input)
        try check(Base64.decode(encoded) == input, "flac-picture", "base64 of \(input.count) bytes does not decode back")
        _ = Base64.decode(String(decoding: input, as: UTF8.self))
    }

    /// RFC 4648 base64 (the test's own encoder).
    static func base64(_ b: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        var i = 0
        while i < b.count {
            let n = min(3, b.count - i)
            let v = (UInt32(b[i]) << 16) | (n > 1 ? UInt32(b[i + 1]) << 8 : 0) | (n > 2 ? UInt32(b[i + 2]) : 0)
            for k in 0..<4 { out.append(k <= n ? alphabet[Int((v >> UInt32(18 - 6 * k)) & 63)] : UInt8(ascii: "=")) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
