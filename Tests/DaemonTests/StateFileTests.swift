import BacklineTestSupport
import BacklineWire
import Control
import Daemon
import Foundation
import PlayQueue
import Testing

/// The state file as an attacker or a bad disk leaves it: every field out of range, random damage,
/// a file that cannot be read, leftovers of killed saves.
@Suite("backline daemon: state file validation")
struct StateFileTests {
    /// A valid state: three items, the second current, shuffled, with history.
    static func valid() -> SavedState {
        SavedState(queue: PlayQueueSnapshot(
            entries: [PlayQueueEntry(id: 1, path: "/m/a.mp3"), PlayQueueEntry(id: 2, path: "/m/b.mp3"), PlayQueueEntry(id: 4, path: "/m/c.mp3")],
            nextID: 5, current: 2, position: 12.5, state: .paused, repeatMode: .all, shuffle: true,
            shuffleOrder: [4, 1, 2], history: [1]), volume: 0.7, muted: false)
    }

    /// The valid state as JSON text with `key` (a dotted path into it) set to `value` (JSON text).
    static func json(setting key: String, to value: String) throws -> String {
        let data = try JSONEncoder().encode(valid())
        var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let parts = key.split(separator: ".").map(String.init)
        let marker = "@@VALUE@@"
        if parts.count == 1 {
            object[parts[0]] = marker
        } else {
            var inner = try #require(object[parts[0]] as? [String: Any])
            if parts.count == 3, var list = inner[parts[1]] as? [[String: Any]] {  // entries.<field> of the first entry
                list[0][parts[2]] = marker
                inner[parts[1]] = list
            } else {
                inner[parts[1]] = marker
            }
            object[parts[0]] = inner
        }
        let text = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        return text.replacingOccurrences(of: "\"\(marker)\"", with: value)
    }

