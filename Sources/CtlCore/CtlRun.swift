import BacklineSchema
import BacklineWire

#if canImport(Glibc)
import Glibc
#endif

/// `backline ctl COMMAND [ARGS]`: one protocol command, from the shell. Both executables run
/// this: the small `backline` for the commands ``CtlCommands/simple(_:_:)`` builds, and
/// `backline-player` for all of them (its builder checks the rest with the daemon's own
/// command types).
///
/// What a person sees counts queue positions from 1 (as mpc does: `list`, `insert`, `add
/// --at`, `move`'s target) and names items by their stable ids where a command means one item
/// whatever its place (`play ID`, `remove ID…`, `move ID POS`); `list` shows both.
public enum CtlRun {
    /// Builds the request for a command and its arguments (positions a person gives count from 1;
    /// the protocol's indexes from 0).
    public typealias Builder = (_ command: String, _ arguments: [String]) throws(CtlBuildFailure) -> CtlRequest

    /// Runs `ctl` (options after the command already taken out). Throws ``CtlExit`` for a
    /// status other than 0, and ``CtlBuildFailure/elsewhere`` (before anything is printed, sent
    /// or connected) when `build` does not build this command.
    public static func perform(_ ctl: CtlInvocation, build: Builder) throws {
        let command = CtlHelp.canonical(ctl.command), arguments = ctl.arguments
        signal(SIGPIPE, SIG_IGN)  // a daemon that goes away is an error to report, not a signal to die of
        if command == "help" {  // ctl's own syntax: no daemon needed
            guard let topic = arguments.first else { return print(CtlHelp.all(), terminator: "") }
            guard let text = CtlHelp.detail(topic) else {
                throw usageFailure(CtlUsage("help", "no command \"\(topic)\" (backline ctl help lists them)"))
            }
            return print(text, terminator: "")
        }
        if ctl.format != nil && command != "status" { throw usageFailure(CtlUsage(command, "--format goes with status")) }
        // Arguments are checked before anything is sent.
        let built: CtlRequest
        do {
            built = try build(command, arguments)
        } catch {
            switch error {
            case .usage(let u): throw usageFailure(u)
            case .unknownCommand:
                CtlOutput.error("backline ctl: unknown command \"\(command)\" (backline ctl help lists them)")
                throw CtlExit(1)
            case .elsewhere: throw error
            }
        }
        let path = ctl.socket ?? SocketDirectory.defaultSocketPath
        let client: ControlClient
        do {
            client = try ControlClient(verifiedSocketPath: path)
        } catch {
            CtlOutput.error("backline ctl: \(error)")
            throw CtlExit(3)
        }
        if let partition = ctl.partition {
            // This connection's commands and events are the partition's.
            let r = try? client.request("partition", [("name", .string(partition))])
            guard r?["ok"]?.bool == true else {
                CtlOutput.error("backline ctl: \(r?["error"]?["message"]?.string ?? "cannot use partition \(partition)")")
                throw CtlExit(1)
            }
        }
        if command == "watch" { return try watch(client, ctl) }
        var name = "send"
        var sent: JSON?
        var reply: JSON
        do {
            if case .command(let n, var members) = built {
                name = n
                if name == "add", arguments == ["-"] {
                    // `ctl search … | ctl add -`: paths one a line, relative to the music directory.
                    let lines = String(decoding: standardInput(), as: UTF8.self).split(whereSeparator: \.isNewline).map(String.init)
                    guard !lines.isEmpty else { throw usageFailure(CtlUsage("add", "nothing on standard input")) }
                    members = members.map { $0.0 == "paths" ? ("paths", .array(lines.map(JSON.string))) : $0 }
                } else if name == "add" || name == "insert" || name == "playlist-add" {
                    let music = try client.request("status")["musicDirectory"]?.string
                    members = relativeToWorkingDirectory(members, musicDirectory: music)
                }
                if name == "play" || name == "toggle" {
                    _ = try client.request("subscribe", [("events", .array([.string("failed")]))])
                }
                sent = .object(members)
                if name == "update", waitsForUpdate(ctl) {
                    _ = try client.request("subscribe", [("events", .array([.string("update")]))])
                }
                reply = try client.request(name, members)
            } else {
                guard let raw = arguments.first else { throw usageFailure(CtlUsage("send", "give a JSON object")) }
                try client.sendRaw(Array((raw + "\n").utf8))
                reply = try client.nextReply()
            }
        } catch let e as CtlExit {
            throw e
        } catch {
            CtlOutput.error("backline ctl: \(error)")
            throw CtlExit(1)
        }
        guard reply["ok"]?.bool == true else {
            if ctl.json { print(reply.text) }
            let message = CtlText.printable(reply["error"]?["message"]?.string ?? "the daemon refused")
            let code = reply["error"]?["code"]?.string ?? "error"
            var text = "backline ctl: \(message) (\(code))"
            if code == "bad-argument", let c = CtlHelp.entry(command) { text += "\n" + CtlHelp.usage(c) }
            CtlOutput.error(text)
            throw CtlExit(1)
        }
        // `play` answers at once; whether anything is heard (or the item fails) shows moments later.
        var nothingPlays = false
        if (name == "play" || name == "toggle") && reply["state"]?.string == "playing" {
            let outcome = try confirmPlaying(client)
            for f in outcome.failures where !outcome.stopped {
                CtlOutput.error("backline ctl: skipped \(f)")
            }
            if outcome.stopped {
                reply = .object([("id", reply["id"] ?? .null), ("ok", true), ("state", "stopped")])
                nothingPlays = true
                let why = outcome.failures.isEmpty ? "" : ": " + outcome.failures.joined(separator: "; ")
                CtlOutput.error("backline ctl: nothing plays\(why)")
            }
        }
        if name == "update", reply["ok"]?.bool == true, waitsForUpdate(ctl), let job = reply["job"]?.int {
            return try followUpdate(client, job: job, ctl)
        }
        if ctl.json {
            print(reply.text)
        } else if name == "find" || name == "search", isatty(STDOUT_FILENO) == 0 {
            // Piped: one path a line, for `ctl add -` (or any tool).
            for s in reply["songs"]?.array ?? [] { print(s["path"]?.string ?? "") }
        } else if let format = ctl.format {
            print(CtlText.formatted(format, reply))
        } else {
            print(CtlText.human(name, reply, sent: sent, verbose: name == "status" && ctl.arguments == ["--verbose"]),
                  terminator: "")
        }
        if nothingPlays { throw CtlExit(1) }
    }

