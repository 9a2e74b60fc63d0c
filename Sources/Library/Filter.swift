import MediaCore

/// Which songs a query takes: MPD's filter expressions (0.21+) and its older `TAG VALUE` pairs,
/// as one tree. `find` compares exactly; `search` (`fold`) ignores case and diacritics.
public indirect enum SongFilter: Sendable, Equatable {
    /// How a value is compared.
    public enum Operator: String, Sendable, Equatable {
        case equals = "==", notEquals = "!=", contains = "contains", startsWith = "starts_with"
        case matches = "=~", notMatches = "!~"
    }
    /// A tag (`nil`: any tag, and the file's path) compared with a value. A song without the
    /// tag compares as if its value were empty (MPD's rule: `(Artist == '')` finds them).
    case tag(TagKey?, Operator, String, fold: Bool)
    /// The path relative to the music directory.
    case file(Operator, String, fold: Bool)
    /// Songs in a directory (recursively).
    case base(String)
    /// Songs modified at or after a time (seconds since 1970).
    case modifiedSince(Int)
    /// Songs first seen at or after a time.
    case addedSince(Int)
    /// `AudioFormat == 'R:B:C'`, or a mask with `*` fields (`=~`).
    case audioFormat(String, mask: Bool)
    case not(SongFilter)
    case and([SongFilter])

    /// Every song.
    public static let all = SongFilter.and([])

    /// How deep `!` and conjunctions may nest: far past any real query, and a bound on every
    /// recursion over a filter (parsing, building SQL). Found by the fuzzer: 2,600 `(` overflowed
    /// the stack, and 24 nested conditions SQLite's parser.
    public static let maxDepth = 16
    /// The most conditions one filter may hold (SQLite takes an expression 1,000 deep).
    public static let maxConditions = 256
}

extension SongFilter {
    /// Parses MPD's arguments: one filter expression (`(Artist == 'X')`), or `TAG VALUE` pairs
    /// (`artist X album Y`; `any`, `file`, `base`, `modified-since`, `added-since` as mpd).
    /// `fold`: the command searches (case and diacritics ignored) rather than finds.
    public static func parse(_ args: [String], fold: Bool) throws(LibraryError) -> SongFilter {
        guard let first = args.first else { throw LibraryError(.badFilter, "too few arguments") }
        if first.hasPrefix("(") {
            guard args.count == 1 else { throw LibraryError(.badFilter, "Expression expected") }  // (mpd: one expression)
            var p = ExpressionParser(first, fold: fold)
            let f = try p.expression()
            p.skipBlanks()
            guard p.atEnd else { throw LibraryError(.badFilter, "Unparsed garbage after expression") }
            return f
        }
        guard args.count % 2 == 0 else { throw LibraryError(.badFilter, "Incorrect number of filter arguments") }
        var parts: [SongFilter] = []
        for i in stride(from: 0, to: args.count, by: 2) {
            let (name, value) = (args[i], args[i + 1])
            switch name.lowercased() {
            case "any": parts.append(.tag(nil, fold ? .contains : .equals, value, fold: fold))
            case "file", "filename": parts.append(.file(fold ? .contains : .equals, value, fold: fold))
            case "base": parts.append(.base(value))
            case "modified-since": parts.append(.modifiedSince(try time(value)))
            case "added-since": parts.append(.addedSince(try time(value)))
            default:
                guard let key = TagKey(mpdName: name) else { throw LibraryError(.badFilter, "Unknown filter type") }  // (mpd's words)
                parts.append(.tag(key, fold ? .contains : .equals, value, fold: fold))
            }
        }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    /// A time as MPD takes it: seconds since 1970, or ISO 8601 (`2024-05-01T12:00:00Z`,
    /// `2024-05-01`; UTC unless an offset is given).
    public static func time(_ s: String) throws(LibraryError) -> Int {
        if let n = Int(s) { return n }
        let b = Array(s.utf8)
        func num(_ r: Range<Int>) -> Int? {
            guard r.upperBound <= b.count, r.allSatisfy({ b[$0] >= 48 && b[$0] <= 57 }) else { return nil }
            return r.reduce(0) { $0 * 10 + Int(b[$1] - 48) }
        }
        guard b.count >= 10, let y = num(0..<4), b[4] == 45, let mo = num(5..<7), b[7] == 45, let d = num(8..<10),
              (1...12).contains(mo), (1...31).contains(d) else { throw LibraryError(.badFilter, "Failed to parse time stamp") }
        var (h, mi, se, offset) = (0, 0, 0, 0)
        var i = 10
        if i < b.count, b[i] == 84 || b[i] == 32 {  // 'T' or ' '
            guard let hh = num(11..<13), b.count > 13, b[13] == 58, let mm = num(14..<16) else {
                throw LibraryError(.badFilter, "Failed to parse time stamp")
            }
            (h, mi, i) = (hh, mm, 16)
            if i < b.count, b[i] == 58 {
                guard let ss = num(17..<19) else { throw LibraryError(.badFilter, "Failed to parse time stamp") }
                (se, i) = (ss, 19)
            }
            if i < b.count, b[i] == 90 { i += 1 }  // 'Z'
            else if i < b.count, b[i] == 43 || b[i] == 45 {
                guard let oh = num((i + 1)..<(i + 3)) else { throw LibraryError(.badFilter, "Failed to parse time stamp") }
                var om = 0
                var j = i + 3
                if j < b.count, b[j] == 58 { j += 1 }
                if let m = num(j..<(j + 2)) { om = m; j += 2 }
                offset = (b[i] == 43 ? 1 : -1) * (oh * 3600 + om * 60)
                i = j
            }
        }
        guard i == b.count else { throw LibraryError(.badFilter, "Failed to parse time stamp") }
        // Days from civil (Howard Hinnant's algorithm).
        let yy = mo <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146097 + doe - 719468
        return days * 86400 + h * 3600 + mi * 60 + se - offset
    }
}

/// MPD's filter expression grammar (`src/song/Filter.cxx`): `(TAG OP 'VALUE')`, `(!EXPR)`,
/// `(EXPR AND EXPR …)`, `(base 'DIR')`, `(modified-since 'T')`, `(added-since 'T')`,
/// `(AudioFormat == 'R:B:C')`, `(AudioFormat =~ 'R:*:C')`; values quoted with `'` or `"`,
/// a backslash escaping the next character.
struct ExpressionParser {
    private let s: [UInt8]
    private var i = 0
    private let fold: Bool

