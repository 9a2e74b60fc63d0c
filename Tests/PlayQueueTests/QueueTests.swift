import Testing
@testable import PlayQueue

/// mpd's queue alone (`Queue`): ids, order, versions, priorities, shuffle, consume and the
/// history, with no player and no thread: a fault in the queue fails here first.
@Suite("the queue alone: ids, order, versions, shuffle, priorities, consume")
struct QueueUnitTests {
    static func queue(_ n: Int) -> Queue {
        var q = Queue()
        _ = q.add((1...n).map { "/m/\($0).flac" }, at: nil, current: nil)
        q.changed(from: 0)
        return q
    }

    @Test("ids are handed out in order, never reused while higher ones are free")
    func idsInOrder() {
        var q = Self.queue(3)
        #expect(q.entries.map(\.id) == [1, 2, 3])
        q.remove([2])
        let (ids, index) = q.add(["/m/x.flac"], at: 1, current: nil)
        #expect(ids == [4] && index == 1)
        #expect(q.entries.map(\.id) == [1, 4, 3])
    }

    @Test("past the largest id, the lowest free ids are used again")
    func idsWrap() {
        var q = Queue()
        q.nextID = PlayQueue.maximumID
        _ = q.add(["/m/a", "/m/b", "/m/c"], at: nil, current: nil)
        #expect(q.entries.map(\.id) == [PlayQueue.maximumID, 1, 2])
    }

    @Test("an insert position is clamped to the queue")
    func insertClamped() {
        var q = Self.queue(2)
        let (_, index) = q.add(["/m/x"], at: 99, current: nil)
        #expect(index == 2)
        let (_, first) = q.add(["/m/y"], at: -5, current: nil)
        #expect(first == 0)
    }

    @Test("a change bumps the version and marks the entries from its index as moved then (plchanges)")
    func versionsAndMoves() {
        var q = Self.queue(4)
        let v = q.version
        _ = q.move(from: 3, to: 1)
        q.changed(from: 1, through: 3)
        #expect(q.version == v + 1)
        #expect(q.entries.map(\.id) == [1, 4, 2, 3])
        #expect(q.moved[1] == v && q.moved[4] == v + 1 && q.moved[2] == v + 1 && q.moved[3] == v + 1)
    }

    @Test("shuffle on: a permutation with the current entry first; off: queue order")
    func shuffleOrder() {
        var q = Self.queue(20)
        q.setShuffle(true, current: 7)
        #expect(q.order.first == 7)
        #expect(Set(q.order) == Set(1...20) && q.order.count == 20)
        q.setShuffle(false, current: 7)
        #expect(q.order == Array(1...20))
    }

    @Test("priorities order what follows the current entry in shuffle, highest first, ties keeping the shuffled order")
    func priorities() {
        var q = Self.queue(10)
        q.setShuffle(true, current: 1)
        let before = q.order
        q.setPriority(5, of: [4, 9], current: 1)
        q.setPriority(9, of: [6], current: 1)
        #expect(q.order.first == 1)
        #expect(Array(q.order[1...3]) == [6] + before.filter { $0 == 4 || $0 == 9 })
        #expect(Array(q.order[4...]) == before.filter { ![1, 4, 6, 9].contains($0) })
    }

    @Test("an entry played by id in shuffle comes next after the current one")
    func playNextInShuffle() {
        var q = Self.queue(10)
        q.setShuffle(true, current: 3)
        q.playNextInShuffle(8, after: 3)
        #expect(Array(q.order.prefix(2)) == [3, 8])
    }

    @Test("consume: entries played are removed once no longer current; oneshot turns itself off after one")
    func consume() {
        var q = Self.queue(4)
        q.consume = .on
        let first = q.played(1)
        let whileCurrent = q.removeConsumed(keeping: 1)
        let after = q.removeConsumed(keeping: 2)
        #expect(!first && whileCurrent == nil && after == 0)
        #expect(q.entries.map(\.id) == [2, 3, 4])
        q.consume = .oneshot
        let oneshot = q.played(2)
        #expect(oneshot && q.consume == .off)
        let offNow = q.played(3)
        let removed = q.removeConsumed(keeping: 3)
        #expect(!offNow && removed == 0)
        #expect(q.entries.map(\.id) == [3, 4])
    }

    @Test("the history keeps the entries played, each once in a row, at most its limit, and forgets removed ones")
    func history() {
        var q = Self.queue(3)
        _ = q.played(1)
        _ = q.played(1)
        _ = q.played(2)
        #expect(q.history == [1, 2])
        q.remove([1])
        #expect(q.history == [2])
        for _ in 0..<(PlayQueue.historyLimit + 5) { _ = q.played(2); _ = q.played(3) }
        #expect(q.history.count == PlayQueue.historyLimit)
    }

    @Test("a snapshot restores entries, modes and order; ids it names that are gone are dropped, entries it leaves out of the shuffled order appended")
    func restore() {
        var q = Queue()
        let snap = PlayQueueSnapshot(entries: [PlayQueueEntry(id: 5, path: "/m/a"), PlayQueueEntry(id: 9, path: "/m/b"), PlayQueueEntry(id: 2, path: "/m/c")],
                                     nextID: 10, repeatMode: .all, shuffle: true, shuffleOrder: [9, 77, 5], history: [77, 2], consume: .on, version: 41)
        let ids = q.restore(snap)
        #expect(ids == [5, 9, 2])
        #expect(q.order == [9, 5, 2])
        #expect(q.history == [2] && q.repeatMode == .all && q.consume == .on && q.version == 41)
        let (added, _) = q.add(["/m/d"], at: nil, current: nil)
        #expect(added == [10])
    }
}