    /// Everything on standard input.
    static func standardInput() -> [UInt8] {
        var all: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return all }
            all += chunk[..<n]
        }
    }

    /// Whether `ctl update` waits for its scan: with `--wait`, or on a terminal (with a bar).
    static func waitsForUpdate(_ ctl: CtlInvocation) -> Bool {
        ctl.arguments.contains("--wait") || (!ctl.json && isatty(STDOUT_FILENO) != 0)
    }

    /// Follows scan `job` to its end: on a terminal a bar redrawn in place (files scanned of
    /// those the last scan saw), then what changed; `--json`: its events as sent. Exit 1 when
    /// the scan failed.
    private static func followUpdate(_ client: ControlClient, job: Int, _ ctl: CtlInvocation) throws {
        let terminal = isatty(STDOUT_FILENO) != 0 && !ctl.json
        var drawn = false
        while true {
            guard let e = try client.nextEvent(timeout: 3600) else {
                CtlOutput.error("backline ctl: the daemon went away before update \(job) ended")
                throw CtlExit(1)
            }
            guard e["event"]?.string == "update", let j = e["job"]?.int, j >= job else { continue }
            if ctl.json { print(e.text) }
            // A later job: this one ended unseen (merged or replaced), as far as this run can tell.
            if j > job, !ctl.json { print(CtlText.updateLine(e)); return }
            if e["done"]?.bool == true {
                if terminal, drawn { print("\r\u{1B}[K", terminator: "") }
                if !ctl.json { print(CtlText.updateLine(e)) }
                if e["error"] != nil { throw CtlExit(1) }
                return
            }
            if terminal {
                print("\r\u{1B}[K" + CtlText.updateBar(e), terminator: "")
                fflush(nil)  // (every stream: `stdout` is a C global Swift 6 will not touch)
                drawn = true
            }
        }
    }

    /// Prints a usage error with the command's usage; exit 1.
    static func usageFailure(_ u: CtlUsage) -> CtlExit {
        var text = "backline ctl \(u.command): \(u.message)"
        if let c = CtlHelp.entry(u.command) { text += "\n" + CtlHelp.usage(c) }
        CtlOutput.error(text)
        return CtlExit(1)
    }

    /// After a `play` the daemon answered `playing`: waits (up to 3 s) until the position moves
    /// (it is heard) or playback stops, and collects the items that failed meanwhile ("FILE:
    /// reason", relative to the music directory).
    private static func confirmPlaying(_ client: ControlClient) throws -> (stopped: Bool, failures: [String]) {
        var failures: [String] = []
        var music = ""
        func collect(wait: Double) throws {
            while let e = try client.nextEvent(timeout: wait) {
                guard e["event"]?.string == "failed" else { continue }
                let e = CtlText.printable(e)
                failures.append("\(CtlText.shown(e["path"]?.string ?? "?", music: CtlText.printable(music))): \(e["reason"]?.string ?? "failed")")
            }
        }
        var first: (Int?, Double)?
        let deadline = monotonicNow() + 3
        while monotonicNow() < deadline {
            let s = try client.request("status")
            music = s["musicDirectory"]?.string ?? ""
            try collect(wait: 0)
            let state = s["state"]?.string
            let now = (s["current"]?["id"]?.int, s["elapsed"]?.number ?? 0)
            if state == "stopped" {
                if failures.isEmpty { try collect(wait: 1) }  // its event may still be on its way
                return (true, failures)
            }
            if state != "playing" { break }
            if let f = first, now.1 > 0, now.0 != f.0 || now.1 > f.1 { break }  // heard
            if first == nil { first = now }
            usleep(40_000)
        }
        try collect(wait: 0)
        return (false, failures)
    }

    private static func monotonicNow() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// Relative paths given from a folder inside the music directory are relative to that
    /// folder (as the shell's `*.mp3` is); elsewhere they stay relative to the music directory.
    /// `members` are a request's arguments; its `paths` are rewritten.
    public static func relativeToWorkingDirectory(_ members: [(String, JSON)], musicDirectory: String?) -> [(String, JSON)] {
        guard let music = musicDirectory, let cwd = realPath(".") else { return members }
        guard cwd != music, cwd.hasPrefix(music == "/" ? "/" : music + "/") else { return members }
        let folder = String(cwd.dropFirst(music == "/" ? 1 : music.count + 1))
        return members.map { key, value in
            guard key == "paths", case .array(let paths) = value else { return (key, value) }
            return (key, .array(paths.map { p in
                guard case .string(let s) = p, !s.hasPrefix("/") else { return p }
                return .string(folder + "/" + s)
            }))
        }
    }

    private static func realPath(_ path: String) -> String? {
        guard let p = Glibc.realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

    // MARK: Watching

    /// Every event as one human line (`--json`: as the daemon sent it). Without kinds, every
    /// kind but `position` (once a second while playing: ask for it by name).
    private static func watch(_ client: ControlClient, _ ctl: CtlInvocation) throws {
        let all = EventKinds.all
        let kinds = ctl.arguments.isEmpty ? (ctl.json ? all : all.filter { $0 != "position" }) : ctl.arguments
        let reply = try client.request("subscribe", [("events", .array(kinds.map(JSON.string)))])
        guard reply["ok"]?.bool == true else {
            CtlOutput.error("backline ctl: \(CtlText.printable(reply["error"]?["message"]?.string ?? "subscribe failed"))")
            throw CtlExit(1)
        }
        let music = (try? client.request("status"))?["musicDirectory"]?.string ?? ""
        while true {
            let event: JSON?
            do { event = try client.nextEvent(timeout: 3600) } catch { return }  // the daemon went away
            guard let e = event else { continue }
            CtlOutput.line(ctl.json ? e.text : CtlText.eventLine(e, music: music))
        }
    }
}

