/// A regular expression's syntax tree.
indirect enum RegexNode {
    case empty
    case char(Unicode.Scalar)
    case any
    case set(RegexSet)
    case assert(RegexAssertion)
    case concat([RegexNode])
    case alternation([RegexNode])
    /// At least `min`, at most `max` (nil: no bound) times.
    case repeated(RegexNode, min: Int, max: Int?)
}

/// A zero-width condition on the position between two characters.
enum RegexAssertion {
    case start, end, wordBoundary, notWordBoundary, wordStart, wordEnd

    func holds(_ text: [Unicode.Scalar], _ i: Int) -> Bool {
        let before = i > 0 && RegexClass.word.contains(text[i - 1])
        let after = i < text.count && RegexClass.word.contains(text[i])
        switch self {
        case .start: return i == 0
        case .end: return i == text.count
        case .wordBoundary: return before != after
        case .notWordBoundary: return before == after
        case .wordStart: return !before && after
        case .wordEnd: return before && !after
        }
    }
}

/// POSIX's character classes (`[:alpha:]`…), and `\w`'s word characters, over Unicode.
enum RegexClass: String {
    case alpha, digit, alnum, upper, lower, space, blank, punct, print, graph, cntrl, xdigit, word

    func contains(_ c: Unicode.Scalar) -> Bool {
        let p = c.properties
        switch self {
        case .alpha: return p.isAlphabetic
        case .digit: return c.value >= 48 && c.value <= 57
        case .alnum: return p.isAlphabetic || p.numericType == .decimal
        case .word: return p.isAlphabetic || p.numericType == .decimal || c == "_"
        case .upper: return p.isUppercase
        case .lower: return p.isLowercase
        case .space: return p.isWhitespace
        case .blank: return c == " " || c == "\t" || (p.isWhitespace && p.generalCategory == .spaceSeparator)
        case .punct:
            switch p.generalCategory {
            case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation, .initialPunctuation,
                 .finalPunctuation, .otherPunctuation, .mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol: return true
            default: return false
            }
        case .cntrl: return p.generalCategory == .control
        case .print: return p.generalCategory != .control && p.generalCategory != .unassigned && p.generalCategory != .surrogate
        case .graph: return RegexClass.print.contains(c) && !p.isWhitespace
        case .xdigit: return (48...57).contains(c.value) || (65...70).contains(c.value) || (97...102).contains(c.value)
        }
    }
}

/// A bracket expression: ranges and classes, or everything but them.
struct RegexSet {
    var ranges: [ClosedRange<UInt32>] = []
    var classes: [RegexClass] = []
    var negated = false

    /// Whether `c` is one of the listed ranges or classes, the negation left aside.
    func lists(_ c: Unicode.Scalar) -> Bool {
        ranges.contains { $0.contains(c.value) } || classes.contains { $0.contains(c) }
    }

    /// Whether the set takes `c`; `folding`, whether it takes `c` in any case: `c`, its lower
    /// case `lower` or its upper case is listed, that answer negated once for `[^…]` (negating
    /// each case's answer took `A` for `[^a]`, as `A` itself is not listed).
    func contains(_ c: Unicode.Scalar, lower: Unicode.Scalar, folding: Bool) -> Bool {
        let listed = lists(c) || (folding && (lists(lower) || lists(RegexFold.upper(c))))
        return listed != negated
    }
}

/// The automaton's instructions (Thompson's construction, as Pike's VM runs them).
enum RegexOp {
    case char(Unicode.Scalar)
    case any
    case set(Int)
    case split(Int, Int)
    case jump(Int)
    case assert(RegexAssertion)
    case match
}

/// A syntax tree compiled to instructions.
struct Program {
    var ops: [RegexOp] = []
    var sets: [RegexSet] = []
    /// Whether a match can only begin at the text's start (`^…`).
    var anchored = false

    /// The most instructions a pattern may compile to (``Regex/check(_:)`` keeps real ones far below).
    static let maximumSize = 50_000

    init(_ tree: RegexNode) throws(LibraryError) {
        try emit(tree)
        ops.append(.match)
        if case .concat(let parts) = tree, case .assert(.start)? = parts.first { anchored = true }
        if case .assert(.start) = tree { anchored = true }
    }

