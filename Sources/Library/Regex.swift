/// A POSIX extended regular expression (mpd uses PCRE; the common subset is the same, and
/// `\d \w \s \b` and their negations are taken as PCRE takes them), case-insensitive for
/// `search`. Only whether it matches is asked, so its answer is POSIX's and PCRE's alike.
///
/// Matched by simulating its automaton (Thompson's construction): every state the text could
/// be in is followed at once, one character after the other, so a match costs at most the
/// text's length times the pattern's size, never the exponential blow-up of a backtracking
/// engine (glibc's `regexec` took 5 s for `(a+)+$` on one 30,000-character title). Each step
/// is paid from a ``MatchBudget``, which stops the match when the query has spent its share
/// or its client has gone.
final class Regex {
    private let program: Program
    private let fold: Bool

    init(_ pattern: String, fold: Bool) throws(LibraryError) {
        try Self.check(pattern)
        var parser = RegexParser(pattern, fold: fold)
        let tree = try parser.parse()
        program = try Program(tree)
        self.fold = fold
    }

    /// The most a pattern may cost to compile, in copies of its atoms: a repeated expression is
    /// copied once a repetition, so `u++++…` (each `+` doubling it) or `(a{1,200}){1,200}`
    /// would take gigabytes (fuzz finding filter/regex-repetition: a remote `find` made the
    /// daemon run out of memory).
    static let maximumCost = 2_000

