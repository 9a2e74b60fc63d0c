import CSQLite
import MediaCore

#if canImport(Glibc)
import Glibc
#endif

/// The tags a missing tag falls back to, in order (mpd's `tag/Fallback.hxx`): AlbumArtist →
/// Artist, ArtistSort → Artist, AlbumSort → Album, AlbumArtistSort → AlbumArtist, ArtistSort,
/// Artist. Only when the song has no value of the tag at all.
func fallbacks(_ key: TagKey) -> [TagKey] {
    switch key {
    case .albumArtist, .artistSort: [.artist]
    case .albumSort: [.album]
    case .albumArtistSort: [.albumArtist, .artistSort, .artist]
    default: []
    }
}

/// How a query's ordering is given: a tag or `Last-Modified`/`Added`, descending with `-`.
public struct SongSort: Sendable, Equatable {
    public enum Field: Sendable, Equatable { case tag(TagKey), modified, added }
    public var field: Field
    public var descending: Bool
    public init(field: Field, descending: Bool = false) { (self.field, self.descending) = (field, descending) }

    /// MPD's `sort` argument (`Artist`, `-Date`, `Last-Modified`, `Added`).
    public init(mpd s: String) throws(LibraryError) {
        descending = s.hasPrefix("-")
        let name = descending ? String(s.dropFirst()) : s
        switch name.lowercased() {
        case "last-modified": field = .modified
        case "added": field = .added
        default:
            guard let k = TagKey(mpdName: name) else { throw LibraryError(.badFilter, "Unknown sort tag") }
            field = .tag(k)
        }
    }
}

/// A filter compiled to SQL over `songs s` (with `tags t` subqueries), and its parameters.
struct CompiledFilter {
    var sql: String
    var values: [SQLiteValue]
    /// The directory a `base` filter confines to (checked to exist, as mpd's selection URI).
    var bases: [String]
}

extension SongFilter {
    /// The filter as an SQL condition on the row `s` of `songs`. Each tag comparison is
    /// `EXISTS` over the song's tags; a song without the tag (after fallbacks) is compared as
    /// the empty string, decided here, once.
    ///
    /// A conjunction inside a conjunction is one conjunction; a filter with more than
    /// ``maxConditions`` conditions, or `!`s and conjunctions nested deeper than ``maxDepth``,
    /// is refused (`badFilter`) rather than handed to SQLite, whose parser stops at about 100
    /// levels and whose expressions at 1,000 (fuzz findings: a database error to the client).
    func compile() throws(LibraryError) -> CompiledFilter {
        var c = CompiledFilter(sql: "", values: [], bases: [])
        var conditions = 0
        c.sql = try sql(&c, depth: 0, conditions: &conditions)
        return c
    }

