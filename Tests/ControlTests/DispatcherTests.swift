import BacklineSchema
import AudioEngine
import BacklineTestSupport
import Control
import Dispatch
import Foundation
import MediaCore
import NowPlaying
import PlayQueue
import Session
import Synchronization
import Testing
import Locking

/// The command layer in-process, in the spirit of swift-nio's `NIOEmbedded`: typed commands
/// run through a ``CommandDispatcher`` over a real ``Playback`` on a device the test paces
/// (`paced:NAME`: nothing is heard until the test advances its clock, so state read after a
/// command cannot have moved on), their typed replies, errors and events checked without a
/// daemon, a socket or a sound server.
@Suite("The command layer, in-process")
struct DispatcherTests {
    /// A playback on a paced device with a music directory of three tones: 2 s, 60 s, 2 s.
    static func make() throws -> (CommandDispatcher, String, PacedClock) {
        let music = try Harness.makeTemporaryDirectory("backline-control").path
        try FileManager.default.createDirectory(atPath: music + "/album", withIntermediateDirectories: true)
        for (k, f) in [440.0, 660, 880].enumerated() {
            let tone = try Fixtures.tone("control-\(k)", seconds: k == 1 ? 60 : 2, frequency: f)
            try FileManager.default.copyItem(atPath: tone.path, toPath: music + "/album/\(k).mp3")
        }
        let clock = PacedDevice.clock("dispatch-\(UUID().uuidString)")
        let configuration = PlaybackConfiguration(
            device: clock.device, musicDirectory: music, registryDirectory: try Harness.makeTemporaryDirectory().path)
        let playback = try Playback(configuration: configuration)
        return (CommandDispatcher(playback: playback, version: "test", checkToken: { $0 == "secret" }), music, clock)
    }

    /// Hears the first frames the output wrote: the item that plays is heard (its `current` event).
    static func hearStart(_ clock: PacedClock, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(clock.waitUntilHolding(1), "the output wrote nothing", sourceLocation: sourceLocation)
        #expect(clock.advance(frames: 1) == 1, sourceLocation: sourceLocation)
    }

    /// Collects the playback's events.
    final class Events: Sendable {
        let seen = Lock<[ControlEvent]>([])
        init(_ p: Playback) { p.addObserver(queue: DispatchQueue(label: "events")) { [self] e in seen.withLock { $0.append(e) } } }
        func wait(for predicate: (ControlEvent) -> Bool) -> Bool {
            eventually(timeout: 5) { seen.withLock { $0.contains(where: predicate) } }
        }
    }

    @Test("add, list, play, next, seek, modes and volume: typed replies, and typed events with their subsystems")
    func commands() throws {
        let (d, _, clock) = try Self.make()
        let events = Events(d.playback)
        guard case .success(.added(let ids, let skipped)) = d.execute(AddCommand(paths: ["album"])) else {
            Issue.record("add failed")
            return
        }
        #expect(ids.count == 3 && skipped.isEmpty)
        guard case .success(.queue(let listing)) = d.execute(ListCommand()) else { Issue.record("list failed"); return }
        #expect(listing.items.map(\.id) == ids && listing.items.map(\.title) == ["0.mp3", "1.mp3", "2.mp3"])
        #expect(zip(listing.items, [2.0, 60, 2]).allSatisfy { abs(($0.duration ?? 0) - $1) < 0.05 }, "exact durations: \(listing.items.map(\.duration))")
        #expect(events.wait { $0 == .queue(version: listing.version, count: 3) })
        #expect(ControlEvent.queue(version: 1, count: 3).subsystems == .playlist)

        #expect(d.execute(PauseCommand()) == .success(.state(.stopped)), "pause while stopped does nothing")
        #expect(d.execute(PlayCommand(item: ids[1])) == .success(.state(.playing)))
        Self.hearStart(clock)
        #expect(events.wait { if case .current(let item) = $0 { item?.id == ids[1] } else { false } })
        #expect(d.execute(PauseCommand()) == .success(.state(.paused)))
        let length = try #require(listing.items[1].duration)
        #expect(d.execute(SeekCommand(target: .position(99))) == .success(.position(length)), "a seek is clamped to the item")
        #expect(d.execute(SeekCommand(target: .position(1))) == .success(.position(1)))
        #expect(d.execute(RepeatCommand(mode: .all)) == .success(.repeatMode(.all)))
        #expect(events.wait { $0 == .modes(repeatMode: .all, shuffle: false, stopAfterCurrent: false, consume: .off) })
        #expect(d.execute(VolumeCommand(change: .set(40))) == .success(.volume(VolumeState(volume: 0.4, muted: false))))
        #expect(events.wait { $0 == .volume(VolumeState(volume: 0.4, muted: false)) })
        #expect(ControlEvent.volume(VolumeState(volume: 0.4, muted: false)).subsystems == .mixer)
        guard case .success(.status(let s)) = d.execute(StatusCommand()) else { Issue.record("status failed"); return }
        #expect(s.count == 3 && s.repeatMode == .all && s.device == clock.device && s.volume.volume == 0.4)
        d.playback.shutdown()
    }

