/// A tag type, as mpd 0.23 names and orders them (`src/tag/Type.h`, `src/tag/Names.c`).
///
/// The raw values are mpd's enum order, the order `tagtypes` lists them in.
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum TagKey: Int, CaseIterable, Sendable {
    /// `Artist`.
    case artist
    /// `ArtistSort`.
    case artistSort
    /// `Album`.
    case album
    /// `AlbumSort`.
    case albumSort
    /// `AlbumArtist`.
    case albumArtist
    /// `AlbumArtistSort`.
    case albumArtistSort
    /// `Title`.
    case title
    /// `Track`: the track number alone (mpd keeps only its leading digits, without leading zeros).
    case track
    /// `Name`: a stream's name.
    case name
    /// `Genre`.
    case genre
    /// `Date`.
    case date
    /// `OriginalDate`.
    case originalDate
    /// `Composer`.
    case composer
    /// `ComposerSort`.
    case composerSort
    /// `Performer`.
    case performer
    /// `Conductor`.
    case conductor
    /// `Work`.
    case work
    /// `Movement`.
    case movement
    /// `MovementNumber`.
    case movementNumber
    /// `Ensemble`.
    case ensemble
    /// `Location`.
    case location
    /// `Grouping`.
    case grouping
    /// `Comment` (mpd disables it by default).
    case comment
    /// `Disc`: the disc number alone (as ``track``).
    case disc
    /// `Label`.
    case label
    /// `MUSICBRAINZ_ARTISTID`.
    case musicBrainzArtistID
    /// `MUSICBRAINZ_ALBUMID`.
    case musicBrainzAlbumID
    /// `MUSICBRAINZ_ALBUMARTISTID`.
    case musicBrainzAlbumArtistID
    /// `MUSICBRAINZ_TRACKID`.
    case musicBrainzTrackID
    /// `MUSICBRAINZ_RELEASETRACKID`.
    case musicBrainzReleaseTrackID
    /// `MUSICBRAINZ_WORKID`.
    case musicBrainzWorkID

    /// The name mpd prints (`Artist`, `MUSICBRAINZ_TRACKID`, …).
    public var mpdName: String { Self.names[rawValue] }

    /// The tag type named `mpdName`, compared ignoring ASCII case as mpd does (`title` is
    /// ``title``); nil for a name mpd does not know.
    /// - Parameter mpdName: A name as mpd prints it, in any case.
    public init?(mpdName: String) {
        let wanted = Self.asciiLowercased(mpdName)
        guard let i = Self.names.firstIndex(where: { Self.asciiLowercased($0) == wanted }) else { return nil }
        self.init(rawValue: i)
    }

    private static let names = [
        "Artist", "ArtistSort", "Album", "AlbumSort", "AlbumArtist", "AlbumArtistSort", "Title", "Track", "Name",
        "Genre", "Date", "OriginalDate", "Composer", "ComposerSort", "Performer", "Conductor", "Work", "Movement",
        "MovementNumber", "Ensemble", "Location", "Grouping", "Comment", "Disc", "Label", "MUSICBRAINZ_ARTISTID",
        "MUSICBRAINZ_ALBUMID", "MUSICBRAINZ_ALBUMARTISTID", "MUSICBRAINZ_TRACKID", "MUSICBRAINZ_RELEASETRACKID",
        "MUSICBRAINZ_WORKID",
    ]

    private static func asciiLowercased(_ s: String) -> [UInt8] {
        s.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
    }
}

/// One tag value: a type and one of its values (a tag with several values is several `Tag`s).
public struct Tag: Sendable, Equatable {
    /// The tag type.
    public var key: TagKey
    /// The value, as mpd stores it.
    public var value: String

    /// A tag of type `key` with `value`.
    /// - Parameters:
    ///   - key: The tag type.
    ///   - value: One value.
    public init(_ key: TagKey, _ value: String) {
        self.key = key
        self.value = value
    }
}

/// A raw name/value pair from a file's tags, as mpd passes them to `OnPair`: for ID3, each
/// `TXXX` frame's description and value. mpd's `readcomments` prints these (only those whose
/// name is `[A-Za-z][A-Za-z_-]*` and whose value has no control character).
public struct TagPair: Sendable, Equatable {
    /// The name (a `TXXX` description), as written.
    public var name: String
    /// The value, as written.
    public var value: String

    /// A pair of `name` and `value`.
    /// - Parameters:
    ///   - name: The name, as written in the file.
    ///   - value: The value, as written in the file.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

extension TrackMetadata {
    /// Every value of tag type `key`, in scan order (empty when there is none).
    /// - Parameter key: The tag type.
    public func values(_ key: TagKey) -> [String] { tags.values(key) }

    /// Adds a value to ``tags`` as mpd 0.23 stores it (`AddTagHandler` and `TagBuilder`): a
    /// ``TagKey/track`` or ``TagKey/disc`` keeps only its leading number without leading zeros
    /// (`"05/10"` is `"5"`, `"0"` nothing); an empty value is dropped; bytes that are not UTF-8
    /// become `?` and control characters spaces. The decoder trims values first where mpd does.
    /// - Parameters:
    ///   - key: The tag type.
    ///   - value: The value as the tag reader produced it.
    public mutating func addTag(_ key: TagKey, _ value: String) {
        addTag(key, bytes: Array(value.utf8))
    }

    /// ``addTag(_:_:)`` for a value in bytes that may not be UTF-8 (an ID3 `UFID`'s binary data).
    public mutating func addTag(_ key: TagKey, bytes: [UInt8]) {
        var v = bytes[...]
        if key == .track || key == .disc {
            v = v.drop { $0 == 0x30 }
            v = v.prefix { $0 >= 0x30 && $0 <= 0x39 }
        }
        guard !v.isEmpty else { return }
        tags.append(Tag(key, Self.mpdFixed(v)))
    }