    init(_ text: String, fold: Bool) {
        s = Array(text.utf8)
        self.fold = fold
    }

    var atEnd: Bool { i >= s.count }

    mutating func skipBlanks() { while i < s.count, s[i] == 32 || s[i] == 9 { i += 1 } }

    private func peek(_ c: UInt8) -> Bool { i < s.count && s[i] == c }

    private mutating func expect(_ c: UInt8, _ message: String) throws(LibraryError) {
        skipBlanks()
        guard peek(c) else { throw LibraryError(.badFilter, message) }
        i += 1
    }

    /// An expression; `depth` counts the `(` it is inside (``SongFilter/maxDepth``).
    mutating func expression(depth: Int = 1) throws(LibraryError) -> SongFilter {
        try expect(40, "'(' expected")  // (
        guard depth <= SongFilter.maxDepth else {
            throw LibraryError(.badFilter, "filter nested too deeply (at most \(SongFilter.maxDepth) levels)")
        }
        skipBlanks()
        if peek(33) {  // !
            i += 1
            skipBlanks()
            let inner = try expression(depth: depth + 1)
            try expect(41, "')' expected")
            return .not(inner)
        }
        if peek(40) {
            var parts = [try expression(depth: depth + 1)]
            while true {
                skipBlanks()
                if peek(41) { i += 1; break }
                guard word() == "AND" else { throw LibraryError(.badFilter, "'AND' expected") }
                skipBlanks()
                parts.append(try expression(depth: depth + 1))
            }
            return parts.count == 1 ? parts[0] : .and(parts)
        }
        let name = word()
        guard !name.isEmpty else { throw LibraryError(.badFilter, "Word expected") }
        skipBlanks()
        let result: SongFilter
        switch name.lowercased() {
        case "base":
            result = .base(try quoted())
        case "modified-since":
            result = .modifiedSince(try SongFilter.time(try quoted()))
        case "added-since":
            result = .addedSince(try SongFilter.time(try quoted()))
        default:
            let op = try operatorWord()
            let value = try quoted()
            if name.lowercased() == "audioformat" {
                guard op == .equals || op == .matches else { throw LibraryError(.badFilter, "'==' or '=~' expected") }
                result = .audioFormat(value, mask: op == .matches)
            } else if name.lowercased() == "file" {
                result = .file(op, value, fold: fold)
            } else if name.lowercased() == "any" {
                result = .tag(nil, op, value, fold: fold)
            } else {
                guard let key = TagKey(mpdName: name) else { throw LibraryError(.badFilter, "Unknown filter type: \(name)") }
                result = .tag(key, op, value, fold: fold)
            }
        }
        try expect(41, "')' expected")
        return result
    }

    /// A tag name or keyword: letters, digits, `_` and `-`.
    private mutating func word() -> String {
        let start = i
        while i < s.count, (s[i] >= 65 && s[i] <= 90) || (s[i] >= 97 && s[i] <= 122) || (s[i] >= 48 && s[i] <= 57)
            || s[i] == 95 || s[i] == 45 { i += 1 }
        return String(decoding: s[start..<i], as: UTF8.self)
    }

    private mutating func operatorWord() throws(LibraryError) -> SongFilter.Operator {
        for op in [SongFilter.Operator.equals, .notEquals, .matches, .notMatches, .contains, .startsWith] {
            let t = Array(op.rawValue.utf8)
            if i + t.count <= s.count, Array(s[i..<(i + t.count)]) == t {
                i += t.count
                skipBlanks()
                return op
            }
        }
        throw LibraryError(.badFilter, "Unknown filter operator")
    }

    private mutating func quoted() throws(LibraryError) -> String {
        skipBlanks()
        guard i < s.count, s[i] == 39 || s[i] == 34 else { throw LibraryError(.badFilter, "Quoted string expected") }
        let q = s[i]
        i += 1
        var out: [UInt8] = []
        while i < s.count, s[i] != q {
            if s[i] == 92 { i += 1 }  // backslash: the next one as it is
            guard i < s.count else { break }
            out.append(s[i])
            i += 1
        }
        guard i < s.count else { throw LibraryError(.badFilter, "Closing quote not found") }
        i += 1
        return String(decoding: out, as: UTF8.self)
    }
}