    @Test("skips: without seconds forward by 30 s and back by 15 s (Apple Podcasts'), by the configured intervals once set, which the remote command center offers; seconds as given; 0 refused; a speed of 0.5 and 3 taken, 0.49 and 3.01 refused")
    func skips() throws {
        let (d, _, clock) = try Self.make()
        guard case .success(.added(let ids, _)) = d.execute(AddCommand(paths: ["album/1.mp3"])) else { Issue.record("add failed"); return }
        #expect(d.execute(PlayCommand(item: ids[0])) == .success(.state(.playing)))
        Self.hearStart(clock)
        #expect(d.execute(PauseCommand()) == .success(.state(.paused)))
        #expect(d.execute(SeekCommand(target: .position(20))) == .success(.position(20)))
        #expect(d.execute(SkipCommand(back: false)) == .success(.position(50)))
        #expect(d.execute(SkipCommand(back: true)) == .success(.position(35)))
        #expect(d.execute(SkipCommand(seconds: -5)) == .success(.position(30)))
        #expect(try SkipCommand(Arguments(["back": .boolean(true)])).back)
        // The speed's range, at its ends and just past them.
        for ok in [0.5, 3.0] { #expect(try SpeedCommand(Arguments(["speed": .number(ok)])).speed == ok) }
        for bad in [0.49, 3.01] {
            #expect(throws: CommandError.badArgument("speed: speed is 0.5…3")) { _ = try SpeedCommand(Arguments(["speed": .number(bad)])) }
        }
        #expect(throws: CommandError.badArgument("skip: \"seconds\" must be non-zero")) { _ = try SkipCommand(Arguments(["seconds": .number(0)])) }
        let remote = d.playback.remote
        #expect(remote.skipForwardCommand.preferredIntervals == [30] && remote.skipBackwardCommand.preferredIntervals == [15])
        d.playback.skipIntervals = (10, 5)
        #expect(remote.skipForwardCommand.preferredIntervals == [10] && remote.skipBackwardCommand.preferredIntervals == [5])
        #expect(d.execute(SkipCommand(back: false)) == .success(.position(40)))
        #expect(d.execute(SkipCommand(back: true)) == .success(.position(35)))
        d.playback.shutdown()
    }

    @Test("errors are typed: a bad id, nothing to play, a path outside the music directory, a bad argument; the remote command center takes the same route")
    func errors() throws {
        let (d, _, clock) = try Self.make()
        #expect(d.execute(PlayCommand(item: nil)) == .failure(.emptyQueue("the queue is empty")))
        #expect(d.execute(NextCommand()) == .failure(.notPlaying("nothing is current")))
        guard case .failure(.forbidden) = d.execute(AddCommand(paths: ["/etc/passwd"])) else { Issue.record("an escape was allowed"); return }
        guard case .failure(.notFound) = d.execute(AddCommand(paths: ["nothing-here.mp3"])) else { Issue.record("a missing file was added"); return }
        #expect(throws: CommandError.badArgument("seek: give \"position\" or \"offset\" (seconds)")) {
            _ = try SeekCommand(Arguments())
        }
        #expect(throws: CommandError.badArgument("rate 4.0 is not supported: 0 pauses, 0.5 to 3 plays at that rate")) {
            try d.execute(RateCommand(rate: 4)).get()
        }
        guard case .success(.added(let ids, _)) = d.execute(AddCommand(paths: ["album/0.mp3"])) else { Issue.record("add failed"); return }
        // As mpd's list of deleteids: the known ids go, the error names the unknown ones and what went.
        #expect(d.execute(RemoveCommand(ids: [999])) == .failure(.noSuchItem("no item with id 999 in the queue; nothing removed")))
        #expect(d.playback.queue.entries.map(\.id) == ids)
        #expect(d.execute(RemoveCommand(ids: [ids[0], 999, 998])) == .failure(.noSuchItem(
            "no item with ids 999, 998 in the queue; removed 1 (id \(ids[0])), \(ids.count - 1) left")))
        #expect(d.playback.queue.entries.map(\.id) == Array(ids.dropFirst()))
        guard case .success(.added) = d.execute(AddCommand(paths: ["album/0.mp3"])) else { Issue.record("add failed"); return }
        // The remote command center (headset buttons, other processes) runs the same commands.
        let events = Events(d.playback)
        let r = d.playback.remote.dispatch(.init(command: .play))
        Self.hearStart(clock)
        #expect(r.status == .success && events.wait { $0 == .state(.playing) })
        d.playback.shutdown()
    }

    @Test("edits by position and relative targets are found when the command runs: a block move, priorities and a shuffle by position, an add after the current item, a clip fitted to its file; mpd's errors past the queue")
    func positionsFoundWhenRun() throws {
        let (d, _, clock) = try Self.make()
        defer { d.playback.shutdown() }
        guard case .success(.added(let ids, _)) = d.execute(AddCommand(paths: ["album"])) else { Issue.record("add failed"); return }
        let (a, b, c) = (ids[0], ids[1], ids[2])
        func order() -> [Int] { d.playback.queue.entries.map(\.id) }
        // A block of two to start at 1: the last moves first.
        #expect(d.execute(MoveCommand(positions: .range(start: 0, end: 2, clampsEnd: false), target: .at(1))) == .success(.index(1)))
        #expect(order() == [c, a, b])
        #expect(d.execute(MoveCommand(positions: .range(start: 0, end: 2, clampsEnd: false), target: .at(2))) == .failure(.badArgument("Number too large: 2")))
        #expect(d.execute(MoveCommand(positions: .one(3), target: .at(0))) == .failure(.badArgument("Bad song index")))
        // Nothing current: a relative target has nothing to count from.
        #expect(d.execute(MoveCommand(id: a, target: .afterCurrent(0))) == .failure(.badArgument("No current song")))
        #expect(d.execute(AddCommand(paths: ["album/0.mp3"], target: .beforeCurrent(0))) == .failure(.badArgument("No current song")))
        #expect(order() == [c, a, b])

        _ = d.execute(PlayCommand(item: a))
        Self.hearStart(clock)
        #expect(d.playback.queue.current?.id == a)
        // `+0`: right after the current item (at 1), wherever it is when the add runs.
        guard case .success(.added(let after, _)) = d.execute(AddCommand(paths: ["album/2.mp3"], target: .afterCurrent(0))) else {
            Issue.record("add after the current item failed")
            return
        }
        #expect(order() == [c, a, after[0], b])
        #expect(d.execute(MoveCommand(id: b, target: .beforeCurrent(0), withinQueue: true)) == .success(.index(1)))
        #expect(order() == [c, b, a, after[0]])
        // Just at and past the end of a queue of 4: appending is allowed, past it is refused.
        #expect(d.execute(AddCommand(paths: ["album/0.mp3"], target: .at(5), refusesPastEnd: true)) == .failure(.badArgument("Number too large: 5")))
        guard case .success(.added(let last, _)) = d.execute(AddCommand(paths: ["album/0.mp3"], target: .at(4), refusesPastEnd: true)) else {
            Issue.record("an add at the queue's end failed")
            return
        }
        #expect(order() == [c, b, a, after[0], last[0]])

        #expect(d.execute(PriorityCommand(priority: 7, positions: [.one(1), .range(start: 3, end: nil, clampsEnd: false)])) == .success(.none))
        #expect(d.playback.queue.entries.map(\.priority) == [0, 7, 0, 7, 7])
        #expect(d.execute(PriorityCommand(priority: 7, positions: [.one(5)])) == .failure(.badArgument("Bad song index")))
        // A shuffle from the end is nothing; past it, mpd's error.
        #expect(d.execute(ShuffleQueueCommand(range: 5..<Int.max, refusesStartPastEnd: true)) == .success(.none))
        #expect(d.execute(ShuffleQueueCommand(range: 6..<Int.max, refusesStartPastEnd: true)) == .failure(.badArgument("Bad song index")))
        #expect(order() == [c, b, a, after[0], last[0]])

        // The 2 s file: an end past it is its end, a start past it is refused; the current item is not clipped.
        #expect(d.execute(ClipCommand(id: c, clip: PlaybackClip(start: 2.5, end: nil), fitsFile: true)) == .failure(.badArgument("Invalid start offset")))
        #expect(d.execute(ClipCommand(id: c, clip: PlaybackClip(start: 0.5, end: 9), fitsFile: true)) == .success(.none))
        #expect(d.playback.queue.entries.first { $0.id == c }?.clip == PlaybackClip(start: 0.5, end: nil))
        #expect(d.execute(ClipCommand(id: c, clip: PlaybackClip(start: 0, end: 9), fitsFile: true)) == .success(.none))
        #expect(d.playback.queue.entries.first { $0.id == c }?.clip == nil)
        guard case .failure(.forbidden) = d.execute(ClipCommand(id: a, clip: PlaybackClip(start: 0.5, end: nil), fitsFile: true)) else {
            Issue.record("the item playing now was clipped")
            return
        }
    }

    @Test("permissions: a connection that needs a token may only auth until it presents the right one; subscribe records the kinds")
    func connection() throws {
        let (d, _, _) = try Self.make()
        final class Remote: ConnectionContext {
            let id: UInt64 = 7
            let needsToken = true
            let authed = Atomic<Bool>(false)
            let kinds = Lock<Set<String>??>(nil)
            var authenticated: Bool {
                get { authed.load(ordering: .relaxed) }
                set { authed.store(newValue, ordering: .relaxed) }
            }
            func subscribe(kinds k: Set<String>?) { kinds.withLock { $0 = .some(k) } }
            func unsubscribe() { kinds.withLock { $0 = nil } }
            let choice = PartitionChoice()
            var partition: String {
                get { choice.value }
                set { choice.value = newValue }
            }
        }
        let c = Remote()
        #expect(d.execute(StatusCommand(), from: c) == .failure(.unauthorized("authenticate first")))
        #expect(d.execute(PingCommand(), from: c) == .failure(.unauthorized("authenticate first")), "not even ping (the JSON protocol's rule)")
        #expect(d.execute(AuthCommand(token: "guess"), from: c) == .failure(.unauthorized("wrong token")))
        #expect(d.execute(AuthCommand(token: "secret"), from: c) == .success(.none) && c.authenticated)
        #expect(d.execute(SubscribeCommand(kinds: ["volume", "state"]), from: c) == .success(.subscribed(["state", "volume"])))
        #expect(c.kinds.withLock { $0 } == .some(["state", "volume"]))
        #expect(throws: CommandError.self) { _ = try SubscribeCommand(Arguments(["events": .strings(["bogus"])])) }
        d.playback.shutdown()
    }

    @Test("consume: an item heard to its end and one left with next leave the queue (oneshot: once, then off); priorities order shuffle; plchanges lists only positions that moved; a mute reports the output")
    func consumePriorityChanges() throws {
        let (d, _, clock) = try Self.make()
        let p = d.playback
        let q = p.queue
        let events = Events(p)
        guard case .success(.added(let ids, _)) = d.execute(AddCommand(paths: ["album"])) else { Issue.record("add failed"); return }

        // Positions that moved, by version (MPD's plchanges).
        let v1 = q.version
        #expect(q.changes(since: v1).isEmpty && q.changes(since: v1 - 1).map(\.index) == [0, 1, 2])
        #expect(d.execute(MoveCommand(id: ids[2], position: 1)) == .success(.index(1)))  // 0, 2, 1
        #expect(q.changes(since: v1).map(\.index) == [1, 2])
        let v2 = q.version
        guard case .success(.added(let extra, _)) = d.execute(AddCommand(paths: ["album/0.mp3"], position: 0)) else { Issue.record("add failed"); return }
        #expect(q.changes(since: v2).map(\.index) == [0, 1, 2, 3], "an insert at the front shifts everything")
        let v3 = q.version
        #expect(d.execute(RemoveCommand(ids: extra)) == .success(.count(3)))
        #expect(q.changes(since: v3).map(\.index) == [0, 1, 2])
        let v4 = q.version
        #expect(d.execute(PriorityCommand(priority: 9, ids: [ids[1]])) == .success(.none))
        #expect(q.changes(since: v4).map(\.entry.id) == [ids[1]] && q.entries[2].priority == 9)
        #expect(q.changes(since: q.version + 5).count == 3, "a version from before a restart lists everything")

        // Consume oneshot: the first item, heard to its end (the clock run through it), leaves;
        // then consume is off.
        #expect(d.execute(ConsumeCommand(mode: .oneshot)) == .success(.consume(.oneshot)))
        #expect(d.execute(PlayCommand(item: ids[0])) == .success(.state(.playing)))
        // 2 s, then the other 2 s item, then into the 60 s one.
        #expect(clock.hear(seconds: 4.1))
        #expect(eventually(timeout: 10) { q.entries.map(\.id) == [ids[2], ids[1]] && q.current?.id == ids[1] },
                "the 2 s item played through to the 60 s one: \(q.entries.map(\.id)), current \(String(describing: q.current?.id)) of \(ids)")
        #expect(events.wait { $0 == .modes(repeatMode: .off, shuffle: false, stopAfterCurrent: false, consume: .off) })
        #expect(q.entries.map(\.id) == [ids[2], ids[1]], "oneshot took one item only")
        // Consume on: next leaves the current item.
        #expect(d.execute(MoveCommand(id: ids[1], position: 0)) == .success(.index(0)))
        _ = d.execute(PlayCommand(item: ids[1]))
        #expect(d.execute(ConsumeCommand(mode: .on)) == .success(.consume(.on)))
        _ = d.execute(NextCommand())
        #expect(q.current?.id == ids[2] && q.entries.map(\.id) == [ids[2]], "\(q.entries.map(\.id))")
        guard case .success(.status(let s)) = d.execute(StatusCommand()) else { Issue.record("status failed"); return }
        #expect(s.consume == .on && s.count == 1)
        _ = d.execute(ConsumeCommand(mode: .off))

        // Consume with repeat all: each item leaves once heard, the queue empties (no bouncing
        // between the last two); a consumed item is never fed as the next one.
        _ = d.execute(ClearCommand())
        guard case .success(.added(let short, _)) = d.execute(AddCommand(paths: ["album/0.mp3", "album/2.mp3", "album/0.mp3"])) else {
            Issue.record("add failed")
            return
        }
        _ = d.execute(RepeatCommand(mode: .all))
        _ = d.execute(ConsumeCommand(mode: .on))
        _ = d.execute(PlayCommand(item: short[1]))
        _ = d.execute(PauseCommand())
        _ = d.execute(PlayCommand(item: short[0]))  // leaves short[1]: consumed
        #expect(q.status().next?.entry.id == short[2], "the consumed item is not next: \(String(describing: q.status().next?.entry.id))")
        _ = d.execute(PlayCommand(item: nil))
        #expect(clock.run { q.entries.isEmpty }, "\(q.entries.map(\.id))")
        _ = d.execute(RepeatCommand(mode: .off))
        _ = d.execute(ConsumeCommand(mode: .off))

        // Priorities in shuffle: higher first, then the rest.
        _ = d.execute(ClearCommand())
        for _ in 0..<3 { _ = d.execute(AddCommand(paths: ["album"])) }
        let all = q.entries.map(\.id)
        _ = d.execute(ShuffleCommand(on: true))
        _ = d.execute(PriorityCommand(priority: 200, ids: [all[4], all[7]]))
        _ = d.execute(PriorityCommand(priority: 100, ids: [all[2]]))
        let order = q.playOrder
        #expect(Set(order.prefix(2)) == [all[4], all[7]] && order[2] == all[2] && Set(order) == Set(all), "\(order)")
        #expect(throws: CommandError.badArgument("priority: 300 is not in 0–255")) {
            _ = try PriorityCommand(Arguments(["priority": .integer(300), "item": .integer(1)]))
        }

        // Mute: the mixer and the output changed; a volume change is the mixer's alone.
        _ = d.execute(MuteCommand(on: true))
        #expect(events.wait { $0 == .volume(VolumeState(volume: 1, muted: true), muteChanged: true) })
        #expect(ControlEvent.volume(VolumeState(volume: 1, muted: true), muteChanged: true).subsystems == [.mixer, .output])
        p.shutdown()
    }

    @Test("saved queues keep consume and priorities; a state file from before them still loads")
    func snapshotCoding() throws {
        let snap = PlayQueueSnapshot(entries: [PlayQueueEntry(id: 1, path: "/a.mp3", priority: 5), PlayQueueEntry(id: 2, path: "/b.mp3")],
                                     nextID: 3, consume: .oneshot)
        let data = try JSONEncoder().encode(snap)
        #expect(try JSONDecoder().decode(PlayQueueSnapshot.self, from: data) == snap)
        #expect(!String(decoding: data, as: UTF8.self).contains("\"priority\":0"), "priority 0 is not written")
        let old = #"{"entries":[{"id":1,"path":"/a.mp3"}],"nextID":2,"position":0,"state":"stopped","repeatMode":"off","shuffle":false,"shuffleOrder":[],"stopAfterCurrent":false,"history":[]}"#
        let loaded = try JSONDecoder().decode(PlayQueueSnapshot.self, from: Data(old.utf8))
        #expect(loaded.consume == .off && loaded.entries == [PlayQueueEntry(id: 1, path: "/a.mp3")])
    }

    @Test("the descriptor table is the one place commands are named: unique names, every argument typed, the wake exemptions")
    func table() {
        let names = CommandTable.all.map(\.name)
        #expect(Set(names).count == names.count)
        // (Reading the library, scanning it or rating a song wakes nothing: a phone browsing does not resume the daemon.)
        #expect(CommandTable.all.filter { !$0.wakes }.map(\.name).sorted()
                == ["auth", "channel-read", "channel-send", "channel-subscribe", "channel-unsubscribe", "channels", "count", "find", "help",
                    "list-partitions", "ls", "outputs", "partition", "ping", "search", "stats", "sticker", "subscribe", "unsubscribe", "update",
                    "version"])
        // Off the event loop: what touches the file system (paths, tags, stored playlists, the library), and
        // what starts or stops a partition's player. No descriptor runs on a thread of its own:
        // a request naming a playlist URL does (never the shared pool's threads), any other on the pool.
        #expect(CommandTable.all.filter { $0.executor == .network }.isEmpty)
        #expect(CommandTable.all.filter { $0.executor == .offLoop }.map(\.name)
                == ["add", "insert", "list"] + CommandTable.all.filter { $0.area == .playlists }.map(\.name)
                    + CommandTable.all.filter { $0.area == .library }.map(\.name) + ["new-partition", "delete-partition", "move-output"])
        let station = "http://radio.example/live.m3u?x=1"
        #expect(AddCommand(paths: ["album/a.mp3", "album", "list.m3u", "http://radio.example/live.mp3", "file:///m/x.m3u"]).executor == .offLoop)
        #expect(AddCommand(paths: ["album", station]).executor == .network)
        #expect(InsertCommand(paths: [station], position: 0).executor == .network)
        #expect(PlaylistAddCommand(name: "p", paths: ["a.mp3"]).executor == .offLoop)
        #expect(PlaylistAddCommand(name: "p", paths: [station]).executor == .network)
        #expect(LoadPlaylistCommand(name: "p").executor == .offLoop)
        #expect(CommandTable.descriptor("seek")?.arguments.map(\.type) == [.number, .number, .integer])
        // Every command's arguments round-trip: built from what it reports, it reports the same.
        let samples: [any ControlCommand] = [
            PlayCommand(item: 3), SeekCommand(target: .offset(-5)), SeekCommand(target: .position(2), item: 4), SkipCommand(seconds: 15), AddCommand(paths: ["a", "b"], position: 2),
            RemoveCommand(ids: [1, 2]), MoveCommand(id: 4, position: 0), VolumeCommand(change: .by(-5)), SleepCommand(action: .after(minutes: 10, fade: 5)),
            SessionCommand(category: .ambient, options: [.mixWithOthers]), RepeatCommand(mode: .one), LifecycleCommand(target: .background),
            ConsumeCommand(mode: .oneshot), ShuffleQueueCommand(range: 2..<5), ChannelSendCommand(channel: "c", message: "m"), PriorityCommand(priority: 7, ids: [3, 1]), BrowseCommand(path: "a", recursive: true, tags: false),
            UpdateCommand(path: "a/b", rescan: true), FindCommand(terms: ["(Artist == 'X')"], sort: "-Date", window: 2..<5),
            SearchCommand(terms: ["any", "x"]), FindAddCommand(terms: ["album", "A"], search: true, position: 3), CountCommand(terms: ["genre", "Jazz"], group: .date),
            LsCommand(path: "a", recursive: true), ListCommand(tag: .album, terms: ["artist", "X"], groups: [.albumArtist]),
        ]
        for c in samples {
            let again = try? c.descriptor.make(c.arguments)
            #expect(again?.arguments == c.arguments, "\(c.descriptor.name)")
        }
    }
}