    /// Refuses a pattern longer than 1 KiB, one whose repetitions multiply past
    /// ``maximumCost``, a repetition of a repetition (`a++`, `a*?`: undefined in POSIX, and
    /// PCRE's possessive and lazy forms mean nothing for a yes-or-no match: fuzz finding
    /// filter/regex-stacked), and back-references (not regular: no automaton matches them).
    static func check(_ pattern: String) throws(LibraryError) {
        let b = Array(pattern.utf8)
        guard b.count <= 1024 else { throw LibraryError(.badFilter, "Invalid regular expression: longer than 1024 bytes") }
        // The cost so far at each open group, and the cost of the last atom there (which a
        // repetition multiplies).
        var sums = [0], last: [Int?] = [nil]
        func add(_ cost: Int) { sums[sums.count - 1] += cost; last[last.count - 1] = cost }
        func repeatLast(_ factor: Int) throws(LibraryError) {
            guard let atom = last[last.count - 1] else { return }  // (nothing to repeat: the parser says so)
            let (n, o) = atom.multipliedReportingOverflow(by: max(1, factor))
            guard !o, n <= maximumCost else { throw LibraryError(.badFilter, "Invalid regular expression: too many repetitions") }
            sums[sums.count - 1] += n - atom
            last[last.count - 1] = n
            guard sums[sums.count - 1] <= maximumCost else { throw LibraryError(.badFilter, "Invalid regular expression: too many repetitions") }
        }
        var i = 0
        var afterRepetition = false
        func isRepetition(_ c: UInt8) -> Bool { c == UInt8(ascii: "*") || c == UInt8(ascii: "+") || c == UInt8(ascii: "?") || c == UInt8(ascii: "{") }
        while i < b.count {
            if afterRepetition, isRepetition(b[i]) {
                throw LibraryError(.badFilter, "Invalid regular expression: a repetition of a repetition")
            }
            afterRepetition = isRepetition(b[i])
            switch b[i] {
            case UInt8(ascii: "\\"):
                if i + 1 < b.count, (0x31...0x39).contains(b[i + 1]) {
                    throw LibraryError(.badFilter, "Invalid regular expression: back-references are not taken")
                }
                add(1)
                i += 2
                continue
            case UInt8(ascii: "["):
                // A bracket expression: `]` first is a member; `[:class:]` and the like inside.
                var j = i + 1
                if j < b.count, b[j] == UInt8(ascii: "^") { j += 1 }
                if j < b.count, b[j] == UInt8(ascii: "]") { j += 1 }
                while j < b.count, b[j] != UInt8(ascii: "]") {
                    if b[j] == UInt8(ascii: "["), j + 1 < b.count, [UInt8(ascii: ":"), UInt8(ascii: "."), UInt8(ascii: "=")].contains(b[j + 1]) {
                        let close = b[j + 1]
                        j += 2
                        while j + 1 < b.count, !(b[j] == close && b[j + 1] == UInt8(ascii: "]")) { j += 1 }
                        j += 2
                    } else {
                        j += 1
                    }
                }
                add(1)
                i = j + 1
                continue
            case UInt8(ascii: "("):
                sums.append(0)
                last.append(nil)
            case UInt8(ascii: ")"):
                if sums.count > 1 {
                    let group = sums.removeLast()
                    last.removeLast()
                    add(max(1, group))
                } else {
                    add(1)
                }
            case UInt8(ascii: "|"):
                last[last.count - 1] = nil
            case UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "?"):
                try repeatLast(2)
            case UInt8(ascii: "{"):
                var j = i + 1, numbers: [Int] = [0]
                while j < b.count, b[j] != UInt8(ascii: "}") {
                    if b[j] == UInt8(ascii: ",") { numbers.append(0) } else if (0x30...0x39).contains(b[j]) {
                        numbers[numbers.count - 1] = min(100_000, numbers[numbers.count - 1] * 10 + Int(b[j] - 0x30))
                    }
                    j += 1
                }
                try repeatLast(max(2, numbers.max() ?? 2) + 1)
                i = j + 1
                continue
            default:
                add(1)
            }
            i += 1
        }
    }

    /// Whether the pattern matches somewhere in `s`; nil when `budget` ran out or its query was
    /// cancelled first (the budget says which).
    func matches(_ s: String, budget: MatchBudget) -> Bool? { run(s, budget: budget) }

    /// Whether the pattern matches somewhere in `s`, however many steps that takes.
    func matches(_ s: String) -> Bool {
        // (Only a budget stops a match: without one there is always an answer.)
        guard let answer = run(s, budget: nil) else { preconditionFailure("a match without a budget stopped") }
        return answer
    }

    /// The matcher's memory, kept from one text to the next (a statement's rows, for which
    /// SQLite keeps this expression): the text's scalars, their lower case, and two sets of
    /// states (current and next: Briggs and Torczon's sparse sets, constant-time insertion,
    /// membership and clearing) with the stack of states to add (each state added pushes two at
    /// most), in one buffer of `6 × size + 2` made at the first match.
    private var text: [Unicode.Scalar] = []
    private var folded: [Unicode.Scalar] = []
    private var memory: UnsafeMutablePointer<Int32>?

    deinit { memory?.deallocate() }

    /// The match: each text costs the expression's size, then a step per state followed at a
    /// position (paid every 65,536 steps, and at the end).
    private func run(_ s: String, budget: MatchBudget?) -> Bool? {
        var text: [Unicode.Scalar] = [], folded: [Unicode.Scalar] = []
        swap(&text, &self.text)
        swap(&folded, &self.folded)
        defer {
            swap(&text, &self.text)
            swap(&folded, &self.folded)
        }
        text.removeAll(keepingCapacity: true)
        text.append(contentsOf: s.unicodeScalars)
        if fold {
            folded.removeAll(keepingCapacity: true)
            for c in text { folded.append(RegexFold.lower(c)) }
        }
        let n = text.count
        let size = program.ops.count
        let memory: UnsafeMutablePointer<Int32>
        if let m = self.memory {
            memory = m
        } else {
            // (Zeroed once: from then on a sparse set's entries are indices below `size`, which
            // its membership test checks against the set's own count, whatever a text left.)
            memory = .allocate(capacity: 6 * size + 2)
            memory.initialize(repeating: 0, count: 6 * size + 2)
            self.memory = memory
        }
        var dense = (memory, memory + size), sparse = (memory + 2 * size, memory + 3 * size)
        let stack = memory + 4 * size
        var counts = (0, 0)
        var steps = size
        let anchored = program.anchored
        return program.ops.withUnsafeBufferPointer { ops -> Bool? in
            program.sets.withUnsafeBufferPointer { sets -> Bool? in
                for i in 0...n {
                    // A new start at every position (the expression is not anchored), unless it can
                    // only match at the start. Each added state brings those it leads to without
                    // consuming a character (jumps, splits, assertions that hold here).
                    if i == 0 || !anchored {
                        Self.add(0, at: i, of: text, ops: ops, dense: dense.0, sparse: sparse.0, count: &counts.0, stack: stack, steps: &steps)
                    }
                    if counts.0 == 0 { break }
                    counts.1 = 0
                    let c: Unicode.Scalar = i < n ? (fold ? folded[i] : text[i]) : "\0"
                    for k in 0..<counts.0 {
                        let pc = Int(dense.0[k])
                        let taken: Bool
                        switch ops[pc] {
                        case .match: return true
                        case .char(let x): taken = i < n && c == x
                        case .any: taken = i < n
                        case .set(let index): taken = i < n && sets[index].contains(text[i], lower: c, folding: fold)
                        case .split, .jump, .assert: taken = false
                        }
                        guard taken else { continue }
                        Self.add(pc + 1, at: i + 1, of: text, ops: ops, dense: dense.1, sparse: sparse.1, count: &counts.1, stack: stack, steps: &steps)
                    }
                    swap(&dense.0, &dense.1)
                    swap(&sparse.0, &sparse.1)
                    counts = (counts.1, 0)
                    steps += 1
                    if steps >= 1 << 16 {
                        if let budget, !budget.spend(steps) { return nil }
                        steps = 0
                    }
                }
                if let budget, !budget.spend(steps) { return nil }
                return false
            }
        }
    }

    /// Adds state `start` to the set held in `dense`, `sparse` and `count` (a sparse set), with
    /// every state it leads to without consuming a character: jumps, both sides of a split, and
    /// the state after an assertion that holds at `position` in `text`. `stack` has room for
    /// two states for each state added; each state added is one step.
    @inline(__always)
    private static func add(
        _ start: Int, at position: Int, of text: [Unicode.Scalar], ops: UnsafeBufferPointer<RegexOp>,
        dense: UnsafeMutablePointer<Int32>, sparse: UnsafeMutablePointer<Int32>, count: inout Int,
        stack: UnsafeMutablePointer<Int32>, steps: inout Int
    ) {
        var top = 1
        stack[0] = Int32(start)
        while top > 0 {
            top -= 1
            let pc = Int(stack[top])
            let at = Int(sparse[pc])
            if at < count, Int(dense[at]) == pc { continue }
            sparse[pc] = Int32(count)
            dense[count] = Int32(pc)
            count += 1
            steps += 1
            switch ops[pc] {
            case .jump(let to): stack[top] = Int32(to); top += 1
            case .split(let a, let b):
                stack[top] = Int32(b)
                stack[top + 1] = Int32(a)
                top += 2
            case .assert(let a): if a.holds(text, position) { stack[top] = Int32(pc + 1); top += 1 }
            default: break
            }
        }
    }
}

/// Case folding for `search`'s expressions: one scalar to one scalar (a mapping to several,
/// as `ß` to `SS`, leaves the scalar as it is).
enum RegexFold {
    static func lower(_ c: Unicode.Scalar) -> Unicode.Scalar {
        if c.isASCII {
            return c.value >= 65 && c.value <= 90 ? Unicode.Scalar(c.value + 32)! : c
        }
        let m = c.properties.lowercaseMapping.unicodeScalars
        return m.count == 1 ? m.first! : c
    }

    static func upper(_ c: Unicode.Scalar) -> Unicode.Scalar {
        if c.isASCII {
            return c.value >= 97 && c.value <= 122 ? Unicode.Scalar(c.value - 32)! : c
        }
        let m = c.properties.uppercaseMapping.unicodeScalars
        return m.count == 1 ? m.first! : c
    }
}
