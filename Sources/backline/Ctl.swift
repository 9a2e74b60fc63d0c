import ArgumentParser
import Control
import Daemon
import Foundation

/// `backline ctl COMMAND [ARGS]`: one protocol command, from the shell.
///
/// What a person sees counts queue positions from 1 (as mpc does: `list`, `insert`, `add
/// --at`, `move`'s target) and names items by their stable ids where a command means one item
/// whatever its place (`play ID`, `remove ID…`, `move ID POS`); `list` shows both.
struct Ctl: ParsableCommand {
    // The discussion is short lines (ArgumentParser rewraps longer ones to the terminal's
    // width, which broke a table); the commands are listed by `ctl help`.
    static let configuration = CommandConfiguration(
        abstract: "Control a running `backline daemon`.",
        usage: "backline ctl [--socket PATH] [--json] [--format F] COMMAND [ARGUMENTS…]",
        discussion: """
            The commands and their arguments: backline ctl help
            One command in detail:            backline ctl help COMMAND

            Positions in the queue count from 1, as `list` numbers them; ids are
            the numbers `list` shows as [id N] and stay with an item wherever it
            moves. `play ID`, `remove ID…` and `move ID POS` take ids; `insert POS`,
            `add --at POS` and `move`'s POS take positions.

            Output is for people; --json prints the daemon's reply as it is.
            Exit status: 0 done; 1 the daemon refused, nothing could play, or a
            usage error (the message on stderr); 3 no daemon is running.
            """)

    @Option(name: .long, help: "Control socket (default: $XDG_RUNTIME_DIR/backline/control.sock).")
    var socket: String?

    @Flag(name: .long, help: "Print the daemon's JSON reply (or events) instead of text.")
    var json = false

    @Option(name: .long, help: "With status: one line, %title% %artist% %album% %elapsed% %duration% %state% %id% %file% %position% replaced.")
    var format: String?

    @Argument(help: "The command (`backline ctl help` lists them).")
    var command: String

    @Argument(parsing: .captureForPassthrough, help: "Its arguments.")
    var arguments: [String] = []

    func run() throws {
        var ctl = self
        // Options given after the command (`ctl status --json`) arrive among its arguments.
        if let i = ctl.arguments.firstIndex(of: "--json") {
            ctl.arguments.remove(at: i)
            ctl.json = true
        }
        for name in ["--socket", "--format"] {
            guard let i = ctl.arguments.firstIndex(of: name), i + 1 < ctl.arguments.count else { continue }
            let value = ctl.arguments[i + 1]
            ctl.arguments.removeSubrange(i...(i + 1))
            if name == "--socket" { ctl.socket = value } else { ctl.format = value }
        }
        if ctl.command == "queue" { ctl.command = "list" }
        try ctl.perform()
    }

    /// A usage error: printed with the command's usage, exit 1.
    struct Usage: Error {
        var command: String
        var message: String
        init(_ command: String, _ message: String) { (self.command, self.message) = (command, message) }
    }

    private func usageFailure(_ u: Usage) -> ExitCode {
        var text = "backline ctl \(u.command): \(u.message)"
        if let c = CtlHelp.entry(u.command) { text += "\n" + CtlHelp.usage(c) }
        Terminal.error(text, tty: false)
        return ExitCode(1)
    }

