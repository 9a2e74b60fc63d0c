// Feeding the player, as mpd's `Playlist` and player control: which entry automatic advance
// plays next, what the player holds (the current item and `lookahead` after it), jumps and
// rebuilds, the transport state reported, and the player's events followed (items heard,
// failed, run out). Every method here runs with `PlayQueue`'s state locked.

import Dispatch
import MediaCore
import Player
import Synchronization
import Locking

extension PlayQueue {
    // MARK: - The output

    /// Throws when the player could not play because its device is still gone.
    func checkOutput() throws(PlayQueueError) {
        guard player.rate == 0, let e = player.outputError else { return }
        throw Self.outputUnavailable(e)
    }

    /// Before anything changes: a device that failed and is still gone refuses `play` (the
    /// queue stays as it is, paused where it was heard).
    func refuseWhileOutputIsGone() throws(PlayQueueError) {
        guard let e = player.outputError, !player.outputIsBack() else { return }
        throw Self.outputUnavailable(e)
    }

    private static func outputUnavailable(_ e: MediaError) -> PlayQueueError {
        PlayQueueError(code: .outputUnavailable, message: "\(e.item) is unavailable (\(e.message)): paused where it stopped")
    }

    // MARK: - What plays next

    func currentState(_ s: State) -> PlaybackState {
        if s.stopped || s.fed.isEmpty { return .stopped }
        return player.rate == 0 ? .paused : .playing
    }

    /// The entry automatic advance plays after `id`.
    func automaticNext(after id: Int, _ s: State, ignoringStop: Bool = false) -> Int? {
        if s.queue.stopAfterCurrent, !ignoringStop { return nil }
        if s.queue.repeatMode == .one { return s.queue.failure(id) == nil ? id : nil }
        // Failed entries are skipped, and so are those consume mode is about to remove.
        let consumed = s.queue.consumed
        guard !s.queue.shuffle else {
            let order = s.queue.shuffleOrder
            guard let i = order.firstIndex(of: id) else { return nil }
            let playable = { (n: Int) in s.queue.failure(n) == nil && !consumed.contains(n) }
            if let n = order[(i + 1)...].first(where: playable) { return n }
            if s.queue.repeatMode == .all { return order[...i].first(where: playable) }
            return nil
        }
        // Queue order, read in place (no copy of the ids).
        let e = s.queue.entries
        guard let i = e.firstIndex(where: { $0.id == id }) else { return nil }
        let playable = { (x: PlayQueueEntry) in x.failure == nil && !consumed.contains(x.id) }
        if let n = e[(i + 1)...].first(where: playable) { return n.id }
        if s.queue.repeatMode == .all { return e[...i].first(where: playable)?.id }
        return nil
    }

    /// The entries automatic advance plays after `id`, in order, leaving out `skipped` (items
    /// that failed to decode, not marked yet): at most ``lookahead`` of them, and with more than
    /// one, at most the queue's length (but 8 at least: with repeat all a short queue comes
    /// round again; repeat one repeats `id` 8 times at most).
    private func upcoming(after id: Int, _ s: State, skipping failed: Set<Int> = []) -> [Int] {
        guard !s.queue.stopAfterCurrent else { return [] }
        guard lookahead > 1 || !failed.isEmpty else { return automaticNext(after: id, s).map { [$0] } ?? [] }
        if s.queue.repeatMode == .one {
            return s.queue.failure(id) == nil && !failed.contains(id) ? Array(repeating: id, count: min(lookahead, 8)) : []
        }
        let order = s.queue.order
        let limit = min(lookahead, max(order.count, 8))
        guard let i = order.firstIndex(of: id) else { return [] }
        let skipped = Set(s.queue.entries.lazy.filter { $0.failure != nil }.map(\.id)).union(s.queue.consumed).union(failed)
        var out: [Int] = []
        var k = i + 1, steps = 0
        while out.count < limit, steps < 2 * limit + order.count {
            if k == order.count {
                guard s.queue.repeatMode == .all else { break }
                k = 0
            }
            if !skipped.contains(order[k]) { out.append(order[k]) }
            k += 1
            steps += 1
        }
        return out
    }

    // MARK: - Played entries

    /// `id` was played and is left: into the history; with consume on, to be removed.
    func played(_ s: inout State, _ id: Int) {
        if s.queue.played(id) { postModes(s) }
    }

    /// Removes the entries consume mode took, once none of them is current (automatic advance
    /// skips them meanwhile; a consumed one fed as next is dropped by the refeed `changed` does).
    func consumePlayed(_ s: inout State) {
        guard let first = s.queue.removeConsumed(keeping: s.current) else { return }
        changed(&s, from: first)
    }