    private mutating func emit(_ node: RegexNode) throws(LibraryError) {
        guard ops.count < Self.maximumSize else { throw LibraryError(.badFilter, "Invalid regular expression: too many repetitions") }
        switch node {
        case .empty: break
        case .char(let c): ops.append(.char(c))
        case .any: ops.append(.any)
        case .set(let s):
            sets.append(s)
            ops.append(.set(sets.count - 1))
        case .assert(let a): ops.append(.assert(a))
        case .concat(let parts): for p in parts { try emit(p) }
        case .alternation(let parts):
            var jumps: [Int] = []
            for (k, p) in parts.enumerated() {
                if k < parts.count - 1 {
                    let split = ops.count
                    ops.append(.split(split + 1, 0))
                    try emit(p)
                    jumps.append(ops.count)
                    ops.append(.jump(0))
                    ops[split] = .split(split + 1, ops.count)
                } else {
                    try emit(p)
                }
            }
            for j in jumps { ops[j] = .jump(ops.count) }
        case .repeated(let inner, let min, let max):
            for _ in 0..<min { try emit(inner) }
            if let max {
                // Each optional copy may be skipped to the end.
                var splits: [Int] = []
                for _ in min..<max {
                    splits.append(ops.count)
                    ops.append(.split(ops.count + 1, 0))
                    try emit(inner)
                }
                for s in splits { ops[s] = .split(s + 1, ops.count) }
            } else {
                let loop = ops.count
                ops.append(.split(loop + 1, 0))
                try emit(inner)
                ops.append(.jump(loop))
                ops[loop] = .split(loop + 1, ops.count)
            }
        }
    }
}

/// The parser of POSIX's extended syntax (glibc's, with PCRE's `\d \D \w \W \s \S \b \B`):
/// `|`, `( )`, `* + ? {m} {m,} {m,n}`, `.`, `^`, `$`, bracket expressions with ranges and
/// `[:class:]`, `\<` and `\>`; a backslash before anything else takes it literally.
struct RegexParser {
    private let s: [Unicode.Scalar]
    private var i = 0
    private let fold: Bool

    init(_ pattern: String, fold: Bool) {
        s = Array(pattern.unicodeScalars)
        self.fold = fold
    }

    private func error(_ message: String) -> LibraryError {
        LibraryError(.badFilter, "Invalid regular expression: \(message)")
    }

    mutating func parse() throws(LibraryError) -> RegexNode {
        // (A `)` without its `(` is an ordinary character in POSIX's extended syntax, glibc's too:
        // the top level's branches take it as one.)
        try alternation(depth: 0)
    }