extension DispatcherTests {
    @Test("crossfade 1: the status, the `current` event and the now-playing store move to the next item, counting from its first frame, when the fade is heard (1 s before the 60 s item's end: half the 2 s item after it), not before")
    func crossfadeMovesTheCurrentItemWhenHeard() throws {
        let (d, _, clock) = try Self.make()
        let events = Events(d.playback)
        guard case .success(.added(let ids, _)) = d.execute(AddCommand(paths: ["album"])) else { Issue.record("add failed"); return }
        #expect(d.execute(CrossfadeCommand(seconds: 1)) == .success(.crossfade(1)))
        #expect(d.execute(CrossfadeCommand(seconds: nil)) == .success(.crossfade(1)), "read back")
        #expect(events.wait { if case .modes = $0 { true } else { false } }, "an option changed")
        // The daemon's play queue feeds the next item when the current one is heard, long
        // before the decoder decides its join (the fade plus the 2 s it decodes ahead).
        #expect(d.execute(PlayCommand(item: ids[1])) == .success(.state(.playing)))
        #expect(clock.waitUntilHolding(1))
        #expect(clock.hear(seconds: 58.95, timeout: 30))
        usleep(100_000)
        guard case .success(.status(let before)) = d.execute(StatusCommand()) else { Issue.record("status failed"); return }
        #expect(before.current?.id == ids[1] && abs(before.elapsed - 58.95) < 0.001 && before.crossfade == 1, "\(String(describing: before.current?.id)) \(before.elapsed)")
        #expect(d.playback.nowPlayingSnapshot?.item == ids[1])
        #expect(clock.hear(seconds: 0.1))  // 59.05 s: 0.05 s into the fade
        #expect(events.wait { if case .current(let item) = $0 { item?.id == ids[2] } else { false } })
        guard case .success(.status(let after)) = d.execute(StatusCommand()) else { Issue.record("status failed"); return }
        #expect(after.current?.id == ids[2] && abs(after.elapsed - 0.05) < 0.001, "\(String(describing: after.current?.id)) \(after.elapsed)")
        #expect(eventually(timeout: 5) { d.playback.nowPlayingSnapshot?.item == ids[2] })
        let np = d.playback.nowPlayingSnapshot
        // (Stamped when the item changed, within the 0.05 s heard of it; extrapolated from there by the wall clock.)
        let stamped = np?.info.elapsedPlaybackTime
        #expect(stamped.map { $0 >= 0 && $0 <= 0.051 } == true && np?.info.playbackDuration.map { abs($0 - 2) < 0.01 } == true,
                "now playing: \(String(describing: stamped)) of \(String(describing: np?.info.playbackDuration))")
        d.playback.shutdown()
    }

    @Test("partitions: each its own queue and player on its own output (the device it paces is the one written to); events carry the partition; moveoutput rebuilds a partition on the new device with its queue, still playing; one left without an output cannot play; deleting a partition puts its connections back in the default one")
    func partitions() throws {
        let music = try Harness.makeTemporaryDirectory("backline-partitions").path
        let tone = try Fixtures.tone("control-partitions", seconds: 60, frequency: 550)
        try FileManager.default.copyItem(atPath: tone.path, toPath: music + "/long.mp3")
        let clocks = (0..<3).map { _ in PacedDevice.clock("partition-\(UUID().uuidString)") }
        let playback = try Playback(configuration: PlaybackConfiguration(
            device: clocks[0].device, musicDirectory: music, registryDirectory: try Harness.makeTemporaryDirectory().path))
        let d = CommandDispatcher(playback: playback, version: "test",
                                  outputs: [OutputDefinition(name: "kitchen", device: clocks[1].device),
                                            OutputDefinition(name: "bath", device: clocks[2].device)])
        let seen = Lock<[(String, ControlEvent)]>([])
        d.partitions.tap { name, e in seen.withLock { $0.append((name, e)) } }

        #expect(d.execute(NewPartitionCommand(name: "bad/name")) == .failure(.badArgument("partition names are 1 to 64 letters, digits, '-' and '_'")))
        guard case .success(.partitions(let list, _)) = d.execute(NewPartitionCommand(name: "kitchen")) else { Issue.record("newpartition"); return }
        #expect(list.map(\.name) == ["default", "kitchen"] && list[1].output == "kitchen")
        #expect(d.execute(NewPartitionCommand(name: "kitchen")) == .failure(.exists("partition \"kitchen\" exists already")))
        #expect(seen.withLock { $0.contains { $0.1 == .partitions } }, "told")

        let c = LocalConnection()
        #expect(d.execute(PartitionCommand(name: "nope"), from: c) == .failure(.notFound("no partition \"nope\"")))
        _ = d.execute(PartitionCommand(name: "kitchen"), from: c)
        #expect(c.partition == "kitchen")
        _ = d.execute(AddCommand(paths: ["long.mp3"]), from: c)
        #expect(d.execute(PlayCommand(item: nil), from: c) == .success(.state(.playing)))
        #expect(clocks[1].waitUntilHolding(1), "the kitchen's device is written to")
        let heard = clocks[1].advance(frames: 4800)
        #expect(heard > 0)
        #expect(!clocks[0].waitUntilHolding(1, timeout: 0.5), "the default partition's device is not")
        guard case .success(.status(let main)) = d.execute(StatusCommand()) else { Issue.record("status"); return }
        #expect(main.state == .stopped && main.count == 0, "the default partition's queue is its own")
        #expect(eventually(timeout: 5) { seen.withLock { $0.contains { $0.0 == "kitchen" && $0.1 == .state(.playing) } } },
                "the kitchen's events carry its name")
        #expect(!seen.withLock { $0.contains { $0.0 == "default" && $0.1 == .state(.playing) } })

        // The bath's output moves into the kitchen: rebuilt on it, the queue and playing kept.
        _ = d.execute(NewPartitionCommand(name: "bath"))
        #expect(d.execute(MoveOutputCommand(name: "nope"), from: c) == .failure(.notFound("no output \"nope\"")))
        #expect(d.execute(MoveOutputCommand(name: "bath")) == .failure(.forbidden(
            "the default partition plays through the daemon's device; move outputs between other partitions")))
        guard case .success(.outputs(let outputs)) = d.execute(MoveOutputCommand(name: "bath"), from: c) else { Issue.record("moveoutput"); return }
        #expect(outputs.map(\.partition) == ["default", nil, "kitchen"], "\(outputs)")
        #expect(clocks[2].waitUntilHolding(1), "the kitchen now plays through the bath's device")
        guard case .success(.status(let k)) = d.execute(StatusCommand(), from: c) else { Issue.record("status"); return }
        #expect(k.state == .playing && k.count == 1, "its queue kept")
        #expect(abs(k.elapsed - Double(heard) / 44100) < 0.03, "and its place: \(k.elapsed) s, \(heard) frames were heard")
        let bath = LocalConnection(partition: "bath")
        _ = d.execute(AddCommand(paths: ["long.mp3"]), from: bath)
        #expect(d.execute(PlayCommand(item: nil), from: bath)
                == .failure(.outputUnavailable("partition \"bath\" has no output: move one into it (move-output)")))

        #expect(d.execute(DeletePartitionCommand(name: "default")) == .failure(.forbidden("the default partition cannot be deleted")))
        _ = d.execute(DeletePartitionCommand(name: "kitchen"))
        guard case .success(.status(let back)) = d.execute(StatusCommand(), from: c) else { Issue.record("status"); return }
        #expect(back.count == 0 && c.partition == "default", "its connection is back in the default partition")
        d.partitions.closeAll()
        playback.shutdown()
    }
}
