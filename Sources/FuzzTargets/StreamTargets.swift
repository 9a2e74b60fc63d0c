import HTTPInput
import MediaCore

/// What an internet radio server sends: the `icy-*` response head and in-band ICY metadata.
enum StreamTargets {
    /// An ICY body (first two bytes: the interval), fed in pieces of varying size: the audio and
    /// the metadata blocks come out the same as from the body read in one piece, and the title
    /// a block sets is a tag value a protocol line can hold.
    static let icy = FuzzTarget("icy", "ICYDemuxer and StreamTitle; any split of the body gives the same audio and blocks; titles hold no control characters") { input throws(InvariantFailure) in
        guard input.count >= 2 else { return }
        let interval = 1 + (Int(input[0]) << 8 | Int(input[1])) % 4096
        let body = Array(input.dropFirst(2))
        // The body in one piece (a plain model of the format), then in pieces.
        var expectedAudio: [UInt8] = [], expectedBlocks: [[UInt8]] = []
        var i = 0
        while i < body.count {
            let n = min(interval, body.count - i)
            expectedAudio += body[i..<(i + n)]
            i += n
            guard i < body.count else { break }
            let length = Int(body[i]) * 16
            i += 1
            if length > 0, i + length <= body.count {
                var b = Array(body[i..<(i + length)])
                while b.last == 0 { b.removeLast() }
                if !b.isEmpty { expectedBlocks.append(b) }
            }
            i += length
        }
        var demuxer = ICYDemuxer(interval: interval)
        var audio: [UInt8] = [], blocks: [[UInt8]] = []
        var seed = UInt64(body.count) &* 0x9E37_79B9_7F4A_7C15
        var at = 0
        while at < body.count {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            let n = min(body.count - at, 1 + Int(seed >> 33) % 97)
            body[at..<(at + n)].withUnsafeBytes { piece in
                demuxer.feed(piece, audio: { audio += $0 }, metadata: { blocks.append($0) })
            }
            at += n
        }
        try check(audio == expectedAudio, "icy", "audio differs: \(audio.count) bytes, expected \(expectedAudio.count)")
        try check(blocks == expectedBlocks, "icy", "blocks differ: \(blocks.count), expected \(expectedBlocks.count)")
        var station = TrackMetadata()
        for b in blocks {
            if let m = HTTPSource.station(station, taking: b) { station = m }
            try tagsAreLines(station, "icy")
        }
    }

    /// Response-head lines (one per input line): what they set stays consistent, and the
    /// station's tags made from them are values a protocol line can hold.
    static let icyHeaders = FuzzTarget("icy-headers", "HTTP response head and icy-* fields; the interval is positive; station tags hold no control characters") { input throws(InvariantFailure) in
        var head = ResponseHead()
        for line in input.split(separator: 0x0A, omittingEmptySubsequences: false) {
            let kind = (Array(line) + [0x0A]).withUnsafeBytes { head.take($0) }
            if kind == .end {
                try check(head.icyMetaInterval.map { $0 > 0 } ?? true, "icy-headers", "icy-metaint \(head.icyMetaInterval ?? 0)")
                try check(head.contentType.map { $0 == $0.lowercased() } ?? true, "icy-headers", "content type not lower case")
                try tagsAreLines(HTTPSource.stationTags(head), "icy-headers")
            }
        }
        try tagsAreLines(HTTPSource.stationTags(head), "icy-headers")
    }
}

/// Every tag value of `m` can be written on one protocol line (`Title: …` in MPD's protocol):
/// valid text with no control characters (mpd's `FixTagString` rule), and the single fields
/// agree with the tags.
public func tagsAreLines(_ m: TrackMetadata, _ target: String) throws(InvariantFailure) {
    for t in m.tags {
        try check(!t.value.isEmpty, target, "an empty \(t.key.mpdName) tag")
        try check(!t.value.unicodeScalars.contains { $0.value < 0x20 }, target, "\(t.key.mpdName) holds a control character: \(shown(t.value))")
        if t.key == .track || t.key == .disc {
            try check(t.value.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }, target, "\(t.key.mpdName) is not a number: \(shown(t.value))")
        }
    }
    for (v, name) in [(m.title, "title"), (m.artist, "artist"), (m.album, "album"), (m.albumArtist, "album artist"),
                      (m.genre, "genre"), (m.composer, "composer"), (m.year, "year")] {
        if let v { try check(!v.unicodeScalars.contains { $0.value < 0x20 }, target, "the \(name) field holds a control character: \(shown(v))") }
    }
    if let art = m.artwork { try check(!art.data.isEmpty, target, "empty artwork") }
}
