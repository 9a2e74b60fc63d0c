import BacklineTestSupport
import Foundation
@testable import Library
import Locking
import MediaCore
import Synchronization
import Testing

/// Scans of generated trees, in process: what the database holds, incremental rescans, moves,
/// special files, damaged and newer databases.
@Suite struct ScanTests {
    static func database() throws -> String {
        try Harness.makeTemporaryDirectory("backline-library").appendingPathComponent("library.sqlite").path
    }

    func scan(_ lib: MusicLibrary, _ path: String = "", rescan: Bool = false,
              sourceLocation: SourceLocation = #_sourceLocation) throws -> LibraryUpdate {
        let job = try lib.update(path, rescan: rescan)
        #expect(lib.waitForUpdates(timeout: 300), sourceLocation: sourceLocation)
        let last = try #require(lib.lastUpdate, sourceLocation: sourceLocation)
        #expect(last.job == job, sourceLocation: sourceLocation)
        #expect(last.error == nil, sourceLocation: sourceLocation)
        return last
    }

    @Test("a full scan: every song once with its tags; broken, special and unnamed files recorded with their reasons, none fatal")
    func fullScan() throws {
        let tree = try MusicTree.shared(songs: 2000)
        let lib = try MusicLibrary(path: Self.database(), musicDirectory: tree.path)
        let u = try scan(lib)
        #expect(u.done && u.added == 2002 && u.removed == 0)  // 2001 songs and the broken file
        let stats = try lib.stats()
        #expect(stats.songs == 2001)
        #expect(stats.artists == 51)  // 50 artist names and Joe Dassin
        let bad = Dictionary(try lib.unreadable().map { ($0.path, $0.reason) }, uniquingKeysWith: { a, _ in a })
        #expect(bad["Singles/broken.flac"]?.isEmpty == false)
        #expect(bad["x.flac"] == "not a regular file (a FIFO)")
        #expect(bad["Singles/caf\\xE9.mp3"] == "the file name is not valid UTF-8")
        #expect(bad["Singles/outside.flac"] == "a symbolic link out of the music directory")
        #expect(bad["Sigur Rós/loop"] == "a link to a directory already in the library (a loop)")
        #expect(bad.count == 5)
        // Two artists are two artists (a compilation's every third track).
        let two = try lib.songs(.tag(.albumArtist, .equals, "Various Artists", fold: false)).filter { $0.values(.artist).count == 2 }
        #expect(!two.isEmpty)
        for s in two {
            #expect(try lib.songs(.tag(.artist, .equals, s.values(.artist)[1], fold: false)).contains { $0.id == s.id })
        }
        // Two discs: CD1's tracks before CD2's, each by track number (walk order).
        let discs = try lib.songs(.base("Miles Davis")).filter { $0.path.contains("/CD") }
        #expect(!discs.isEmpty)
        let order = discs.map { [Int($0.first(.disc) ?? "0")!, Int($0.first(.track) ?? "0")!] }
        #expect(order == order.sorted { $0.lexicographicallyPrecedes($1) })
        // A song without any tag is in the library, listed with "" for its tags.
        #expect(try lib.values(.artist).contains([""]))
    }

