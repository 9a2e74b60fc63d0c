// Walk-order keys: the bytes `directories.sort_key` and `songs.sort_key` hold, so that
// ordering by them lists the library as the walk meets it.

import MediaCore

/// Walk-order keys, compared byte for byte: a directory is its path's components in natural
/// order (case and diacritics folded, numbers by value), each after a 0x01; a song is its
/// directory's key, 0x00 (before any subdirectory), its album, disc and track (as mpd orders
/// a directory's songs), then its name in natural order.
enum SortKey {
    static func directory(_ rel: String) -> String {
        rel.split(separator: "/").map { "\u{1}" + natural(String($0)) }.joined()
    }

    static func song(dirRel: String, name: String, metadata m: TrackMetadata) -> String {
        let album = m.values(.album).first.map(Fold.key) ?? ""
        let disc = number(m.values(.disc).first), track = number(m.values(.track).first)
        return directory(dirRel) + "\u{0}" + album + "\u{0}" + disc + track + "\u{0}" + natural(name)
    }

    private static func number(_ v: String?) -> String {
        let n = v.flatMap { Int($0.prefix { $0.isASCII && $0.isNumber }) } ?? 0
        let s = String(min(max(n, 0), 999_999))
        return String(repeating: "0", count: 6 - s.count) + s
    }

    /// `s` folded, each run of digits as its length then its digits (leading zeros dropped):
    /// `track 2` before `track 10`.
    static func natural(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        var digits = String.UnicodeScalarView()
        func flush() {
            guard !digits.isEmpty else { return }
            var d = Substring(String(digits)).drop { $0 == "0" }
            if d.isEmpty { d = "0" }
            out.append(Unicode.Scalar(UInt8(min(0x30 + d.count, 0x7E))))
            out.append(contentsOf: d.unicodeScalars)
            digits.removeAll()
        }
        for u in Fold.key(s).unicodeScalars {
            if u.value >= 48 && u.value <= 57 { digits.append(u) } else { flush(); out.append(u) }
        }
        flush()
        return String(out)
    }
}
