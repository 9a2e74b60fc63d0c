import BacklineSchema

/// Why a command failed: one typed error for every protocol, mapped once to each protocol's
/// codes (``code`` is the JSON protocol's).
public enum CommandError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No such command.
    case unknownCommand(String)
    /// An argument is missing, of the wrong type, out of range, or unknown.
    case badArgument(String)
    /// No queue item with that id.
    case noSuchItem(String)
    /// The command needs a current item.
    case notPlaying(String)
    /// `play` with nothing queued.
    case emptyQueue(String)
    /// The audio device that failed is still gone.
    case outputUnavailable(String)
    /// `add`: no such file or directory.
    case notFound(String)
    /// `add`: outside the music directory; or a connection not allowed to do this.
    case forbidden(String)
    /// `add`: a playlist that cannot be read, or not a regular file.
    case unsupported(String)
    /// The audio session refused.
    case sessionError(String)
    /// Authenticate first, or a wrong token.
    case unauthorized(String)
    /// Something of that name exists already (a stored playlist).
    case exists(String)
    /// Past one of the daemon's limits (``Limits``): the queue's length, a playlist's, the
    /// number of alarms. Nothing was changed.
    case tooLarge(String)
    /// Anything else that failed.
    case failed(String)

    /// The JSON protocol's error code.
    public var code: String {
        switch self {
        case .unknownCommand: "unknown-command"
        case .badArgument: "bad-argument"
        case .noSuchItem: "no-such-item"
        case .notPlaying: "not-playing"
        case .emptyQueue: "empty-queue"
        case .outputUnavailable: "output-unavailable"
        case .notFound: "not-found"
        case .forbidden: "forbidden"
        case .unsupported: "unsupported"
        case .sessionError: "session-error"
        case .unauthorized: "unauthorized"
        case .exists: "exists"
        case .tooLarge: "too-large"
        case .failed: "command-failed"
        }
    }

    /// The message for people.
    public var message: String {
        switch self {
        case .unknownCommand(let m), .badArgument(let m), .noSuchItem(let m), .notPlaying(let m), .emptyQueue(let m),
             .outputUnavailable(let m), .notFound(let m), .forbidden(let m), .unsupported(let m), .sessionError(let m),
             .unauthorized(let m), .exists(let m), .tooLarge(let m), .failed(let m):
            m
        }
    }

    public var description: String { "\(code): \(message)" }
}

/// An argument's type, as every protocol checks it before a command is built (the schema's).
public typealias ArgumentType = ArgumentKind

/// One argument a command takes (the schema's).
public typealias ArgumentSpec = ArgumentSchema

/// A typed argument value.
public enum ArgumentValue: Sendable, Equatable {
    case string(String), number(Double), integer(Int), boolean(Bool), strings([String]), integers([Int])
}

/// A command's arguments by name, already checked against its ``ArgumentSpec``s by the codec
/// that read them: commands read them typed, and build themselves from them.
public struct Arguments: Sendable, Equatable {
    public var values: [String: ArgumentValue]

    public init(_ values: [String: ArgumentValue] = [:]) { self.values = values }

    public func string(_ k: String) -> String? { if case .string(let v) = values[k] { v } else { nil } }
    public func bool(_ k: String) -> Bool? { if case .boolean(let v) = values[k] { v } else { nil } }
    public func strings(_ k: String) -> [String]? { if case .strings(let v) = values[k] { v } else { nil } }
    public func integer(_ k: String) -> Int? { if case .integer(let v) = values[k] { v } else { nil } }
    public func integers(_ k: String) -> [Int]? { if case .integers(let v) = values[k] { v } else { nil } }
    public func number(_ k: String) -> Double? {
        switch values[k] {
        case .number(let v): v
        case .integer(let v): Double(v)
        default: nil
        }
    }
}

/// The area a command belongs to (its handlers live in one file per area).
public enum CommandArea: String, Sendable {
    case transport, queue, playlists, library, mixer, options, session, sleep, partitions, info, connection
}