    @Test("incremental: an unchanged tree is not read again; a file added, changed, removed and moved is found; ids and Added stay with a moved file")
    func incremental() throws {
        let tree = try MusicTree.fresh(songs: 60)
        let lib = try MusicLibrary(path: Self.database(), musicDirectory: tree.path)
        let first = try scan(lib)
        #expect(first.added == 60)
        let again = try scan(lib)
        #expect(again.scanned == 60 && again.added == 0 && again.updated == 0 && again.removed == 0 && !again.changed)

        let all = try lib.songs()
        let flacs = all.filter { $0.path.hasSuffix(".flac") }
        let moving = all[0], removing = all[1], changing = try #require(flacs.last)
        let fm = FileManager.default
        // Moved into another album's folder (same inode, size and time).
        let target = (all.last!.path as NSString).deletingLastPathComponent + "/moved here.flac"
        try fm.moveItem(atPath: tree.path + "/" + moving.path, toPath: tree.path + "/" + target)
        try fm.removeItem(atPath: tree.path + "/" + removing.path)
        // Changed: a new title, written by the reference tool (size and time change).
        let changed = tree.path + "/" + changing.path
        #expect(try runProcess("metaflac", ["--remove-tag=TITLE", "--set-tag=TITLE=Changed title", changed]).status == 0)
        let mtime = Date().addingTimeInterval(5)
        try fm.setAttributes([.modificationDate: mtime], ofItemAtPath: changed)
        // Added: a copy of a song under a new name.
        try fm.copyItem(atPath: tree.path + "/" + all[3].path, toPath: tree.path + "/" + all[3].path + ".copy." + (all[3].path as NSString).pathExtension)

        let u = try scan(lib)
        #expect(u.moved == 1 && u.removed == 1 && u.updated == 1 && u.added == 1, "\(u)")
        let moved = try #require(try lib.song(target))
        #expect(moved.id == moving.id && moved.added == moving.added && moved.tags == moving.tags)
        #expect(try lib.song(moving.path) == nil && lib.song(removing.path) == nil)
        let after = try #require(try lib.song(changing.path))
        #expect(after.id == changing.id && after.first(.title) == "Changed title")
        #expect(try lib.stats().songs == 60)

        // Renamed within its directory: the same song; hard links: a song each.
        let renaming = all[5]
        let renamed = (renaming.path as NSString).deletingLastPathComponent + "/renamed." + (renaming.path as NSString).pathExtension
        try fm.moveItem(atPath: tree.path + "/" + renaming.path, toPath: tree.path + "/" + renamed)
        try fm.linkItem(atPath: tree.path + "/" + all[6].path, toPath: tree.path + "/" + all[6].path + ".link." + (all[6].path as NSString).pathExtension)
        let r = try scan(lib)
        #expect(r.moved == 1 && r.added == 1 && r.removed == 0, "\(r)")
        #expect(try lib.song(renamed)?.id == renaming.id)
        #expect(try lib.song(all[6].path)?.id == all[6].id)

        // A scan of one directory touches that directory only.
        let dir = (all[10].path as NSString).deletingLastPathComponent
        try fm.removeItem(atPath: tree.path + "/" + all[10].path)
        let sub = try scan(lib, dir)
        #expect(sub.removed == 1 && sub.scanned < 20)
        // A directory removed: its songs leave.
        let gone = (all[20].path as NSString).deletingLastPathComponent
        let inIt = try lib.songs(.base(gone)).count
        try fm.removeItem(atPath: tree.path + "/" + gone)
        let removal = try scan(lib)
        #expect(removal.removed == inIt && inIt > 0)
        #expect(throws: LibraryError.self) { try lib.songs(.base(gone)) }
        // A rescan reads every file again, changing nothing.
        let re = try scan(lib, rescan: true)
        #expect(re.updated == re.scanned && re.added == 0 && re.removed == 0)
    }

