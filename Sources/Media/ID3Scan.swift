import MediaCore

/// Reads an MP3's ID3 tags as mpd 0.23 does: libid3tag's parsing (`tag.c`, `frame.c`,
/// `compat.gperf`, `genre.c`) and mpd's loading and scan (`src/tag/Id3Load.cxx`, `Id3Scan.cxx`,
/// `Handler.cxx`, `Builder.cxx`).
///
/// The tag is read here from the file, not taken from libmpg123's parsed view: libmpg123 1.31
/// keeps one frame per text frame ID (a second `TPE1` replaces the first, so `Artist` values
/// are lost), passes `UFID` over, and keeps ID3v2.3's `TYER`/`TDAT`/`TIME`/`TORY` and `TCON`
/// codes as written, where libid3tag turns them into `TDRC`, `TDOR` and genre strings.
///
/// What mpd does, and so this:
/// - The ID3v2 tag at the start of the file is used; only without one (or when it is not a
///   2.2/2.3/2.4 tag libid3tag can parse) is the ID3v1 tag at the end read. (mpd's search for
///   an ID3v2 tag appended before the ID3v1 one reads from the wrong offset, so it never finds
///   one; a `SEEK` frame, which mpd follows, is not followed here.)
/// - Text frames (`T***`): every NUL-separated string of every frame with the ID, in file order;
///   values are trimmed of bytes up to 0x20; `\n` becomes a space. ID3v2.2/2.3 frames are
///   renamed as libid3tag does (`TP1`→`TPE1`, `TORY`→`TDOR`, …); their `TYER` (4+ characters),
///   `TDAT` and `TIME` make one more `TDRC` value, `yyyy[-MM-dd[THH:mm]]`, after any real
///   `TDRC`; their `TCON` is read as its first string split into `(n)` references and a rest.
///   Genre strings go through ``ID3Genre/name(_:)``.
/// - `COMM`: the text (description and language ignored), trimmed.
/// - `TXXX`: each description/value becomes a ``TagPair``; the descriptions mpd knows
///   (case-sensitive) also give a tag, with the value untrimmed.
/// - `UFID` owned by `http://musicbrainz.org`: its bytes are a `MUSICBRAINZ_TRACKID`.
/// - Compressed and encrypted frames are skipped (libid3tag inflates compressed ones). A frame
///   whose header is broken makes libid3tag drop the whole tag, and so here; a frame whose
///   contents it would refuse (an unknown text encoding) is skipped here, where libid3tag
///   drops the tag.
package enum ID3Scan {
    /// The tags of a seekable source (its position is left anywhere). Empty metadata when it
    /// has no tag or cannot be read.
    package static func metadata(_ source: any ByteSource) -> TrackMetadata {
        guard let size = source.length else { return TrackMetadata() }
        if let frames = readV2(source, fileSize: size) ?? readV1(source, fileSize: size) {
            return scan(frames)
        }
        return TrackMetadata()
    }

    /// The tags of an ID3v2 tag held whole in `bytes` (a WAV or AIFF `id3 ` chunk).
    package static func metadata(bytes: ArraySlice<UInt8>) -> TrackMetadata {
        parseV2(Array(bytes)).map(scan) ?? TrackMetadata()
    }

    // MARK: Frames

    /// One frame's contents, decoded as libid3tag's fields.
    enum Content: Equatable {
        /// A text frame's strings (encoding and string list).
        case text([String])
        /// A `COMM` frame's full text.
        case comment(String)
        /// A `TXXX` frame's description and value.
        case userText(String, String)
        /// A `UFID` frame's owner and identifier bytes.
        case uniqueID(String, [UInt8])
        /// A `CHAP` frame (ID3v2 Chapter Frame Addendum): its start and end in milliseconds and
        /// the title of its embedded `TIT2`, if any.
        case chapter(start: Int, end: Int, title: String?)
        /// A ID3v2.2/2.3 frame libid3tag keeps only as obsolete (`TYER`, `TDAT`, `TIME`, …):
        /// its first string.
        case obsolete(String?)
        /// Anything else.
        case other
    }

    struct Frame {
        /// The ID3v2.4 ID (libid3tag's canonical one; `Y` + the ID for unknown v2.2 frames).
        var id: String
        var content: Content
    }

    // MARK: Reading the file

    /// The largest ID3v2 tag read: the format allows 256 MiB, which a crafted file would make
    /// every tag read allocate; real tags with a large cover are a few MiB. A bigger one is
    /// treated as absent (the ID3v1 tag, if any, is read instead).
    static let maximumTagBytes = 32 << 20

    /// The ID3v2 tag at the start of the file (mpd's `tag_id3_find_from_beginning`).
    private static func readV2(_ source: any ByteSource, fileSize: Int) -> [Frame]? {
        guard fileSize >= 10, let header = source.read(count: 10, at: 0), let size = tagSize(header),
              size <= fileSize, size <= maximumTagBytes, let rest = source.read(count: size - 10, at: 10) else { return nil }
        return parseV2(header + rest)
    }

    /// The ID3v1 tag in the last 128 bytes.
    private static func readV1(_ source: any ByteSource, fileSize: Int) -> [Frame]? {
        guard fileSize >= 128, let tag = source.read(count: 128, at: fileSize - 128) else { return nil }
        return parseV1(tag)
    }

    /// libid3tag's `id3_tag_query` for an ID3v2 header (a file's first 10 bytes): the whole
    /// tag's size (header, body, footer), or nil when it starts no tag.
    static func tagSize(_ h: [UInt8]) -> Int? {
        guard h.count >= 10, h[0] == 0x49, h[1] == 0x44, h[2] == 0x33, h[3] < 0xFF, h[4] < 0xFF,
              h[6] < 0x80, h[7] < 0x80, h[8] < 0x80, h[9] < 0x80 else { return nil }
        return 10 + syncsafe(h[6..<10]) + (h[5] & 0x10 != 0 ? 10 : 0)
    }

    private static func syncsafe(_ b: ArraySlice<UInt8>) -> Int {
        b.reduce(0) { $0 << 7 | Int($1 & 0x7F) }
    }

    private static func uint(_ b: ArraySlice<UInt8>) -> Int {
        b.reduce(0) { $0 << 8 | Int($1) }
    }

    /// libid3tag's `id3_util_deunsynchronise`: `FF 00` becomes `FF`.
    private static func deunsynchronised(_ b: ArraySlice<UInt8>) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(b.count)
        var i = b.startIndex
        while i < b.endIndex {
            out.append(b[i])
            if b[i] == 0xFF, i + 1 < b.endIndex, b[i + 1] == 0 { i += 1 }
            i += 1
        }
        return out
    }

    // MARK: ID3v2 (libid3tag's v2_parse and id3_frame_parse)

    static func parseV2(_ tag: [UInt8]) -> [Frame]? {
        guard let total = tagSize(tag), tag.count >= total else { return nil }
        let major = Int(tag[3])
        let flags = tag[5]
        guard (2...4).contains(major) else { return nil }
        var body = Array(tag[10..<(10 + syncsafe(tag[6..<10]))])
        if flags & 0x80 != 0 && major < 4 { body = deunsynchronised(body[...]) }
        var p = 0
        var end = body.count
        if flags & 0x40 != 0 {  // extended header
            switch major {
            case 3:
                guard end - p >= 4 else { return nil }
                let ehSize = uint(body[p..<(p + 4)])
                p += 4
                guard ehSize <= end - p else { return nil }
                let eh = p
                p += ehSize
                if ehSize >= 6 {
                    let padding = uint(body[(eh + 2)..<(eh + 6)])
                    guard padding <= end - p else { return nil }
                    end -= padding
                }
            case 4:
                guard end - p >= 4 else { return nil }
                let ehSize = syncsafe(body[p..<(p + 4)])
                guard ehSize >= 6, ehSize <= end - p else { return nil }
                p += ehSize
            default:
                return nil  // in 2.2 the flag means compression
            }
        }
        var frames: [Frame] = []
        while p < end {
            if body[p] == 0 { break }  // padding
            guard let frame = parseFrame(body, &p, end: end, major: major) else { return nil }
            if let frame { frames.append(frame) }
        }
        if major < 4, let date = obsoleteDate(frames) { frames.append(Frame(id: "TDRC", content: .text([date]))) }
        return frames
    }

    /// One frame at `p` (moved past it): nil when the tag is broken (libid3tag then drops it),
    /// `.some(nil)` for a frame skipped.
    private static func parseFrame(_ b: [UInt8], _ p: inout Int, end: Int, major: Int) -> Frame?? {
        let length = end - p
        var id: String
        let data: ArraySlice<UInt8>
        var obsolete = false
        switch major {
        case 2:
            guard length >= 6 else { return nil }
            let old = String(decoding: b[p..<(p + 3)], as: UTF8.self)
            let size = uint(b[(p + 3)..<(p + 6)])
            p += 6
            guard size <= end - p else { return nil }
            data = b[p..<(p + size)]
            p += size
            if let new = v22Names[old] {
                id = new
            } else {
                id = "Y" + old
                obsolete = v22Obsolete.contains(old)
            }
        default:
            // 2.3 and 2.4: the same header (2.4's size syncsafe), the format flags and the
            // bytes they add in different places (2.3: %ijk00000, 2.4: %0h00kmnp).
            guard length >= 10 else { return nil }
            id = String(decoding: b[p..<(p + 4)], as: UTF8.self)
            let size = major == 3 ? uint(b[(p + 4)..<(p + 8)]) : syncsafe(b[(p + 4)..<(p + 8)])
            let flags = uint(b[(p + 8)..<(p + 10)])
            p += 10
            guard size <= end - p else { return nil }
            var d = p
            let frameEnd = p + size
            p = frameEnd
            guard validID(id) else { return nil }
            // Skips `n` bytes the flags put before the data; false when the frame is too short.
            func skip(_ n: Int) -> Bool {
                guard frameEnd - d >= n else { return false }
                d += n
                return true
            }
            if major == 3 {
                if flags & 0x001F != 0 { return .some(nil) }  // unknown format flags: kept unparsed
                let compressed = flags & 0x0080 != 0, encrypted = flags & 0x0040 != 0
                guard !compressed || skip(4), !encrypted || skip(1), flags & 0x0020 == 0 || skip(1) else { return nil }
                if compressed || encrypted { return .some(nil) }
                if let new = v23Names[id] { id = new }
                obsolete = v23Obsolete.contains(id)
            } else {
                if flags & 0x00B0 != 0 { return .some(nil) }  // unknown format flags: kept unparsed
                let compressed = flags & 0x0008 != 0, encrypted = flags & 0x0004 != 0
                if compressed && flags & 0x0001 == 0 { return nil }  // compression needs a data length
                // Group, encryption method, data length, in that order.
                guard flags & 0x0040 == 0 || skip(1), !encrypted || skip(1), flags & 0x0001 == 0 || skip(4) else { return nil }
                if compressed || encrypted { return .some(nil) }
                if flags & 0x0002 != 0 {
                    let plain = deunsynchronised(b[d..<frameEnd])
                    return .some(Frame(id: id, content: content(id: id, plain[...], major: major)))
                }
            }
            data = b[d..<frameEnd]
        }
        guard validID(id) else { return nil }
        if obsolete { return .some(Frame(id: id, content: .obsolete(firstString(data)))) }
        return .some(Frame(id: id, content: content(id: id, data, major: major)))
    }

    private static func validID(_ id: String) -> Bool {
        id.utf8.count == 4 && id.utf8.allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x20 }
    }

    /// ID3v2.2 frames libid3tag renames (those mpd reads, and their obsolete date frames).
    private static let v22Names: [String: String] = [
        "TP1": "TPE1", "TP2": "TPE2", "TP3": "TPE3", "TP4": "TPE4", "TT1": "TIT1", "TT2": "TIT2", "TT3": "TIT3",
        "TAL": "TALB", "TRK": "TRCK", "TPA": "TPOS", "TPB": "TPUB", "TCM": "TCOM", "TCO": "TCON", "TOR": "TDOR",
        "TXX": "TXXX", "COM": "COMM", "UFI": "UFID", "TXT": "TEXT", "TOA": "TOPE", "TOT": "TOAL", "TLA": "TLAN",
        "TRC": "TSRC", "TEN": "TENC", "TSS": "TSSE", "TBP": "TBPM", "TCR": "TCOP", "TLE": "TLEN", "TMT": "TMED",
    ]
    private static let v22Obsolete: Set<String> = ["TYE", "TDA", "TIM", "TRD", "TSI", "EQU", "RVA", "CRM"]
    private static let v23Names: [String: String] = ["TORY": "TDOR", "IPLS": "TIPL"]
    private static let v23Obsolete: Set<String> = ["TYER", "TDAT", "TIME", "TRDA", "TSIZ", "EQUA", "RVAD"]

    /// libid3tag's `id3_compat_fixup`: the `TDRC` made from ID3v2.2/2.3 `TYER`, `TDAT` and
    /// `TIME` (the last of each, when at least 4 characters long).
    private static func obsoleteDate(_ frames: [Frame]) -> String? {
        var stamp = [Unicode.Scalar?](repeating: nil, count: 16)
        for f in frames {
            guard case .obsolete(let s?) = f.content else { continue }
            let c = Array(s.unicodeScalars)
            guard c.count >= 4 else { continue }
            switch f.id {
            case "TYER", "YTYE": stamp[0...3] = [c[0], c[1], c[2], c[3]]
            case "TDAT", "YTDA": stamp[4...9] = ["-", c[2], c[3], "-", c[0], c[1]]
            case "TIME", "YTIM": stamp[10...15] = ["T", c[0], c[1], ":", c[2], c[3]]
            default: break
            }
        }
        guard stamp[0] != nil else { return nil }
        var out = String.UnicodeScalarView()
        for case let s? in stamp.prefix(while: { $0 != nil && $0 != "\0" }) { out.append(s) }
        return String(out)
    }

    /// The fields of a frame libid3tag parses and mpd reads.
    private static func content(id: String, _ d: ArraySlice<UInt8>, major: Int) -> Content {
        if id == "CHAP" { return chapter(d, major: major) }
        guard let enc = d.first else { return .other }
        var p = d.startIndex + 1
        switch id {
        case "TXXX":
            guard enc <= 3 else { return .other }
            let name = string(d, &p, encoding: enc, full: false)
            return .userText(name, string(d, &p, encoding: enc, full: false))
        case "COMM":
            guard enc <= 3, d.count >= 4 else { return .other }
            p += 3  // language
            _ = string(d, &p, encoding: enc, full: false)  // short description
            return .comment(string(d, &p, encoding: enc, full: true))
        case "UFID":
            var q = d.startIndex
            let owner = string(d, &q, encoding: 0, full: false)
            return .uniqueID(owner, Array(d[q...]))
        default:
            guard id.hasPrefix("T"), enc <= 3 else { return .other }
            if id == "TCON" && major < 4 {
                return .text(translatedGenre(string(d, &p, encoding: enc, full: false)))
            }
            var strings: [String] = []
            while p < d.endIndex { strings.append(string(d, &p, encoding: enc, full: false)) }
            return .text(strings)
        }
    }

    /// A `CHAP` frame: an element ID (Latin-1, NUL-ended), start and end times (ms), start and
    /// end byte offsets (not used: the times place the chapter), then frames of the tag's own
    /// version, of which the `TIT2` is the title. A frame too short for its times is `.other`.
    private static func chapter(_ d: ArraySlice<UInt8>, major: Int) -> Content {
        guard let nul = d.firstIndex(of: 0), d.endIndex - (nul + 1) >= 16 else { return .other }
        let t = nul + 1
        let start = uint(d[t..<(t + 4)]), end = uint(d[(t + 4)..<(t + 8)])
        let sub = Array(d[(t + 16)...])
        var q = 0
        var title: String?
        while q < sub.count, sub[q] != 0, let frame = parseFrame(sub, &q, end: sub.count, major: major) {
            if let frame, frame.id == "TIT2", case .text(let strings) = frame.content, title == nil {
                title = strings.first.map(stripped)
            }
        }
        return .chapter(start: start, end: end, title: title)
    }

    /// An obsolete frame's first string (libid3tag's fixup reads it with its encoding byte).
    private static func firstString(_ d: ArraySlice<UInt8>) -> String? {
        guard let enc = d.first, enc <= 3 else { return nil }
        var p = d.startIndex + 1
        return string(d, &p, encoding: enc, full: false)
    }

    /// libid3tag's `translate_TCON` (ID3v2.2/2.3): `(17)(31)Rock` is `17`, `31`, `Rock`; `((`
    /// starts the text.
    private static func translatedGenre(_ s: String) -> [String] {
        let c = Array(s.unicodeScalars)
        var out: [String] = []
        var i = 0
        func text(_ r: Range<Int>) -> String {
            var v = String.UnicodeScalarView()
            v.append(contentsOf: c[r])
            return String(v)
        }
        while i < c.count, c[i] == "(" {
            i += 1
            if i < c.count, c[i] == "(" { break }
            var e = i
            while e < c.count, c[e] != ")" { e += 1 }
            out.append(text(i..<e))
            i = min(e + 1, c.count)
        }
        if i < c.count { out.append(text(i..<c.count)) }
        return out
    }

    /// libid3tag's `id3_parse_string`: one string in `encoding` (0 Latin-1, 1 UTF-16 with an
    /// optional byte-order mark, 2 UTF-16BE, 3 UTF-8) from `p` to a NUL or the end, `p` moved past
    /// it. Without `full`, `\n` becomes a space.
    private static func string(_ d: ArraySlice<UInt8>, _ p: inout Int, encoding: UInt8, full: Bool) -> String {
        var s: String
        switch encoding {
        case 1, 2:
            let end = p + (d.endIndex - p) / 2 * 2
            var bigEndian = true
            if encoding == 1, end - p >= 2 {
                if d[p] == 0xFE && d[p + 1] == 0xFF { p += 2 } else if d[p] == 0xFF && d[p + 1] == 0xFE { bigEndian = false; p += 2 }
            }
            var units: [UInt16] = []
            while p < end {
                let u = bigEndian ? UInt16(d[p]) << 8 | UInt16(d[p + 1]) : UInt16(d[p + 1]) << 8 | UInt16(d[p])
                p += 2
                if u == 0 { break }
                units.append(u)
            }
            if p == end { p = d.endIndex }  // past an odd last byte
            s = String(decoding: units, as: UTF16.self)
        default:
            let start = p
            while p < d.endIndex && d[p] != 0 { p += 1 }
            let bytes = d[start..<p]
            if p < d.endIndex { p += 1 }
            if encoding == 0 {
                var v = String.UnicodeScalarView()
                for b in bytes { v.append(Unicode.Scalar(b)) }
                s = String(v)
            } else {
                s = String(decoding: bytes, as: UTF8.self)
            }
        }
        if !full && s.utf8.contains(0x0A) {
            s = String(decoding: s.utf8.map { $0 == 0x0A ? 0x20 : $0 }, as: UTF8.self)
        }
        return s
    }

    // MARK: ID3v1 (libid3tag's v1_parse)

    static func parseV1(_ t: [UInt8]) -> [Frame]? {
        guard t.count == 128, t[0] == 0x54, t[1] == 0x41, t[2] == 0x47 else { return nil }
        func field(_ r: Range<Int>) -> String? {
            var b = t[r].prefix { $0 != 0 }
            while b.last == 0x20 { b.removeLast() }
            guard !b.isEmpty else { return nil }
            var v = String.UnicodeScalarView()
            for c in b { v.append(Unicode.Scalar(c)) }
            return String(v)
        }
        var frames: [Frame] = []
        func add(_ id: String, _ value: String?) {
            if let value { frames.append(Frame(id: id, content: id == "COMM" ? .comment(value) : .text([value]))) }
        }
        add("TIT2", field(3..<33))
        add("TPE1", field(33..<63))
        add("TALB", field(63..<93))
        add("TDRC", field(93..<97))
        if t[125] == 0 && t[126] != 0 { add("TRCK", "\(t[126])") }  // ID3v1.1
        if t[127] < 0xFF { add("TCON", "\(t[127])") }
        add("COMM", field(97..<127))
        return frames
    }

    // MARK: mpd's scan_id3_tag

    private static let textOrder: [(String, TagKey)] = [
        ("TPE1", .artist), ("TPE2", .albumArtist), ("TSOP", .artistSort), ("TSOA", .albumSort),
        ("TSO2", .albumArtistSort), ("TIT2", .title), ("TALB", .album), ("TRCK", .track), ("TDRC", .date),
        ("TDOR", .originalDate), ("TCON", .genre), ("TCOM", .composer), ("TPE3", .conductor),
        ("TPE4", .performer), ("TIT1", .grouping),
    ]

    private static let userTextKeys: [String: TagKey] = [
        "ALBUMARTISTSORT": .albumArtistSort, "MusicBrainz Artist Id": .musicBrainzArtistID,
        "MusicBrainz Album Id": .musicBrainzAlbumID, "MusicBrainz Album Artist Id": .musicBrainzAlbumArtistID,
        "MusicBrainz Track Id": .musicBrainzTrackID, "MusicBrainz Release Track Id": .musicBrainzReleaseTrackID,
        "MusicBrainz Work Id": .musicBrainzWorkID,
    ]

    /// mpd's `StringView::Strip`: no bytes up to 0x20 at either end.
    private static func stripped(_ s: String) -> String {
        let b = Array(s.utf8)
        guard let first = b.firstIndex(where: { $0 > 0x20 }), let last = b.lastIndex(where: { $0 > 0x20 }) else { return "" }
        return String(decoding: b[first...last], as: UTF8.self)
    }

    private static func scan(_ frames: [Frame]) -> TrackMetadata {
        var meta = TrackMetadata()
        var firstRaw: [String: String] = [:]
        func text(_ id: String, _ key: TagKey) {
            for f in frames where f.id == id {
                guard case .text(let strings) = f.content else { continue }
                for s in strings {
                    let v = stripped(key == .genre ? ID3Genre.name(s) : s)
                    if firstRaw[id] == nil && !v.isEmpty { firstRaw[id] = v }
                    meta.addTag(key, v)
                }
            }
        }
        for (id, key) in textOrder { text(id, key) }
        for f in frames where f.id == "COMM" {
            if case .comment(let s) = f.content { meta.addTag(.comment, stripped(s)) }
        }
        text("TPOS", .disc)
        text("TPUB", .label)
        for f in frames where f.id == "TXXX" {
            guard case .userText(let name, let value) = f.content else { continue }
            meta.comments.append(TagPair(name: name, value: value))
            if let key = userTextKeys[name] { meta.addTag(key, value) }
            meta.replayGain.take(name, value)  // TXXX:REPLAYGAIN_TRACK_GAIN and the rest
        }
        for f in frames where f.id == "UFID" {
            guard case .uniqueID(let owner, let data) = f.content, owner == "http://musicbrainz.org" else { continue }
            meta.addTag(.musicBrainzTrackID, bytes: data)
        }
        // Chapters in order of their starts (as FFmpeg lists them; a `CTOC`'s order is not
        // followed), each ending where its frame says (nil when that is not after its start).
        meta.chapters = frames.enumerated().compactMap { i, f -> (Int, Chapter)? in
            guard case .chapter(let start, let end, let title) = f.content else { return nil }
            return (i, Chapter(title: title, start: Double(start) / 1000, end: end > start ? Double(end) / 1000 : nil))
        }.sorted { ($0.1.start, $0.0) < ($1.1.start, $1.0) }.map(\.1)
        meta.title = meta.values(.title).first
        meta.artist = meta.values(.artist).first
        meta.album = meta.values(.album).first
        meta.albumArtist = meta.values(.albumArtist).first
        meta.genre = meta.values(.genre).first
        meta.composer = meta.values(.composer).first
        meta.year = meta.values(.date).first
        if let t = firstRaw["TRCK"] { (meta.trackNumber, meta.trackCount) = numberPair(t) }
        if let d = firstRaw["TPOS"] { (meta.discNumber, meta.discCount) = numberPair(d) }
        return meta
    }

    /// `"3/9"` as (3, 9), `"3"` as (3, nil).
    private static func numberPair(_ s: String) -> (Int?, Int?) {
        let parts = s.split(separator: "/", omittingEmptySubsequences: false).map { Int(stripped(String($0))) }
        return (parts.first ?? nil, parts.count > 1 ? parts[1] : nil)
    }
}
