import MediaCore
import BacklineTestSupport
import Media
import Foundation
import Testing

/// ID3 tags hand-made byte by byte (frame headers, encodings, unsynchronisation).
private enum ID3 {
    static func syncsafe(_ n: Int) -> [UInt8] {
        [UInt8(n >> 21 & 0x7F), UInt8(n >> 14 & 0x7F), UInt8(n >> 7 & 0x7F), UInt8(n & 0x7F)]
    }

    static func bigEndian(_ n: Int, _ count: Int) -> [UInt8] {
        (0..<count).reversed().map { UInt8(n >> (8 * $0) & 0xFF) }
    }

    static func latin1(_ s: String) -> [UInt8] { s.unicodeScalars.map { UInt8($0.value) } }

    /// A frame of ID3v2.`version`: `prefix` (group, encryption, data length bytes) then `data`.
    static func frame(_ version: Int, _ id: String, _ data: [UInt8], flags: Int = 0, prefix: [UInt8] = []) -> [UInt8] {
        let size = prefix.count + data.count
        switch version {
        case 2: return Array(id.utf8) + bigEndian(size, 3) + data
        case 3: return Array(id.utf8) + bigEndian(size, 4) + bigEndian(flags, 2) + prefix + data
        default: return Array(id.utf8) + syncsafe(size) + bigEndian(flags, 2) + prefix + data
        }
    }

    static func tag(_ version: Int, flags: UInt8 = 0, _ body: [UInt8]) -> [UInt8] {
        Array("ID3".utf8) + [UInt8(version), 0, flags] + syncsafe(body.count) + body
    }

    static func tag(_ version: Int, _ frames: [(String, [UInt8])]) -> [UInt8] {
        tag(version, frames.flatMap { frame(version, $0.0, $0.1) })
    }

    /// Text in encoding 0 (Latin-1), several values NUL-separated.
    static func t0(_ values: String...) -> [UInt8] { [0] + values.map(latin1).joined(separator: [0]) }
    /// Text in encoding 3 (UTF-8).
    static func t8(_ values: String...) -> [UInt8] { [3] + values.map { Array($0.utf8) }.joined(separator: [0]) }
    /// Text in encoding 1 (UTF-16), each value with its own little-endian byte-order mark.
    static func t16(_ values: String...) -> [UInt8] {
        [1] + values.map { [0xFF, 0xFE] + $0.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } }.joined(separator: [0, 0])
    }
    static func txxx(_ name: String, _ value: String, latin1 l1: Bool = false) -> [UInt8] {
        l1 ? [0] + latin1(name) + [0] + latin1(value) : [3] + Array(name.utf8) + [0] + Array(value.utf8)
    }
    static func comm(_ description: String, _ text: String) -> [UInt8] {
        [3] + Array("eng".utf8) + Array(description.utf8) + [0] + Array(text.utf8)
    }
    static func ufid(_ owner: String, _ id: String) -> [UInt8] { latin1(owner) + [0] + Array(id.utf8) }

    /// Unsynchronisation: `00` after each `FF` that is last or followed by `00` or `E0`–`FF`.
    static func unsynchronised(_ b: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for (i, c) in b.enumerated() {
            out.append(c)
            if c == 0xFF && (i + 1 == b.count || b[i + 1] == 0 || b[i + 1] >= 0xE0) { out.append(0) }
        }
        return out
    }

    /// An ID3v1 tag: fields padded with NULs (the artist with spaces), `comment` as given (30 bytes).
    static func v1(title: String, artist: String, album: String, year: String, comment: [UInt8], genre: UInt8) -> [UInt8] {
        func pad(_ s: String, _ n: Int, _ fill: UInt8 = 0) -> [UInt8] { latin1(s) + Array(repeating: fill, count: n - latin1(s).count) }
        return Array("TAG".utf8) + pad(title, 30) + pad(artist, 30, 0x20) + pad(album, 30) + pad(year, 4) + comment + [genre]
    }
}

