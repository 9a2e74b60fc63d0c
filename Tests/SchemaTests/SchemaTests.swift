import BacklineSchema
import BacklineTestSupport
import BacklineWire
import Control
import CtlCore
import Foundation
import Testing
@testable import Daemon
@testable import backline_player

/// The schema is the one list of commands and events: each test here fails when something
/// that names them (a handler, ctl, the MPD table, the web remote, docs/PROTOCOL.md) drifts.
@Suite struct SchemaTests {
    static let names = Schema.commands.map(\.name)
    static let aliases = Schema.commands.flatMap { c in c.aliases.map { ($0, c.name) } }

    @Test("every command of the schema has one handler, in the schema's order, and no handler is outside it")
    func handlers() {
        #expect(CommandTable.all.map(\.name) == Self.names)
        for c in Schema.commands {
            #expect(CommandTable.descriptor(c.name)?.schema.name == c.name, "\(c.name)")
        }
    }

    @Test("command names are one style: kebab-case, unique, no alias shadowing a name")
    func namesAreKebabCase() {
        let kebab = /^[a-z]+(-[a-z]+)*$/
        for n in Self.names { #expect(n.wholeMatch(of: kebab) != nil, "\(n)") }
        #expect(Set(Self.names).count == Self.names.count)
        let all = Self.names + Self.aliases.map(\.0) + Schema.ctlOnly.flatMap { [$0.name] + $0.aliases }
        #expect(Set(all).count == all.count, "a name or alias given twice")
    }

    @Test("the old names still work: each alias reaches its command through the JSON protocol and ctl")
    func oldNamesStillWork() throws {
        #expect(Set(Self.aliases.map(\.0)).isSuperset(of: ["findadd", "newpartition", "delpartition", "listpartitions", "moveoutput"]))
        for (alias, name) in Self.aliases {
            #expect(CommandTable.descriptor(alias)?.name == name, "\(alias)")
            #expect(CtlHelp.canonical(alias) == name, "\(alias)")
            #expect(CtlHelp.detail(alias) == CtlHelp.detail(name), "\(alias)")
            let schema = try #require(Schema.command(alias))
            // A request under the old name builds the same command as under the new one.
            let members = schema.arguments.filter(\.required).map { ($0.name, Self.sample($0)) }
            let old = try JSONCodec.command(.object([("command", .string(alias))] + members))
            let new = try JSONCodec.command(.object([("command", .string(name))] + members))
            #expect(type(of: old) == type(of: new), "\(alias)")
        }
        #expect(CtlHelp.canonical("searchadd") == "search-add")
        #expect(CtlHelp.canonical("queue") == "list")
    }

    @Test("the schema's lookup finds every command by its name and each older name, and nothing else")
    func lookup() {
        for c in Schema.commands {
            for n in [c.name] + c.aliases { #expect(Schema.command(n)?.name == c.name, "\(n)") }
        }
        #expect(Schema.command("frobnicate") == nil)
        #expect(Schema.command("PLAY") == nil)
    }

    @Test("every ctl command parses its example into a request for that command with the schema's arguments (the required ones there), which the daemon's codec takes; help shows it")
    func ctlParsesEveryCommand() throws {
        for c in Schema.commands {
            guard let syntax = c.ctl else { continue }
            #expect(CtlHelp.detail(c.name)?.contains(syntax.usage.split(separator: "\n")[0]) == true, "\(c.name)")
            if c.name == "help" { continue }  // ctl's own, answered without a daemon
            let request = try Ctl.build(c.name, syntax.example)
            guard case .command(let name, let members) = request else { Issue.record("\(c.name): not a request"); continue }
            #expect(name == c.name, "\(c.name) \(syntax.example) built \(name)")
            // ctl sends only the schema's arguments, every required one, and the daemon takes them.
            let known = Set(c.arguments.map(\.name)), sent = Set(members.map(\.0))
            #expect(sent.isSubset(of: known), "\(c.name): ctl sends \(sent.subtracting(known).sorted()), not in the schema")
            for a in c.arguments where a.required { #expect(sent.contains(a.name), "\(c.name): ctl's example sends no \(a.name)") }
            #expect(throws: Never.self, "\(c.name) \(syntax.example)") {
                _ = try JSONCodec.command(.object([("command", .string(name))] + members))
            }
        }
        for c in Schema.ctlOnly {
            #expect(CtlHelp.detail(c.name) != nil, "\(c.name)")
            let request = try Ctl.build(c.name, c.syntax.example)
            if case .command(let name, let members) = request {
                #expect(c.name == "search-add" && name == "find-add" && members.contains { $0.0 == "search" }, "\(c.name)")
            }
        }
    }

    @Test("ctl puts every reply into words by the schema's names: a command with reply fields has its words, one without says ok")
    func ctlReplyWords() {
        for c in Schema.commands where c.ctl != nil && c.name != "help" {
            if c.reply.isEmpty {
                #expect(CtlText.human(c.name, .object([("id", 1), ("ok", true)])) == "ok\n", "\(c.name)")
            } else {
                #expect(CtlText.replyWords(c.name) != nil, "\(c.name) replies \(c.reply) but ctl has no words for it")
            }
        }
    }

    @Test("every event kind is in the schema, ctl watch's list and help, and the wire's EventKind")
    func eventKinds() {
        #expect(Schema.eventKinds == EventKind.allCases.map(\.rawValue))
        #expect(Schema.eventKinds == EventKinds.all)
        let watch = CtlHelp.detail("watch") ?? ""
        for k in Schema.eventKinds { #expect(watch.contains(k), "\(k)") }
        #expect(ControlEvent.kinds == Schema.eventKinds)
    }

    @Test("every MPD name the schema maps a command to is in the MPD table")
    func mpdMapping() {
        let mpd = Set(MPDCommandTable.all.map(\.name))
        for c in Schema.commands {
            for m in c.mpd { #expect(mpd.contains(m), "\(c.name) → \(m)") }
        }
    }

    @Test("the JSON protocol checks arguments as the schema says: required, allowed values, ranges")
    func argumentChecks() throws {
        func refusal(_ members: [(String, JSON)]) -> String? {
            do {
                _ = try JSONCodec.command(.object(members))
                return nil
            } catch {
                #expect(error.code == "bad-argument", "\(members)")
                return error.message
            }
        }
        #expect(refusal([("command", "repeat"), ("mode", "sometimes")]) == "repeat: \"mode\" is off, one or all, not \"sometimes\"")
        #expect(refusal([("command", "priority"), ("priority", 256), ("item", 1)]) == "priority: \"priority\" is 0…255, not 256")
        #expect(refusal([("command", "priority"), ("priority", 255), ("item", 1)]) == nil)
        #expect(refusal([("command", "crossfade"), ("seconds", 3600.5)]) == "crossfade: \"seconds\" is 0…3600, not 3600.5")
        #expect(refusal([("command", "crossfade"), ("seconds", 3600)]) == nil)
        #expect(refusal([("command", "add"), ("path", "a.mp3"), ("position", -1)]) == "add: \"position\" must be ≥ 0")
        #expect(refusal([("command", "playlist-rename"), ("name", "a")]) == "playlist-rename: \"to\" is required")
        #expect(refusal([("command", "session"), ("category", "playback"), ("options", ["duckOthers", "loud"])])
            == "session: \"options\" is mixWithOthers, duckOthers or interruptSpokenAudioAndMixWithOthers, not \"loud\"")
    }

    @Test("docs/PROTOCOL.md has a row for every command (its arguments named) and every event kind, and none for anything else")
    func protocolDocument() throws {
        let text = try String(contentsOf: Harness.packageRoot.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        var commandRows: [String: String] = [:]
        var eventRows: [String: String] = [:]
        var table = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("| command | arguments |") { table = "command" } else if line.hasPrefix("| event |") { table = "event" }
            guard line.hasPrefix("| `") else {
                if !line.hasPrefix("|") { table = "" }
                continue
            }
            let name = String(line.dropFirst(3).prefix { $0 != "`" })
            if table == "command" { commandRows[name] = line } else if table == "event" { eventRows[name] = line }
        }
        for c in Schema.commands {
            guard let row = commandRows[c.name] else { Issue.record("no row for \(c.name)"); continue }
            let cells = row.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            for a in c.arguments {
                #expect(cells.count > 2 && cells[2].contains("`\(a.name)`"), "\(c.name): argument \(a.name) not in its row")
            }
        }
        #expect(Set(commandRows.keys).subtracting(Self.names).isEmpty, "rows for no command: \(Set(commandRows.keys).subtracting(Self.names))")
        #expect(Set(eventRows.keys) == Set(Schema.eventKinds))
    }

    @Test("the web remote names only commands and events of the schema, by their names")
    func webRemote() throws {
        let js = try String(contentsOf: Harness.packageRoot.appendingPathComponent("Resources/web/app.js"), encoding: .utf8)
        let calls = js.matches(of: /(?:call|act)\('([a-z-]+)'/).map { String($0.1) }
        #expect(!calls.isEmpty)
        for c in calls { #expect(Self.names.contains(c), "app.js sends \(c)") }
        let events = try #require(js.firstMatch(of: /const EVENTS = \{([\s\S]*?)\n\};/)).1
        let kinds = events.matches(of: /^  ([a-z]+)[:(]/.anchorsMatchLineEndings()).map { String($0.1) }
        #expect(!kinds.isEmpty)
        for k in kinds { #expect(Schema.eventKinds.contains(k), "app.js handles \(k)") }
    }

    @Test("the daemon serves the schema to the web remote: every command with its older names and arguments, every event kind")
    func servedSchema() throws {
        let served = JSONCodec.schema()
        let commands = try #require(served["commands"]?.array)
        #expect(commands.compactMap { $0["name"]?.string } == Self.names)
        let findAdd = try #require(commands.first { $0["name"]?.string == "find-add" })
        #expect(findAdd["aliases"]?.array == [.string("findadd")])
        let priority = try #require(commands.first { $0["name"]?.string == "priority" }?["arguments"]?.array?.first)
        #expect(priority["required"]?.bool == true && priority["maximum"]?.number == 255)
        #expect(served["events"]?.array?.compactMap(\.string) == Schema.eventKinds)
    }

    static func sample(_ a: ArgumentSchema) -> JSON {
        switch a.type {
        case .string: .string(a.allowed?.first ?? "x")
        case .number: .number(a.range?.lowerBound ?? 1)
        case .integer: .int(Int(a.range?.lowerBound ?? 1))
        case .boolean: .bool(true)
        case .strings: .array([.string(a.allowed?.first ?? "x")])
        case .integers: .array([.int(1)])
        }
    }
}
