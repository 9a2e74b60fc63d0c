import BacklineWire
import CtlCore

#if canImport(Glibc)
import Glibc
#endif

// `backline`: the small front end. It answers `--version` and `ctl` (for the commands whose
// arguments it checks itself: see `CtlCommands.simple`) without Foundation, SwiftNIO or the
// audio libraries, so a `ctl status` costs what a small C client does; every other command
// line (`play`, `daemon`, `bench`, help, other `ctl` commands, anything unusual) it hands,
// unchanged, to `backline-player` next to it with `execv`: the same process (pid, signals,
// terminal, standard input, exit status), only the program replaced.

/// Replaces this process with `program` (`backline-player`, or `backline-bench` for `bench`) from
/// the directory of `/proc/self/exe`, same argv.
func runPlayer(restoring pipe: sigaction?) -> Never {
    let program = CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "bench" ? "backline-bench" : "backline-player"
    var link = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &link, link.count - 1)
    let me = n > 0 ? String(decoding: link[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    let dir = SocketDirectory.parent(of: me)
    let player = (dir.isEmpty ? "." : dir) + "/" + program
    if var pipe { sigaction(SIGPIPE, &pipe, nil) }  // as this process found it
    execv(player, CommandLine.unsafeArgv)
    let e = errno
    CtlOutput.error("backline: cannot run \(player): \(String(cString: strerror(e))) (an installed backline needs \(program) beside it)")
    exit(e == ENOENT ? 127 : 126)
}

let words = CommandLine.arguments
if words.count == 2, words[1] == "--version" {
    print(backlineVersion)
    exit(0)
}
if words.count >= 3, words[1] == "ctl", var ctl = CtlInvocation.plain(Array(words.dropFirst(2))) {
    ctl.takeTrailingOptions()
    var pipe = sigaction()
    sigaction(SIGPIPE, nil, &pipe)
    do {
        try CtlRun.perform(ctl) { command, arguments throws(CtlBuildFailure) in
            let request: CtlRequest?
            do throws(CtlUsage) { request = try CtlCommands.simple(command, arguments) } catch { throw .usage(error) }
            guard let request else { throw .elsewhere }
            return request
        }
    } catch CtlBuildFailure.elsewhere {
        runPlayer(restoring: pipe)
    } catch let e as CtlExit {
        exit(e.code)
    } catch {
        CtlOutput.error("Error: \(error)")  // as swift-argument-parser reports an error a command throws
        exit(1)
    }
    exit(0)
}
runPlayer(restoring: nil)

/// This program loads no library, and is linked fully statically (the Swift runtime and glibc
/// included: nothing for the dynamic loader to do at start-up). The runtime refers to `dlopen`
/// (an optional prespecializations library, never looked for here); this definition, which
/// fails as a load that finds nothing would, keeps glibc's static `dlopen` out of the link, and
/// with it the linker's warning that a static `dlopen` needs the build machine's glibc at run time.
@_cdecl("dlopen")
public func noLibraryLoading(_ file: UnsafePointer<CChar>?, _ mode: Int32) -> UnsafeMutableRawPointer? { nil }
