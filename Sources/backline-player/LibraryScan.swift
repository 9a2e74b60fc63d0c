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
        // Nothing of the daemon's stays open here (its listening sockets, its lock): a scan the
        // daemon outlives, or one still running after a kill -9, must not hold them.
        closeInheritedDescriptors()
        // The daemon answering its clients comes first: nice 10 (about a tenth of a busy
        // CPU's share). Not SCHED_IDLE: on a machine busy with something else a scan at
        // SCHED_IDLE never ends (seen: a first scan of 2,000 files starved for minutes).
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
        // And when it goes, the scan goes (what it committed stays).
        let parent = getppid()
        nameCurrentThread("bl-library-scan")
        let lib: MusicLibrary
        do {
            lib = try MusicLibrary(path: library, musicDirectory: music)
        } catch {
            say("error \(error)")
            return 1
        }
        let end = lib.scanHere(path, rescan: rescan) { u in
            if getppid() != parent { exit(1) }
            say(progressLine(u))
        }
        say(progressLine(end))
        return end.error == nil ? 0 : 1
    }

    static func progressLine(_ u: LibraryUpdate) -> String { MusicLibrary.progressLine(u) }

    /// Closes every descriptor but standard input, output and error.
    static func closeInheritedDescriptors() {
        guard let d = opendir("/proc/self/fd") else { return }
        var open: [Int32] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let fd = Int32(name), fd > 2 { open.append(fd) }
        }
        let own = dirfd(d)
        closedir(d)
        for fd in open where fd != own { close(fd) }
    }

    /// One line to standard output, at once (the daemon follows it).
    static func say(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
    }
}
