import AudioEngine
import Broadcast
import Dispatch
import PlayQueue
import Player
import Synchronization
import Locking

/// A named output a partition can play through (`output NAME DEVICE` in the daemon's
/// configuration): a local device, or a pipe a snapserver stream reads.
public struct OutputDefinition: Sendable, Equatable {
    public var name: String
    /// The device, as `--device` takes it (`pipe:/run/snapfifo-kitchen`, `pulse:kitchen`, an ALSA name).
    public var device: String
    public init(name: String, device: String) {
        self.name = name
        self.device = device
    }
}

/// A partition as `listpartitions` and `outputs` show it.
public struct PartitionInfo: Sendable, Equatable {
    public var name: String
    /// The output it plays through (nil: none yet; the default partition's is the daemon's device).
    public var output: String?
    public var device: String?
    public var state: PlaybackState
    public var count: Int
}

/// An output as `outputs` shows it.
public struct OutputInfo: Sendable, Equatable {
    public var id: Int
    public var name: String
    public var device: String
    /// The partition it plays in (nil: none).
    public var partition: String?
    /// Whether the partition it plays in is muted (MPD shows such an output disabled); set
    /// by `outputs` for the asking connection's partition.
    public var muted = false
    /// The name MPD gives its kind of device (`alsa`, `pulse`, `fifo`): the output registry's.
    public var plugin: String { OutputRegistry.kind(for: device).plugin }
}

/// Zones, as mpd's partitions: several play queues in one daemon, each with its own player
/// state and output, sharing the audio session, the app, the tag cache, the stored playlists
/// and the library.
///
/// The default partition is the daemon's own ``Playback`` and plays through the daemon's
/// device (output 0). Every other partition is made by `newpartition`; the configured outputs
/// move between them (`moveoutput`), one output per partition (the engine has one device). A
/// partition whose output changes is rebuilt on the new device with its queue, position and
/// state (a device is fixed for an engine's life).
public final class Partitions: Sendable {
    /// The default partition's name (mpd's).
    public static let defaultName = "default"
    /// The most partitions (each is a player: three threads and a locked ring).
    public static let limit = 16

    /// The default partition.
    public let base: Playback
    /// The outputs partitions can take (not the default partition's device).
    public let outputs: [OutputDefinition]

    private struct Entry {
        var playback: Playback
        var output: String?
    }

    private struct State {
        /// Every partition but the default, in creation order.
        var names: [String] = []
        var entries: [String: Entry] = [:]
    }

    private let state = Lock(State())
    private let taps = Lock<[@Sendable (String, ControlEvent) -> Void]>([])
    private let broadcaster = Broadcaster<(String, ControlEvent)>(buffering: 4096)
    /// Partition events are taken from each partition's playback in order here.
    private let work = DispatchQueue(label: "backline.partitions")

    public init(base: Playback, outputs: [OutputDefinition]) {
        self.base = base
        self.outputs = outputs
        base.tap { [weak self] e in self?.forward(Self.defaultName, e) }
    }

    // MARK: - Events

    /// Calls `tap` with every partition's events (its name, the event), synchronously where posted.
    public func tap(_ tap: @escaping @Sendable (String, ControlEvent) -> Void) {
        taps.withLock { $0.append(tap) }
    }

    /// Calls `handler` on `queue` for every partition's events, in order.
    @discardableResult
    public func addObserver(queue: DispatchQueue, _ handler: @escaping @Sendable ((String, ControlEvent)) -> Void) -> UInt64 {
        broadcaster.addObserver(queue: queue, handler)
    }

    public func removeObserver(_ token: UInt64) { broadcaster.removeObserver(token) }

    private func forward(_ name: String, _ e: ControlEvent) {
        for t in taps.withLock({ $0 }) { t(name, e) }
        broadcaster.post((name, e))
    }

    /// Tells everyone the partitions or their outputs changed.
    private func changed() { base.post(.partitions) }

    // MARK: - Lookup

    /// The partition named `name` (nil: there is none).
    public func playback(named name: String) -> Playback? {
        name == Self.defaultName ? base : state.withLock { $0.entries[name]?.playback }
    }

    /// Every partition's name, the default first.
    public var names: [String] { [Self.defaultName] + state.withLock { $0.names } }

    /// Every partition but the default, with its playback and output.
    public var others: [(name: String, playback: Playback, output: String?)] {
        state.withLock { s in s.names.compactMap { n in s.entries[n].map { (n, $0.playback, $0.output) } } }
    }

    /// The partitions as `listpartitions` shows them.
    public var list: [PartitionInfo] {
        let d = base.configuration.device
        return [PartitionInfo(name: Self.defaultName, output: d, device: d, state: base.queue.playbackState, count: base.queue.entries.count)]
            + others.map { o in
                PartitionInfo(name: o.name, output: o.output, device: o.output.flatMap(device(of:)),
                              state: o.playback.queue.playbackState, count: o.playback.queue.entries.count)
            }
    }

    /// The outputs: the daemon's device (0, the default partition's), then the configured ones.
    public var outputList: [OutputInfo] {
        let owners = state.withLock { s in Dictionary(s.entries.compactMap { k, v in v.output.map { ($0, k) } }, uniquingKeysWith: { a, _ in a }) }
        let d = base.configuration.device
        return [OutputInfo(id: 0, name: d, device: d, partition: Self.defaultName)]
            + outputs.enumerated().map { i, o in OutputInfo(id: i + 1, name: o.name, device: o.device, partition: owners[o.name]) }
    }

