import ArgumentParser
import Control
import Daemon
import Foundation

/// `backline ctl COMMAND [ARGS]`: one protocol command, from the shell.
struct Ctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Control a running `backline daemon`.",
        discussion: """
            Commands (arguments in [] are optional):
              play [ID]                 pause | toggle | stop | next | previous
              seek SECONDS|+S|-S|M:SS   skip [±SECONDS]
              repeat [off|one|all]      shuffle [on|off]      single [on|off]      rate R
              add PATH… [--at INDEX]    insert INDEX PATH…    remove ID…    move ID INDEX    clear
              list (or queue)           status                now-playing
              volume [N|+N|-N]          mute [on|off]
              session [--category C] [--options a,b] [--silent-switch on|off] [--screen-lock on|off]
              lifecycle [foreground|background]
              sleep MINUTES [--fade S] | sleep --end-of-item | sleep --cancel | sleep
              save NAME                 load NAME             playlists            playlist NAME
              playlist-add NAME PATH…   playlist-delete NAME INDEX   playlist-move NAME FROM TO
              playlist-clear NAME       playlist-remove NAME         playlist-rename NAME NEW
              watch [KIND…]             ping | version | help | send JSON

            Output is for people by default; --json prints the daemon's reply as is. Exit \
            status: 0 done; 1 the daemon refused (its message on stderr); 3 no daemon is running.
            """)

    @Option(name: .long, help: "Control socket (default: $XDG_RUNTIME_DIR/backline/control.sock).")
    var socket: String?

    @Flag(name: .long, help: "Print the daemon's JSON reply (or events) instead of text.")
    var json = false

    @Argument(help: "The command.")
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
        if let i = ctl.arguments.firstIndex(of: "--socket"), i + 1 < ctl.arguments.count {
            ctl.socket = ctl.arguments[i + 1]
            ctl.arguments.removeSubrange(i...(i + 1))
        }
        try ctl.perform()
    }

    private func perform() throws {
        signal(SIGPIPE, SIG_IGN)  // a daemon that goes away is an error to report, not a signal to die of
        let path = socket ?? DaemonConfig.defaults().socketPath
        let client: ControlClient
        do {
            client = try ControlClient(verifiedSocketPath: path)
        } catch {
            Terminal.error("backline ctl: \(error)", tty: false)
            throw ExitCode(3)
        }
        if command == "watch" { return try watch(client) }
        let typed: (any ControlCommand)?
        do {
            typed = try request()
        } catch let e as CommandError {
            Terminal.error("backline ctl: \(e.message) (\(e.code))", tty: false)
            throw ExitCode(1)
        }
        let name = typed?.descriptor.name ?? "send"
        let reply: JSON
        do {
            if let typed {
                guard case .object(let members) = JSONCodec.request(typed) else { throw ExitCode(1) }
                reply = try client.request(name, members.filter { $0.0 != "command" })
            } else {
                guard let raw = arguments.first else { throw ValidationError("send: give a JSON object") }
                try client.sendRaw(Array((raw + "\n").utf8))
                reply = try client.nextReply()
            }
        } catch {
            Terminal.error("backline ctl: \(error)", tty: false)
            throw ExitCode(1)
        }
        if json {
            print(reply.text)
        }
        guard reply["ok"]?.bool == true else {
            let message = reply["error"]?["message"]?.string ?? "the daemon refused"
            let code = reply["error"]?["code"]?.string ?? "error"
            Terminal.error("backline ctl: \(message) (\(code))", tty: false)
            throw ExitCode(1)
        }
        if !json { print(Self.human(name, reply), terminator: "") }
    }

    // MARK: Building the request

    /// The typed command the arguments ask for (the daemon's own command types: what `ctl`
    /// sends is what every protocol runs). Nil for `send` (a raw line).
    private func request() throws -> (any ControlCommand)? {
        var a = arguments
        func onOff(_ s: String?) throws -> Bool? {
            guard let s else { return nil }
            switch s {
            case "on", "yes", "true", "1": return true
            case "off", "no", "false", "0": return false
            default: throw ValidationError("expected on or off, got '\(s)'")
            }
        }
        func int(_ s: String) throws -> Int {
            guard let i = Int(s) else { throw ValidationError("expected an integer, got '\(s)'") }
            return i
        }
        func number(_ s: String) throws -> Double {
            if s.contains(":") {
                let parts = s.split(separator: ":").map { Double($0) }
                guard parts.count <= 3, parts.allSatisfy({ $0 != nil }) else { throw ValidationError("bad time '\(s)'") }
                return parts.reduce(0) { $0 * 60 + $1! }
            }
            guard let d = Double(s) else { throw ValidationError("expected a number, got '\(s)'") }
            return d
        }
        func option(_ name: String) -> String? {
            guard let i = a.firstIndex(of: name), i + 1 < a.count else { return nil }
            let v = a[i + 1]
            a.removeSubrange(i...(i + 1))
            return v
        }
        func flag(_ name: String) -> Bool {
            guard let i = a.firstIndex(of: name) else { return false }
            a.remove(at: i)
            return true
        }
        /// Built from arguments, checked as the daemon checks them.
        func make(_ name: String, _ values: [String: ArgumentValue]) throws -> any ControlCommand {
            guard let d = CommandTable.descriptor(name) else { throw CommandError.unknownCommand("unknown command \"\(name)\" (try \"help\")") }
            return try d.make(Arguments(values))
        }
        switch command {
        case "play": return PlayCommand(item: try a.first.map(int))
        case "list", "queue": return ListCommand()
        case "seek":
            guard let t = a.first else { throw ValidationError("seek: give SECONDS, +SECONDS, -SECONDS or M:SS") }
            if t.hasPrefix("+") || t.hasPrefix("-") {
                let v = try number(String(t.dropFirst()))
                return SeekCommand(target: .offset(t.hasPrefix("-") ? -v : v))
            }
            return SeekCommand(target: .position(try number(t)))
        case "skip": return try make("skip", try a.first.map { ["seconds": .number(try number($0))] } ?? [:])
        case "repeat": return try make("repeat", a.first.map { ["mode": .string($0)] } ?? [:])
        case "shuffle": return ShuffleCommand(on: try onOff(a.first))
        case "single": return SingleCommand(on: try onOff(a.first))
        case "mute": return MuteCommand(on: try onOff(a.first))
        case "rate":
            guard let r = a.first else { throw ValidationError("rate: give a rate") }
            return RateCommand(rate: try number(r))
        case "add":
            let at = option("--at")
            guard !a.isEmpty else { throw ValidationError("add: give at least one path") }
            return try make("add", ["paths": .strings(a)].merging(try at.map { ["position": .integer(try int($0))] } ?? [:]) { $1 })
        case "insert":
            guard a.count >= 2 else { throw ValidationError("insert: give INDEX and at least one path") }
            return try make("insert", ["position": .integer(try int(a[0])), "paths": .strings(Array(a.dropFirst()))])
        case "remove":
            guard !a.isEmpty else { throw ValidationError("remove: give at least one id") }
            return RemoveCommand(ids: try a.map(int))
        case "move":
            guard a.count == 2 else { throw ValidationError("move: give ID and INDEX") }
            return try make("move", ["item": .integer(try int(a[0])), "position": .integer(try int(a[1]))])
        case "volume":
            guard let v = a.first else { return VolumeCommand(change: nil) }
            if v.hasPrefix("+") || v.hasPrefix("-") { return try make("volume", ["change": .number(try number(v))]) }
            return try make("volume", ["volume": .number(try number(v))])
        case "session":
            var values: [String: ArgumentValue] = [:]
            if let c = option("--category") { values["category"] = .string(c) }
            if let o = option("--options") { values["options"] = .strings(o.split(separator: ",").map(String.init)) }
            if let s = option("--silent-switch") { values["silentSwitch"] = .boolean(try onOff(s)!) }
            if let s = option("--screen-lock") { values["screenLocked"] = .boolean(try onOff(s)!) }
            guard a.isEmpty else { throw ValidationError("session: unexpected '\(a[0])'") }
            return try make("session", values)
        case "lifecycle": return try make("lifecycle", a.first.map { ["state": .string($0)] } ?? [:])
        case "sleep":
            if flag("--cancel") { return SleepCommand(action: .cancel) }
            if flag("--end-of-item") { return SleepCommand(action: .endOfItem) }
            var values: [String: ArgumentValue] = [:]
            if let f = option("--fade") { values["fade"] = .number(try number(f)) }
            if let m = a.first { values["minutes"] = .number(try number(m)) }
            return try make("sleep", values)
        case "alarm":
            // `alarm 07:30 [--fade S] [--play ID|--load PLAYLIST] [--daily]`, `alarm --cancel N`, `alarm`.
            if let id = option("--cancel") { return AlarmCommand(action: .cancel(id: try int(id))) }
            var values: [String: ArgumentValue] = [:]
            if let f = option("--fade") { values["fade"] = .number(try number(f)) }
            if let i = option("--play") { values["item"] = .integer(try int(i)) }
            if let p = option("--load") { values["playlist"] = .string(p) }
            if flag("--daily") { values["daily"] = .boolean(true) }
            if let t = a.first { values["time"] = .string(t) }
            guard a.count <= 1 else { throw ValidationError("alarm: unexpected '\(a[1])'") }
            return try make("alarm", values)
        case "send": return nil
        default:
            // Any other command: its arguments in the table's order, each read as its type
            // (the last one, if a list, takes the rest): `ctl playlist-move NAME 0 3`.
            guard let d = CommandTable.descriptor(command) else { return try make(command, [:]) }
            var values: [String: ArgumentValue] = [:]
            var rest = a[...]
            for spec in d.arguments {
                guard let first = rest.first else { break }
                switch spec.type {
                case .string: values[spec.name] = .string(first)
                case .integer: values[spec.name] = .integer(try int(first))
                case .number: values[spec.name] = .number(try number(first))
                case .boolean: values[spec.name] = .boolean(try onOff(first)!)
                case .strings: values[spec.name] = .strings(Array(rest)); rest = []; continue
                case .integers: values[spec.name] = .integers(try rest.map(int)); rest = []; continue
                }
                rest = rest.dropFirst()
            }
            guard rest.isEmpty else { throw ValidationError("\(command): unexpected '\(rest.first!)'") }
            return try d.make(Arguments(values))
        }
    }

    // MARK: Watching

    private func watch(_ client: ControlClient) throws {
        var args: [(String, JSON)] = []
        if !arguments.isEmpty { args.append(("events", .array(arguments.map(JSON.string)))) }
        let reply = try client.request("subscribe", args)
        guard reply["ok"]?.bool == true else {
            Terminal.error("backline ctl: \(reply["error"]?["message"]?.string ?? "subscribe failed")", tty: false)
            throw ExitCode(1)
        }
        while true {
            let event: JSON?
            do { event = try client.nextEvent(timeout: 3600) } catch { return }  // the daemon went away
            guard let e = event else { continue }
            if json { Terminal.line(e.text, tty: false); continue }
            let kind = e["event"]?.string ?? "?"
            guard case .object(let fields) = e else { continue }
            let rest = fields.filter { $0.0 != "event" && $0.0 != "seq" }.map { "\($0.0)=\(Self.short($0.1))" }
            Terminal.line(([kind] + rest).joined(separator: " "), tty: false)
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

    static func itemLine(_ i: JSON) -> String {
        let title = i["title"]?.string ?? "?"
        let artist = i["artist"]?.string.map { " — \($0)" } ?? ""
        let d = i["duration"]?.number.map { " (\(time($0)))" } ?? ""
        let err = i["error"]?.string.map { "  [failed: \($0)]" } ?? ""
        return "\(title)\(artist)\(d)\(err)"
    }

    static func human(_ name: String, _ r: JSON) -> String {
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
            out += "  volume \(short(r["volume"] ?? .null))%\(r["muted"]?.bool == true ? " (muted)" : "")"
            out += " · repeat \(short(r["repeat"] ?? .null)) · shuffle \(r["shuffle"]?.bool == true ? "on" : "off")"
            out += " · single \(r["stopAfterCurrent"]?.bool == true ? "on" : "off")\n"
            out += "  session \(short(session?["category"] ?? .null))"
            if session?["interrupted"]?.bool == true { out += " (interrupted)" }
            if session?["silenced"]?.bool == true { out += " (silenced)" }
            out += " · app \(short(r["app"] ?? .null)) · device \(short(r["device"] ?? .null)) · underruns \(short(r["underruns"] ?? .null))"
            if let s = r["sleep"], s != .null {
                out += s["endOfItem"]?.bool == true ? " · sleep at end of item" : " · sleep in \(time(s["remaining"]?.number))"
            }
            return out + "\n"
        case "list":
            guard let items = r["items"]?.array, !items.isEmpty else { return "(the queue is empty)\n" }
            let width = String(items.count).count
            return items.enumerated().map { n, i in
                let mark = i["current"]?.bool == true ? ">" : " "
                let num = String(n + 1).leftPad(width)
                return "\(mark)\(num). [\(i["id"]?.int ?? 0)] \(itemLine(i))\n"
            }.joined()
        case "now-playing":
            guard let info = r["info"], case .object(let fields) = info else { return "(nothing is playing)\n" }
            return fields.map { k, v in
                if k == "artwork" { return "artwork: \(short(v["mimeType"] ?? .null)), \(short(v["bytes"] ?? .null)) bytes\n" }
                return "\(k): \(short(v))\n"
            }.joined()
        case "playlists":
            let all = r["playlists"]?.array ?? []
            return all.isEmpty ? "(no stored playlists)\n" : all.map { "\($0["name"]?.string ?? "")\n" }.joined()
        case "playlist":
            return (r["items"]?.array ?? []).map { "\($0.string ?? "")\n" }.joined()
        case "browse":
            return (r["entries"]?.array ?? []).map { e in
                let path = e["path"]?.string ?? ""
                guard e["kind"] == "audio", e["title"] != nil else { return e["kind"] == "directory" ? "\(path)/\n" : "\(path)\n" }
                return "\(path)  \(itemLine(e))\n"
            }.joined()
        case "help":
            return (r["commands"]?.array ?? []).map { c in
                let args = (c["arguments"]?.array ?? []).compactMap { $0["name"]?.string }.map { "[\($0)]" }.joined(separator: " ")
                return "\(c["name"]?.string ?? "")\(args.isEmpty ? "" : " " + args)\n    \(c["summary"]?.string ?? "")\n"
            }.joined()
        case "add", "insert":
            let ids = (r["items"]?.array ?? []).compactMap(\.int)
            var out = "added \(ids.count) item\(ids.count == 1 ? "" : "s")" + (ids.isEmpty ? "" : ": ids \(ids.map(String.init).joined(separator: ", "))") + "\n"
            for s in r["skipped"]?.array ?? [] { out += "skipped \(s["path"]?.string ?? ""): \(s["reason"]?.string ?? "")\n" }
            return out
        case "alarm":
            let all = r["alarms"]?.array ?? []
            guard !all.isEmpty else { return "(no alarms)\n" }
            return all.map { a in
                var line = "\(a["id"]?.int ?? 0). \(a["time"]?.string ?? "?")\(a["daily"]?.bool == true ? " daily" : "")"
                if let f = a["fade"]?.number, f > 0 { line += ", fading in over \(Int(f)) s" }
                if let i = a["item"]?.int { line += ", plays item \(i)" }
                if let p = a["playlist"]?.string { line += ", loads \(p)" }
                return line + " (next \(a["next"]?.string ?? "?"))\n"
            }.joined()
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
}

extension String {
    func leftPad(_ n: Int) -> String { String(repeating: " ", count: max(0, n - count)) + self }
}