    /// mpd's `FixTagString`: each byte of an invalid UTF-8 sequence becomes `?`, then each
    /// control character (below 0x20) a space.
    static func mpdFixed(_ bytes: ArraySlice<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        var parser = Unicode.UTF8.ForwardParser()
        var it = bytes.makeIterator()
        loop: while true {
            switch parser.parseScalar(from: &it) {
            case .valid(let encoded): out += encoded
            case .error(let length): out += repeatElement(UInt8(ascii: "?"), count: length)
            case .emptyInput: break loop
            }
        }
        return String(decoding: out.map { $0 < 0x20 ? 0x20 : $0 }, as: UTF8.self)
    }
}

/// The ID3v1 genre names and mpd's genre-number translation (libid3tag's `id3_genre_name`).
public enum ID3Genre {
    /// The 192 genre names by ID3v1 number: 0–79 from ID3v1, 80–191 Winamp's extensions up to
    /// version 5.6 (current libid3tag's `genre.dat`). libid3tag 0.15.1b (Debian 12's) stops
    /// at 147, so Debian's mpd prints a higher number as it is written.
    public static let names: [String] = [
        // ID3v1 (0–79)
        "Blues", "Classic Rock", "Country", "Dance", "Disco", "Funk", "Grunge", "Hip-Hop", "Jazz", "Metal",
        "New Age", "Oldies", "Other", "Pop", "R&B", "Rap", "Reggae", "Rock", "Techno", "Industrial",
        "Alternative", "Ska", "Death Metal", "Pranks", "Soundtrack", "Euro-Techno", "Ambient", "Trip-Hop", "Vocal", "Jazz+Funk",
        "Fusion", "Trance", "Classical", "Instrumental", "Acid", "House", "Game", "Sound Clip", "Gospel", "Noise",
        "AlternRock", "Bass", "Soul", "Punk", "Space", "Meditative", "Instrumental Pop", "Instrumental Rock", "Ethnic", "Gothic",
        "Darkwave", "Techno-Industrial", "Electronic", "Pop-Folk", "Eurodance", "Dream", "Southern Rock", "Comedy", "Cult", "Gangsta",
        "Top 40", "Christian Rap", "Pop/Funk", "Jungle", "Native American", "Cabaret", "New Wave", "Psychedelic", "Rave", "Showtunes",
        "Trailer", "Lo-Fi", "Tribal", "Acid Punk", "Acid Jazz", "Polka", "Retro", "Musical", "Rock & Roll", "Hard Rock",
        // Winamp extensions (80–191)
        "Folk", "Folk/Rock", "National Folk", "Swing", "Fast-Fusion", "Bebop", "Latin", "Revival", "Celtic", "Bluegrass",
        "Avantgarde", "Gothic Rock", "Progressive Rock", "Psychedelic Rock", "Symphonic Rock", "Slow Rock", "Big Band", "Chorus", "Easy Listening", "Acoustic",
        "Humour", "Speech", "Chanson", "Opera", "Chamber Music", "Sonata", "Symphony", "Booty Bass", "Primus", "Porn Groove",
        "Satire", "Slow Jam", "Club", "Tango", "Samba", "Folklore", "Ballad", "Power Ballad", "Rhythmic Soul", "Freestyle",
        "Duet", "Punk Rock", "Drum Solo", "A Capella", "Euro-House", "Dance Hall", "Goa", "Drum & Bass", "Club-House", "Hardcore Techno",
        "Terror", "Indie", "BritPop", "Afro-Punk", "Polsk Punk", "Beat", "Christian Gangsta Rap", "Heavy Metal", "Black Metal", "Crossover",
        "Contemporary Christian", "Christian Rock", "Merengue", "Salsa", "Thrash Metal", "Anime", "Jpop", "Synthpop", "Abstract", "Art Rock",
        "Baroque", "Bhangra", "Big Beat", "Breakbeat", "Chillout", "Downtempo", "Dub", "EBM", "Eclectic", "Electro",
        "Electroclash", "Emo", "Experimental", "Garage", "Global", "IDM", "Illbient", "Industro-Goth", "Jam Band", "Krautrock",
        "Leftfield", "Lounge", "Math Rock", "New Romantic", "Nu-Breakz", "Post-Punk", "Post-Rock", "Psytrance", "Shoegaze", "Space Rock",
        "Trop Rock", "World Music", "Neoclassical", "Audiobook", "Audio Theatre", "Neue Deutsche Welle", "Podcast", "Indie-Rock", "G-Funk", "Dubstep",
        "Garage Rock", "Psybient",
    ]

    /// A genre string as mpd stores it (`id3_genre_name`): a number made only of digits is the
    /// name of that ID3v1 genre (`"17"` and `"017"` are `Rock`; a number past the table stays
    /// as written), `RX` is `Remix`, `CR` is `Cover`; anything else is returned unchanged.
    /// - Parameter genre: One genre string from a tag.
    public static func name(_ genre: String) -> String {
        if genre == "RX" { return "Remix" }
        if genre == "CR" { return "Cover" }
        guard !genre.isEmpty, genre.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return genre }
        // libid3tag accumulates in an unsigned long, which wraps.
        var n: UInt64 = 0
        for d in genre.utf8 { n = n &* 10 &+ UInt64(d - 0x30) }
        return n < UInt64(names.count) ? names[Int(n)] : genre
    }
}

extension Array where Element == Tag {
    /// Every value of tag type `key` in the list, in its order.
    /// - Parameter key: The tag type.
    public func values(_ key: TagKey) -> [String] {
        compactMap { $0.key == key ? $0.value : nil }
    }
}
