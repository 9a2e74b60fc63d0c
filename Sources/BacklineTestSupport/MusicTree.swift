import Foundation

/// Generated music trees (`scripts/music-tree`): tagged files in several formats, made once
/// per process and recipe, and copied for tests that change them.
public enum MusicTree {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var made: [String: URL] = [:]  // guarded by lock

    /// A tree of `songs` songs (with `specials`: a broken file, a link loop, a FIFO named
    /// x.flac, a name that is not UTF-8, a link out of the tree), shared: do not change it.
    public static func shared(songs: Int, specials: Bool = true, formats: String = "flac,ogg,opus,mp3,m4a") throws -> URL {
        let key = "\(songs)-\(specials)-\(formats)"
        return try lock.withLock {
            if let u = made[key] { return u }
            let dir = try Harness.makeTemporaryDirectory("backline-tree")
            try generate(into: dir, songs: songs, specials: specials, formats: formats)
            made[key] = dir
            return dir
        }
    }

    /// A new tree of its own in a new directory (a test that adds, changes and removes files).
    public static func fresh(songs: Int, specials: Bool = false, formats: String = "flac,ogg,opus,mp3,m4a") throws -> URL {
        let dir = try Harness.makeTemporaryDirectory("backline-tree")
        try generate(into: dir, songs: songs, specials: specials, formats: formats)
        return dir
    }

    private static func generate(into dir: URL, songs: Int, specials: Bool, formats: String) throws {
        let script = Harness.packageRoot.appendingPathComponent("scripts/music-tree").path
        let cache = try Fixtures.directory().appendingPathComponent("music-tree-cache").path
        var args = [script, dir.path, "--songs", String(songs), "--formats", formats, "--cache", cache]
        if specials { args.append("--specials") }
        let r = try runProcess("/usr/bin/python3", args)
        guard r.status == 0 else { throw HarnessError("scripts/music-tree failed: \(r.stderr)") }
    }
}