    @Test("names holding a control character (a newline that would forge MPD lines, a terminal escape, in a file's and a directory's name) are skipped, recorded with the name escaped; their neighbours are scanned")
    func controlCharacterNames() throws {
        let tree = try Harness.makeTemporaryDirectory("backline-control-names")
        let song = try Fixtures.tone("scan-control-name", seconds: 1)
        let fm = FileManager.default
        try fm.createDirectory(atPath: tree.path + "/ok\u{1B}[2J", withIntermediateDirectories: true)
        for name in ["plain.mp3", "evil\nOK\nfile: injected.mp3.mp3", "title\u{1B}]0;pwned\u{07}.mp3", "ok\u{1B}[2J/inside.mp3"] {
            try fm.copyItem(atPath: song.path, toPath: tree.path + "/" + name)
        }
        let lib = try MusicLibrary(path: Self.database(), musicDirectory: tree.path)
        _ = try scan(lib)
        #expect(try lib.songs().map(\.path) == ["plain.mp3"])
        let bad = Dictionary(try lib.unreadable().map { ($0.path, $0.reason) }, uniquingKeysWith: { a, _ in a })
        #expect(bad == ["evil\\x0AOK\\x0Afile: injected.mp3.mp3": "the file name holds a control character",
                        "title\\x1B]0;pwned\\x07.mp3": "the file name holds a control character",
                        "ok\\x1B[2J": "the file name holds a control character"], "\(bad)")
    }

    @Test("a damaged database, or one missing a table of its schema, is moved aside and rebuilt; one missing an index has it made again in place, its songs kept; one from a newer schema is refused, untouched")
    func damagedAndNewer() throws {
        let tree = try MusicTree.fresh(songs: 12)
        let path = try Self.database()
        do {
            let lib = try MusicLibrary(path: path, musicDirectory: tree.path)
            _ = try scan(lib)
            #expect(try lib.stats().songs == 12)
            lib.stop()
        }
        // Garbage over its pages (the header kept: SQLite must find the damage itself).
        let fd = open(path, O_WRONLY)
        let junk = [UInt8](repeating: 0xA5, count: 8192)
        _ = pwrite(fd, junk, junk.count, 4096)
        close(fd)
        let reopened = try MusicLibrary(path: path, musicDirectory: tree.path)
        #expect(reopened.recovered == path + ".corrupt-1")
        #expect(FileManager.default.fileExists(atPath: path + ".corrupt-1"))
        _ = try scan(reopened)
        #expect(try reopened.stats().songs == 12)
        reopened.stop()

        // A table dropped (SQLite's check finds nothing wrong: every scan failed with "no such
        // table"): moved aside, named, rebuilt.
        let python = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()"
        #expect(try runProcess("/usr/bin/python3", ["-c", python, path, "DROP TABLE songs"]).status == 0)
        let rebuilt = try MusicLibrary(path: path, musicDirectory: tree.path)
        #expect(rebuilt.recovered == path + ".corrupt-2" && rebuilt.rebuiltIndexes.isEmpty)
        #expect(rebuilt.recoveredBecause?.contains("table songs ON songs") == true, "\(rebuilt.recoveredBecause ?? "nil")")
        #expect(try rebuilt.stats().songs == 0)
        _ = try scan(rebuilt)
        #expect(try rebuilt.stats().songs == 12)
        rebuilt.stop()
        // An index dropped: made again in place (it holds nothing its table does not), the
        // songs kept, nothing moved aside.
        #expect(try runProcess("/usr/bin/python3", ["-c", python, path, "DROP INDEX tags_value"]).status == 0)
        let repaired = try MusicLibrary(path: path, musicDirectory: tree.path)
        #expect(repaired.recovered == nil && repaired.recoveredBecause == nil)
        #expect(repaired.rebuiltIndexes == ["index tags_value ON tags"])
        #expect(!FileManager.default.fileExists(atPath: path + ".corrupt-3"))
        #expect(try repaired.stats().songs == 12)
        #expect(try repaired.count(.tag(.title, .equals, try #require(repaired.songs().first?.first(.title)), fold: false)).songs >= 1)
        repaired.stop()
        let again = try MusicLibrary(path: path, musicDirectory: tree.path)
        #expect(again.recovered == nil && again.rebuiltIndexes.isEmpty)
        again.stop()

        // A database of schema 99 (a newer Backline's).
        let newer = try Self.database()
        #expect(try runProcess("/usr/bin/python3", ["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version = 99'); c.commit()", newer]).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: newer))
        #expect { try MusicLibrary(path: newer, musicDirectory: tree.path) } throws: { e in
            (e as? LibraryError)?.kind == .newerSchema && "\(e)".contains("newer Backline (schema 99")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: newer)) == before)
    }

    @Test("filters: mpd's expressions and pairs parse, bad ones fail with mpd's words")
    func filters() throws {
        #expect(try SongFilter.parse(["(Artist == 'A B')"], fold: false) == .tag(.artist, .equals, "A B", fold: false))
        #expect(try SongFilter.parse(["((artist == \"x\\\"y\") AND (!(Genre contains 'Rock')))"], fold: true)
            == .and([.tag(.artist, .equals, "x\"y", fold: true), .not(.tag(.genre, .contains, "Rock", fold: true))]))
        #expect(try SongFilter.parse(["(base 'a/b')"], fold: false) == .base("a/b"))
        #expect(try SongFilter.parse(["(modified-since '2024-05-01T00:00:00Z')"], fold: false) == .modifiedSince(1_714_521_600))
        #expect(try SongFilter.parse(["(modified-since '1714521600')"], fold: false) == .modifiedSince(1_714_521_600))
        #expect(try SongFilter.parse(["artist", "X", "any", "y"], fold: true)
            == .and([.tag(.artist, .contains, "X", fold: true), .tag(nil, .contains, "y", fold: true)]))
        for (bad, message) in [("(foo == 'x')", "Unknown filter type: foo"), ("(artist == x)", "Quoted string expected"),
                               ("(artist == 'x'", "')' expected"), ("()", "Word expected"), ("(artist 'x')", "Unknown filter operator"),
                               ("((artist == 'x') and (album == 'y'))", "'AND' expected"), ("(artist == 'x", "Closing quote not found")] {
            #expect { try SongFilter.parse([bad], fold: false) } throws: { ($0 as? LibraryError)?.message == message }
        }
        #expect(Fold.key("BJÖRK Ångström Ñandú") == "bjork angstrom nandu")
    }

    @Test("filters a remote client could use against the daemon (fuzz findings): a modified-since past 2262 is the latest time, not a trap; a regular expression that would take gigabytes to compile, or a back-reference, is refused with the reason; filters nested past 16 levels or of more than 256 conditions are refused; ordinary ones work")
    func hostileFilters() throws {
        let tree = try Harness.makeTemporaryDirectory("hostile-filters")
        let lib = try MusicLibrary(path: Self.database(), musicDirectory: tree.path)
        #expect(try lib.songs(try SongFilter.parse(["(modified-since '99999999999999')"], fold: false)).isEmpty)
        #expect(try lib.count(try SongFilter.parse(["(modified-since '-99999999999999')"], fold: false)).songs == 0)
        for (pattern, reason) in [("u" + String(repeating: "+", count: 30), "a repetition of a repetition"), ("(a*?)", "a repetition of a repetition"),
                                  (String(repeating: "(", count: 20) + "a+" + String(repeating: ")+", count: 20), "too many repetitions"),
                                  ("(a{1,200}){1,200}", "too many repetitions"), ("(a)\\1", "back-references"),
                                  (String(repeating: "a", count: 2000), "longer than 1024 bytes")] {
            #expect { try lib.songs(.tag(.title, .matches, pattern, fold: false)) } throws: { e in
                (e as? LibraryError)?.kind == .badFilter && "\(e)".contains(reason)
            }
        }
        for ok in ["^a.*b$", "[[:alpha:]]+ (live|remix)?", "x{2,5}", "[]a]+", "(ab|cd)*e"] {
            #expect(try lib.songs(.tag(.title, .matches, ok, fold: true)).isEmpty, "\(ok)")
        }
        #expect(Fold.key("Ελένη") == "ελενη")
        // Nesting and size (fuzz findings: 2,600 `(` overflowed the stack; 24 nested conditions
        // overflowed SQLite's parser, 1,000 its expression depth): 16 levels and 256 conditions
        // run, one more is refused with the reason; conjunctions inside conjunctions are one.
        func nested(_ levels: Int) -> String {
            String(repeating: "(!", count: levels - 1) + "(AlbumArtistSort =~ 'x')" + String(repeating: ")", count: levels - 1)
        }
        func refused(_ filter: @autoclosure () throws(LibraryError) -> SongFilter, _ reason: String) {
            #expect { _ = try lib.songs(try filter()) } throws: { e in
                (e as? LibraryError)?.kind == .badFilter && "\(e)".contains(reason)
            }
        }
        #expect(try lib.songs(try SongFilter.parse([nested(16)], fold: false)).isEmpty)
        refused(try SongFilter.parse([nested(17)], fold: false), "nested too deeply (at most 16 levels)")
        refused(try SongFilter.parse([nested(2600)], fold: false), "nested too deeply (at most 16 levels)")
        let leaf = SongFilter.tag(.albumArtistSort, .matches, "x", fold: false)
        var chain = leaf
        for _ in 0..<200 { chain = .and([leaf, chain]) }
        #expect(try lib.count(chain).songs == 0, "200 nested conjunctions are one conjunction of 201 conditions")
        let pairs = (0..<256).flatMap { _ in ["albumartistsort", "x"] }
        #expect(try lib.songs(try SongFilter.parse(pairs, fold: true)).isEmpty)
        refused(try SongFilter.parse(pairs + ["title", "y"], fold: true), "too many conditions (at most 256)")
    }
    /// `body`'s result, run on a thread of its own, or nil when it has not ended within
    /// `seconds` (a query that would run for minutes fails the test instead of holding it).
    func within<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () -> T) -> T? {
        let done = DispatchSemaphore(value: 0)
        let box = Lock<T?>(nil)
        Thread.detachNewThread {
            let value = body()
            box.withLock { $0 = value }
            done.signal()
        }
        return done.wait(timeout: .now() + seconds) == .success ? box.withLock { $0 } : nil
    }

    @Test("a regular expression costs at most the text's length times its size: `(a+)+$` over 30,000-character titles answers at once; one that needs more than a query's steps fails with the reason; a query cancelled before it runs, or while it runs (in its regular expression's steps, and in SQLite's progress handler), stops; POSIX's and PCRE's common syntax")
    func regexCost() throws {
        let tree = try Harness.makeTemporaryDirectory("regex-cost")
        let source = try FormatFixtures.longTitles(in: tree, copies: 12)
        for (i, title) in ["Love Song", "Café del Mar", "Track 12", "the end.", "Ab_c d"].enumerated() {
            let f = try FormatFixtures.flac("regex-cost-\(i)", from: source, args: ["-T", "TITLE=\(title)"])
            try FileManager.default.copyItem(at: f, to: tree.appendingPathComponent("s\(i).flac"))
        }
        let lib = try MusicLibrary(path: Self.database(), musicDirectory: tree.path)
        _ = try scan(lib)
        #expect(try lib.count().songs == 29)

        // Backtracking tries every way to split the a's between the groups (glibc took 5 s a
        // title, minutes for these 24); the automaton follows its few states along each title.
        let found = within(120) { Result { () throws(LibraryError) in try lib.count(.tag(.title, .matches, "(a+)+$", fold: false)).songs } }
        #expect(try #require(found).get() == 12)
        // 500 copies of `.*a`, all alive along a title of a's, never matching: 30 million steps
        // a title, more than a query's 100 million by the fourth. Refused with the reason, not run for hours.
        let costly = within(120) { Result { () throws(LibraryError) in try lib.songs(.tag(.title, .matches, "(.*a){1,500}b", fold: false)) } }
        #expect { try #require(costly).get() } throws: { e in
            (e as? LibraryError)?.kind == .badFilter && "\(e)".contains("regular expression too costly")
        }
        // The budget is the query's: the next one has its own.
        #expect(try lib.count(.tag(.title, .matches, "^Love", fold: false)).songs == 1)
        // A query whose client has gone stops.
        let gone = QueryCancellation()
        gone.cancel()
        #expect { try lib.songs(.tag(.title, .matches, "a$", fold: false), cancellation: gone) } throws: { e in
            (e as? LibraryError)?.kind == .cancelled
        }
        #expect(try lib.values(.title, filter: .tag(.title, .matches, "^the", fold: true), cancellation: QueryCancellation()) == [["the end."]])
        // Cancelled 0.2 s after it began: what the query ended with, and whether it ended within
        // 10 s of the cancellation.
        func cancelledWhileRunning(_ sql: String) -> String {
            let token = QueryCancellation()
            let started = DispatchSemaphore(value: 0), ended = DispatchSemaphore(value: 0)
            let outcome = Lock<String>("")
            Thread.detachNewThread {
                let r: String
                do throws(LibraryError) {
                    let n = try lib.read(cancellation: token) { db throws(SQLiteError) in
                        started.signal()
                        return try db.integer(sql)
                    }
                    r = "answered \(n ?? -1)"
                } catch {
                    r = error.kind.rawValue
                }
                outcome.withLock { $0 = r }
                ended.signal()
            }
            started.wait()
            Thread.sleep(forTimeInterval: 0.2)
            token.cancel()
            guard ended.wait(timeout: .now() + 10) == .success else { return "not stopped within 10 s" }
            return outcome.withLock { $0 }
        }
        // Its regular expression's steps (100 million: seconds) see it...
        #expect(cancelledWhileRunning("SELECT count(*) FROM tags t WHERE bl_regexp('(.*a){1,500}b', t.value, 0)") == "cancelled")
        // ...and so does SQLite's progress handler, in a statement that calls none (a billion rows).
        #expect(cancelledWhileRunning("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT count(*) FROM c") == "cancelled")

        // The syntax: POSIX's extended expressions, case-insensitive for `search`, with PCRE's
        // `\d \w \s \b`.
        func titles(_ pattern: String, fold: Bool = false) throws -> [String] {
            try lib.songs(.tag(.title, .matches, pattern, fold: fold)).compactMap { $0.tags.first { $0.key == .title }?.value }
                .filter { $0.count < 100 }.sorted()
        }
        #expect(try titles("^love", fold: true) == ["Love Song"])
        #expect(try titles("^love") == [])
        #expect(try titles("CAFÉ", fold: true) == ["Café del Mar"])
        #expect(try titles("[[:digit:]]{2}$") == ["Track 12"])
        #expect(try titles("\\d+") == ["Track 12"])
        #expect(try titles("\\.$") == ["the end."])
        #expect(try titles(".$") == ["Ab_c d", "Café del Mar", "Love Song", "Track 12", "the end."])
        #expect(try titles("^(Love|Track) ") == ["Love Song", "Track 12"])
        #expect(try titles("\\bd") == ["Ab_c d", "Café del Mar"])
        #expect(try titles("\\<c") == [])
        #expect(try titles("b_c\\b") == ["Ab_c d"])
        #expect(try titles("^[^LT]") == ["Ab_c d", "Café del Mar", "the end."])
        #expect(try titles("[a-c]_[[:alpha:]]") == ["Ab_c d"])
        #expect(try titles("s?o{1,2}n[g]") == ["Love Song"])
        #expect(try titles("^$|x*Q") == [])
        // A negated bracket with folding takes a character only when no case of it is listed
        // (glibc's REG_ICASE and PCRE's caseless alike); without folding, case counts.
        #expect(try titles("^[^l]", fold: true) == ["Ab_c d", "Café del Mar", "Track 12", "the end."])
        #expect(try titles("^[^L]", fold: true) == ["Ab_c d", "Café del Mar", "Track 12", "the end."])
        #expect(try titles("^[^l]") == ["Ab_c d", "Café del Mar", "Love Song", "Track 12", "the end."])
        #expect(try lib.count(.tag(.title, .matches, "^[^A-Z]+$", fold: true)).songs == 0)
        #expect(try lib.count(.tag(.title, .matches, "^[^A-Z]+$", fold: false)).songs == 25)  // the a's, the a's then !, "the end."
        #expect(try titles("^[^A-Z]", fold: false) == ["the end."])
        #expect(try titles("^[^[:upper:]]", fold: true) == [])
        #expect(try titles("^[^[:upper:]]") == ["the end."])
        // An assertion that may be absent (`?`, `*`, `{0,…}`) need not hold; one required (`+`) must.
        #expect(try titles("(^)?o") == ["Love Song"])
        #expect(try titles("^?e") == ["Café del Mar", "Love Song", "the end."])
        #expect(try titles("^*T") == ["Track 12"])
        #expect(try titles("^+T") == ["Track 12"])
        #expect(try titles("^+e") == [])
        #expect(try titles("S\\b?o") == ["Love Song"])
        #expect(try titles("S\\bo") == [])
        #expect(try titles("d$?") == ["Ab_c d", "Café del Mar", "the end."])
        #expect(try titles("d${1}") == ["Ab_c d"])
        for (bad, reason) in [("(ab", "Unmatched ( or \\("), ("[ab", "Unmatched ["), ("*a", "Invalid preceding regular expression"),
                              ("a{3,2}", "Invalid content of \\{\\}"), ("[[:nope:]]", "Invalid character class name"), ("[z-a]", "Invalid range end")] {
            #expect { try lib.songs(.tag(.title, .matches, bad, fold: false)) } throws: { e in
                (e as? LibraryError)?.kind == .badFilter && "\(e)".contains(reason)
            }
        }
    }

    @Test("a query's budget for regular expressions, 100 million steps: exactly its steps are paid, one more is refused with the reason")
    func matchBudgetBound() throws {
        #expect(MusicLibrary.regexSteps == 100_000_000)
        for n in [1, 65_536, MusicLibrary.regexSteps] {
            let exact = MatchBudget(steps: n)
            #expect(exact.spend(n - 1) && exact.spend(1) && exact.stopped == nil, "\(n)")
            #expect(!exact.spend(1) && exact.stopped?.kind == .badFilter, "\(n)")
            let over = MatchBudget(steps: n)
            #expect(!over.spend(n + 1), "\(n)")
            #expect("\(try #require(over.stopped))".contains("regular expression too costly: this query's matches needed more than \(n) steps"))
        }
    }

    @Test("2,000 hard links of two files: the two are opened once each, every link is a song with their tags; a rescan opens none, a changed file is read again")
    func hardLinks() throws {
        let tree = try Harness.makeTemporaryDirectory("hard-links")
        let source = try FormatFixtures.source("hard-links", seconds: 0.2)
        let originals = [try FormatFixtures.flac("hard-link-x", from: source, args: ["-T", "TITLE=Linked X"]),
                         try FormatFixtures.flac("hard-link-y", from: source, args: ["-T", "TITLE=Linked Y"])]
        for (k, o) in originals.enumerated() { try FileManager.default.copyItem(at: o, to: tree.appendingPathComponent("\(k).flac")) }
        for d in 0..<20 {
            let dir = tree.appendingPathComponent("d\(d)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for i in 0..<100 {
                #expect(link(tree.appendingPathComponent("\(i % 2).flac").path, dir.appendingPathComponent("\(i).flac").path) == 0)
            }
        }
        let lib = try MusicLibrary(path: Self.database(), musicDirectory: tree.path)
        let first = try scan(lib)
        #expect(first.added == 2002 && first.read == 2 && first.failed == 0, "\(first)")
        #expect(try lib.count(.tag(.title, .equals, "Linked X", fold: false)).songs == 1001)
        #expect(try lib.count(.tag(.title, .equals, "Linked Y", fold: false)).songs == 1001)
        let again = try scan(lib)
        #expect(again.read == 0 && !again.changed, "\(again)")
        // A new link and a changed file (its links change with it: one inode).
        #expect(link(tree.appendingPathComponent("0.flac").path, tree.appendingPathComponent("new.flac").path) == 0)
        #expect(try runProcess("metaflac", ["--remove-tag=TITLE", "--set-tag=TITLE=Linked Z", tree.appendingPathComponent("1.flac").path]).status == 0)
        let changed = try scan(lib)
        #expect(changed.added == 1 && changed.updated == 1001 && changed.read <= 2, "\(changed)")
        #expect(try lib.count(.tag(.title, .equals, "Linked Z", fold: false)).songs == 1001)
        #expect(try lib.count(.tag(.title, .equals, "Linked X", fold: false)).songs == 1002)
    }

    @Test("hard links and the scan's link memory (lowered to 4 files): links of ten files in one batch, past the bound, are each a song with its tags, none \"not read\"; links in a second directory of 3, 4 and 5 files: each file opened once up to the bound, one past it the memory is emptied and the fifth opened again")
    func linkMemory() throws {
        let source = try FormatFixtures.source("link-memory", seconds: 0.2)
        let originals = try (0..<10).map { try FormatFixtures.flac("link-memory-\($0)", from: source, args: ["-T", "TITLE=Link \($0)"]) }
        func titled(_ lib: MusicLibrary, _ k: Int) throws -> Int {
            try lib.count(.tag(.title, .equals, "Link \(k)", fold: false)).songs
        }
        // One directory: two links of each of ten files (one batch of 20).
        let tree = try Harness.makeTemporaryDirectory("link-memory-batch")
        for (k, o) in originals.enumerated() {
            try FileManager.default.copyItem(at: o, to: tree.appendingPathComponent("\(k)a.flac"))
            #expect(link(tree.appendingPathComponent("\(k)a.flac").path, tree.appendingPathComponent("\(k)b.flac").path) == 0)
        }
        let lib = try MusicLibrary(path: Self.database(), musicDirectory: tree.path)
        lib.linkMemory.store(4, ordering: .relaxed)
        let u = try scan(lib)
        #expect(u.added == 20 && u.failed == 0 && u.read == 10, "\(u)")
        for k in 0..<10 { #expect(try titled(lib, k) == 2, "Link \(k)") }
        lib.stop()

        // N files in one directory, a link of each in another: the bound just above, at and
        // just below N.
        for (n, read) in [(3, 3), (4, 4), (5, 6)] {
            let tree = try Harness.makeTemporaryDirectory("link-memory-\(n)")
            for d in ["a", "b"] { try FileManager.default.createDirectory(at: tree.appendingPathComponent(d), withIntermediateDirectories: true) }
            for k in 0..<n {
                try FileManager.default.copyItem(at: originals[k], to: tree.appendingPathComponent("a/\(k).flac"))
                #expect(link(tree.appendingPathComponent("a/\(k).flac").path, tree.appendingPathComponent("b/\(k).flac").path) == 0)
            }
            let lib = try MusicLibrary(path: Self.database(), musicDirectory: tree.path)
            lib.linkMemory.store(4, ordering: .relaxed)
            let u = try scan(lib)
            #expect(u.added == 2 * n && u.failed == 0 && u.read == read, "\(n) files: \(u)")
            for k in 0..<n { #expect(try titled(lib, k) == 2, "\(n) files: Link \(k)") }
            lib.stop()
        }
    }
}
