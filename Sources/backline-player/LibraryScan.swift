import Library
import Platform

#if canImport(Glibc)
import Glibc
#endif

/// `backline-player library-scan --library DB --music-dir DIR --path P [--rescan]`: one scan of
/// the music library, run by the daemon in a process of its own (see
/// `MusicLibrary.runScans(in:)`), at a lower priority. Prints its progress, a line each
/// (`Scan.progressLine`), to standard output; exits 0 when the scan ended, 1 when it failed.
enum LibraryScan {
    static func run(_ arguments: ArraySlice<String>) -> Int32 {
        var library: String?, music: String?, path = "", rescan = false
        var a = arguments.makeIterator()
        while let arg = a.next() {
            switch arg {
            case "--library": library = a.next()
            case "--music-dir": music = a.next()
            case "--path": path = a.next() ?? ""
            case "--rescan": rescan = true
            default:
                say("error unknown argument \(arg)")
                return 2
            }
        }
        guard let library, let music else {
            say("error --library and --music-dir are required")
            return 2
        }
        // The daemon answering its clients comes first.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
        nameCurrentThread("bl-library-scan")
        let lib: MusicLibrary
        do {
            lib = try MusicLibrary(path: library, musicDirectory: music)
        } catch {
            say("error \(error)")
            return 1
        }
        let end = lib.scanHere(path, rescan: rescan) { say(progressLine($0)) }
        say(progressLine(end))
        return end.error == nil ? 0 : 1
    }

    static func progressLine(_ u: LibraryUpdate) -> String { MusicLibrary.progressLine(u) }

    /// One line to standard output, at once (the daemon follows it).
    static func say(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
    }
}