    private func sql(_ c: inout CompiledFilter, depth: Int, conditions: inout Int) throws(LibraryError) -> String {
        switch self {
        case .and, .not:
            guard depth < Self.maxDepth else {
                throw LibraryError(.badFilter, "filter nested too deeply (at most \(Self.maxDepth) levels)")
            }
        default:
            conditions += 1
            guard conditions <= Self.maxConditions else {
                throw LibraryError(.badFilter, "filter has too many conditions (at most \(Self.maxConditions))")
            }
        }
        switch self {
        case .and(let parts):
            var out: [String] = []
            var pending = Array(parts.reversed())
            while let p = pending.popLast() {
                if case .and(let inner) = p {
                    pending += inner.reversed()
                } else {
                    out.append(try p.sql(&c, depth: depth + 1, conditions: &conditions))
                }
            }
            guard !out.isEmpty else { return "1" }
            return out.count == 1 ? out[0] : "(" + out.joined(separator: " AND ") + ")"
        case .not(let inner):
            return "NOT (" + (try inner.sql(&c, depth: depth + 1, conditions: &conditions)) + ")"
        case .base(let dir):
            let d = dir.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
            guard !d.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }) else { throw LibraryError(.badFilter, "Bad URI") }
            guard !d.isEmpty else { return "1" }
            c.bases.append(d)
            // `d/…`: an index range ('/' + 1 is '0').
            c.values += [.text(d + "/"), .text(d + "0")]
            return "(s.path >= ? AND s.path < ?)"
        case .modifiedSince(let t):
            // (Nanoseconds, as stored; a time beyond 2262 compares as the largest one: fuzz
            // finding filter/modified-since-overflow, which trapped.)
            let (ns, overflow) = t.multipliedReportingOverflow(by: 1_000_000_000)
            c.values.append(.int(overflow ? (t < 0 ? .min : .max) : ns))
            return "s.mtime >= ?"
        case .addedSince(let t):
            c.values.append(.int(t))
            return "s.added >= ?"
        case .audioFormat(let v, let mask):
            let parts = v.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else { throw LibraryError(.badFilter, "Failed to parse the sample format") }
            if !mask, parts.contains("*") { throw LibraryError(.badFilter, "Failed to parse the sample format") }
            var conds: [String] = []
            if parts[0] != "*" {
                guard let r = Int(parts[0]) else { throw LibraryError(.badFilter, "Failed to parse the sample format") }
                conds.append("s.rate = ?"); c.values.append(.int(r))
            }
            if parts[1] != "*" { conds.append("s.bits = ?"); c.values.append(.text(parts[1])) }
            if parts[2] != "*" {
                guard let n = Int(parts[2]) else { throw LibraryError(.badFilter, "Failed to parse the sample format") }
                conds.append("s.channels = ?"); c.values.append(.int(n))
            }
            return "(s.rate IS NOT NULL" + conds.map { " AND " + $0 }.joined() + ")"
        case .file(let op, let v, let fold):
            return try Self.compare(fold ? "bl_fold(s.path)" : "s.path", op, v, fold: fold, &c)
        case .tag(nil, let op, let v, let fold):
            // (`IN` a subquery: one pass over the tags, or their index, not one lookup a song.)
            let cond = try Self.compare(fold ? Self.folded : "t.value", op, v, fold: fold, &c)
            return "s.id IN (SELECT t.song FROM tags t WHERE \(cond))"
        case .tag(let key?, let op, let v, let fold):
            let absent = try Self.matches("", op, v, fold: fold)
            return try Self.tagMatch([key] + fallbacks(key), op, v, fold: fold, absent: absent, &c)
        }
    }

    /// `chain[0]` compared; when the song has none of it, the next of the chain; when it has
    /// none of them, `absent`.
    private static func tagMatch(_ chain: [TagKey], _ op: Operator, _ v: String, fold: Bool, absent: Bool,
                                 _ c: inout CompiledFilter) throws(LibraryError) -> String {
        guard let key = chain.first else { return absent ? "1" : "0" }
        // (The parameters in the order their `?`s appear.)
        c.values.append(.int(key.rawValue))
        let cond = try compare(fold ? folded : "t.value", op, v, fold: fold, &c)
        let has = "s.id IN (SELECT t.song FROM tags t WHERE t.key = ? AND \(cond))"
        var later = CompiledFilter(sql: "", values: [], bases: [])
        let rest = try tagMatch(Array(chain.dropFirst()), op, v, fold: fold, absent: absent, &later)
        if rest == "0" { return has }
        c.values.append(.int(key.rawValue))
        c.values += later.values
        return "(\(has) OR (s.id NOT IN (SELECT t.song FROM tags t WHERE t.key = ?) AND \(rest)))"
    }

    /// A tag's folded value: stored only where it differs from the value.
    static let folded = "coalesce(t.folded, t.value)"

    /// What goes in the `folded` column for `value`: nil when folding changes nothing.
    static func storedFold(_ value: String) -> String? {
        let f = Fold.key(value)
        return f == value ? nil : f
    }

    /// An SQL comparison of `column` with `v`.
    private static func compare(_ column: String, _ op: Operator, _ v: String, fold: Bool,
                                _ c: inout CompiledFilter) throws(LibraryError) -> String {
        let value = fold ? Fold.key(v) : v
        switch op {
        case .equals, .notEquals:
            c.values.append(.text(value))
            return op == .equals ? "\(column) = ?" : "\(column) != ?"
        case .contains:
            c.values.append(.text(value))
            return "instr(\(column), ?) > 0"
        case .startsWith:
            c.values += [.text(value), .int(value.unicodeScalars.count)]
            return "? = substr(\(column), 1, ?)"
        case .matches, .notMatches:
            _ = try Regex(v, fold: fold)  // (a bad pattern is the query's error, not every row's)
            c.values += [.text(v), .int(fold ? 1 : 0)]
            return (op == .matches ? "" : "NOT ") + "bl_regexp(?, \(column.replacingFolded), ?)"
        }
    }

    /// What a comparison says of `s` (a missing tag compares as "").
    static func matches(_ s: String, _ op: Operator, _ v: String, fold: Bool) throws(LibraryError) -> Bool {
        let (a, b) = fold ? (Fold.key(s), Fold.key(v)) : (s, v)
        switch op {
        case .equals: return a == b
        case .notEquals: return a != b
        case .contains: return b.isEmpty || a.contains(b)
        case .startsWith: return a.hasPrefix(b)
        case .matches: return try Regex(v, fold: fold).matches(s)
        case .notMatches: return try !Regex(v, fold: fold).matches(s)
        }
    }
}