    // MARK: - What the player holds

    /// Makes `id` current, keeping playing/paused (stopped stays stopped, nil stops).
    func jump(_ s: inout State, to id: Int?, keepRate: Bool) {
        guard let id else {
            s.current = nil
            post(.current(nil))
            stopPlayer(&s)
            return
        }
        s.current = id
        if s.stopped {
            post(.current(s.queue.entry(id)))
            return
        }
        let playing = player.rate != 0
        rebuild(&s)
        if keepRate, playing { player.play() }
    }

    /// Replaces what the player holds by the current entry (from `startingAt`) and its successor.
    func rebuild(_ s: inout State, startingAt time: Double = 0) {
        let wasPlaying = player.rate != 0
        leaving(&s)
        s.fed = []
        guard let c = s.current, let item = s.stretched(s.queue.item(for: c)) else {
            player.removeAllItems()
            return
        }
        // From the start: where the listener left it, if that is kept.
        let start = time > 0 ? time : s.queue.entry(c).flatMap { s.resume?.start(for: $0) } ?? 0
        // One step: the device stays open, as for any other jump.
        player.replaceAllItems(with: item, startingAt: start > 0 ? start : nil)
        s.fed = [(c, item)]
        refeed(&s)
        if wasPlaying { player.play() }
        post(.current(s.queue.entry(c)))
    }