/// Who may run a command (the schema's).
public typealias CommandPermission = CommandSchema.Permission

/// Where a command runs.
public enum CommandExecutor: Sendable {
    /// On the connection's event loop: microseconds.
    case loop
    /// Off it, on the server's few shared threads: the file system, tags (`list`, `browse`, an
    /// `add` of files and directories).
    case offLoop
    /// Off it, on a thread of its own: the request names a playlist by URL, whose fetch may
    /// wait on a remote server (up to ``PathResolver/fetchSeconds``), so it never holds the
    /// shared threads that answer everyone's ``offLoop`` commands. Chosen per request
    /// (``expanding(_:)``), never by a descriptor.
    case network

    /// Where a request that expands `paths` runs (`add`, `insert`, `playlist-add`; MPD's `add`,
    /// `addid`, `playlistadd`): ``network`` when one of them is a playlist URL
    /// (``PathResolver/isPlaylistURL(_:)``: expanding it fetches it), else ``offLoop``, as every
    /// request that reads files does. A thread per request that only walks the music directory
    /// would let 32 walks at once bypass the shared threads' bound. A local playlist (a file or
    /// a stored one) that names playlist URLs fetches them on the shared threads: at most
    /// ``PathResolver/fetchSeconds`` in all for the request.
    public static func expanding(_ paths: [String]) -> CommandExecutor {
        paths.contains(where: PathResolver.isPlaylistURL) ? .network : .offLoop
    }
}

/// A command's schema entry (its name, arguments, permission and text: ``CommandSchema``)
/// with what the daemon adds: where it runs, whether it wakes a suspended daemon, and how the
/// typed command is built.
public struct CommandDescriptor: Sendable {
    /// Its name, arguments, permission and text.
    public let schema: CommandSchema
    public var name: String { schema.name }
    public var summary: String { schema.summary }
    public var arguments: [ArgumentSpec] { schema.arguments }
    public let area: CommandArea
    public var permission: CommandPermission { schema.permission }
    /// Where it runs, unless the request says otherwise (``ControlCommand/executor``).
    public let executor: CommandExecutor
    /// Whether it wakes a suspended daemon (as a remote command wakes a suspended app).
    public let wakes: Bool
    private let build: @Sendable (Arguments) throws(CommandError) -> any ControlCommand

    init<C: ControlCommand>(_ type: C.Type, _ schema: CommandSchema, _ area: CommandArea,
                            executor: CommandExecutor = .loop, wakes: Bool = true) {
        self.schema = schema
        self.area = area
        self.executor = executor
        self.wakes = wakes
        build = { (a: Arguments) throws(CommandError) -> any ControlCommand in try C(a) }
    }

    /// Builds the typed command from arguments of the right types, after the schema's checks:
    /// the required ones present, numbers within their ranges, strings among their values.
    public func make(_ arguments: Arguments) throws(CommandError) -> any ControlCommand {
        try check(arguments)
        return try build(arguments)
    }

    /// The schema's checks of `arguments` (each already of its argument's type).
    public func check(_ arguments: Arguments) throws(CommandError) {
        for spec in schema.arguments {
            guard let value = arguments.values[spec.name] else {
                if spec.required { throw .badArgument("\(name): \"\(spec.name)\" is required") }
                continue
            }
            let why: String?
            switch value {
            case .number(let n): why = spec.violation(number: n)
            case .integer(let n): why = spec.violation(number: Double(n))
            case .integers(let all): why = all.lazy.compactMap { spec.violation(number: Double($0)) }.first
            case .string(let s): why = spec.violation(string: s)
            case .strings(let all): why = all.lazy.compactMap { spec.violation(string: $0) }.first
            case .boolean: why = nil
            }
            if let why { throw .badArgument("\(name): \(why)") }
        }
    }

    /// The argument named `name`, if this command takes it.
    public func argument(_ name: String) -> ArgumentSpec? { schema.argument(name) }
}

