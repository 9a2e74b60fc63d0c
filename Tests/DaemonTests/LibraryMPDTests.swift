import BacklineTestSupport
import BacklineWire
import Foundation
import Testing

/// The music library through the MPD protocol, against mpd 0.23 run on the same generated tree
/// (2,001 songs in five formats, accents, two discs, compilations with two artists a track,
/// missing tags, a broken file, a link loop, a FIFO named x.flac, a name that is not UTF-8, a
/// link out of the tree) in the same test: mpd's answers are the reference; where Backline
/// differs on purpose, the test pins the difference.
@Suite("The library through MPD: the same answers as mpd 0.23 on the same tree", Harness.audioTools)
struct LibraryMPDTests {
    static var mpdAvailable: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/mpd") }

    /// A daemon on `tree` with an MPD port, its first scan done.
    /// `realTime`: playing through the shared PulseAudio sink (a test that plays short songs
    /// and reads what plays); otherwise into ALSA's `null` device.
    static func daemon(_ tree: URL, config: String = DaemonFixture.foreground, realTime: Bool = false) throws -> (DaemonFixture, Int) {
        let d = realTime ? try DaemonFixture.onSharedSink(config: config, musicDirectory: tree.path)
            : try DaemonFixture(device: "null", config: config, musicDirectory: tree.path)
        let port = HardeningTests.port()
        try d.start(["--mpd-listen", "127.0.0.1:\(port)"])
        let c = try TCPLineClient.mpd(port: port)
        defer { c.close() }
        guard eventually(timeout: 120, { (try? c.ask("status")).map { !$0.contains("updating_db") } ?? false
                && (try? c.ask("stats"))?.contains("songs: 0") == false }) else {
            throw HarnessError("the daemon's first scan did not end: \(d.log())")
        }
        return (d, port)
    }

    /// What may differ between two servers' answers whatever the library: `Added:` (mpd 0.24's
    /// field), and the lengths and sample formats of MP3 and Opus files (Backline's are exact,
    /// without the encoder's delay and padding, and decoded as float; mpd's mad decoder counts
    /// the padding and says 24-bit, its Opus plugin 16-bit).
    static func comparable(_ reply: String) -> [String] {
        reply.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            .filter { !$0.hasPrefix("Added: ") && !$0.hasPrefix("Time: ") && !$0.hasPrefix("duration: ") && !$0.hasPrefix("Format: ") }
    }

    /// The files mpd has and Backline deliberately has not: a name that is not UTF-8 (mpd sends
    /// its bytes, which are not valid protocol text) and a link out of the music directory
    /// (mpd follows it; Backline confines the library as it confines `add`).
    static let onlyMPD = ["Singles/caf\u{FFFD}.mp3", "Singles/outside.flac"]

    /// Song blocks without mpd's extra files.
    static func withoutOnlyMPD(_ lines: [String]) -> [String] {
        var out: [String] = []
        var skipping = false
        for l in lines {
            if l.hasPrefix("file: ") { skipping = onlyMPD.contains(String(l.dropFirst(6))) }
            else if l.hasPrefix("directory: ") || l.hasPrefix("playlist: ") || l == "OK" { skipping = false }
            if !skipping { out.append(l) }
        }
        return out
    }

