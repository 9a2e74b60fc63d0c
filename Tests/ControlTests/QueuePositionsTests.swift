import Control
import Testing

/// MPD's positions against a queue of 3 items: just below, at and past its end.
@Suite("queue positions resolve against the queue's length, with mpd's error past it")
struct QueuePositionsTests {
    @Test("one position: the last is found, the length and past it are a bad song index")
    func one() throws {
        #expect(try QueuePositions.one(2).resolve(count: 3) == 2..<3)
        #expect(throws: CommandError.badArgument("Bad song index")) { try QueuePositions.one(3).resolve(count: 3) }
        #expect(throws: CommandError.badArgument("Bad song index")) { try QueuePositions.one(-1).resolve(count: 3) }
    }

    @Test("a range ends at most at the length; past it only a listing's range is clamped; an open end is the length")
    func range() throws {
        #expect(try QueuePositions.range(start: 1, end: 3, clampsEnd: false).resolve(count: 3) == 1..<3)
        #expect(throws: CommandError.badArgument("Bad song index")) {
            try QueuePositions.range(start: 1, end: 4, clampsEnd: false).resolve(count: 3)
        }
        #expect(try QueuePositions.range(start: 1, end: 4, clampsEnd: true).resolve(count: 3) == 1..<3)
        #expect(try QueuePositions.range(start: 3, end: nil, clampsEnd: false).resolve(count: 3) == 3..<3)
        #expect(throws: CommandError.badArgument("Bad song index")) {
            try QueuePositions.range(start: 2, end: 1, clampsEnd: false).resolve(count: 3)
        }
    }

    @Test("a target: a position as given; +N counts after the current item, -N before it; relative with nothing current is mpd's error")
    func target() throws {
        #expect(try QueueTarget.at(7).resolve(currentIndex: nil) == 7)
        #expect(try QueueTarget.afterCurrent(0).resolve(currentIndex: 2) == 3)
        #expect(try QueueTarget.afterCurrent(2).resolve(currentIndex: 2) == 5)
        #expect(try QueueTarget.beforeCurrent(0).resolve(currentIndex: 2) == 2)
        #expect(try QueueTarget.beforeCurrent(2).resolve(currentIndex: 2) == 0)
        #expect(throws: CommandError.badArgument("No current song")) { try QueueTarget.afterCurrent(0).resolve(currentIndex: nil) }
        #expect(throws: CommandError.badArgument("No current song")) { try QueueTarget.beforeCurrent(1).resolve(currentIndex: nil) }
    }
}
