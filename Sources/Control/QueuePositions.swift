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

/// Where items go in the queue, as MPD's commands give it: a position, or one relative to the
/// current item (`+N`: N places after it, `-N`: N places before it, as mpd 0.23), resolved
/// when the command runs, under the command lock, against the current item then.
public enum QueueTarget: Sendable, Equatable {
    /// This position (0 is the first).
    case at(Int)
    /// `+N`: N places after the current item (`+0`: right after it).
    case afterCurrent(Int)
    /// `-N`: N places before the current item (`-0`: its own place, before it).
    case beforeCurrent(Int)

    /// The position it names when `currentIndex` is the current item's.
    /// - Throws: `bad-argument` "No current song" (mpd's words) for a relative target when no
    ///   item is current.
    public func resolve(currentIndex: Int?) throws(CommandError) -> Int {
        switch self {
        case .at(let p): return p
        case .afterCurrent(let n):
            guard let c = currentIndex else { throw .badArgument("No current song") }
            return c + 1 + n
        case .beforeCurrent(let n):
            guard let c = currentIndex else { throw .badArgument("No current song") }
            return c - n
        }
    }
}
