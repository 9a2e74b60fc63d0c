/// The kind of value an argument takes, as every protocol checks it before a command is built.
public enum ArgumentKind: String, Sendable, CaseIterable {
    case string, number, integer, boolean, strings, integers

    /// How the documentation names it.
    public var word: String {
        switch self {
        case .string: "string"
        case .number: "number"
        case .integer: "integer"
        case .boolean: "boolean"
        case .strings: "strings"
        case .integers: "integers"
        }
    }
}

/// One argument a command takes: its name (the JSON member), kind, whether it is required,
/// and the values it allows. The codecs check these before a command is built, so a command
/// sees only arguments of the right kind and within these bounds.
public struct ArgumentSchema: Sendable, Equatable {
    public let name: String
    public let type: ArgumentKind
    /// The request fails without it (`bad-argument`). Arguments needed only in some
    /// combinations ("`paths` or `path`") are optional here; the command checks those.
    public let required: Bool
    /// The bounds of a `number`, `integer` or each of `integers` (inclusive).
    public let range: ClosedRange<Double>?
    /// The values a `string` (or each of `strings`) may take; nil: any.
    public let allowed: [String]?
    /// What it means, for the documentation and `help`.
    public let summary: String

    public init(_ name: String, _ type: ArgumentKind, _ summary: String = "", required: Bool = false,
                range: ClosedRange<Double>? = nil, allowed: [String]? = nil) {
        self.name = name
        self.type = type
        self.summary = summary
        self.required = required
        self.range = range
        self.allowed = allowed
    }

    /// Why `value` is not allowed, or nil when it is. `value` is already of ``type``.
    public func violation(number value: Double) -> String? {
        guard let range, !range.contains(value) else { return nil }
        if range.upperBound >= Double(Int32.max) { return "\"\(name)\" must be ≥ \(Self.text(range.lowerBound))" }
        return "\"\(name)\" is \(Self.text(range.lowerBound))…\(Self.text(range.upperBound)), not \(Self.text(value))"
    }

    /// Why `value` is not one of ``allowed``, or nil when it is.
    public func violation(string value: String) -> String? {
        guard let allowed, !allowed.contains(value) else { return nil }
        return "\"\(name)\" is \(Self.list(allowed)), not \"\(value)\""
    }

    /// `a`, `a or b`, `a, b or c`.
    static func list(_ words: [String]) -> String {
        words.count <= 1 ? words.joined() : words.dropLast().joined(separator: ", ") + " or " + words[words.count - 1]
    }

    static func text(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v)
    }
}

/// How `backline ctl` spells a command: its usage line, what it does for a person, and an
/// example argument list (which a test parses, so the parser and the help cannot drift).
public struct CtlSyntax: Sendable {
    public let usage: String
    public let summary: String
    public let example: [String]

    public init(_ usage: String, _ summary: String, example: [String] = []) {
        self.usage = usage
        self.summary = summary
        self.example = example
    }
}

/// A group of commands: a section of docs/PROTOCOL.md and of `backline ctl help`.
public struct CommandGroup: Sendable, Equatable, Hashable {
    /// Its key (the marker in docs/PROTOCOL.md).
    public let id: String
    /// Its heading in `backline ctl help`.
    public let title: String

    public static let transport = CommandGroup(id: "transport", title: "Playing")
    public static let queue = CommandGroup(id: "queue", title: "The queue (POS: a position, 1 is the first; ID: an item's id, [id N] in list)")
    public static let playlists = CommandGroup(id: "playlists", title: "Stored playlists")
    public static let browse = CommandGroup(id: "browse", title: "The music directory")
    public static let library = CommandGroup(id: "library", title: "The library (FILTER: TAG VALUE… pairs, or one MPD expression \"(Artist == 'X')\")")
    public static let info = CommandGroup(id: "info", title: "What plays")
    public static let sound = CommandGroup(id: "sound", title: "Sound, the session and the timers")
    public static let partitions = CommandGroup(id: "partitions", title: "Partitions (zones: each its own queue, player and output; --partition NAME runs any command in one)")
    public static let events = CommandGroup(id: "events", title: "Events")
    public static let channels = CommandGroup(id: "channels", title: "Client-to-client channels")
    public static let daemon = CommandGroup(id: "daemon", title: "The daemon")

    /// Every group, in the order `help` and docs/PROTOCOL.md list them.
    public static let all: [CommandGroup] = [.transport, .queue, .playlists, .browse, .library, .info, .sound, .partitions, .events, .channels, .daemon]
}

/// One command of the control protocol: everything about it but its behaviour. The JSON
/// protocol, the web remote, `backline ctl` and docs/PROTOCOL.md take its name, arguments and
/// text from here; the daemon's handler (Control's `CommandDescriptor`) adds what it does.
public struct CommandSchema: Sendable {
    /// Who may run a command.
    public enum Permission: String, Sendable {
        /// Before authentication too (`auth`, `ping`).
        case anyone
        /// An authenticated connection (every Unix-socket client is: it is the owner).
        case control
    }

    /// Its one name: kebab-case.
    public let name: String
    /// Older names still accepted (so no script breaks), never listed as commands.
    public let aliases: [String]
    public let group: CommandGroup
    public let permission: Permission
    /// What it does, in a sentence.
    public let summary: String
    public let arguments: [ArgumentSchema]
    /// How arguments combine, where the list alone does not say ("`position` or `offset`").
    public let note: String
    /// Its reply's fields (docs/PROTOCOL.md's column).
    public let reply: String
    /// How `backline ctl` spells it; nil: not a ctl command (ctl uses it internally, or a
    /// client only needs it on a connection of its own).
    public let ctl: CtlSyntax?
    /// The MPD protocol commands that run it (mpd's names; empty: MPD has none).
    public let mpd: [String]

    public init(_ name: String, _ group: CommandGroup, _ summary: String, aliases: [String] = [],
                arguments: [ArgumentSchema] = [], note: String = "", reply: String = "", permission: Permission = .control,
                ctl: CtlSyntax?, mpd: [String] = []) {
        self.name = name
        self.aliases = aliases
        self.group = group
        self.permission = permission
        self.summary = summary
        self.arguments = arguments
        self.note = note
        self.reply = reply
        self.ctl = ctl
        self.mpd = mpd
    }

    /// The argument named `name`, if it takes one.
    public func argument(_ name: String) -> ArgumentSchema? { arguments.first { $0.name == name } }
}

/// A command `backline ctl` has that the protocol does not (`send`, `watch`): help text only.
public struct CtlOnlyCommand: Sendable {
    public let name: String
    public let aliases: [String]
    public let group: CommandGroup
    public let syntax: CtlSyntax

    public init(_ name: String, _ group: CommandGroup, aliases: [String] = [], _ syntax: CtlSyntax) {
        self.name = name
        self.aliases = aliases
        self.group = group
        self.syntax = syntax
    }
}

/// One kind of event a subscribed connection receives.
public struct EventSchema: Sendable {
    /// Its name (the `event` member; what `subscribe` takes).
    public let kind: String
    /// Its fields (docs/PROTOCOL.md's column).
    public let fields: String
    /// Whether `backline ctl watch` shows it without being asked for it by name.
    public let watchedByDefault: Bool

    public init(_ kind: String, _ fields: String, watchedByDefault: Bool = true) {
        self.kind = kind
        self.fields = fields
        self.watchedByDefault = watchedByDefault
    }
}