private extension String {
    /// A regular expression is matched on the value itself (case folded by the expression).
    var replacingFolded: String {
        self == SongFilter.folded ? "t.value" : self == "bl_fold(s.path)" ? "s.path" : self
    }
}

/// The SQL functions the queries use, registered on each connection: `bl_fold(text)` and
/// `bl_regexp(pattern, text, icase)` (the compiled pattern kept for the statement's run; its
/// steps paid from `budget`, and an error once that is spent or its query cancelled).
enum SQLFunctions {
    static func register(_ db: SQLiteDatabase, budget: MatchBudget = MatchBudget()) throws(SQLiteError) {
        var rc = sqlite3_create_function_v2(db.handle, "bl_fold", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil, { ctx, _, argv in
            guard let p = sqlite3_value_text(argv![0]) else { return sqlite3_result_null(ctx) }
            let s = String(cString: p)
            var f = Fold.key(s)
            f.withUTF8 { b in
                b.withMemoryRebound(to: CChar.self) { bl_sqlite3_result_text(ctx, $0.baseAddress, Int32($0.count)) }
            }
        }, nil, nil, nil)
        guard rc == SQLITE_OK else { throw db.error("create_function bl_fold", rc) }
        // (The function holds the budget: released with the connection.)
        rc = sqlite3_create_function_v2(db.handle, "bl_regexp", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                        Unmanaged.passRetained(budget).toOpaque(), { ctx, _, argv in
            let re: Regex
            if let aux = sqlite3_get_auxdata(ctx, 0) {
                re = Unmanaged<Regex>.fromOpaque(aux).takeUnretainedValue()
            } else {
                guard let p = sqlite3_value_text(argv![0]),
                      let made = try? Regex(String(cString: p), fold: sqlite3_value_int(argv![2]) != 0) else {
                    return sqlite3_result_int(ctx, 0)
                }
                re = made
                sqlite3_set_auxdata(ctx, 0, Unmanaged.passRetained(made).toOpaque()) { p in
                    if let p { Unmanaged<Regex>.fromOpaque(p).release() }
                }
            }
            guard let t = sqlite3_value_text(argv![1]) else { return sqlite3_result_int(ctx, 0) }
            guard let b = sqlite3_user_data(ctx) else { return sqlite3_result_error(ctx, "bl_regexp has no budget", -1) }
            let budget = Unmanaged<MatchBudget>.fromOpaque(b).takeUnretainedValue()
            guard let matched = re.matches(String(cString: t), budget: budget) else {
                return sqlite3_result_error(ctx, "regular expression stopped", -1)
            }
            sqlite3_result_int(ctx, matched ? 1 : 0)
        }, nil, nil, { p in
            if let p { Unmanaged<MatchBudget>.fromOpaque(p).release() }
        })
        guard rc == SQLITE_OK else { throw db.error("create_function bl_regexp", rc) }
        budget.watch(db)
    }
}
