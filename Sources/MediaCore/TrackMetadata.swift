/// A file's tags: every value as mpd 0.23 reads it (``tags``, ``comments``), and the first
/// values as single fields.
///
/// Filled by each format's tag reader (ID3 for MP3, Vorbis comments for FLAC, Ogg Vorbis and
/// Opus, RIFF INFO for WAV, …) through the decoder registry.
public struct TrackMetadata: Sendable, Equatable {
    /// Every tag value, in the order mpd's scan finds them (for ID3: all `TPE1` values, then
    /// `TPE2`, …, see ``TagKey``), each value of a multi-valued tag its own entry, as mpd stores
    /// them (``addTag(_:_:)``): what mpd prints for the song, one line each.
    public var tags: [Tag] = []
    /// Every name/value pair in file order (for ID3: each `TXXX` frame's description and
    /// value), unfiltered: what mpd's `readcomments` prints from, after its own filter.
    public var comments: [TagPair] = []
    /// The title: the first ``TagKey/title``.
    public var title: String?
    /// The performing artist: the first ``TagKey/artist``.
    public var artist: String?
    /// The album: the first ``TagKey/album``.
    public var album: String?
    /// The album artist: the first ``TagKey/albumArtist``.
    public var albumArtist: String?
    /// The track number: the first of the first track value (`TRCK` "3/9" gives 3).
    public var trackNumber: Int?
    /// The number of tracks on the album: the total of the first track value ("3/9" gives 9).
    public var trackCount: Int?
    /// The disc number: the first of the first disc value (`TPOS` "1/2" gives 1).
    public var discNumber: Int?
    /// The number of discs: the total of the first disc value ("1/2" gives 2).
    public var discCount: Int?
    /// The genre: the first ``TagKey/genre`` (an ID3v1 genre number is its name, `17` is `Rock`).
    public var genre: String?
    /// The composer: the first ``TagKey/composer``.
    public var composer: String?
    /// The year or recording date: the first ``TagKey/date``, as written (`TDRC`; ID3v2.3
    /// `TYER`, with `TDAT` and `TIME` when present).
    public var year: String?
    /// The first embedded picture (ID3 `APIC`, FLAC `PICTURE`, Ogg `METADATA_BLOCK_PICTURE`),
    /// front cover preferred.
    public var artwork: Artwork?
    /// ReplayGain (and Opus R128) values, as the file gives them; applied by the player's
    /// ReplayGain mode, not by the decoder.
    public var replayGain = ReplayGain()
    /// The item's chapters in order (none: an item without chapters): MP4's and Matroska's
    /// (through FFmpeg), Vorbis and Opus `CHAPTERnnn` comments.
    public var chapters: [Chapter] = []

    /// No tags: every field absent.
    public init() {}

    /// `other`'s tags over these: each tag type `other` has replaces this one's values (and its
    /// single field), its pairs replace those of the same name; the rest stays.
    public mutating func merge(_ other: TrackMetadata) {
        let keys = Set(other.tags.map(\.key))
        tags = tags.filter { !keys.contains($0.key) } + other.tags
        let names = Set(other.comments.map(\.name))
        comments = comments.filter { !names.contains($0.name) } + other.comments
        title = other.title ?? title
        artist = other.artist ?? artist
        album = other.album ?? album
        albumArtist = other.albumArtist ?? albumArtist
        genre = other.genre ?? genre
        composer = other.composer ?? composer
        year = other.year ?? year
        artwork = other.artwork ?? artwork
        if !other.chapters.isEmpty { chapters = other.chapters }
    }

    /// Sets the single fields (``title``, ``artist``, …) from the first values of ``tags``,
    /// and the track and disc numbers from their raw values (`"3/9"`) and separate totals.
    public mutating func deriveFields(track: String?, disc: String?, trackTotal: String? = nil, discTotal: String? = nil) {
        title = values(.title).first
        artist = values(.artist).first
        album = values(.album).first
        albumArtist = values(.albumArtist).first
        genre = values(.genre).first
        composer = values(.composer).first
        year = values(.date).first
        if let track { (trackNumber, trackCount) = Self.numberPair(track) }
        if let disc { (discNumber, discCount) = Self.numberPair(disc) }
        if let t = trackTotal.flatMap({ Int($0.trimmingSpaces) }) { trackCount = t }
        if let d = discTotal.flatMap({ Int($0.trimmingSpaces) }) { discCount = d }
    }

    /// `"3/9"` as (3, 9), `"3"` as (3, nil).
    public static func numberPair(_ s: String) -> (Int?, Int?) {
        let parts = s.split(separator: "/", omittingEmptySubsequences: false).map { Int(String($0).trimmingSpaces) }
        return (parts.first ?? nil, parts.count > 1 ? parts[1] : nil)
    }

    /// ReplayGain values in dB and peaks (linear), and Opus's R128 gains (dB, relative to
    /// −23 LUFS, from the Q7.8 integers of `R128_TRACK_GAIN` / `R128_ALBUM_GAIN`).
    public struct ReplayGain: Sendable, Equatable {
        public var trackGain: Double?
        public var trackPeak: Double?
        public var albumGain: Double?
        public var albumPeak: Double?
        public var r128TrackGain: Double?
        public var r128AlbumGain: Double?
        /// None known.
        public init() {}
        /// Whether no value is known.
        public var isEmpty: Bool { self == ReplayGain() }
    }

    /// Embedded picture bytes and their MIME type.
    public struct Artwork: Sendable, Equatable {
        /// The picture's bytes, as stored in the tag (PNG, JPEG, …).
        public var data: [UInt8]
        /// The picture's MIME type, as the tag gives it (`image/jpeg`, `image/png`).
        public var mimeType: String
        /// A picture from its bytes and MIME type.
        /// - Parameters:
        ///   - data: The picture's bytes.
        ///   - mimeType: Their MIME type.
        public init(data: [UInt8], mimeType: String) {
            self.data = data
            self.mimeType = mimeType
        }
    }
}


extension String {
    /// Without spaces and tabs at either end (Platform's `trimmingBlanks`; this module has no dependencies).
    var trimmingSpaces: String {
        var sub = Substring(self)
        while let f = sub.first, f == " " || f == "\t" { sub.removeFirst() }
        while let l = sub.last, l == " " || l == "\t" { sub.removeLast() }
        return String(sub)
    }
}