    private func perform() throws {
        signal(SIGPIPE, SIG_IGN)  // a daemon that goes away is an error to report, not a signal to die of
        if command == "help" {  // ctl's own syntax: no daemon needed
            guard let topic = arguments.first else { return print(CtlHelp.all(), terminator: "") }
            guard let text = CtlHelp.detail(topic) else {
                throw usageFailure(Usage("help", "no command \"\(topic)\" (backline ctl help lists them)"))
            }
            return print(text, terminator: "")
        }
        if format != nil && command != "status" { throw usageFailure(Usage(command, "--format goes with status")) }
        // Arguments are checked before anything is sent.
        let typed: (any ControlCommand)?
        do {
            typed = try request()
        } catch let u as Usage {
            throw usageFailure(u)
        } catch let e as CommandError {
            if case .unknownCommand = e {
                Terminal.error("backline ctl: unknown command \"\(command)\" (backline ctl help lists them)", tty: false)
                throw ExitCode(1)
            }
            throw usageFailure(Usage(command, e.message))
        }
        let path = socket ?? DaemonConfig.defaults().socketPath
        let client: ControlClient
        do {
            client = try ControlClient(verifiedSocketPath: path)
        } catch {
            Terminal.error("backline ctl: \(error)", tty: false)
            throw ExitCode(3)
        }
        if command == "watch" { return try watch(client) }
        let name = typed?.descriptor.name ?? "send"
        var reply: JSON
        var music: String?
        do {
            if var typed {
                if name == "add" || name == "insert" || name == "playlist-add" {
                    music = try client.request("status")["musicDirectory"]?.string
                    typed = Self.relativeToWorkingDirectory(typed, musicDirectory: music)
                }
                if name == "play" || name == "toggle" {
                    _ = try client.request("subscribe", [("events", .array([.string("failed")]))])
                }
                guard case .object(let members) = JSONCodec.request(typed) else { throw ExitCode(1) }
                reply = try client.request(name, members.filter { $0.0 != "command" })
            } else {
                guard let raw = arguments.first else { throw usageFailure(Usage("send", "give a JSON object")) }
                try client.sendRaw(Array((raw + "\n").utf8))
                reply = try client.nextReply()
            }
        } catch let e as ExitCode {
            throw e
        } catch {
            Terminal.error("backline ctl: \(error)", tty: false)
            throw ExitCode(1)
        }
        guard reply["ok"]?.bool == true else {
            if json { print(reply.text) }
            let message = reply["error"]?["message"]?.string ?? "the daemon refused"
            let code = reply["error"]?["code"]?.string ?? "error"
            var text = "backline ctl: \(message) (\(code))"
            if code == "bad-argument", let c = CtlHelp.entry(command) { text += "\n" + CtlHelp.usage(c) }
            Terminal.error(text, tty: false)
            throw ExitCode(1)
        }
        // `play` answers at once; whether anything is heard (or the item fails) shows moments later.
        var nothingPlays = false
        if (name == "play" || name == "toggle") && reply["state"]?.string == "playing" {
            let outcome = try Self.confirmPlaying(client)
            for f in outcome.failures where !outcome.stopped {
                Terminal.error("backline ctl: skipped \(f)", tty: false)
            }
            if outcome.stopped {
                reply = .object([("id", reply["id"] ?? .null), ("ok", true), ("state", "stopped")])
                nothingPlays = true
                let why = outcome.failures.isEmpty ? "" : ": " + outcome.failures.joined(separator: "; ")
                Terminal.error("backline ctl: nothing plays\(why)", tty: false)
            }
        }
        if json {
            print(reply.text)
        } else if let format {
            print(Self.formatted(format, reply))
        } else {
            print(Self.human(name, reply, sent: typed), terminator: "")
        }
        if nothingPlays { throw ExitCode(1) }
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
                failures.append("\(shown(e["path"]?.string ?? "?", music: music)): \(e["reason"]?.string ?? "failed")")
            }
        }
        var first: (Int?, Double)?
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline {
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

    /// A path as a person named it: relative to the music directory when inside it.
    static func shown(_ path: String, music: String) -> String {
        guard !music.isEmpty, path.hasPrefix(music + "/") else { return path }
        return String(path.dropFirst(music.count + 1))
    }

    /// Relative paths given from a folder inside the music directory are relative to that
    /// folder (as the shell's `*.mp3` is); elsewhere they stay relative to the music directory.
    static func relativeToWorkingDirectory(_ command: any ControlCommand, musicDirectory: String?) -> any ControlCommand {
        guard let music = musicDirectory, let cwd = realPath(".") else { return command }
        guard cwd != music, cwd.hasPrefix(music == "/" ? "/" : music + "/") else { return command }
        let folder = String(cwd.dropFirst(music == "/" ? 1 : music.count + 1))
        func fix(_ paths: [String]) -> [String] { paths.map { $0.hasPrefix("/") ? $0 : folder + "/" + $0 } }
        switch command {
        case var c as AddCommand: c.paths = fix(c.paths); return c
        case var c as InsertCommand: c.add.paths = fix(c.add.paths); return c
        case var c as PlaylistAddCommand: c.paths = fix(c.paths); return c
        default: return command
        }
    }

    private static func realPath(_ path: String) -> String? {
        guard let p = Glibc.realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

    // MARK: Building the request

    /// The typed command the arguments ask for (the daemon's own command types: what `ctl`
    /// sends is what every protocol runs). Nil for `send` (a raw line). Positions a person
    /// gives count from 1; the protocol's indexes from 0.
    private func request() throws -> (any ControlCommand)? {
        var a = arguments
        let cmd = command
        func onOff(_ s: String?) throws -> Bool? {
            guard let s else { return nil }
            switch s {
            case "on", "yes", "true", "1": return true
            case "off", "no", "false", "0": return false
            default: throw Usage(cmd, "expected on or off, got '\(s)'")
            }
        }
        func id(_ s: String) throws -> Int {
            guard let i = Int(s), i > 0 else { throw Usage(cmd, "expected an item id (a number list shows as [id N]), got '\(s)'") }
            return i
        }
        func int(_ s: String, _ what: String = "an integer") throws -> Int {
            guard let i = Int(s) else { throw Usage(cmd, "expected \(what), got '\(s)'") }
            return i
        }
        /// A 1-based position → a 0-based index.
        func position(_ s: String) throws -> Int {
            guard let i = Int(s), i >= 1 else { throw Usage(cmd, "expected a position (1 is the first), got '\(s)'") }
            return i - 1
        }
        func number(_ s: String, _ what: String = "a number") throws -> Double {
            if s.contains(":") {
                guard let t = parseTime(s) else { throw Usage(cmd, "expected \(what), got '\(s)'") }
                return t
            }
            guard let d = Double(s), d.isFinite else { throw Usage(cmd, "expected \(what), got '\(s)'") }
            return d
        }
        func option(_ name: String) throws -> String? {
            guard let i = a.firstIndex(of: name) else { return nil }
            guard i + 1 < a.count else { throw Usage(cmd, "\(name) needs a value") }
            let v = a[i + 1]
            a.removeSubrange(i...(i + 1))
            return v
        }
        func flag(_ name: String) -> Bool {
            guard let i = a.firstIndex(of: name) else { return false }
            a.remove(at: i)
            return true
        }
        func atMost(_ n: Int) throws {
            guard a.count > n else { return }
            throw Usage(cmd, "unexpected '\(a[n])'")
        }
        func required(_ what: String) throws -> String {
            guard let v = a.first else { throw Usage(cmd, "give \(what)") }
            a.removeFirst()
            return v
        }
        /// Built from arguments, checked as the daemon checks them.
        func make(_ name: String, _ values: [String: ArgumentValue]) throws -> any ControlCommand {
            guard let d = CommandTable.descriptor(name) else { throw CommandError.unknownCommand(name) }
            do { return try d.make(Arguments(values)) } catch { throw Usage(cmd, Self.withoutPrefix(Self.message(error), name)) }
        }
        switch command {
        case "play":
            try atMost(1)
            return PlayCommand(item: try a.first.map(id))
        case "pause", "toggle", "stop", "next", "previous", "clear", "list", "status", "now-playing", "playlists", "ping", "version":
            try atMost(0)
            return try make(command, [:])
        case "seek":
            let t = try required("SECONDS, +SECONDS, -SECONDS or M:SS")
            try atMost(0)
            let what = "SECONDS, +SECONDS, -SECONDS or M:SS"
            if t.hasPrefix("+") || t.hasPrefix("-") {
                let v = try number(String(t.dropFirst()), what)
                return SeekCommand(target: .offset(t.hasPrefix("-") ? -v : v))
            }
            return SeekCommand(target: .position(try number(t, what)))
        case "skip":
            try atMost(1)
            return try make("skip", try a.first.map { ["seconds": .number(try number($0, "±SECONDS"))] } ?? [:])
        case "repeat", "consume":
            try atMost(1)
            let modes = command == "repeat" ? ["off", "one", "all"] : ["off", "on", "oneshot"]
            if let m = a.first, !modes.contains(m) { throw Usage(cmd, "expected \(modes.joined(separator: ", ")), got '\(m)'") }
            return try make(command, a.first.map { ["mode": .string($0)] } ?? [:])
        case "shuffle", "single", "mute":
            try atMost(1)
            let on = try onOff(a.first)
            switch command {
            case "shuffle": return ShuffleCommand(on: on)
            case "single": return SingleCommand(on: on)
            default: return MuteCommand(on: on)
            }
        case "rate":
            let r = try required("a rate (1 plays, 0 pauses)")
            try atMost(0)
            return RateCommand(rate: try number(r))
        case "add":
            let at = try option("--at").map(position)
            guard !a.isEmpty else { throw Usage(cmd, "give at least one path") }
            return AddCommand(paths: a, position: at, partial: true)
        case "insert":
            let at = try position(try required("a position and at least one path"))
            guard !a.isEmpty else { throw Usage(cmd, "give at least one path after the position") }
            return InsertCommand(paths: a, position: at, partial: true)
        case "remove":
            guard !a.isEmpty else { throw Usage(cmd, "give at least one item id") }
            return RemoveCommand(ids: try a.map(id))
        case "move":
            guard a.count == 2 else { throw Usage(cmd, "give an item id and a position") }
            return MoveCommand(id: try id(a[0]), position: try position(a[1]))
        case "priority":
            let p = try int(try required("a priority (0–255) and item ids"), "a priority from 0 to 255")
            guard !a.isEmpty else { throw Usage(cmd, "give at least one item id after the priority") }
            return try make("priority", ["priority": .integer(p), "items": .integers(try a.map(id))])
        case "volume":
            try atMost(1)
            guard let v = a.first else { return VolumeCommand(change: nil) }
            let what = "N (0–100), +N or -N"
            if v.hasPrefix("+") || v.hasPrefix("-") { return VolumeCommand(change: .by(try number(v, what))) }
            return try make("volume", ["volume": .number(try number(v, what))])
        case "session":
            var values: [String: ArgumentValue] = [:]
            if let c = try option("--category") { values["category"] = .string(c) }
            if let o = try option("--options") { values["options"] = .strings(o.split(separator: ",").map(String.init)) }
            if let s = try option("--silent-switch") { values["silentSwitch"] = .boolean(try onOff(s)!) }
            if let s = try option("--screen-lock") { values["screenLocked"] = .boolean(try onOff(s)!) }
            try atMost(0)
            return try make("session", values)
        case "lifecycle":
            try atMost(1)
            if let s = a.first, s != "foreground", s != "background" { throw Usage(cmd, "expected foreground or background, got '\(s)'") }
            return try make("lifecycle", a.first.map { ["state": .string($0)] } ?? [:])
        case "sleep":
            if flag("--cancel") { try atMost(0); return SleepCommand(action: .cancel) }
            if flag("--end-of-item") { try atMost(0); return SleepCommand(action: .endOfItem) }
            var values: [String: ArgumentValue] = [:]
            if let f = try option("--fade") { values["fade"] = .number(try number(f, "fade seconds")) }
            try atMost(1)
            if let m = a.first {
                let minutes = try number(m, "MINUTES")
                if minutes == 0 { return SleepCommand(action: .cancel) }  // `sleep 0`: off
                guard minutes > 0, minutes <= 24 * 60 else { throw Usage(cmd, "MINUTES is from 0 (off) to 1440 (24 hours), got '\(m)'") }
                values["minutes"] = .number(minutes)
            }
            return try make("sleep", values)
        case "alarm":
            // `alarm 07:30 [--fade S] [--play ID|--load PLAYLIST] [--daily]`, `alarm --cancel N`, `alarm`.
            if let n = try option("--cancel") { try atMost(0); return AlarmCommand(action: .cancel(id: try int(n, "an alarm number"))) }
            var values: [String: ArgumentValue] = [:]
            if let f = try option("--fade") { values["fade"] = .number(try number(f, "fade seconds")) }
            if let i = try option("--play") { values["item"] = .integer(try id(i)) }
            if let p = try option("--load") { values["playlist"] = .string(p) }
            if flag("--daily") { values["daily"] = .boolean(true) }
            try atMost(1)
            if let t = a.first { values["time"] = .string(t) }
            return try make("alarm", values)
        case "save":
            let replace = flag("--replace")
            let n = try required("a playlist name")
            try atMost(0)
            return try make("save", ["name": .string(n), "replace": .boolean(replace)])
        case "load":
            let at = try option("--at").map(position)
            let n = try required("a playlist name")
            try atMost(0)
            return LoadPlaylistCommand(name: n, position: at)
        case "playlist", "playlist-clear", "playlist-remove":
            let n = try required("a playlist name")
            try atMost(0)
            return try make(command, ["name": .string(n)])
        case "playlist-add":
            let n = try required("a playlist name and at least one path")
            guard !a.isEmpty else { throw Usage(cmd, "give at least one path after the name") }
            return PlaylistAddCommand(name: n, paths: a)
        case "playlist-delete":
            guard a.count == 2 else { throw Usage(cmd, "give a playlist name and a position") }
            return PlaylistDeleteCommand(name: a[0], position: try position(a[1]))
        case "playlist-move":
            guard a.count == 3 else { throw Usage(cmd, "give a playlist name and two positions") }
            return PlaylistMoveCommand(name: a[0], from: try position(a[1]), to: try position(a[2]))
        case "playlist-rename":
            guard a.count == 2 else { throw Usage(cmd, "give a playlist name and its new name") }
            return try make("playlist-rename", ["name": .string(a[0]), "to": .string(a[1])])
        case "browse":
            let recursive = flag("--recursive")
            try atMost(1)
            var values: [String: ArgumentValue] = ["recursive": .boolean(recursive)]
            if let p = a.first { values["path"] = .string(p) }
            return try make("browse", values)
        case "watch":
            if let bad = a.first(where: { !ControlEvent.kinds.contains($0) }) {
                throw Usage(cmd, "unknown event kind '\(bad)' (kinds: \(ControlEvent.kinds.joined(separator: ", ")))")
            }
            return nil
        case "send":
            try atMost(1)
            return nil
        default:
            throw CommandError.unknownCommand(command)
        }
    }

    private static func message(_ e: any Error) -> String { (e as? CommandError)?.message ?? "\(e)" }

    /// A daemon message without its leading "command: " (ctl prints the command itself).
    static func withoutPrefix(_ message: String, _ name: String) -> String {
        message.hasPrefix(name + ": ") ? String(message.dropFirst(name.count + 2)) : message
    }

    // MARK: Watching

    /// Every event as one human line (`--json`: as the daemon sent it). Without kinds, every
    /// kind but `position` (once a second while playing: ask for it by name).
    private func watch(_ client: ControlClient) throws {
        let kinds = arguments.isEmpty ? (json ? ControlEvent.kinds : ControlEvent.kinds.filter { $0 != "position" }) : arguments
        let reply = try client.request("subscribe", [("events", .array(kinds.map(JSON.string)))])
        guard reply["ok"]?.bool == true else {
            Terminal.error("backline ctl: \(reply["error"]?["message"]?.string ?? "subscribe failed")", tty: false)
            throw ExitCode(1)
        }
        let music = (try? client.request("status"))?["musicDirectory"]?.string ?? ""
        while true {
            let event: JSON?
            do { event = try client.nextEvent(timeout: 3600) } catch { return }  // the daemon went away
            guard let e = event else { continue }
            Terminal.line(json ? e.text : Self.eventLine(e, music: music), tty: false)
        }
    }

    /// One event in words.
    static func eventLine(_ e: JSON, music: String = "") -> String {
        let kind = e["event"]?.string ?? "?"
        func str(_ k: String) -> String { e[k]?.string ?? "?" }
        func onOff(_ v: JSON?) -> String { v?.bool == true ? "on" : "off" }
        switch kind {
        case "state": return "state: \(str("state"))"
        case "current":
            guard let i = e["item"], i != .null else { return "current: nothing (the end of the queue)" }
            return "current: \(itemLine(i)) [id \(i["id"]?.int ?? 0)]"
        case "queue":
            let n = e["count"]?.int ?? 0
            return "queue: \(n) item\(n == 1 ? "" : "s") (version \(e["version"]?.int ?? 0))"
        case "modes":
            return "modes: repeat \(str("repeat")) · shuffle \(onOff(e["shuffle"])) · single \(onOff(e["stopAfterCurrent"])) · consume \(str("consume"))"
        case "failed": return "failed: \(shown(str("path"), music: music)): \(str("reason")) [id \(e["item"]?.int ?? 0)]"
        case "seeked": return "seeked: \(clock(e["time"]?.number)) [id \(e["item"]?.int ?? 0)]"
        case "position": return "position: \(clock(e["elapsed"]?.number)) / \(clock(e["duration"]?.number)) [id \(e["item"]?.int ?? 0)]"
        case "volume": return "volume: \(volumeText(e))"
        case "session":
            switch str("kind") {
            case "interruptionBegan": return "session: paused for another player"
            case "interruptionEnded":
                return "session: the other player is done" + (e["shouldResume"]?.bool == true ? " (may resume)" : "")
            case "routeChanged":
                switch str("reason") {
                case "newDeviceAvailable": return "session: the output device is back"
                case "oldDeviceUnavailable": return "session: the output device is gone"
                case "categoryChange": return "session: how it shares the sound changed"
                default: return "session: the output changed"
                }
            case "mediaServicesWereReset": return "session: the sound server restarted"
            case "silencedChanged": return e["silenced"]?.bool == true ? "session: silenced (silent switch or screen lock)" : "session: no longer silenced"
            case "duckingChanged": return e["ducked"]?.bool == true ? "session: lowered while another player plays" : "session: back to full volume"
            default: return "session: \(str("kind"))"
            }
        case "lifecycle":
            let words: [String: String] = [
                "willResignActive": "leaving the foreground", "didEnterBackground": "in the background",
                "willEnterForeground": "coming to the foreground", "didBecomeActive": "in the foreground",
                "didSuspend": "suspended while idle (the device is released)", "didResume": "woken up",
                "willTerminate": "stopping", "backgroundTaskExpiring": "background work running out of time",
                "backgroundTaskLeaked": "background work left unfinished",
            ]
            return "daemon: \(words[str("kind")] ?? str("kind"))"
        case "sleep":
            switch str("kind") {
            case "set":
                if e["endOfItem"]?.bool == true { return "sleep: at the end of the item" }
                return "sleep: in \(clock((e["minutes"]?.number ?? 0) * 60, milliseconds: false))"
            case "cancelled": return "sleep: off"
            case "fired": return "sleep: paused"
            default: return "sleep: \(str("kind"))"
            }
        case "alarm":
            switch str("kind") {
            case "set": return "alarm set: \(alarmLine(e["alarm"] ?? .null))"
            case "cancelled": return "alarm \(e["id"]?.int ?? 0) cancelled"
            case "fired": return "alarm rang: \(alarmLine(e["alarm"] ?? .null))"
            default: return "alarm: \(str("kind"))"
            }
        case "hook":
            let status = e["status"]?.int.map { "exited \($0)" } ?? "could not run or timed out"
            return "hook: \(str("hook")) \(status)"
        case "playlists": return "playlist changed: \(str("name"))"
        case "shutdown": return "the daemon is stopping"
        default:
            guard case .object(let fields) = e else { return kind }
            return ([kind + ":"] + fields.filter { $0.0 != "event" && $0.0 != "seq" }.map { "\($0.0) \(short($0.1))" }).joined(separator: " ")
        }
    }

    // MARK: Human output

    static func short(_ v: JSON) -> String {
        switch v {
        case .string(let s): return s.contains(" ") ? "\"\(s)\"" : s
        case .null: return "-"
        default: return v.text
        }
    }

    static func time(_ t: Double?) -> String {
        guard let t, t.isFinite else { return "--:--" }
        let ms = Int((t * 1000).rounded())
        let s = ms / 1000
        return s >= 3600 ? String(format: "%d:%02d:%02d.%03d", s / 3600, s / 60 % 60, s % 60, ms % 1000)
            : String(format: "%d:%02d.%03d", s / 60, s % 60, ms % 1000)
    }

    /// M:SS (H:MM:SS), or with milliseconds.
    static func clock(_ t: Double?, milliseconds: Bool = true) -> String {
        guard let t, t.isFinite else { return "--:--" }
        if milliseconds { return time(t) }
        let s = Int(t.rounded())
        return s >= 3600 ? String(format: "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60) : String(format: "%d:%02d", s / 60, s % 60)
    }

    static func itemLine(_ i: JSON) -> String {
        let title = i["title"]?.string ?? "?"
        let artist = i["artist"]?.string.map { " — \($0)" } ?? ""
        let d = i["duration"]?.number.map { " (\(time($0)))" } ?? ""
        let err = i["error"]?.string.map { "  [failed: \($0)]" } ?? ""
        return "\(title)\(artist)\(d)\(err)"
    }

    static func volumeText(_ r: JSON) -> String {
        "\(r["volume"]?.int.map(String.init) ?? short(r["volume"] ?? .null))%" + (r["muted"]?.bool == true ? " (muted)" : "")
    }

    static func alarmLine(_ a: JSON) -> String {
        var line = "\(a["id"]?.int ?? 0). \(a["time"]?.string ?? "?")\(a["daily"]?.bool == true ? " daily" : "")"
        if let f = a["fade"]?.number, f > 0 { line += ", fading in over \(Int(f)) s" }
        if let i = a["item"]?.int { line += ", plays item \(i)" }
        if let p = a["playlist"]?.string { line += ", loads \(p)" }
        return line + " (next \(a["next"]?.string ?? "?"))"
    }

    /// Ids as ranges: `1–300`, `4, 7–9`.
    static func ranges(_ ids: [Int]) -> String {
        var parts: [String] = []
        var i = 0
        while i < ids.count {
            var j = i
            while j + 1 < ids.count, ids[j + 1] == ids[j] + 1 { j += 1 }
            parts.append(j == i ? "\(ids[i])" : j == i + 1 ? "\(ids[i]), \(ids[j])" : "\(ids[i])–\(ids[j])")
            i = j + 1
        }
        return parts.joined(separator: ", ")
    }

    /// How the audio session shares the sound, in a music player's words.
    static func sharing(_ session: JSON?) -> String {
        let category = session?["category"]?.string ?? "?"
        let options = session?["options"]?.array?.compactMap(\.string) ?? []
        var words = [category == "playback" ? "keeps playing in the background" : "stops in the background"]
        if options.contains("duckOthers") {
            words.append("lowers other players")
        } else if options.contains("interruptSpokenAudioAndMixWithOthers") {
            words.append("pauses spoken audio, plays along with music")
        } else if category == "ambient" || options.contains("mixWithOthers") {
            words.append("plays along with other players")
        } else {
            words.append("pauses for other players")
        }
        if category != "playback" { words.append("the silent switch mutes it") }
        return words.joined(separator: " · ")
    }

    /// Where the daemon is (the app state), in words.
    static func whereItIs(_ app: String?) -> String {
        switch app {
        case "active": "in the foreground"
        case "inactive": "in the foreground (inactive)"
        case "background": "in the background"
        case "suspended": "suspended while idle"
        default: app ?? "?"
        }
    }

    /// The `--format` line: %title% %artist% %album% %elapsed% %duration% %state% %id% %file%
    /// %position%; what is missing is empty.
    static func formatted(_ format: String, _ r: JSON) -> String {
        let c = r["current"].flatMap { $0 == .null ? nil : $0 }
        let music = r["musicDirectory"]?.string ?? ""
        let values: [String: String] = [
            "title": c?["title"]?.string ?? "",
            "artist": c?["artist"]?.string ?? "",
            "album": c?["album"]?.string ?? "",
            "elapsed": c == nil ? "" : clock(r["elapsed"]?.number, milliseconds: false),
            "duration": r["duration"]?.number.map { clock($0, milliseconds: false) } ?? "",
            "state": r["state"]?.string ?? "",
            "id": c?["id"]?.int.map(String.init) ?? "",
            "file": c?["path"]?.string.map { shown($0, music: music) } ?? "",
            "position": r["index"]?.int.map { String($0 + 1) } ?? "",
        ]
        var out = ""
        var rest = format[...]
        while let open = rest.firstIndex(of: "%") {
            out += rest[..<open]
            let after = rest[rest.index(after: open)...]
            if let close = after.firstIndex(of: "%"), let v = values[String(after[..<close])] {
                out += v
                rest = after[after.index(after: close)...]
            } else {
                out += "%"
                rest = after
            }
        }
        return out + rest
    }

    /// The reply in words; `sent` is the command as sent (what a count or a position refers to).
    static func human(_ name: String, _ r: JSON, sent: (any ControlCommand)? = nil) -> String {
        switch name {
        case "status":
            let state = r["state"]?.string ?? "?"
            let symbol = state == "playing" ? "▶" : state == "paused" ? "⏸" : "■"
            var out = "\(symbol) \(state)"
            if let c = r["current"], c != .null {
                let idx = (r["index"]?.int).map { "\($0 + 1)/\(r["count"]?.int ?? 0)" } ?? "-"
                out += "  \(itemLine(c))  [\(idx), id \(c["id"]?.int ?? 0)]\n"
                let e = r["elapsed"]?.number ?? 0
                let d = r["duration"]?.number
                let width = 30
                let filled = d.map { $0 > 0 ? Int(Double(width) * min(1, e / $0)) : 0 } ?? 0
                out += "  [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
                out += "\(time(e)) / \(time(d))\n"
            } else {
                out += "  (nothing current; \(r["count"]?.int ?? 0) in the queue)\n"
            }
            let session = r["session"]
            out += "  volume \(volumeText(r)) · repeat \(short(r["repeat"] ?? .null)) · shuffle \(r["shuffle"]?.bool == true ? "on" : "off")"
            out += " · single \(r["stopAfterCurrent"]?.bool == true ? "on" : "off")"
            if let consume = r["consume"]?.string, consume != "off" { out += " · consume \(consume)" }
            out += "\n  \(sharing(session))\n"
            var notes: [String] = []
            if session?["interrupted"]?.bool == true { notes.append("paused for another player") }
            if session?["silenced"]?.bool == true { notes.append("silenced (silent switch or screen lock)") }
            if session?["ducked"]?.bool == true { notes.append("lowered while another player plays") }
            if !notes.isEmpty { out += "  " + notes.joined(separator: " · ") + "\n" }
            out += "  daemon \(whereItIs(r["app"]?.string)) · device \(short(r["device"] ?? .null)) · underruns \(short(r["underruns"] ?? .null))"
            out += " · sleep \(sleepText(r["sleep"]))"
            return out + "\n"
        case "list":
            guard let items = r["items"]?.array, !items.isEmpty else { return "(the queue is empty)\n" }
            let width = String(items.count).count
            return items.enumerated().map { n, i in
                let mark = i["current"]?.bool == true ? ">" : " "
                let num = String(n + 1).leftPad(width)
                return "\(mark)\(num). [id \(i["id"]?.int ?? 0)] \(itemLine(i))\n"
            }.joined()
        case "now-playing":
            guard let info = r["info"], case .object = info else { return "(nothing is playing)\n" }
            var out = ""
            func line(_ k: String, _ v: String?) { if let v { out += "\(k): \(v)\n" } }
            func count(_ n: JSON?, of total: JSON?) -> String? {
                n?.int.map { n in total?.int.map { "\(n) of \($0)" } ?? "\(n)" }
            }
            line("title", info["title"]?.string)
            line("artist", info["artist"]?.string)
            line("album", info["albumTitle"]?.string)
            line("album artist", info["albumArtist"]?.string)
            line("track", count(info["albumTrackNumber"], of: info["albumTrackCount"]))
            line("disc", count(info["discNumber"], of: info["discCount"]))
            line("genre", info["genre"]?.string)
            line("elapsed", info["elapsedPlaybackTime"]?.number.map { time($0) })
            line("duration", info["playbackDuration"]?.number.map { time($0) })
            line("state", info["playbackRate"]?.number.map { $0 == 0 ? "paused" : "playing" })
            let index = info["playbackQueueIndex"]?.int.map { JSON.int($0 + 1) }
            line("position", count(index, of: info["playbackQueueCount"]))
            line("id", r["item"]?.int.map(String.init))
            if let a = info["artwork"] { line("cover", "\(a["mimeType"]?.string ?? "?"), \(a["bytes"]?.int ?? 0) bytes") }
            return out
        case "playlists":
            let all = r["playlists"]?.array ?? []
            return all.isEmpty ? "(no stored playlists)\n" : all.map { "\($0["name"]?.string ?? "")\n" }.joined()
        case "playlist":
            let items = r["items"]?.array ?? []
            guard !items.isEmpty else { return "(the playlist is empty)\n" }
            let width = String(items.count).count
            return items.enumerated().map { "\(String($0 + 1).leftPad(width)). \($1.string ?? "")\n" }.joined()
        case "browse":
            return (r["entries"]?.array ?? []).map { e in
                let path = e["path"]?.string ?? ""
                guard e["kind"] == "audio", e["title"] != nil else { return e["kind"] == "directory" ? "\(path)/\n" : "\(path)\n" }
                return "\(path)  \(itemLine(e))\n"
            }.joined()
        case "add", "insert", "load":
            let ids = (r["items"]?.array ?? []).compactMap(\.int)
            var out = ids.count == 1 ? "added 1 item (id \(ids[0]))\n"
                : "added \(ids.count) items" + (ids.isEmpty ? "" : " (ids \(ranges(ids)))") + "\n"
            let skipped = r["skipped"]?.array ?? []
            let shownSkips = 10
            for s in skipped.prefix(shownSkips) { out += "skipped \(s["path"]?.string ?? ""): \(s["reason"]?.string ?? "")\n" }
            if skipped.count > shownSkips { out += "… and \(skipped.count - shownSkips) more skipped (--json lists them all)\n" }
            return out
        case "remove":
            let n = (sent as? RemoveCommand).map { Set($0.ids).count }
            let left = r["count"]?.int ?? 0
            return "removed \(n.map(String.init) ?? "?"), \(left) left\n"
        case "move":
            let id = (sent as? MoveCommand)?.id
            return "moved id \(id.map(String.init) ?? "?") to position \((r["index"]?.int ?? 0) + 1)\n"
        case "playlist-move":
            return "moved to position \((r["index"]?.int ?? 0) + 1)\n"
        case "playlist-add", "playlist-delete":
            let n = r["count"]?.int ?? 0
            return "\(n) entr\(n == 1 ? "y" : "ies") in the playlist\n"
        case "save":
            let n = r["count"]?.int ?? 0
            return "saved \(n) item\(n == 1 ? "" : "s")\n"
        case "alarm":
            let all = r["alarms"]?.array ?? []
            guard !all.isEmpty else { return "(no alarms)\n" }
            return all.map { alarmLine($0) + "\n" }.joined()
        case "play", "pause", "toggle", "stop": return "state: \(r["state"]?.string ?? "?")\n"
        case "next", "previous":
            guard let c = r["current"], c != .null else { return "current: nothing (the end of the queue)\n" }
            return "current: \(itemLine(c)) [id \(c["id"]?.int ?? 0)]\n"
        case "seek", "skip": return "position: \(short(r["position"] ?? .null))\n"
        case "repeat": return "repeat: \(r["repeat"]?.string ?? "?")\n"
        case "consume": return "consume: \(r["consume"]?.string ?? "?")\n"
        case "shuffle": return "shuffle: \(r["shuffle"]?.bool == true ? "on" : "off")\n"
        case "single": return "single: \(r["stopAfterCurrent"]?.bool == true ? "on" : "off")\n"
        case "rate": return "rate: \(short(r["rate"] ?? .null))\n"
        case "volume", "mute": return "volume: \(volumeText(r))\n"
        case "sleep": return "sleep: \(sleepText(r["sleep"]))\n"
        case "lifecycle": return "daemon: \(whereItIs(r["app"]?.string))\n"
        case "session":
            let category = r["category"]?.string ?? "?"
            let options = r["options"]?.array?.compactMap(\.string) ?? []
            var out = "\(category)\(options.isEmpty ? "" : " (" + options.joined(separator: ", ") + ")"): \(sharing(r))\n"
            out += "silent switch \(r["silentSwitch"]?.bool == true ? "on" : "off") · screen lock \(r["screenLocked"]?.bool == true ? "on" : "off")"
            out += " · media keys control \(r["nowPlayingApp"]?.bool == true ? "it" : "another player")\n"
            var notes: [String] = []
            if r["interrupted"]?.bool == true { notes.append("paused for another player") }
            if r["silenced"]?.bool == true { notes.append("silenced (silent switch or screen lock)") }
            if r["ducked"]?.bool == true { notes.append("lowered while another player plays") }
            if !notes.isEmpty { out += notes.joined(separator: " · ") + "\n" }
            return out
        case "ping": return "pong\n"
        case "version": return "backline \(r["version"]?.string ?? "?") (protocol \(short(r["protocol"] ?? .null)))\n"
        default:
            guard case .object(let fields) = r else { return "" }
            let rest = fields.filter { !["id", "ok"].contains($0.0) }
            if rest.isEmpty { return "ok\n" }
            return rest.map { k, v in
                if case .object = v, k == "current" { return "current: \(itemLine(v))\n" }
                if case .object(let inner) = v { return inner.map { "\($0.0): \(short($0.1))\n" }.joined() }
                return "\(k): \(short(v))\n"
            }.joined()
        }
    }

    /// The sleep timer in words: `off`, `in 29:59`, `at the end of the item`.
    static func sleepText(_ s: JSON?) -> String {
        guard let s, s != .null else { return "off" }
        if s["endOfItem"]?.bool == true { return "at the end of the item" }
        var out = "in \(clock(s["remaining"]?.number, milliseconds: false))"
        if let f = s["fade"]?.number, f > 0 { out += ", fading out over \(Int(f)) s" }
        return out
    }
}

extension String {
    func leftPad(_ n: Int) -> String { String(repeating: " ", count: max(0, n - count)) + self }
}