    private mutating func alternation(depth: Int) throws(LibraryError) -> RegexNode {
        guard depth < 256 else { throw error("groups nested too deeply") }
        var branches = [try branch(depth: depth)]
        while i < s.count, s[i] == "|" {
            i += 1
            branches.append(try branch(depth: depth))
        }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    private mutating func branch(depth: Int) throws(LibraryError) -> RegexNode {
        var parts: [RegexNode] = []
        while i < s.count, s[i] != "|", !(s[i] == ")" && depth > 0) {
            var atom = try self.atom(depth: depth)
            while i < s.count, let (min, max) = try repetition() {
                if case .assert = atom {
                    // A repeated assertion is the assertion when required (`^+`), and nothing
                    // when it may be absent (`^?`, `\b*`, `(^){0,1}`): it need not hold.
                    if min == 0 { atom = .empty }
                    continue
                }
                atom = .repeated(atom, min: min, max: max)
            }
            parts.append(atom)
        }
        return parts.count == 1 ? parts[0] : parts.isEmpty ? .empty : .concat(parts)
    }

    /// A repetition operator here (consumed), if any.
    private mutating func repetition() throws(LibraryError) -> (Int, Int?)? {
        switch s[i] {
        case "*": i += 1; return (0, nil)
        case "+": i += 1; return (1, nil)
        case "?": i += 1; return (0, 1)
        case "{":
            var j = i + 1
            func number() -> Int? {
                var n: Int?
                while j < s.count, s[j].value >= 48, s[j].value <= 57 {
                    n = min(100_000, (n ?? 0) * 10 + Int(s[j].value - 48))
                    j += 1
                }
                return n
            }
            guard let min = number() else { return nil }  // `{` not an interval: a character
            var max: Int? = min
            if j < s.count, s[j] == "," {
                j += 1
                max = number()
            }
            guard j < s.count, s[j] == "}" else { return nil }
            if let max, max < min { throw error("Invalid content of \\{\\}") }
            i = j + 1
            return (min, max)
        default: return nil
        }
    }

    private mutating func atom(depth: Int) throws(LibraryError) -> RegexNode {
        let c = s[i]
        i += 1
        switch c {
        case "(":
            let inner = try alternation(depth: depth + 1)
            guard i < s.count, s[i] == ")" else { throw error("Unmatched ( or \\(") }
            i += 1
            return inner
        case ")": return literal(c)
        case "*", "+", "?": throw error("Invalid preceding regular expression")
        case "{":
            i -= 1
            if (try repetition()) != nil { throw error("Invalid preceding regular expression") }
            i += 1
            return literal(c)
        case ".": return .any
        case "^": return .assert(.start)
        case "$": return .assert(.end)
        case "[": return .set(try bracket())
        case "\\":
            guard i < s.count else { throw error("Trailing backslash") }
            let e = s[i]
            i += 1
            switch e {
            case "d": return .set(RegexSet(classes: [.digit]))
            case "D": return .set(RegexSet(classes: [.digit], negated: true))
            case "w": return .set(RegexSet(classes: [.word]))
            case "W": return .set(RegexSet(classes: [.word], negated: true))
            case "s": return .set(RegexSet(classes: [.space]))
            case "S": return .set(RegexSet(classes: [.space], negated: true))
            case "b": return .assert(.wordBoundary)
            case "B": return .assert(.notWordBoundary)
            case "<": return .assert(.wordStart)
            case ">": return .assert(.wordEnd)
            case "`": return .assert(.start)
            case "'": return .assert(.end)
            default: return literal(e)
            }
        default: return literal(c)
        }
    }

    private func literal(_ c: Unicode.Scalar) -> RegexNode {
        .char(fold ? RegexFold.lower(c) : c)
    }

    /// A bracket expression after its `[`.
    private mutating func bracket() throws(LibraryError) -> RegexSet {
        var set = RegexSet()
        if i < s.count, s[i] == "^" { set.negated = true; i += 1 }
        var first = true
        while true {
            guard i < s.count else { throw error("Unmatched [, [^, [:, [., or [=") }
            let c = s[i]
            if c == "]" && !first { i += 1; break }
            first = false
            var low: Unicode.Scalar
            if c == "[", i + 1 < s.count, s[i + 1] == ":" || s[i + 1] == "." || s[i + 1] == "=" {
                let kind = s[i + 1]
                var j = i + 2
                while j + 1 < s.count, !(s[j] == kind && s[j + 1] == "]") { j += 1 }
                guard j + 1 < s.count else { throw error("Unmatched [, [^, [:, [., or [=") }
                let name = String(String.UnicodeScalarView(s[(i + 2)..<j]))
                i = j + 2
                if kind == ":" {
                    guard let cls = RegexClass(rawValue: name), cls != .word else { throw error("Invalid character class name") }
                    // (`[[:upper:]]` in a case-insensitive expression takes the lower case too.)
                    set.classes.append(fold && (cls == .upper || cls == .lower) ? .alpha : cls)
                    continue
                }
                // A collating element or an equivalence class: one character here.
                guard name.unicodeScalars.count == 1, let only = name.unicodeScalars.first else {
                    throw error("Invalid collation character")
                }
                low = only
            } else {
                low = c
                i += 1
            }
            // A range `a-z` (a `-` last, or first, is a member).
            if i + 1 < s.count, s[i] == "-", s[i + 1] != "]" {
                var high = s[i + 1]
                i += 2
                if high == "[", i < s.count, s[i] == "." {
                    var j = i + 1
                    while j + 1 < s.count, !(s[j] == "." && s[j + 1] == "]") { j += 1 }
                    guard j + 1 < s.count, j == i + 2 else { throw error("Invalid range end") }
                    high = s[i + 1]
                    i = j + 2
                }
                guard low.value <= high.value else { throw error("Invalid range end") }
                set.ranges.append(low.value...high.value)
            } else {
                set.ranges.append(low.value...low.value)
            }
        }
        return set
    }
}