@Suite("ID3 tags as mpd 0.23 reads them", Harness.audioTools)
struct TagTests {
    /// A decoder of a tagless tone with `tag` before it and `trailer` after it.
    private func decoder(_ name: String, tag: [UInt8] = [], trailer: [UInt8] = []) throws -> MPG123Decoder {
        let audio = try Data(contentsOf: try Fixtures.tone("tags-untagged", seconds: 0.3))
        let url = try Fixtures.directory().appendingPathComponent("tags-\(name).mp3")
        try (Data(tag) + audio + Data(trailer)).write(to: url, options: .atomic)
        return try MPG123Decoder(path: url.path)
    }

    /// The tags as mpd prints them, one `Name: value` a line.
    private func lines(_ m: TrackMetadata) -> [String] { m.tags.map { "\($0.key.mpdName): \($0.value)" } }

    private func pairs(_ m: TrackMetadata) -> [String] { m.comments.map { "\($0.name)=\($0.value)" } }

    // Every expected list below is what mpd 0.23.12 (Debian 12) printed for the same file, with
    // `metadata_to_use "+comment"`, except where a comment says otherwise.

    @Test("lame's ID3v2.3 tag: each frame mpd maps, in mpd's order; TXXX pairs; the single fields")
    func lameTag() throws {
        let url = try Fixtures.tone("tags-lame", seconds: 0.3, lameArgs: [
            "-b", "128", "--tt", "T", "--ta", "A", "--tl", "L", "--ty", "2001", "--tg", "Rock", "--tn", "3/9",
            "--tv", "TPOS=1/2", "--tv", "TPE2=AA", "--tv", "TCOM=C", "--tv", "TPE3=Cond", "--tv", "TPE4=Perf",
            "--tv", "TIT1=Grp", "--tv", "TPUB=Lab", "--tv", "TSOP=ASort", "--tv", "TXXX=MusicBrainz Album Id=abc",
            "--tv", "TXXX=REPLAYGAIN_TRACK_GAIN=-3.00 dB",
        ])
        let m = try MPG123Decoder(path: url.path).metadata
        #expect(lines(m) == [
            "Artist: A", "AlbumArtist: AA", "ArtistSort: ASort", "Title: T", "Album: L", "Track: 3", "Date: 2001",
            "Genre: Rock", "Composer: C", "Conductor: Cond", "Performer: Perf", "Grouping: Grp", "Disc: 1",
            "Label: Lab", "MUSICBRAINZ_ALBUMID: abc",
        ])
        #expect(m.comments == [TagPair(name: "MusicBrainz Album Id", value: "abc"),
                               TagPair(name: "REPLAYGAIN_TRACK_GAIN", value: "-3.00 dB")])
        #expect(m.title == "T" && m.artist == "A" && m.album == "L" && m.albumArtist == "AA" && m.composer == "C")
        #expect(m.genre == "Rock" && m.year == "2001")
        #expect(m.trackNumber == 3 && m.trackCount == 9 && m.discNumber == 1 && m.discCount == 2)
        #expect(m.values(.label) == ["Lab"] && m.values(.work).isEmpty)
    }

    @Test("ID3v2.4: NUL-separated values and repeated frames, UTF-16, genre numbers, COMM, TXXX, UFID")
    func multipleValues() throws {
        let tag = ID3.tag(4, [
            ("TPE1", ID3.t8("A1", "A2")), ("TIT2", ID3.t8("  Padded Title \t")), ("TPE1", ID3.t8("A3")),
            ("TCON", ID3.t8("17", "Jazz", "(31)")), ("TDRC", ID3.t8("2020-05-01")), ("TYER", ID3.t8("1999")),
            ("TDOR", ID3.t8("2019")), ("TORY", ID3.t8("1998")), ("TRCK", ID3.t8("05/10")), ("TPOS", ID3.t8("0")),
            ("TXXX", ID3.txxx("ALBUMARTISTSORT", "aasort")), ("TXXX", ID3.txxx("MUSICBRAINZ_TRACKID", "bogus")),
            ("UFID", ID3.ufid("http://musicbrainz.org", "ufid-123")), ("COMM", ID3.comm("", "a comment")),
            ("COMM", ID3.comm("desc", "second\ncomment")), ("TSOA", ID3.t8("AlbSort")), ("TSO2", ID3.t8("AASort2")),
            ("TXXX", ID3.txxx("MusicBrainz Work Id", " w1 ")), ("TCOM", ID3.t16("C1", "C2")),
            ("TXXX", ID3.txxx("musicbrainz album id", "lower")), ("TALB", ID3.t8("")), ("TPE2", ID3.t8("", "AA2")),
            ("TIT1", ID3.t8("G\u{1}x")),
        ])
        let m = try decoder("v24", tag: tag).metadata
        #expect(lines(m) == [
            "Artist: A1", "Artist: A2", "Artist: A3", "AlbumArtist: AA2", "AlbumSort: AlbSort",
            "AlbumArtistSort: AASort2", "Title: Padded Title", "Track: 5", "Date: 2020-05-01", "OriginalDate: 2019",
            "Genre: Rock", "Genre: Jazz", "Genre: (31)", "Composer: C1", "Composer: C2", "Grouping: G x",
            "Comment: a comment", "Comment: second comment", "AlbumArtistSort: aasort", "MUSICBRAINZ_WORKID:  w1 ",
            "MUSICBRAINZ_TRACKID: ufid-123",
        ])
        #expect(pairs(m) == ["ALBUMARTISTSORT=aasort", "MUSICBRAINZ_TRACKID=bogus", "MusicBrainz Work Id= w1 ",
                             "musicbrainz album id=lower"])
        #expect(m.values(.artist) == ["A1", "A2", "A3"] && m.artist == "A1" && m.title == "Padded Title")
        #expect(m.trackNumber == 5 && m.trackCount == 10 && m.discNumber == 0 && m.discCount == nil)
        #expect(m.genre == "Rock" && m.year == "2020-05-01" && m.composer == "C1" && m.album == nil)
    }

    @Test("ID3v2.3 as libid3tag converts it: TYER+TDAT+TIME after TDRC, TORY, TCON (n) references")
    func version3() throws {
        let tag = ID3.tag(3, [
            ("TDRC", ID3.t0("2005")), ("TYER", ID3.t0("2001")), ("TDAT", ID3.t0("0203")), ("TIME", ID3.t0("1405")),
            ("TORY", ID3.t0("1990")), ("TCON", ID3.t0("(17)(31)Rock")), ("TCON", ID3.t0("(17)")), ("TCON", ID3.t0("17")),
            ("TCON", ID3.t0("((foo)")), ("TCON", ID3.t0("Rock", "Jazz")), ("TCON", ID3.t0("RX")),
            ("TCON", ID3.t0("150")), ("TCON", ID3.t0("200")), ("TPE1", ID3.t0("X", "Y")),
            ("UFID", ID3.ufid("http://musicbrainz.org", "u23")), ("UFID", ID3.ufid("other", "zz")),
            ("TRCK", ID3.t0("7")), ("TXXX", ID3.txxx("MusicBrainz Artist Id", "art1", latin1: true)),
        ])
        let m = try decoder("v23", tag: tag).metadata
        #expect(lines(m) == [
            "Artist: X", "Artist: Y", "Track: 7", "Date: 2005", "Date: 2001-03-02T14:05", "OriginalDate: 1990",
            "Genre: Rock", "Genre: Trance", "Genre: Rock", "Genre: Rock", "Genre: Rock", "Genre: (foo)", "Genre: Rock",
            // Genre 150 is Baroque in the 192-name table; Debian 12's libid3tag 0.15.1b has 148 names, so its mpd prints "150".
            "Genre: Remix", "Genre: Baroque", "Genre: 200", "MUSICBRAINZ_ARTISTID: art1", "MUSICBRAINZ_TRACKID: u23",
        ])
        #expect(m.year == "2005" && m.genre == "Rock" && m.trackNumber == 7)

        // TYER shorter than 4 characters makes no date; TIME without TDAT adds nothing.
        let short = try decoder("v23-short-year", tag: ID3.tag(3, [("TYER", ID3.t0("99")), ("TDAT", ID3.t0("0203")),
                                                                   ("TORY", ID3.t0("1990"))])).metadata
        #expect(lines(short) == ["OriginalDate: 1990"] && short.year == nil)
        let noDay = try decoder("v23-no-day", tag: ID3.tag(3, [("TYER", ID3.t0("2001")), ("TIME", ID3.t0("1405"))])).metadata
        #expect(lines(noDay) == ["Date: 2001"])
    }

    @Test("ID3v2.2 frames are renamed as libid3tag does (TP1, TYE+TDA, TOR, TCO, COM, UFI, TXX)")
    func version2() throws {
        let tag = ID3.tag(2, [
            ("TT2", ID3.t0("Old Title")), ("TP1", ID3.t0("Old Artist")), ("TCO", ID3.t0("(17)Pop")),
            ("TYE", ID3.t0("1999")), ("TDA", ID3.t0("3112")), ("COM", [0] + Array("eng".utf8) + [0] + ID3.latin1("old comment")),
            ("UFI", ID3.ufid("http://musicbrainz.org", "u22")), ("TXX", ID3.txxx("MusicBrainz Album Id", "alb22", latin1: true)),
            ("TOR", ID3.t0("1970")), ("TS2", ID3.t0("ignored")),
        ])
        let m = try decoder("v22", tag: tag).metadata
        #expect(lines(m) == [
            "Artist: Old Artist", "Title: Old Title", "Date: 1999-12-31", "OriginalDate: 1970", "Genre: Rock",
            "Genre: Pop", "Comment: old comment", "MUSICBRAINZ_ALBUMID: alb22", "MUSICBRAINZ_TRACKID: u22",
        ])
    }

    @Test("unsynchronisation (whole ID3v2.3 tag, one ID3v2.4 frame), extended header, grouped and encrypted frames")
    func frameEncodings() throws {
        let title = ID3.t0("T\u{FF}\u{E0}x")
        var body: [UInt8] = [0, 0, 0, 6, 1, 0]  // ID3v2.4 extended header: 6 bytes, one flag byte, no flags
        body += ID3.frame(4, "TIT2", ID3.unsynchronised(title), flags: 0x0003, prefix: ID3.syncsafe(title.count))
        body += ID3.frame(4, "TPE1", ID3.t8("Grouped"), flags: 0x0040, prefix: [7])
        body += ID3.frame(4, "TALB", ID3.t8("Secret"), flags: 0x0004, prefix: [0x80])
        body += [UInt8](repeating: 0, count: 20)
        let m4 = try decoder("v24-encodings", tag: ID3.tag(4, flags: 0x40, body)).metadata
        #expect(lines(m4) == ["Artist: Grouped", "Title: T\u{FF}\u{E0}x"])

        let frames = ID3.frame(3, "TIT2", ID3.t0("A\u{FF}\u{E1}B")) + ID3.frame(3, "TPE1", ID3.t0("ok"))
        let m3 = try decoder("v23-unsync", tag: ID3.tag(3, flags: 0x80, ID3.unsynchronised(frames))).metadata
        #expect(lines(m3) == ["Artist: ok", "Title: A\u{FF}\u{E1}B"])
    }

    @Test("ID3v1 only without an ID3v2 tag (or with one libid3tag refuses): Latin-1, v1.1 track, genre byte")
    func version1() throws {
        let comment = ID3.latin1("v1 comment") + [UInt8](repeating: 0, count: 18) + [0, 5]
        let v1 = ID3.v1(title: "V1 Title", artist: "V1 Artist", album: "Albüm", year: "1987", comment: comment, genre: 31)
        let expected = ["Artist: V1 Artist", "Title: V1 Title", "Album: Albüm", "Track: 5", "Date: 1987", "Genre: Trance",
                        "Comment: v1 comment"]
        let m = try decoder("v1", trailer: v1).metadata
        #expect(lines(m) == expected && m.comments.isEmpty)
        #expect(m.title == "V1 Title" && m.artist == "V1 Artist" && m.album == "Albüm" && m.year == "1987")
        #expect(m.genre == "Trance" && m.trackNumber == 5)

        // A frame larger than the tag: libid3tag refuses the whole ID3v2 tag, and mpd reads the ID3v1 one.
        let broken = ID3.tag(4, ID3.frame(4, "TIT2", ID3.t8("v2 title")) + Array("TPE1".utf8) + ID3.syncsafe(500) + [0, 0, 0x78, 0x78])
        #expect(lines(try decoder("v1-broken-v2", tag: broken, trailer: v1).metadata) == expected)

        // A full 30-byte comment (no v1.1 track), a blank year, genre 200 (past the table).
        let plain = ID3.v1(title: "T", artist: "", album: "", year: "    ", comment: ID3.latin1("c" + String(repeating: "x", count: 29)), genre: 200)
        #expect(lines(try decoder("v1-plain", trailer: plain).metadata)
            == ["Title: T", "Genre: 200", "Comment: c" + String(repeating: "x", count: 29)])
    }

    @Test("tag names in mpd's order, looked up ignoring case")
    func names() {
        #expect(TagKey.allCases.map(\.mpdName) == [
            "Artist", "ArtistSort", "Album", "AlbumSort", "AlbumArtist", "AlbumArtistSort", "Title", "Track", "Name",
            "Genre", "Date", "OriginalDate", "Composer", "ComposerSort", "Performer", "Conductor", "Work", "Movement",
            "MovementNumber", "Ensemble", "Location", "Grouping", "Comment", "Disc", "Label", "MUSICBRAINZ_ARTISTID",
            "MUSICBRAINZ_ALBUMID", "MUSICBRAINZ_ALBUMARTISTID", "MUSICBRAINZ_TRACKID", "MUSICBRAINZ_RELEASETRACKID",
            "MUSICBRAINZ_WORKID",
        ])
        #expect(TagKey.allCases.map(\.rawValue) == Array(0..<31))
        #expect(TagKey(mpdName: "title") == .title && TagKey(mpdName: "ALBUMARTISTSORT") == .albumArtistSort)
        #expect(TagKey(mpdName: "musicbrainz_trackid") == .musicBrainzTrackID)
        #expect(TagKey(mpdName: "Bogus") == nil && TagKey(mpdName: "") == nil)
    }

    @Test("ID3v1 genre numbers and mpd's value rules")
    func genresAndValues() {
        #expect(ID3Genre.names.count == 192 && ID3Genre.names[147] == "Synthpop" && ID3Genre.names[191] == "Psybient")
        #expect(ID3Genre.name("17") == "Rock" && ID3Genre.name("017") == "Rock" && ID3Genre.name("0") == "Blues")
        #expect(ID3Genre.name("RX") == "Remix" && ID3Genre.name("CR") == "Cover" && ID3Genre.name("(31)") == "(31)")
        #expect(ID3Genre.name("192") == "192" && ID3Genre.name(" 17") == " 17" && ID3Genre.name("") == "")
        var m = TrackMetadata()
        m.addTag(.track, "007/12")
        m.addTag(.disc, "00")
        m.addTag(.title, "")
        m.addTag(.title, "a\tb")
        #expect(m.tags == [Tag(.track, "7"), Tag(.title, "a b")])
    }

    @Test("an ID3v2 tag over 32 MiB is not read (a crafted size would make every tag read allocate it); the file still opens, its ID3v1 tag is read; a 1 MiB tag is")
    func oversizedTag() throws {
        for (total, read) in [(1 << 20, true), (40 << 20, false)] {
            var body = ID3.frame(3, "TIT2", ID3.t0("Big"))
            body += [UInt8](repeating: 0, count: total - 10 - body.count)  // padding up to the stated size
            let v1 = ID3.v1(title: "Small", artist: "", album: "", year: "", comment: [UInt8](repeating: 0, count: 30), genre: 255)
            let d = try decoder("oversized-\(total)", tag: ID3.tag(3, body), trailer: v1)
            #expect(d.metadata.title == (read ? "Big" : "Small"), "a \(total)-byte tag")
            #expect((d.duration ?? 0) > 0.2)
        }
    }
}

