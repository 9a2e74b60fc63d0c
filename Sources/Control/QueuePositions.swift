/// Queue positions as MPD's commands give them (`POS`, `START:END`, `START:`), resolved
/// against the queue when the command runs, under the command lock: a command between the
/// client's request and its run cannot make them name other items.
public enum QueuePositions: Sendable, Equatable {
    /// One position (0 is the first item).
    case one(Int)
    /// From `start` to the position before `end` (nil: to the queue's end); `clampsEnd`: an
    /// end past the queue's is its end (`playlistinfo`, `plchanges`) instead of an error.
    case range(start: Int, end: Int?, clampsEnd: Bool)

    /// The indexes they name in a queue of `count` items.
    /// - Throws: `bad-argument` "Bad song index" (mpd's words) when they lie outside it.
    public func resolve(count: Int) throws(CommandError) -> Range<Int> {
        switch self {
        case .one(let p):
            guard p >= 0, p < count else { throw .badArgument("Bad song index") }
            return p..<(p + 1)
        case .range(let a, let end, let clamps):
            var b = end ?? count
            if clamps { b = min(b, count) }
            guard a >= 0, b >= a, b <= count else { throw .badArgument("Bad song index") }
            return a..<b
        }
    }
}
