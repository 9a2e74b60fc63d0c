/// The fold `search` compares with: lower case (Unicode's full mapping) and without diacritics
/// (a scalar whose canonical decomposition is a base character and combining marks becomes the
/// base character; combining marks are dropped), so `search artist "bjork"` finds "Björk" and
/// "BJÖRK". SQLite's FTS5 `unicode61 remove_diacritics 2` folds the same way; mpd 0.23 folds
/// case only (0.25 added accents, behind `stringnormalization`).
public enum Fold {
    /// `s` folded.
    public static func key(_ s: String) -> String {
        // Most tags are ASCII: lower-cased bytes, no tables.
        if s.utf8.allSatisfy({ $0 < 0x80 }) {
            guard s.utf8.contains(where: { $0 >= 65 && $0 <= 90 }) else { return s }
            return String(decoding: s.utf8.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }, as: UTF8.self)
        }
        var out = String.UnicodeScalarView()
        for u in s.unicodeScalars {
            if u.value >= 0x300, u.properties.canonicalCombiningClass != .notReordered,
               u.properties.generalCategory == .nonspacingMark { continue }
            out.append(base(u))
        }
        return String(out).lowercased()
    }

    /// The base character of `u` (itself when it has no diacritic).
    static func base(_ u: Unicode.Scalar) -> Unicode.Scalar {
        guard u.value >= 0xC0 else { return u }
        var lo = 0, hi = diacriticFoldTable.count / 2
        while lo < hi {
            let mid = (lo + hi) / 2
            let k = diacriticFoldTable[mid * 2]
            if k == u.value { return Unicode.Scalar(diacriticFoldTable[mid * 2 + 1]) ?? u }
            if k < u.value { lo = mid + 1 } else { hi = mid }
        }
        return u
    }
}