    /// Keeps what the player holds after the current item what automatic advance plays next:
    /// ``lookahead`` items, counting none that failed to decode ahead of the listener. Those stay
    /// where they are (their failure is reported, and the entry marked, when the listener
    /// reaches it) and what follows them is fed at once, so the change stays gapless. Only what
    /// differs from the wanted order is replaced; what is fed as wanted stays.
    func refeed(_ s: inout State) {
        guard let first = s.fed.first else { return }
        let failed = Set(s.fed.lazy.filter { $0.item.status == .failed }.map(\.id))
        let want = upcoming(after: first.id, s, skipping: failed)
        var w = 0, keep = 0  // wanted items fed so far; the fed index of the last item that stays
        for k in s.fed.indices.dropFirst() {
            if s.fed[k].item.status == .failed {
                keep = k
                continue
            }
            guard w < want.count, s.fed[k].id == want[w] else { break }
            w += 1
            keep = k
        }
        if keep + 1 < s.fed.count {
            player.removeItems(after: s.fed[keep].item)
            s.fed.removeSubrange((keep + 1)...)
        }
        guard w < want.count else { return }
        let byID = want.count - w > 8 ? Dictionary(s.queue.entries.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a }) : nil
        let items = want[w...].compactMap { id -> (id: Int, item: PlayerItem)? in
            let item = s.stretched(byID.map { $0[id].map(\.playerItem) } ?? s.queue.item(for: id))
            return item.map { (id, $0) }
        }
        let n = player.insert(contentsOf: items.map(\.item), after: s.fed[keep].item)
        s.fed += items.prefix(n)
    }

    /// The item heard now is about to be let go of before its end: the resume positions hear
    /// where (nothing when stopped, when nothing of it was heard yet, or at its end).
    func leaving(_ s: inout State) {
        guard !s.stopped, let f = s.fed.first, let resume = s.resume, player.currentItem === f.item,
              let entry = s.queue.entry(f.id) else { return }
        let time = player.currentTime()
        guard time > 0 else { return }
        if let d = f.item.duration, time >= d { return }
        resume.left(entry, item: f.item, at: time)
    }

    func stopPlayer(_ s: inout State) {
        leaving(&s)
        s.stopped = true
        s.fed = []
        player.removeAllItems()
        publishState(&s)
    }

    /// The entries changed: the version bumps; entries at indexes `from…through` (to the end
    /// without `through`) moved in this version; the player is fed what now follows.
    func changed(_ s: inout State, from: Int, through: Int? = nil) {
        s.queue.changed(from: from, through: through)
        refeed(&s)
        post(.queue(version: s.queue.version, count: s.queue.entries.count))
    }

    func publishState(_ s: inout State) {
        let now = currentState(s)
        guard now != s.lastState else { return }
        s.lastState = now
        post(.state(now))
    }

    // MARK: - Player events (on `queue`)

    func handle(_ e: PlayerEvent) {
        state.withLock { s in
            switch e {
            case .currentItemChanged, .itemFailedToPlayToEnd:
                settle(&s)
            case .itemDidPlayToEnd(let item):
                s.failuresInARow = 0
                if s.fed.count == 1, s.fed[0].item === item { ranOut(&s, after: s.fed[0].id, failed: false) }
            case .timeJumped(let item, let time):
                if let f = s.fed.first, f.item === item { post(.seeked(id: f.id, time: time)) }
            case .timedMetadata(let item, let metadata):
                if let f = s.fed.first, f.item === item { post(.metadata(id: f.id, metadata)) }
            case .chapterChanged(let item, let chapter):
                if let f = s.fed.first, f.item === item { post(.chapter(id: f.id, chapter: chapter)) }
            case .itemStatusChanged(_, .failed):
                refeed(&s)  // the decoder went on past it: what follows is fed now
            case .rateChanged, .timeControlStatusChanged:
                publishState(&s)
            default:
                break
            }
            consumePlayed(&s)
        }
    }

    /// Brings ``State/fed`` in line with what the player still holds: items it let go of were
    /// heard to their end (into the history) or failed (marked, reported); the first one it
    /// still holds is current. When it holds nothing after a failure, the queue goes on with
    /// what comes next; after a normal end, the queue has ended.
    private func settle(_ s: inout State) {
        guard !s.stopped else { return }
        let live = Set(player.items().map(ObjectIdentifier.init))
        var lastDropped: (id: Int, failed: Bool)?
        var frontChanged = false
        var k = 0
        while k < s.fed.count {
            let f = s.fed[k]
            if live.contains(ObjectIdentifier(f.item)) {
                k += 1
                continue
            }
            if f.item.status == .failed {
                let reason = f.item.error?.reason ?? "failed"
                if let i = s.queue.entries.firstIndex(where: { $0.id == f.id }) {
                    s.queue.entries[i].failure = reason
                    post(.failed(s.queue.entries[i], reason: reason))
                }
                s.failuresInARow += 1
                lastDropped = (f.id, true)
            } else if k == 0 {
                // Heard to its end before its start was handled here (a device far faster than
                // real time): it was current all the same, and is announced so, in order.
                if s.current != f.id {
                    s.current = f.id
                    post(.current(s.queue.entry(f.id)))
                }
                played(&s, f.id)
                lastDropped = (f.id, false)
            } else {
                k += 1  // not failed, not heard: removed by someone else; keep the books as they are
                continue
            }
            if k == 0 { frontChanged = true }
            s.fed.remove(at: k)
        }
        if s.failuresInARow >= Self.maximumFailuresInARow {
            s.failuresInARow = 0
            stopPlayer(&s)
            return
        }
        if let first = s.fed.first {
            if frontChanged || first.id != s.current {
                s.current = first.id
                // Reached by automatic advance, fed from its start to join gaplessly: an entry
                // left before goes on from where it was left.
                if frontChanged, let entry = s.queue.entry(first.id), let start = s.resume?.start(for: entry), start > 0,
                   player.currentItem === first.item {
                    player.seek(to: start)
                }
                post(.current(s.queue.entry(first.id)))
            }
            refeed(&s)
            return
        }
        guard let dropped = lastDropped else { return }
        ranOut(&s, after: dropped.id, failed: dropped.failed)
    }

    /// The player holds nothing after `id` (heard to its end, or failed): the queue goes on
    /// with what comes next, or ends. An entry that is due but was not fed in time (the player
    /// reached the end of what it held first: a device far faster than real time, a machine
    /// too busy to feed it) plays now, after a short gap, rather than stopping the queue.
    private func ranOut(_ s: inout State, after id: Int, failed: Bool) {
        if failed || !s.queue.stopAfterCurrent, let n = automaticNext(after: id, s) {
            let playing = player.rate != 0 || s.lastState == .playing
            if !failed { played(&s, id) }  // (at most once: `played` is idempotent)
            s.current = n
            rebuild(&s)
            if playing { player.play() }
        } else {
            s.current = id
            endOfQueue(&s)
        }
    }

    /// The last fed item was heard to its end (or failed): stop. With stop-after-current, the
    /// entry after it becomes current (stopped) and the flag clears.
    private func endOfQueue(_ s: inout State) {
        let last = s.fed.first?.id ?? s.current
        if s.queue.stopAfterCurrent, let last {
            s.queue.stopAfterCurrent = s.queue.stopAfterEach
            played(&s, last)
            s.current = automaticNext(after: last, s, ignoringStop: true) ?? s.current
            post(.current(s.current.flatMap { s.queue.entry($0) }))
            postModes(s)
            stopPlayer(&s)
            return
        }
        if let last { played(&s, last) }
        s.current = nil
        post(.current(nil))
        stopPlayer(&s)
    }
}

extension PlayQueue.State {
    /// `item` (a new player item for an entry) with the queue's stretch for rates other than 1.
    func stretched(_ item: PlayerItem?) -> PlayerItem? {
        item?.audioTimePitchAlgorithm = pitchAlgorithm
        return item
    }
}
