import BacklineSchema
import Lifecycle
import NowPlaying
import PlayQueue
import Synchronization
import Locking

/// The connection a command came from, as the command layer needs it; each transport
/// implements it (the JSON socket's clients, an MPD client, an in-process test, the remote
/// command center).
public protocol ConnectionContext: AnyObject, Sendable {
    /// Unique per connection.
    var id: UInt64 { get }
    /// Whether it must authenticate before commands other than ``CommandPermission/anyone``.
    var needsToken: Bool { get }
    /// Whether it has authenticated.
    var authenticated: Bool { get set }
    /// Receives events of `kinds` (nil: all) from now on.
    func subscribe(kinds: Set<String>?)
    /// Receives no more events.
    func unsubscribe()
    /// The partition its commands run in (``Partitions``; `default` until it chooses one).
    var partition: String { get set }
}

/// A connection's partition, for ``ConnectionContext`` implementations to keep.
public final class PartitionChoice: Sendable {
    private let name: Lock<String>
    public init(_ name: String = Partitions.defaultName) { self.name = Lock(name) }
    public var value: String {
        get { name.withLock { $0 } }
        set { name.withLock { $0 = newValue } }
    }
}

/// A connection within the process (tests, the remote command center): trusted; it has no
/// event stream, so subscribing does nothing.
public final class LocalConnection: ConnectionContext {
    public let id: UInt64
    public var needsToken: Bool { false }
    public var authenticated: Bool {
        get { true }
        set {}
    }
    private let choice: PartitionChoice
    public var partition: String {
        get { choice.value }
        set { choice.value = newValue }
    }

    public init(id: UInt64 = 0, partition: String = Partitions.defaultName) {
        self.id = id
        choice = PartitionChoice(partition)
    }
    public func subscribe(kinds: Set<String>?) {}
    public func unsubscribe() {}
}

/// What a running command sees: the playback façade, its connection, the dispatcher.
public struct CommandContext: Sendable {
    public let playback: Playback
    public let connection: any ConnectionContext
    public let dispatcher: CommandDispatcher

    /// Runs `body` under the command lock (for the queue-changing part of an off-loop command).
    public func locked<T>(_ body: () throws(CommandError) -> T) throws(CommandError) -> T {
        try dispatcher.commandLock.withLock { _ throws(CommandError) in try body() }
    }
}

/// Runs typed commands: checks permission, wakes a suspended app, serialises them (each is
/// short) so every command sees the effects of those answered before it, and answers typed.
/// It also binds the remote command center to the same commands, so a headset button, another
/// process and a socket client take one route into playback.
public final class CommandDispatcher: Sendable {
    /// The client-to-client channels every protocol's clients share.
    public let messages = ClientMessages()
    /// The default partition's playback (the daemon's own device, the remote command center's).
    public let playback: Playback
    /// Every partition (``Partitions``): a connection's commands run in the one it chose.
    public let partitions: Partitions
    /// The daemon's version (for `version`).
    public let version: String
    /// Checks a token (`auth`); nil: tokens are not used.
    let checkToken: (@Sendable (String) -> Bool)?
    let commandLock = Lock(())
    private let local = LocalConnection()

    public init(playback: Playback, version: String, outputs: [OutputDefinition] = [], checkToken: (@Sendable (String) -> Bool)? = nil) {
        self.playback = playback
        partitions = Partitions(base: playback, outputs: outputs)
        self.version = version
        self.checkToken = checkToken
        bindRemoteCommands()
        // An alarm plays through the same commands (and so wakes a suspended daemon).
        playback.onAlarm { [weak self] alarm in
            guard let self else { return }
            if let name = alarm.playlist, playback.playlists?.all().contains(where: { $0.name == name }) == true {
                // (a playlist gone since the alarm was set leaves the queue as it is: what is there plays)
                _ = execute(ClearCommand())
                _ = execute(LoadPlaylistCommand(name: name, range: nil, position: nil))
                _ = execute(PlayCommand(item: nil))
            } else {
                _ = execute(PlayCommand(item: alarm.item))
            }
        }
    }

    /// Runs `command` for `connection`.
    public func execute(_ command: any ControlCommand, from connection: any ConnectionContext) -> Result<Reply, CommandError> {
        let d = command.descriptor
        if d.permission != .anyone, connection.needsToken, !connection.authenticated {
            return .failure(.unauthorized("authenticate first"))
        }
        if d.wakes, playback.application.applicationState == .suspended {
            playback.application.resume(reason: "command \(d.name)")
        }
        let context = CommandContext(playback: playback(for: connection), connection: connection, dispatcher: self)
        do throws(CommandError) {
            if command.executor != .loop { return .success(try command.run(context)) }
            return .success(try commandLock.withLock { _ throws(CommandError) in try command.run(context) })
        } catch {
            return .failure(error)
        }
    }

