import BacklineTestSupport
import Foundation
@testable import Library
import Testing

/// Stickers in the library's database: MPD's operations, their bounds, and what happens to them
/// when a song moves, is read again or leaves.
@Suite struct StickerTests {
    func scanned(_ songs: Int = 12) throws -> (MusicLibrary, URL, [LibrarySong]) {
        let tree = try MusicTree.fresh(songs: songs)
        let lib = try MusicLibrary(path: ScanTests.database(), musicDirectory: tree.path)
        _ = try ScanTests().scan(lib)
        return (lib, tree, try lib.songs())
    }

    @Test("set, get, list (by name), delete one and all; a song the library lacks is `No such song`; a sticker it lacks is nil, and deleting it says so")
    func basics() throws {
        let (lib, _, songs) = try scanned()
        let a = songs[0].path
        #expect(try lib.sticker(a, "rating") == nil)
        try lib.setSticker(a, "rating", "8")
        try lib.setSticker(a, "comment", "a = b; ünïcode")
        try lib.setSticker(a, "rating", "9")  // replaced
        #expect(try lib.sticker(a, "rating") == "9")
        let all = try lib.stickers(a)
        #expect(all.map(\.name) == ["comment", "rating"] && all.map(\.value) == ["a = b; ünïcode", "9"])
        #expect(try lib.deleteSticker(a, "rating"))
        #expect(try !lib.deleteSticker(a, "rating"))
        #expect(try lib.sticker(a, "rating") == nil)
        #expect(try lib.deleteSticker(a, nil))
        #expect(try lib.stickers(a).isEmpty && !lib.deleteSticker(a, nil))
        for op in [{ _ = try lib.sticker("nowhere.flac", "x") }, { try lib.setSticker("nowhere.flac", "x", "1") },
                   { _ = try lib.stickers("nowhere.flac") }, { _ = try lib.deleteSticker("nowhere.flac", nil) }] {
            let e = #expect(throws: LibraryError.self) { try op() }
            #expect(e?.kind == .notFound && e?.message == "No such song")
        }
        // A directory is not a song.
        let dir = (a as NSString).deletingLastPathComponent
        #expect(throws: LibraryError.self) { try lib.setSticker(dir, "x", "1") }
    }

    @Test("find: under a directory or everywhere, each operator (text =, <, >; integer eq, lt, gt; contains, starts_with), sorted by path, value or integer value either way, cut to a window; names")
    func find() throws {
        let (lib, _, songs) = try scanned()
        let values = ["10", "9", "100", "abc", "2"]
        for (s, v) in zip(songs, values) { try lib.setSticker(s.path, "n", v) }
        try lib.setSticker(songs[6].path, "other", "1")
        let paths = Dictionary(uniqueKeysWithValues: zip(values, songs.map(\.path)))
        func found(_ m: (StickerOperator, String)? = nil, sort: StickerSort? = nil, window: Range<Int>? = nil, under: String = "") throws -> [String] {
            try lib.findStickers("n", under: under, matching: m, sort: sort, window: window).map(\.value)
        }
        #expect(try Set(found()) == Set(values))
        #expect(try found() == values.sorted { paths[$0]! < paths[$1]! })
        #expect(try found((.equals, "9")) == ["9"])
        #expect(try Set(found((.less, "2"))) == ["10", "100"])  // text: "10" < "2"
        #expect(try Set(found((.greater, "9"))) == ["abc"])
        #expect(try Set(found((.greaterInteger, "9"))) == ["10", "100"])
        #expect(try Set(found((.lessInteger, "9"))) == ["2", "abc"])  // "abc" is 0
        #expect(try found((.equalsInteger, "100")) == ["100"])
        #expect(try Set(found((.contains, "0"))) == ["10", "100"])
        #expect(try found((.startsWith, "ab")) == ["abc"] && found((.contains, "BC")) == ["abc"] && found((.startsWith, "AB")) == ["abc"])
        #expect(try found((.startsWith, "%")).isEmpty && found((.contains, "_")).isEmpty)  // no wildcards
        #expect(try found(sort: StickerSort(.integerValue)) == ["abc", "2", "9", "10", "100"])
        #expect(try found(sort: StickerSort(.integerValue, descending: true)) == ["100", "10", "9", "2", "abc"])
        #expect(try found(sort: StickerSort(.value)) == ["10", "100", "2", "9", "abc"])
        #expect(try found(sort: StickerSort(mpd: "-value_int"), window: 1..<3) == ["10", "9"])
        #expect(StickerSort(mpd: "bogus") == nil)
        let dir = (songs[0].path as NSString).deletingLastPathComponent
        let inDir = songs.prefix(5).filter { $0.path.hasPrefix(dir + "/") }.count
        #expect(try found(under: dir).count == inDir)
        #expect(try found(under: songs[0].path).isEmpty)  // a song is not a directory
        #expect(try lib.stickerNames() == ["n", "other"])
    }