    @Test("find, search, list with groups, count, lsinfo, listall, sort and window, fallbacks, regexes, errors: mpd's answers, line for line",
          .enabled(if: mpdAvailable || Harness.isCI, "needs mpd"))
    func sameAnswers() throws {
        let tree = try MusicTree.shared(songs: 2000)
        let mpd = try MPDServer(music: tree.path)
        defer { mpd.stop() }
        let (d, port) = try Self.daemon(tree)
        defer { d.expectCleanStop() }
        let theirs = try TCPLineClient.mpd(port: mpd.port), ours = try TCPLineClient.mpd(port: port)
        defer { theirs.close(); ours.close() }

        let same = [
            "list album group albumartist", "list artist", "list albumartist", "list albumartistsort", "list genre",
            "list date group genre", "list album group albumartist group date", "list title \"(Genre == \\\"Jazz\\\")\"",
            "list album Björk", "list album \"Björk\"", "list file \"(Genre == \\\"Jazz\\\")\"",
            "find artist \"Björk\"", "find \"(Artist == \\\"Björk\\\")\"", "find albumartist \"Miles Davis\"",
            "find \"((Genre == \\\"Jazz\\\") AND (Date == \\\"1977\\\"))\"", "find \"(!(Genre != \\\"Rock\\\"))\"",
            "find \"(Title =~ \\\"^Love\\\")\"", "search \"(Title =~ \\\"^love\\\")\"", "find base \"Björk\"", "find \"(base \\\"Queen\\\")\"",
            "find \"(file == \\\"Queen/Fire Dream 20/03 - Blue shadow 192.opus\\\")\"",
            "search title love", "search \"(Title contains \\\"NIGHT\\\")\"", "search any \"café\"", "search album \"été\"",
            "find genre Jazz sort Title window 0:5", "find genre Jazz sort -Title window 2:4", "search title night sort Artist window 0:8",
            "find disc 2", "find track 1 window 0:3",
            "lsinfo", "lsinfo /", "lsinfo \"Björk\"", "lsinfo \"Björk/Été Kind 50\"", "listall \"Björk\"", "listallinfo Queen",
            "lsinfo \"Queen/Fire Dream 20/03 - Blue shadow 192.opus\"",
            // Errors, in mpd's words.
            "find foo bar", "find \"(foo == \\\"x\\\")\"", "find artist", "find \"(artist == \\\"x\\\"\"", "find \"(artist == x)\"",
            "find \"()\"", "find \"((artist == 'a') and (album == 'b'))\"", "find genre Jazz window 3:1", "find genre Jazz sort foo",
            "list foo", "list album group foo", "list album group album", "list artist Björk", "count", "lsinfo nope",
            "listall nope", "find base nope", "update ../x",
        ]
        var differences: [String] = []
        for command in same {
            let a = Self.comparable(try theirs.ask(command)), b = Self.comparable(try ours.ask(command))
            if a != b { differences.append("\(command)\n  mpd: \(a.prefix(6))\n  ours: \(b.prefix(6))") }
        }
        // Where mpd's two extra files take part: the same once they are left out.
        for command in ["find \"(artist != \\\"Björk\\\")\"", "find \"(album == \\\"\\\")\"", "find \"(!(Genre == \\\"Rock\\\"))\"",
                        "lsinfo Singles", "listall Singles"] {
            let a = Self.withoutOnlyMPD(Self.comparable(try theirs.ask(command))), b = Self.comparable(try ours.ask(command))
            if a != b { differences.append("\(command)\n  mpd: \(a.prefix(6))\n  ours: \(b.prefix(6))") }
        }
        #expect(differences.isEmpty, "\(differences.prefix(3).joined(separator: "\n"))")

        // Every song's tags, file by file (one listallinfo each).
        func songs(_ reply: String) -> [String: [String]] {
            var out: [String: [String]] = [:]
            var file: String?
            for l in Self.comparable(reply) {
                if l.hasPrefix("file: ") { file = String(l.dropFirst(6)); out[file!] = [] }
                else if l.hasPrefix("directory: ") || l.hasPrefix("playlist: ") { file = nil }
                else if let f = file, !l.hasPrefix("Last-Modified: "), l != "OK" { out[f]!.append(l) }
            }
            return out
        }
        let mpdSongs = songs(try theirs.ask("listallinfo")), ourSongs = songs(try ours.ask("listallinfo"))
        #expect(ourSongs.count == 2001)
        #expect(Set(mpdSongs.keys).subtracting(ourSongs.keys) == Set(Self.onlyMPD))
        #expect(Set(ourSongs.keys).subtracting(mpdSongs.keys).isEmpty)
        let tagDifferences = ourSongs.filter { mpdSongs[$0.key] != $0.value }.map(\.key)
        #expect(tagDifferences.isEmpty, "\(tagDifferences.prefix(2).map { "\($0): mpd \(mpdSongs[$0] ?? []), ours \(ourSongs[$0] ?? [])" })")

        // Counts per artist: the same but for mpd's two untagged extra files (under "").
        func counts(_ reply: String) -> [String: Int] {
            var out: [String: Int] = [:]
            var artist = ""
            for l in reply.split(separator: "\n") {
                if !l.hasPrefix("songs: "), !l.hasPrefix("playtime: "), let colon = l.firstIndex(of: ":") {
                    artist = String(l[l.index(after: colon)...].dropFirst())
                }
                if l.hasPrefix("songs: ") { out[artist] = Int(l.dropFirst(7)) }
            }
            return out
        }
        #expect(counts(try theirs.ask("count genre Jazz group date")) == counts(try ours.ask("count genre Jazz group date")))
        var mpdCounts = counts(try theirs.ask("count group artist"))
        mpdCounts[""]? -= 2
        #expect(counts(try ours.ask("count group artist")) == mpdCounts)

        // Deliberate: search folds accents as well as case (mpd 0.23 folds case only).
        let folded = try ours.ask("search artist bjork")
        #expect(try theirs.ask("search artist bjork") == "OK\n")
        #expect(Self.comparable(folded) == Self.comparable(try ours.ask("find artist Björk")) && folded.contains("file: "))
        #expect(try ours.ask("search title \"ETE\"").components(separatedBy: "file: ").count
            > (try theirs.ask("search title \"ETE\"")).components(separatedBy: "file: ").count)
        // Deliberate: the exact sample format (mpd's mad says 24-bit for MP3, its Opus plugin 16).
        #expect(try ours.ask("find \"(AudioFormat == \\\"48000:f:2\\\")\"").contains("file: "))
        #expect(try theirs.ask("find \"(AudioFormat =~ \\\"48000:*:2\\\")\"").components(separatedBy: "file: ").count
            == (try ours.ask("find \"(AudioFormat =~ \\\"48000:*:2\\\")\"")).components(separatedBy: "file: ").count)

        // stats: the same artists and albums; mpd's two extra files.
        func stat(_ reply: String, _ key: String) -> Int? {
            reply.split(separator: "\n").first { $0.hasPrefix(key + ": ") }.flatMap { Int($0.dropFirst(key.count + 2)) }
        }
        let (ms, os) = (try theirs.ask("stats"), try ours.ask("stats"))
        #expect(stat(ms, "artists") == stat(os, "artists") && stat(ms, "albums") == stat(os, "albums"))
        #expect(stat(os, "songs") == 2001 && stat(ms, "songs") == 2003)
        #expect((stat(os, "db_update") ?? 0) > 1_700_000_000)
    }
    @Test("regular expressions over 30,000-character titles: `(a+)+$` answers at once; one needing more than a query's steps is an ACK with the reason (mpd's PCRE calls its limit no match: OK and nothing), and another client's `list` is answered while it has no reply yet")
    func costlyRegex() throws {
        let tree = try Harness.makeTemporaryDirectory("regex-cost-mpd")
        try FormatFixtures.longTitles(in: tree, copies: 30)
        let (d, port) = try Self.daemon(tree)
        defer { d.expectCleanStop() }
        let attacker = try TCPLineClient.mpd(port: port), owner = try TCPLineClient.mpd(port: port)
        defer { attacker.close(); owner.close() }
        let found = try attacker.ask("find \"(title =~ '(a+)+$')\"")
        #expect(found.components(separatedBy: "file: ").count - 1 == 30 && found.hasSuffix("OK\n"))
        try attacker.write("find \"(title =~ '(.*a){1,500}b')\"")
        // The costly query under way (its 100 million steps take seconds), the owner's `list`
        // is answered while it still has no reply.
        Thread.sleep(forTimeInterval: 0.3)
        #expect(try owner.ask("list title").hasSuffix("OK\n"))
        let early = attacker.textLine(within: 0.01)
        #expect(early == nil, "the costly query answered before the owner's list: \(early ?? "")")
        let refused = early ?? attacker.textLine(within: 120) ?? "(none)"
        #expect(refused.hasPrefix("ACK [2@0] {find} regular expression too costly"), "\(refused)")
        #expect(try attacker.ask("count \"(title =~ 'a!$')\"") == "songs: 30\nplaytime: 6\nOK\n")
    }
    @Test("a tree 70 directories deep, at the 64-level bound on both sides: `add` of a directory whose deepest is 65 levels below is refused with the reason and adds nothing, of one 64 levels above its deepest adds every song; the scan walks to 64 levels below the music directory (deep/l63) and keeps the next (deep/l64) among the unreadable, with the reason")
    func deepTree() throws {
        let tree = try Harness.makeTemporaryDirectory("deep-tree")
        let song = try FormatFixtures.flac("deep-song", from: try FormatFixtures.source("deep-song", seconds: 0.2))
        var dir = "deep"
        var paths: [Int: String] = [:]
        for level in 1...70 {
            dir += "/l\(level)"
            paths[level] = dir
            try FileManager.default.createDirectory(atPath: tree.path + "/" + dir, withIntermediateDirectories: true)
            if [1, 30, 63, 64, 70].contains(level) {
                try FileManager.default.copyItem(atPath: song.path, toPath: tree.path + "/" + dir + "/s\(level).flac")
            }
        }
        let (d, port) = try Self.daemon(tree)
        defer { d.expectCleanStop() }
        let c = try TCPLineClient.mpd(port: port)
        defer { c.close() }
        // From `deep`, lN is N levels below: l65 is past the bound.
        let refused = try c.ask("add deep")
        #expect(refused.hasPrefix("ACK [51@0] {add} ") && refused.contains("nested more than 64 levels") && refused.contains("nothing added"), "\(refused)")
        #expect(try c.ask("status").contains("playlistlength: 0\n"))
        #expect(try c.ask("add \"\(paths[40]!)\"") == "OK\n")
        #expect(try c.ask("status").contains("playlistlength: 3\n"))
        // From l6, l70 is 64 levels below (the last walked); from l5, 65 (the first refused).
        #expect(try c.ask("add \"\(paths[6]!)\"") == "OK\n")
        #expect(try c.ask("status").contains("playlistlength: 7\n"))
        let past = try c.ask("add \"\(paths[5]!)\"")
        #expect(past.hasPrefix("ACK [51@0] {add} ") && past.contains("nothing added"), "\(past)")
        #expect(try c.ask("status").contains("playlistlength: 7\n"))
        // The scan from the music directory: `deep` is level 1, lN level N + 1. It walks levels
        // 0…64 (deep/l63 and its song the last) and records deep/l64, the first refused.
        let stats = try d.request("stats")
        #expect(stats["songs"]?.int == 3 && stats["unreadable"]?.int == 1, "\(stats.text)")
        #expect(d.log().contains("failed=1") || d.log().contains("\"failed\":\"1\"") || d.log().contains("failed: 1"), "\(d.log())")
    }
}