/// A typed command: built from its arguments (by any protocol's codec, or directly), run
/// against the playback façade, answered with a typed ``Reply``.
public protocol ControlCommand: Sendable {
    /// Its entry in ``CommandTable``.
    static var descriptor: CommandDescriptor { get }
    /// Builds it from arguments the codec checked against the descriptor's types.
    init(_ arguments: Arguments) throws(CommandError)
    /// Its arguments (what a client sends: the inverse of `init`).
    var arguments: Arguments { get }
    /// Where this request runs: its descriptor's ``CommandDescriptor/executor``, unless what
    /// it names decides (``CommandExecutor/expanding(_:)``).
    var executor: CommandExecutor { get }
    /// Runs it.
    func run(_ context: CommandContext) throws(CommandError) -> Reply
}

extension ControlCommand {
    public var descriptor: CommandDescriptor { Self.descriptor }
    public var arguments: Arguments { Arguments() }
    public var executor: CommandExecutor { Self.descriptor.executor }
}

/// Every command, in the order `help` lists them.
public enum CommandTable {
    public static let all: [CommandDescriptor] = [
        PlayCommand.descriptor, PauseCommand.descriptor, ToggleCommand.descriptor, StopCommand.descriptor,
        NextCommand.descriptor, PreviousCommand.descriptor, SeekCommand.descriptor, SkipCommand.descriptor, ChapterCommand.descriptor,
        RepeatCommand.descriptor, ShuffleCommand.descriptor, SingleCommand.descriptor, ConsumeCommand.descriptor, ReplayGainCommand.descriptor, CrossfadeCommand.descriptor, RateCommand.descriptor, SpeedCommand.descriptor,
        AddCommand.descriptor, InsertCommand.descriptor, RemoveCommand.descriptor, MoveCommand.descriptor, PriorityCommand.descriptor, ClipCommand.descriptor,
        ClearCommand.descriptor, ShuffleQueueCommand.descriptor, ClearErrorCommand.descriptor, ListCommand.descriptor,
        SavePlaylistCommand.descriptor, LoadPlaylistCommand.descriptor, PlaylistsCommand.descriptor, PlaylistCommand.descriptor,
        PlaylistAddCommand.descriptor, PlaylistDeleteCommand.descriptor, PlaylistMoveCommand.descriptor,
        PlaylistClearCommand.descriptor, PlaylistRemoveCommand.descriptor, PlaylistRenameCommand.descriptor, BrowseCommand.descriptor,
        UpdateCommand.descriptor, FindCommand.descriptor, SearchCommand.descriptor, FindAddCommand.descriptor, CountCommand.descriptor,
        LsCommand.descriptor, StatsCommand.descriptor, StickerCommand.descriptor,
        StatusCommand.descriptor, NowPlayingCommand.descriptor, BookmarksCommand.descriptor,
        VolumeCommand.descriptor, MuteCommand.descriptor, SessionCommand.descriptor, LifecycleCommand.descriptor,
        SleepCommand.descriptor, AlarmCommand.descriptor,
        NewPartitionCommand.descriptor, PartitionCommand.descriptor, ListPartitionsCommand.descriptor, DeletePartitionCommand.descriptor,
        MoveOutputCommand.descriptor, OutputsCommand.descriptor, SubscribeCommand.descriptor, UnsubscribeCommand.descriptor,
        ChannelSubscribeCommand.descriptor, ChannelUnsubscribeCommand.descriptor, ChannelsCommand.descriptor, ChannelSendCommand.descriptor,
        ChannelReadCommand.descriptor, AuthCommand.descriptor,
        PingCommand.descriptor, VersionCommand.descriptor, HelpCommand.descriptor,
    ]

    private static let byName: [String: CommandDescriptor] = {
        var names: [String: CommandDescriptor] = [:]
        for d in all {
            names[d.name] = d
            for a in d.schema.aliases { names[a] = d }
        }
        return names
    }()

    /// The command named `name` or one of its older names (``CommandSchema/aliases``).
    public static func descriptor(_ name: String) -> CommandDescriptor? { byName[name] }
}