    /// Runs `command` as the process itself (tests, remote commands).
    public func execute(_ command: any ControlCommand) -> Result<Reply, CommandError> {
        execute(command, from: local)
    }

    /// Runs `command` as the process itself, in partition `partition`.
    public func execute(_ command: any ControlCommand, in partition: String) -> Result<Reply, CommandError> {
        partition == Partitions.defaultName ? execute(command, from: local) : execute(command, from: LocalConnection(partition: partition))
    }

    /// The playback of the partition `connection` is in; a partition deleted meanwhile puts it
    /// back in the default one.
    public func playback(for connection: any ConnectionContext) -> Playback {
        let name = connection.partition
        if name == Partitions.defaultName { return playback }
        if let p = partitions.playback(named: name) { return p }
        connection.partition = Partitions.defaultName
        return playback
    }

    // MARK: - The remote command center: the same commands

    private func bindRemoteCommands() {
        let remote = playback.remote
        remote.skipForwardCommand.preferredIntervals = [playback.skipIntervals.forward]
        remote.skipBackwardCommand.preferredIntervals = [playback.skipIntervals.backward]
        remote.changePlaybackRateCommand.supportedPlaybackRates = NowPlayingBinding.playbackRates
        remote.seekForwardCommand.isEnabled = false
        remote.seekBackwardCommand.isEnabled = false
        remote.likeCommand.isEnabled = false
        remote.dislikeCommand.isEnabled = false
        remote.bookmarkCommand.isEnabled = false
        func on(_ c: RemoteCommand, _ make: @escaping @Sendable (RemoteCommandEvent) -> (any ControlCommand)?) {
            _ = c.addTarget { [weak self] e in
                guard let self, let command = make(e) else { return .commandFailed }
                switch execute(command) {
                case .success: return .success
                case .failure(let error): return Self.status(error)
                }
            }
        }
        on(remote.playCommand) { _ in PlayCommand(item: nil) }
        on(remote.pauseCommand) { _ in PauseCommand() }
        on(remote.togglePlayPauseCommand) { _ in ToggleCommand() }
        on(remote.stopCommand) { _ in StopCommand() }
        on(remote.nextTrackCommand) { _ in NextCommand() }
        on(remote.previousTrackCommand) { _ in PreviousCommand() }
        on(remote.changePlaybackPositionCommand) { e in
            if case .position(let t) = e.payload { SeekCommand(target: .position(t)) } else { nil }
        }
        on(remote.skipForwardCommand) { e in
            if case .skip(let i) = e.payload { SkipCommand(seconds: i) } else { nil }
        }
        on(remote.skipBackwardCommand) { e in
            if case .skip(let i) = e.payload { SkipCommand(seconds: -i) } else { nil }
        }
        on(remote.changeRepeatModeCommand) { e in
            guard case .repeatMode(let r, _) = e.payload else { return nil }
            return RepeatCommand(mode: r == .one ? .one : r == .all ? .all : .off)
        }
        on(remote.changeShuffleModeCommand) { e in
            if case .shuffleMode(let s, _) = e.payload { ShuffleCommand(on: s != .off) } else { nil }
        }
        on(remote.changePlaybackRateCommand) { e in
            if case .rate(let r) = e.payload { RateCommand(rate: Double(r)) } else { nil }
        }
    }

    /// A command's failure as the remote command center reports it.
    static func status(_ e: CommandError) -> RemoteCommandHandlerStatus {
        switch e {
        case .emptyQueue, .notPlaying: .noActionableNowPlayingItem
        case .noSuchItem: .noSuchContent
        case .outputUnavailable: .deviceNotFound
        default: .commandFailed
        }
    }
}

extension CommandError {
    /// A play-queue error as a command error.
    init(_ e: PlayQueueError) {
        switch e.code {
        case .noSuchItem: self = .noSuchItem(e.message)
        case .emptyQueue: self = .emptyQueue(e.message)
        case .notPlaying: self = .notPlaying(e.message)
        case .outputUnavailable: self = .outputUnavailable(e.message)
        case .currentItem: self = .forbidden(e.message)
        }
    }
}