    @Test("inc and dec: from nothing, on a number, on text (as 0); the sum stops at Int's ends")
    func increments() throws {
        let (lib, _, songs) = try scanned()
        let a = songs[0].path
        #expect(try lib.addToSticker(a, "playCount", 1) == 1)
        #expect(try lib.addToSticker(a, "playCount", 1) == 2)
        #expect(try lib.addToSticker(a, "playCount", -5) == -3)
        #expect(try lib.sticker(a, "playCount") == "-3")
        try lib.setSticker(a, "t", "abc")
        #expect(try lib.addToSticker(a, "t", 4) == 4)
        try lib.setSticker(a, "big", String(Int.max))
        #expect(try lib.addToSticker(a, "big", 1) == .max)
        #expect(try lib.addToSticker(a, "big", .min) == -1)
    }

    @Test("bounds: a name of 256 bytes is kept, 257 refused; a value of 4,096 bytes kept, 4,097 refused; control characters and an empty name refused; a song's 256th sticker kept, the 257th refused, while its existing ones still change")
    func bounds() throws {
        let (lib, _, songs) = try scanned()
        let a = songs[0].path
        try lib.setSticker(a, String(repeating: "n", count: 256), "x")
        try lib.setSticker(a, "v", String(repeating: "é", count: 2048))
        for (name, value, why) in [(String(repeating: "n", count: 257), "x", "sticker name longer than 256 bytes"),
                                   ("v", String(repeating: "v", count: 4097), "sticker value longer than 4096 bytes"),
                                   ("", "x", "empty sticker name"),
                                   ("a\nb", "x", "sticker name holds a control character"),
                                   ("v", "line\nsticker: forged=1", "sticker value holds a control character")] {
            let e = #expect(throws: LibraryError.self) { try lib.setSticker(a, name, value) }
            #expect(e?.kind == .badFilter && e?.message == why)
        }
        #expect(try lib.stickers(a).count == 2)
        let b = songs[1].path
        for i in 0..<StickerLimits.perSong { try lib.setSticker(b, "s\(i)", "1") }
        let e = #expect(throws: LibraryError.self) { try lib.setSticker(b, "one more", "1") }
        #expect(e?.message == "a song holds at most 256 stickers")
        #expect(throws: LibraryError.self) { try lib.addToSticker(b, "one more", 1) }
        try lib.setSticker(b, "s0", "2")
        #expect(try lib.addToSticker(b, "s1", 1) == 2)
        #expect(try lib.stickers(b).count == 256)
    }

    @Test("a song keeps its stickers when it moves, is renamed or read again; they go with a song that leaves, and a file that comes back has none")
    func followSongs() throws {
        let (lib, tree, songs) = try scanned()
        let fm = FileManager.default
        let moving = songs[0], rescanned = songs[1], removing = songs[2]
        for s in [moving, rescanned, removing] { try lib.setSticker(s.path, "rating", "7") }
        let target = (songs.last!.path as NSString).deletingLastPathComponent + "/moved here." + (moving.path as NSString).pathExtension
        try fm.moveItem(atPath: tree.path + "/" + moving.path, toPath: tree.path + "/" + target)
        let kept = tree.path + "/kept-aside"
        try fm.moveItem(atPath: tree.path + "/" + removing.path, toPath: kept)
        let u = try ScanTests().scan(lib)
        #expect(u.moved == 1 && u.removed == 1, "\(u)")
        #expect(try lib.sticker(target, "rating") == "7")
        #expect(throws: LibraryError.self) { try lib.sticker(moving.path, "rating") }
        let re = try ScanTests().scan(lib, rescan: true)
        #expect(re.updated == re.scanned)
        #expect(try lib.sticker(rescanned.path, "rating") == "7" && lib.sticker(target, "rating") == "7")
        #expect(try lib.findStickers("rating", under: "").count == 2)
        // Back (a new inode: copied): a new song, without the old one's stickers.
        try fm.copyItem(atPath: kept, toPath: tree.path + "/" + removing.path)
        try fm.removeItem(atPath: kept)
        _ = try ScanTests().scan(lib)
        #expect(try lib.song(removing.path) != nil && lib.sticker(removing.path, "rating") == nil)
    }

    @Test("a version 1 database (before stickers) is migrated in place: its songs kept with their ids, stickers usable")
    func migration() throws {
        let (lib, tree, songs) = try scanned()
        let path = lib.path
        lib.stop()
        lib.releaseMemory()
        let py = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('DROP TABLE stickers'); c.execute('PRAGMA user_version = 1'); c.commit()"
        #expect(try runProcess("/usr/bin/python3", ["-c", py, path]).status == 0)
        let again = try MusicLibrary(path: path, musicDirectory: tree.path)
        #expect(again.recovered == nil)
        #expect(try again.songs().map(\.id) == songs.map(\.id))
        try again.setSticker(songs[0].path, "rating", "3")
        #expect(try again.sticker(songs[0].path, "rating") == "3")
        let version = try runProcess("/usr/bin/python3", ["-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA user_version').fetchone()[0])", path])
        #expect(String(decoding: version.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "2")
    }
}