/// The requests both executables build the same way: commands whose arguments need none of
/// the daemon's command types to check (no arguments, an item id, on/off, event kinds).
public enum CtlCommands {
    /// The request for `command`, or nil when it is not one of these.
    public static func simple(_ command: String, _ arguments: [String]) throws(CtlUsage) -> CtlRequest? {
        let a = arguments
        let cmd = command
        func atMost(_ n: Int) throws(CtlUsage) {
            guard a.count > n else { return }
            throw CtlUsage(cmd, "unexpected '\(a[n])'")
        }
        switch command {
        case "play":
            try atMost(1)
            guard let s = a.first else { return .command(name: "play", members: []) }
            return .command(name: "play", members: [("item", .int(try itemID(s, cmd)))])
        case "status" where a == ["--verbose"]:
            return .command(name: command, members: [])
        case "list" where !a.isEmpty:
            return nil  // a tag's values in the library: the typed builder's
        case "list", "status":
            try atMost(0)
            return .command(name: command, members: [])
        case "replay-gain":
            try atMost(1)
            guard let m = a.first else { return .command(name: command, members: []) }
            guard ["off", "track", "album", "auto"].contains(m) else { throw CtlUsage(cmd, "expected off, track, album or auto") }
            return .command(name: command, members: [("mode", .string(m))])
        case "speed":
            try atMost(1)
            guard let s = a.first else { return .command(name: command, members: []) }
            guard let speed = Double(s), speed.isFinite, (0.5...3).contains(speed) else {
                throw CtlUsage(cmd, "expected a rate from 0.5 to 3, got '\(s)'")
            }
            return .command(name: command, members: [("speed", .number(speed))])
        case "bookmarks":
            guard let first = a.first else { return .command(name: command, members: []) }
            guard first == "clear" else { throw CtlUsage(cmd, "expected clear [PATH…], got '\(first)'") }
            let paths = Array(a.dropFirst())
            return .command(name: command, members: paths.isEmpty ? [("all", .bool(true))] : [("clear", .array(paths.map(JSON.string)))])
        case "chapter":
            try atMost(1)
            guard let s = a.first else { return .command(name: command, members: []) }
            if s == "next" || s == "previous" { return .command(name: command, members: [("to", .string(s))]) }
            guard let n = Int(s), n >= 1 else { throw CtlUsage(cmd, "expected next, previous or a chapter number (1 the first), got '\(s)'") }
            return .command(name: command, members: [("index", .int(n - 1))])
        case "crossfade":
            try atMost(1)
            guard let s = a.first else { return .command(name: command, members: []) }
            let seconds = s == "off" ? 0 : Double(s)
            guard let seconds, seconds.isFinite, (0...3600).contains(seconds) else {
                throw CtlUsage(cmd, "expected seconds (0–3600) or off, got '\(s)'")
            }
            return .command(name: command, members: [("seconds", .number(seconds))])
        case "single" where a.first == "each":
            try atMost(1)
            return .command(name: command, members: [("on", .bool(true)), ("each", .bool(true))])
        case "shuffle", "single", "mute":
            try atMost(1)
            guard let on = try onOff(a.first, cmd) else { return .command(name: command, members: []) }
            return .command(name: command, members: [("on", .bool(on))])
        case "new-partition":
            guard (1...2).contains(a.count) else { throw CtlUsage(cmd, "expected NAME [OUTPUT]") }
            return .command(name: command, members: [("name", .string(a[0]))] + (a.count > 1 ? [("output", .string(a[1]))] : []))
        case "delete-partition", "move-output", "partition":
            guard a.count == 1 else { throw CtlUsage(cmd, "expected NAME") }
            return .command(name: command, members: [("name", .string(a[0]))])
        case "channel-send":
            guard a.count >= 2 else { throw CtlUsage(cmd, "expected CHANNEL TEXT…") }
            return .command(name: command, members: [("channel", .string(a[0])), ("message", .string(a.dropFirst().joined(separator: " ")))])
        case "shuffle-queue":
            // FROM TO: positions from 1, both included.
            guard !a.isEmpty else { return .command(name: command, members: []) }
            try atMost(2)
            guard a.count == 2, let from = Int(a[0]), let to = Int(a[1]), from >= 1, to >= from else {
                throw CtlUsage(cmd, "expected FROM TO, positions from 1 (FROM ≤ TO)")
            }
            return .command(name: command, members: [("start", .int(from - 1)), ("end", .int(to))])
        case "watch":
            if let bad = a.first(where: { !EventKinds.all.contains($0) }) {
                throw CtlUsage(cmd, "unknown event kind '\(bad)' (kinds: \(EventKinds.all.joined(separator: ", ")))")
            }
            return .untyped
        default:
            // A command without arguments takes none here either.
            guard let schema = Schema.command(command), schema.name == command, schema.arguments.isEmpty, schema.ctl != nil else { return nil }
            try atMost(0)
            return .command(name: command, members: [])
        }
    }

    /// `on`/`off` (yes/no, true/false, 1/0); nil when not given.
    public static func onOff(_ s: String?, _ cmd: String) throws(CtlUsage) -> Bool? {
        guard let s else { return nil }
        switch s {
        case "on", "yes", "true", "1": return true
        case "off", "no", "false", "0": return false
        default: throw CtlUsage(cmd, "expected on or off, got '\(s)'")
        }
    }

    /// An item id (a positive number).
    public static func itemID(_ s: String, _ cmd: String) throws(CtlUsage) -> Int {
        guard let i = Int(s), i > 0 else { throw CtlUsage(cmd, "expected an item id (a number list shows as [id N]), got '\(s)'") }
        return i
    }
}
