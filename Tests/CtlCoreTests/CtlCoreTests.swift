import BacklineSchema
import BacklineWire
import CtlCore
import Testing

/// `backline ctl`'s own logic, without a daemon: its option grammar, the requests it builds,
/// its help and its words for replies and events.
@Suite("ctl without a daemon: syntax, requests, help, words")
struct CtlCoreTests {
    @Test("the plain option grammar: options before the command, each once; anything else is left to the full parser")
    func plainGrammar() throws {
        let c = try #require(CtlInvocation.plain(["--json", "--socket=/run/s", "--partition", "kitchen", "status", "--verbose"]))
        #expect(c.json && c.socket == "/run/s" && c.partition == "kitchen" && c.command == "status" && c.arguments == ["--verbose"])
        #expect(CtlInvocation.plain(["--json", "--json", "status"]) == nil)
        #expect(CtlInvocation.plain(["--socket", "-x", "status"]) == nil)
        #expect(CtlInvocation.plain(["-h"]) == nil)
        #expect(CtlInvocation.plain(["--frobnicate", "status"]) == nil)
    }

    @Test("options after the command are taken out of its arguments; queue is list")
    func trailingOptions() {
        var c = CtlInvocation(socket: nil, json: false, format: nil, command: "queue", arguments: ["--json", "--partition", "bath"])
        c.takeTrailingOptions()
        #expect(c.json && c.partition == "bath" && c.command == "list" && c.arguments.isEmpty)
    }

    @Test("times: seconds, M:SS and H:MM:SS, fractions allowed; minutes and seconds past 59 refused")
    func times() {
        #expect(parseTime("90") == 90)
        #expect(parseTime("1:30") == 90)
        #expect(parseTime("1:02:03.5") == 3723.5)
        #expect(parseTime("1:60") == nil)
        #expect(parseTime("-3") == nil)
        #expect(parseTime("1:2:3:4") == nil)
    }

    /// The members of the request `ctl C A…` makes (nil: the typed builder's).
    func members(_ c: String, _ a: [String]) throws -> [String: JSON]? {
        guard case .command(_, let m)? = try CtlCommands.simple(c, a) else { return nil }
        return Dictionary(uniqueKeysWithValues: m)
    }

    @Test("simple requests: no arguments, an item id, on/off, positions from 1 made indexes from 0")
    func simpleRequests() throws {
        #expect(try members("pause", []) == [:])
        #expect(try members("play", ["7"]) == ["item": .int(7)])
        #expect(try members("shuffle", ["off"]) == ["on": .bool(false)])
        #expect(try members("single", ["each"]) == ["on": .bool(true), "each": .bool(true)])
        #expect(try members("shuffle-queue", ["2", "5"]) == ["start": .int(1), "end": .int(5)])
        #expect(try members("crossfade", ["off"]) == ["seconds": .number(0)])
        #expect(throws: CtlUsage.self) { try CtlCommands.simple("pause", ["now"]) }
        #expect(throws: CtlUsage.self) { try CtlCommands.simple("play", ["0"]) }
        #expect(throws: CtlUsage.self) { try CtlCommands.simple("watch", ["nonsense"]) }
        #expect(try CtlCommands.simple("seek", ["10"]) == nil)  // the typed builder's
    }

