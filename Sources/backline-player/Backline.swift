import ArgumentParser
import HTTPInput
import CtlCore
import Dispatch
import FoundationEssentials
import Platform

#if canImport(Glibc)
import Glibc
#endif

/// `backline`: the command-line front end.
@main
struct Backline: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backline",
        abstract: "Gapless, sample-exact audio playback on Linux: a terminal player and a music daemon.",
        discussion: """
            `play` plays files, folders, playlists and streams with keys on a terminal; `daemon` \
            plays a queue that `ctl`, MPD clients (mpc, ncmpcpp), the desktop's media controls \
            (MPRIS) and a web remote control; `ctl` sends it commands; `bench` measures.

            Formats: \(HelpText.formats). URLs: \(HelpText.urlSchemes). \
            Devices: \(HelpText.devices).
            """,
        version: Backline.version,
        subcommands: [Play.self, DaemonCommand.self, Ctl.self, BenchHandOff.self]
    )

    /// The version `--version`, `backline daemon` and `ctl version` report.
    static let version = backlineVersion

    /// Like `ParsableCommand.main()`, but usage errors exit with 1 (as documented), not 64.
    static func main() {
        // http:// and https:// items (libcurl, opened when the first one plays).
        HTTPInput.register()
        do {
            // `play` with plain options and files starts without the parser's reflection (see
            // `PlayOptions.init(fastParsing:)`); the rest, and any error, goes through it.
            let arguments = CommandLine.arguments
            if arguments.count > 1, arguments[1] == "bench" { BenchHandOff.exec() }
            // The daemon's library scans, in a process of their own (not in the help: internal).
            if arguments.count > 1, arguments[1] == "library-scan" { Glibc.exit(LibraryScan.run(arguments.dropFirst(2))) }
            if arguments.count > 1, arguments[1] == "play", let options = PlayOptions(fastParsing: arguments.dropFirst(2)),
               (try? options.validate()) != nil {
                try options.run()
                HTTPInput.shutdown()
                return
            }
            var command = try parseAsRoot()
            try command.run()
            HTTPInput.shutdown()
        } catch {
            HTTPInput.shutdown()
            let code = exitCode(for: error)
            if code == .validationFailure {
                let message = fullMessage(for: error)
                if !message.isEmpty { Terminal.error(message, tty: false) }
                Glibc.exit(1)
            }
            exit(withError: error)
        }
    }
}

/// `bench`, listed in the help here but run by `backline-bench` beside this binary (the
/// benchmarks use Foundation to run and time other programs; the player and daemon do not).
struct BenchHandOff: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run the benchmarks and print each next to its reference (same run).")

    @Argument(parsing: .allUnrecognized, help: "The benchmarks' options: see `backline bench --help`.")
    var options: [String] = []

    func run() throws { Self.exec() }

    /// Replaces this process with `backline-bench`, same argv.
    static func exec() -> Never {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let bench = Path.deletingLastComponent(me) + "/backline-bench"
        execv(bench, CommandLine.unsafeArgv)
        Terminal.error("backline: cannot run \(bench): \(String(cString: strerror(errno)))", tty: false)
        Glibc.exit(127)
    }
}
