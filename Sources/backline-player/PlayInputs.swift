import Control
import Media
import FoundationEssentials
import Glibc
import Platform

/// What `backline play` was given, turned into the files to queue, in order.
///
/// - A file is queued as named (a broken one fails in its turn, with its name and reason).
/// - A directory is searched recursively; its audio files (by extension, as mpd picks them: every format the decoder registry plays)
///   are queued in natural order (`2.mp3` before `10.mp3`); what was left out is summarised.
/// - An M3U, M3U8 or PLS playlist is read; relative entries resolve against its directory; a
///   missing entry, or a playlist that includes itself, is reported and skipped.
/// - `-` reads standard input: a PLS playlist when it starts with `[playlist]`, else one path per
///   line (an M3U playlist: `#` lines are comments), relative to the current directory.
struct PlayInputs {
    /// The files to queue.
    var files: [String] = []
    /// What a person should know about the expansion (one line each, for stderr).
    var notes: [String] = []

    /// Expands `arguments`; `stdin` is read at most once, for the first `-`.
    static func expand(_ arguments: [String], cwd: String = FileManager.default.currentDirectoryPath,
                       stdin: () -> String) -> PlayInputs {
        let resolver = PathResolver(musicDirectory: cwd, allowAbsolutePaths: true)
        var out = PlayInputs()
        var readStdin = false
        for argument in arguments {
            if argument == "-" {
                guard !readStdin else {
                    out.notes.append("-: standard input was already read")
                    continue
                }
                readStdin = true
                let r = resolver.expand(playlistText: stdin(), relativeTo: cwd)
                out.take(r, named: "standard input", emptyReason: "no paths on standard input")
                continue
            }
            if let scheme = InputSources.scheme(of: argument), scheme != "file" {
                // A stream as it is; a playlist URL (.m3u, .m3u8, .pls) fetched for its entries;
                // another scheme refused with its name.
                do {
                    let r = try resolver.expand(argument)
                    out.take(r, named: argument, emptyReason: "the playlist names no streams")
                } catch {
                    out.notes.append("\(argument): \(error.message)")
                }
                continue
            }
            let path = Path.expandingTilde(argument)
            var st = stat()
            let isDirectory = stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
            let ext = Path.extension(path).lowercased()
            guard isDirectory || (PathResolver.playlistExtensions.contains(ext) && st.st_mode & S_IFMT == S_IFREG) else {
                out.files.append(path)  // a file (or nothing): the player reports it in its turn
                continue
            }
            do {
                let r = try resolver.expand(path)
                out.take(r, named: argument, emptyReason: isDirectory ? "no audio files in the directory" : "the playlist names no files")
            } catch {
                out.notes.append("\(argument): \(error.message)")
            }
        }
        return out
    }

    private mutating func take(_ r: PathResolver.Resolution, named name: String, emptyReason: String) {
        files += r.files
        for s in r.skipped { notes.append("skipped \(s.path): \(s.message)") }
        if !r.ignored.isEmpty {
            let shown = r.ignored.prefix(3).map { Path.lastComponent($0) }.joined(separator: ", ")
            let more = r.ignored.count > 3 ? ", …" : ""
            let n = r.ignored.count
            notes.append("\(name): left out \(n) file\(n == 1 ? "" : "s") that \(n == 1 ? "is" : "are") not in a format Backline plays (\(shown)\(more))")
        }
        if r.files.isEmpty { notes.append("\(name): \(emptyReason)") }
    }
}