    private func device(of output: String) -> String? { outputs.first { $0.name == output }?.device }

    // MARK: - Changes

    /// Whether `name` can name a partition: 1–64 letters, digits, `-` and `_`.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && name.utf8.allSatisfy { c in
            (48...57).contains(c) || (65...90).contains(c) || (97...122).contains(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")
        }
    }

    /// Makes partition `name` with an empty queue (or `snapshot`'s); it takes the configured
    /// output `requested`, else (with `namedOutput`) the one of the same name, when no partition
    /// holds it (a snapserver stream per partition, named after it).
    /// - Throws: ``CommandError/badArgument(_:)`` for a bad name, ``CommandError/exists(_:)``,
    ///   ``CommandError/tooLarge(_:)`` past ``limit``.
    @discardableResult
    public func create(_ name: String, output requested: String? = nil, namedOutput: Bool = true, restoring snapshot: PlayQueueSnapshot? = nil,
                       volume: Float? = nil, muted: Bool = false, play: Bool = false) throws(CommandError) -> Playback {
        guard Self.isValidName(name) else { throw .badArgument("partition names are 1 to 64 letters, digits, '-' and '_'") }
        let taken = state.withLock { s -> Set<String> in Set(s.entries.values.compactMap(\.output)) }
        guard playback(named: name) == nil else { throw .exists("partition \"\(name)\" exists already") }
        guard names.count < Self.limit else { throw .tooLarge("at most \(Self.limit) partitions") }
        let wanted = requested ?? (namedOutput ? name : nil)
        let output = wanted.flatMap { w in outputs.contains(where: { $0.name == w }) && !taken.contains(w) ? w : nil }
        let p = try make(name, output: output)
        if let volume { p.player.volume = volume }
        p.player.isMuted = muted
        if let snapshot { p.queue.restore(snapshot, play: play && output != nil) }
        let inserted = state.withLock { s -> Bool in
            guard s.entries[name] == nil else { return false }
            s.names.append(name)
            s.entries[name] = Entry(playback: p, output: output)
            return true
        }
        guard inserted else {
            p.close()
            throw .exists("partition \"\(name)\" exists already")
        }
        changed()
        return p
    }

    /// A partition's playback on `output`'s device (none: it cannot play until an output moves in).
    private func make(_ name: String, output: String?) throws(CommandError) -> Playback {
        var c = base.configuration
        c.device = output.flatMap(device(of:)) ?? ""
        let p = try Playback(configuration: c, sharing: base, partition: name)
        // ReplayGain and crossfade as the default partition's when made (they are its own after).
        (p.replayGain, p.crossfade) = (base.replayGain, base.crossfade)
        p.tap { [weak self] e in self?.forward(name, e) }
        return p
    }

    /// Deletes partition `name`: it stops, its output is free again, and its connections are in
    /// the default partition from their next command.
    public func delete(_ name: String) throws(CommandError) {
        guard name != Self.defaultName else { throw .forbidden("the default partition cannot be deleted") }
        guard let e = state.withLock({ s -> Entry? in
            s.names.removeAll { $0 == name }
            return s.entries.removeValue(forKey: name)
        }) else { throw .notFound("no partition \"\(name)\"") }
        e.playback.close()
        changed()
    }

    /// Moves output `output` into partition `name` (not the default: its device is the daemon's).
    /// The partition that had it is left without one (and stops); the partition's own former
    /// output is free. Both are rebuilt on their new device, keeping queue, position and whether
    /// they played (the one left without an output pauses).
    public func move(output: String, into name: String) throws(CommandError) {
        guard outputs.contains(where: { $0.name == output }) else {
            if output == base.configuration.device { throw .forbidden("output \"\(output)\" is the default partition's own device") }
            throw .notFound("no output \"\(output)\"")
        }
        guard name != Self.defaultName else {
            throw .forbidden("the default partition plays through the daemon's device; move outputs between other partitions")
        }
        let (target, from) = state.withLock { s in
            (s.entries[name], s.entries.first { $0.value.output == output }?.key)
        }
        guard let target else { throw .notFound("no partition \"\(name)\"") }
        guard target.output != output else { return }
        if let from { try rebuild(from, output: nil) }
        try rebuild(name, output: output)
        changed()
    }

    /// Replaces partition `name`'s playback by one on `output`, carrying its queue, position,
    /// volume and play state over.
    private func rebuild(_ name: String, output: String?) throws(CommandError) {
        guard let old = state.withLock({ $0.entries[name] }) else { return }
        let snapshot = old.playback.queue.snapshot()
        let playing = old.playback.queue.playbackState == .playing
        let (volume, muted) = (old.playback.player.volume, old.playback.player.isMuted)
        old.playback.close()
        let p = try make(name, output: output)
        p.player.volume = volume
        p.player.isMuted = muted
        p.queue.restore(snapshot, play: playing && output != nil)
        state.withLock { $0.entries[name] = Entry(playback: p, output: output) }
        // Its clients see the queue and player as they now stand.
        p.post(.queue(version: p.queue.version, count: p.queue.entries.count))
        p.post(.state(p.queue.playbackState))
    }

    /// Stops every partition but the default (the daemon is stopping).
    public func closeAll() {
        for o in others { o.playback.close() }
    }
}
