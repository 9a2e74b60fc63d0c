import CSQLite
import Synchronization

/// Tells a running query that its answer is no longer wanted (its client has gone): the query
/// stops at its next check (every few thousand steps of SQLite or of a regular expression) and
/// throws ``LibraryError/Kind/cancelled``.
public final class QueryCancellation: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    /// Stops the queries that were given this token (now and later).
    public func cancel() { flag.store(true, ordering: .releasing) }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { flag.load(ordering: .acquiring) }
}

/// The work one query's regular expressions may still do, in automaton steps (a step is one
/// state followed at one position of a text), and its cancellation. A reader connection owns
/// one, reset at each query; its SQL function `bl_regexp` pays from it, and SQLite's progress
/// handler asks it whether the query was cancelled.
final class MatchBudget {
    private(set) var remaining: Int
    private var granted: Int
    var cancellation: QueryCancellation?
    /// Why the query was stopped, once it was.
    private(set) var stopped: LibraryError?

    init(steps: Int = .max) { (remaining, granted) = (steps, steps) }

    /// Starts a query: `steps` to spend, cancelled by `cancellation`.
    func reset(steps: Int, cancellation: QueryCancellation?) {
        (remaining, granted, self.cancellation, stopped) = (steps, steps, cancellation, nil)
    }

    /// Pays `steps`; false (and ``stopped`` says why) when the budget is spent or the query
    /// was cancelled.
    func spend(_ steps: Int) -> Bool {
        guard stopped == nil else { return false }
        remaining -= steps
        if remaining < 0 {
            stopped = LibraryError(.badFilter, "regular expression too costly: this query's matches needed more than \(granted) steps (a pattern of many states over long values); narrow the filter or simplify the expression")
            return false
        }
        return !checkCancelled()
    }

    /// Whether the query was cancelled (then ``stopped`` says so).
    func checkCancelled() -> Bool {
        if stopped?.kind == .cancelled { return true }
        guard cancellation?.isCancelled == true else { return false }
        stopped = LibraryError(.cancelled, "query cancelled: its client has gone")
        return true
    }

    /// Has SQLite ask this budget every 10,000 of its instructions whether to go on.
    func watch(_ db: SQLiteDatabase) {
        sqlite3_progress_handler(db.handle, 10_000, { p in
            guard let p else { return 0 }
            return Unmanaged<MatchBudget>.fromOpaque(p).takeUnretainedValue().checkCancelled() ? 1 : 0
        }, Unmanaged.passUnretained(self).toOpaque())
    }
}

extension MusicLibrary {
    /// The automaton steps one query's regular expressions may take: 100 million, about a
    /// second's work (an ordinary expression over 100,000 songs' tags takes a fraction of it).
    /// A query that needs more fails with a `badFilter` error saying so.
    public static let regexSteps = 100_000_000
}