    /// An alarms array of one valid alarm (fires in an hour) with `fields` (JSON members) in
    /// place of its own.
    static func alarm(_ fields: String) -> String {
        var members = ["id": "1", "hour": "7", "minute": "30", "second": "0", "daily": "true", "fade": "20",
                       "next": "\(Date().addingTimeInterval(3600).timeIntervalSinceReferenceDate)"]
        for member in fields.split(separator: ",") where member.contains(":") {
            let kv = member.split(separator: ":", maxSplits: 1)
            members[kv[0].trimmingCharacters(in: CharacterSet(charactersIn: "\""))] = String(kv[1])
        }
        return "[{" + members.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}]"
    }

    func store() throws -> (StateStore, String) {
        let dir = try Harness.makeTemporaryDirectory("state-file")
        let path = dir.path + "/state.json"
        return (StateStore(path: path), path)
    }

    @Test("every field out of range is refused, named, and the file moved aside untouched; the valid file loads")
    func badFields() throws {
        let (store, path) = try store()
        try JSONEncoder().encode(Self.valid()).write(to: URL(fileURLWithPath: path))
        guard case .state(let loaded) = store.load() else { Issue.record("the valid state did not load"); return }
        #expect(loaded == Self.valid())
        // Bookmarks round-trip.
        var marked = Self.valid()
        marked.bookmarks = ["/m/book.m4b": Bookmark(position: 1234.5, duration: 7200, saved: 1_800_000_000)]
        try store.save(marked)
        guard case .state(let reloaded) = store.load() else { Issue.record("the state with bookmarks did not load"); return }
        #expect(reloaded == marked)

        let cases: [(key: String, value: String, named: String)] = [
            ("queue.position", "2.2e14", "queue.position"), ("queue.position", "1e15", "queue.position"),
            ("queue.position", "1e18", "queue.position"), ("queue.position", "-1", "queue.position"),
            ("queue.position", "1e400", "not valid JSON"),  // beyond a Double: Foundation's parser refuses the file
            ("volume", "1e300", "volume"), ("volume", "-0.5", "volume"), ("volume", "1.5", "volume"),
            ("queue.entries", #"[{"id":4,"path":"/m/a.mp3"},{"id":4,"path":"/m/b.mp3"}]"#, "appears twice"),
            ("queue.entries.id", "0", "queue.entries[0].id"), ("queue.entries.id", "-3", "queue.entries[0].id"),
            ("queue.entries.id", "9999999999999", "queue.entries[0].id"),
            ("queue.entries.path", #""relative.mp3""#, "queue.entries[0].path"),
            ("queue.nextID", "0", "queue.nextID"), ("queue.nextID", "2147483648", "queue.nextID"),
            ("queue.current", "3", "queue.current"), ("queue.entries.priority", "256", "queue.entries[0].priority"),
            ("queue.version", "-1", "queue.version"),
            ("alarms", Self.alarm(#""next":1e19"#), "alarms[0].next"), ("alarms", Self.alarm(#""hour":1000000000000"#), "alarms[0].hour"),
            ("alarms", Self.alarm(#""fade":1e308"#), "alarms[0].fade"), ("alarms", Self.alarm(#""minute":60"#), "alarms[0].minute"),
            ("alarms", Self.alarm(#""second":-1"#), "alarms[0].second"), ("alarms", Self.alarm(#""id":0"#), "alarms[0].id"),
            ("alarms", Self.alarm(#""item":-4"#), "alarms[0].item"), ("alarms", Self.alarm(#""playlist":"../x""#), "alarms[0].playlist"),
            ("alarms", "[" + Array(repeating: Self.alarm("")[...].dropFirst().dropLast(), count: 2).joined(separator: ",") + "]", "appears twice"),
            ("alarms", "[" + (1...101).map { Self.alarm(#""id":\#($0)"#).dropFirst().dropLast() }.joined(separator: ",") + "]", "more than 100"),
            ("queue.shuffleOrder", "[4,1,9]", "queue.shuffleOrder"), ("queue.shuffleOrder", "[4,4,1]", "queue.shuffleOrder"),
            ("queue.history", "[7]", "queue.history"), ("queue.repeatMode", #""sometimes""#, "repeatMode"),
            ("queue.state", "17", "state"), ("muted", #""yes""#, "muted"),
            ("bookmarks", #"{"/m/book.m4b":{"position":-1,"saved":0}}"#, "bookmarks[/m/book.m4b].position"),
            ("bookmarks", #"{"/m/book.m4b":{"position":1e15,"saved":0}}"#, "bookmarks[/m/book.m4b].position"),
        ]
        for c in cases {
            let text = try Self.json(setting: c.key, to: c.value)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            guard case .movedAside(let reason, let aside) = store.load() else {
                Issue.record("\(c.key) = \(c.value) was accepted")
                continue
            }
            #expect(reason.contains(c.named), "\(c.key) = \(c.value): \(reason)")
            #expect(!FileManager.default.fileExists(atPath: path))
            #expect(try String(contentsOfFile: aside, encoding: .utf8) == text, "kept as it was")
            try FileManager.default.removeItem(atPath: aside)
        }
    }

    @Test("random damage to a valid file: every load either restores a valid state or moves the file aside (500 seeded cases)")
    func randomDamage() throws {
        let (store, path) = try store()
        let original = Array(try JSONEncoder().encode(Self.valid()))
        var rng = SplitMix64(seed: 0xBAC7_11E5)
        var restored = 0, refused = 0
        for _ in 0..<500 {
            var bytes = original
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let i = Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 3 {
                case 0: bytes[i] = UInt8(truncatingIfNeeded: rng.next())
                case 1: bytes[i] = Array("0123456789e-.".utf8)[Int(rng.next() % 13)]
                default: bytes.remove(at: i)
                }
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            switch store.load() {
            case .state(let s):
                #expect(s.problem == nil)
                restored += 1
            case .movedAside(_, let aside):
                refused += 1
                try? FileManager.default.removeItem(atPath: aside)
            case .none, .unreadable:
                Issue.record("a damaged regular file was neither loaded nor moved aside")
            }
        }
        #expect(refused > 0 && restored + refused == 500)
    }

    @Test("a saved position of 1e18 no longer kills the daemon at every start: it starts empty and names the field")
    func hugePositionDaemon() throws {
        let d = try DaemonFixture(device: "null", config: PersistenceTests.config)
        try FileManager.default.createDirectory(atPath: (d.stateFile as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var s = Self.valid()
        s.queue.position = 1e18
        s.queue.entries = [PlayQueueEntry(id: 1, path: d.music + "/long.mp3")]
        (s.queue.current, s.queue.shuffleOrder, s.queue.history, s.queue.nextID) = (1, [], [], 2)
        try JSONEncoder().encode(s).write(to: URL(fileURLWithPath: d.stateFile))
        try d.start()
        #expect(try d.request("status")["count"] == 0)
        #expect(d.log().contains("queue.position"), "\(d.log())")
        d.expectCleanStop()
        try d.start()  // and again: the bad file is out of the way
        d.expectCleanStop()
    }

    @Test("a state file that cannot be read (a FIFO, a directory) stops the daemon with the reason and is never replaced")
    func unreadable() throws {
        for kind in ["FIFO", "directory"] {
            let d = try DaemonFixture(device: "null", config: PersistenceTests.config)
            try FileManager.default.createDirectory(atPath: (d.stateFile as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            if kind == "FIFO" { #expect(mkfifo(d.stateFile, 0o600) == 0) } else {
                try FileManager.default.createDirectory(atPath: d.stateFile, withIntermediateDirectories: false)
            }
            let r = try runProcess(backline, ["daemon", "--music-dir", d.music, "--device", "null", "--config", d.configFile],
                                   environment: d.environment, timeout: 20)
            #expect(r.status == 1, "\(kind): \(r.status)")
            #expect(r.stderr.contains("not a regular file (a \(kind == "FIFO" ? "FIFO" : "directory"))") && r.stderr.contains("not starting"),
                    "\(kind): \(r.stderr)")
            var st = stat()
            #expect(lstat(d.stateFile, &st) == 0 && st.st_mode & S_IFMT == (kind == "FIFO" ? S_IFIFO : S_IFDIR), "\(kind) left in place")
        }
    }

    @Test("a save under a path whose parent is a file names the real reason (it said 'Transport endpoint is not connected')")
    func saveErrno() throws {
        let (_, path) = try store()
        try "a file".write(toFile: path, atomically: true, encoding: .utf8)
        let under = StateStore(path: path + "/backline/state.json")
        #expect { try under.save(Self.valid()) } throws: { error in
            "\(error)".contains("Not a directory") && "\(error)".contains("cannot create the directory")
        }
    }

    @Test("temporary files of killed saves are removed at start; one of a running process is not")
    func staleTemporaries() throws {
        let d = try DaemonFixture(device: "null", config: PersistenceTests.config)
        let dir = (d.stateFile as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        // A pid that is not running: one past the largest possible.
        let dead = d.stateFile + ".tmp-4194305", alive = d.stateFile + ".tmp-\(getpid())"
        for f in [dead, alive] { try "partial".write(toFile: f, atomically: false, encoding: .utf8) }
        try d.start()
        #expect(!FileManager.default.fileExists(atPath: dead), "a killed save's leftover is removed")
        #expect(FileManager.default.fileExists(atPath: alive), "a running process's file is left alone")
        #expect(d.log().contains("removed a temporary file"), "\(d.log())")
        d.expectCleanStop()
    }
}

extension DaemonFixture {
    /// Writes, before ``start(_:)``, a state file whose queue holds `names` (files in the music
    /// directory, ids 1, 2, …), the first current at its start, not shuffled: a queue an
    /// earlier daemon saved.
    func saveQueue(_ names: [String]) throws {
        try FileManager.default.createDirectory(atPath: (stateFile as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var s = StateFileTests.valid()
        s.queue.entries = names.enumerated().map { PlayQueueEntry(id: $0.offset + 1, path: music + "/" + $0.element) }
        (s.queue.current, s.queue.position, s.queue.shuffle, s.queue.shuffleOrder, s.queue.history, s.queue.nextID) = (1, 0, false, [], [], names.count + 1)
        try JSONEncoder().encode(s).write(to: URL(fileURLWithPath: stateFile))
    }
}