    @Test("chapter and bookmarks: next, previous, N from 1 (an index from 0); 0 and words refused; bookmarks clear with and without paths")
    func chapterAndBookmarks() throws {
        #expect(try members("chapter", []) == [:])
        #expect(try members("chapter", ["next"]) == ["to": .string("next")])
        #expect(try members("chapter", ["previous"]) == ["to": .string("previous")])
        #expect(try members("chapter", ["1"]) == ["index": .int(0)])
        #expect(try members("chapter", ["40"]) == ["index": .int(39)])
        for bad in [["0"], ["-1"], ["last"], ["1", "2"]] { #expect(throws: CtlUsage.self) { try CtlCommands.simple("chapter", bad) } }
        #expect(try members("bookmarks", []) == [:])
        #expect(try members("bookmarks", ["clear"]) == ["all": .bool(true)])
        #expect(try members("bookmarks", ["clear", "/m/a.m4b", "/m/b.mp3"]) == ["clear": .array([.string("/m/a.m4b"), .string("/m/b.mp3")])])
        #expect(throws: CtlUsage.self) { try CtlCommands.simple("bookmarks", ["forget"]) }
    }

    @Test("every command without arguments in the schema is built here, under its own name")
    func argumentlessCommands() throws {
        for c in Schema.commands where c.arguments.isEmpty && c.ctl != nil && c.name != "help" {
            guard case .command(let name, let m)? = try CtlCommands.simple(c.name, []) else {
                Issue.record("\(c.name): not built")
                continue
            }
            #expect(name == c.name && m.isEmpty)
        }
    }

    @Test("help: every line fits 80 columns; one command's detail; older names reach the new one")
    func help() throws {
        for line in CtlHelp.all().split(separator: "\n") { #expect(line.count <= 80, "\(line)") }
        #expect(try #require(CtlHelp.detail("find-add")).hasPrefix("usage: backline ctl find-add FILTER"))
        #expect(CtlHelp.detail("findadd") == CtlHelp.detail("find-add"))
        #expect(CtlHelp.canonical("partitions") == "list-partitions")
        #expect(CtlHelp.detail("frobnicate") == nil)
    }

    @Test("events in words: each kind its own line, a kind from a newer daemon its fields")
    func eventLines() {
        #expect(CtlText.eventLine(.object([("event", "state"), ("state", "paused")])) == "state: paused")
        #expect(CtlText.eventLine(.object([("event", "failed"), ("item", 3), ("path", "/m/a.mp3"), ("reason", "broken")]), music: "/m")
                == "failed: a.mp3: broken [id 3]")
        #expect(CtlText.eventLine(.object([("event", "queue"), ("version", 4), ("count", 1)])) == "queue: 1 item (version 4)")
        #expect(CtlText.eventLine(.object([("event", "lyrics"), ("line", "la")])) == "lyrics: line la")
        #expect(CtlText.eventLine(.object([("event", "chapter"), ("item", 2), ("chapter", 1), ("count", 3), ("title", "Tone"), ("start", 1)]))
                == "chapter 2/3: Tone (from 0:01) [id 2]")
        #expect(CtlText.eventLine(.object([("event", "chapter"), ("item", 2), ("chapter", .null), ("count", 3), ("title", .null), ("start", .null)]))
                == "chapter -/3 (before the first) [id 2]")
    }

    @Test("replies in words: ids as ranges, --format's fields, a control character escaped")
    func replies() {
        #expect(CtlText.ranges([1, 2, 3, 5, 7, 8]) == "1–3, 5, 7, 8")
        #expect(CtlText.human("add", .object([("items", .array([1, 2, 3].map(JSON.int))), ("skipped", .array([]))])) == "added 3 items (ids 1–3)\n")
        let status: JSON = .object([("state", "playing"), ("index", 0), ("elapsed", 61.2),
                                    ("current", .object([("id", 9), ("title", "So What"), ("artist", "Miles\u{1B}[2J Davis")]))])
        #expect(CtlText.formatted("%position% %artist% - %title% %elapsed% %nothing%", status) == "1 Miles\\x1B[2J Davis - So What 1:01 %nothing%")
        let chapters: JSON = .object([("chapters", .array([.object([("title", "Opening"), ("start", 0), ("end", 1)]),
                                                            .object([("title", .null), ("start", 61), ("end", .null)])])),
                                      ("chapter", 1)])
        #expect(CtlText.human("chapter", chapters) == "  1. 0:00  Opening\n▶ 2. 1:01  (untitled)\n")
        #expect(CtlText.human("bookmarks", .object([("bookmarks", .array([.object([("path", "/m/b.m4b"), ("position", 75.5), ("duration", 3600)])]))]))
                == "1:16 / 1:00:00  /m/b.m4b\n")
        #expect(CtlText.human("bookmarks", .object([("forgotten", 2)])) == "forgot 2 bookmarks\n")
    }
}
