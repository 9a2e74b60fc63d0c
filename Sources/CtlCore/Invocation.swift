import BacklineWire

#if canImport(Glibc)
import Glibc
#endif

/// The version `backline --version`, `backline daemon` and `ctl version` report: the newest
/// release in CHANGELOG.md, whose git tag has this name (a test holds the two equal).
public let backlineVersion = "0.2.0"

/// `backline ctl [--socket PATH] [--partition NAME] [--json] [--format F] COMMAND [ARGUMENTS…]`, as given.
public struct CtlInvocation: Sendable {
    public var socket: String?
    /// The partition the command runs in (nil: the default one).
    public var partition: String?
    public var json: Bool
    public var format: String?
    public var command: String
    public var arguments: [String]

    public init(socket: String?, partition: String? = nil, json: Bool, format: String?, command: String, arguments: [String]) {
        (self.socket, self.json, self.format, self.command, self.arguments) = (socket, json, format, command, arguments)
        self.partition = partition
    }

    /// The words after `ctl` when they are in the plain form every use takes (options before
    /// the command: `--json`, `--socket PATH`, `--socket=PATH`, `--partition NAME`, `--format F`, `--format=F`, each
    /// at most once, values not starting with `-`; then a command not starting with `-`).
    /// Nil for anything else (`-h`, an unknown option, a missing value…): the full parser's
    /// answer is the one given there (the front end hands such a line to `backline-player`).
    public static func plain(_ words: [String]) -> CtlInvocation? {
        var socket: String?, format: String?, partition: String?, json = false
        var i = 0
        func value(_ v: String) -> String? { v.isEmpty || v.hasPrefix("-") ? nil : v }
        while i < words.count {
            let w = words[i]
            if !w.hasPrefix("-") {
                return CtlInvocation(socket: socket, partition: partition, json: json, format: format, command: w,
                                     arguments: Array(words[(i + 1)...]))
            }
            if w == "--json" {
                guard !json else { return nil }
                json = true
                i += 1
                continue
            }
            var name = w
            var given: String?
            if let eq = w.firstIndex(of: "=") {
                name = String(w[..<eq])
                given = String(w[w.index(after: eq)...])
            } else {
                guard i + 1 < words.count else { return nil }
                given = words[i + 1]
                i += 1
            }
            guard let v = given.flatMap(value) else { return nil }
            switch name {
            case "--socket" where socket == nil: socket = v
            case "--format" where format == nil: format = v
            case "--partition" where partition == nil: partition = v
            default: return nil
            }
            i += 1
        }
        return nil
    }

    /// Options given after the command (`ctl status --json`) arrive among its arguments: taken
    /// out (the first of each); `queue` is `list`.
    public mutating func takeTrailingOptions() {
        if let i = arguments.firstIndex(of: "--json") {
            arguments.remove(at: i)
            json = true
        }
        for name in ["--socket", "--format", "--partition"] {
            guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { continue }
            let value = arguments[i + 1]
            arguments.removeSubrange(i...(i + 1))
            switch name {
            case "--socket": socket = value
            case "--format": format = value
            default: partition = value
            }
        }
        if command == "queue" { command = "list" }
    }
}

/// How a ctl run ends: the process's exit status.
public struct CtlExit: Error, Sendable {
    public let code: Int32
    public init(_ code: Int32) { self.code = code }
}

/// A usage error: printed with the command's usage, exit 1.
public struct CtlUsage: Error, Sendable {
    public var command: String
    public var message: String
    public init(_ command: String, _ message: String) { (self.command, self.message) = (command, message) }
}

/// What the arguments ask the daemon for.
public enum CtlRequest: Sendable {
    /// A command and its arguments (the JSON members after `"command"`).
    case command(name: String, members: [(String, JSON)])
    /// Nothing typed: `watch` and `send` (a raw line).
    case untyped
}

/// Why no request was built.
public enum CtlBuildFailure: Error, Sendable {
    case usage(CtlUsage)
    case unknownCommand
    /// A command this builder does not build (the small front end's: `backline-player` does).
    case elsewhere
}

/// Writes straight to the descriptors (no buffering: `watch` lines appear as they come).
public enum CtlOutput {
    public static func line(_ s: String) { emit(STDOUT_FILENO, s + "\n") }
    public static func error(_ s: String) { emit(STDERR_FILENO, s + "\n") }

    private static func emit(_ fd: Int32, _ s: String) {
        var s = s
        _ = s.withUTF8 { buf in write(fd, buf.baseAddress, buf.count) }
    }
}

/// Seconds from `SECONDS`, `M:SS` or `H:MM:SS` (fractions allowed; minutes and seconds after
/// the first field below 60); nil when it is none of them. `play --start` and `ctl seek` read times so.
public func parseTime(_ s: String) -> Double? {
    let parts = s.split(separator: ":", omittingEmptySubsequences: false)
    guard (1...3).contains(parts.count) else { return nil }
    var total = 0.0
    for (k, p) in parts.enumerated() {
        guard let v = Double(p), v.isFinite, v >= 0, k == 0 || v < 60 else { return nil }
        total = total * 60 + v
    }
    return total
}
