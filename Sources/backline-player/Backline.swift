import ArgumentParser
import BacklineBench
import CtlCore
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// `backline`: the command-line front end.
@main
struct Backline: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backline",
        abstract: "Gapless, sample-exact MP3 playback on Linux (ALSA + libmpg123).",
        version: Backline.version,
        subcommands: [Play.self, DaemonCommand.self, Ctl.self, Bench.self]
    )

    /// The version `--version`, `backline daemon` and `ctl version` report.
    static let version = backlineVersion

    /// Like `ParsableCommand.main()`, but usage errors exit with 1 (as documented), not 64.
    static func main() {
        do {
            // `play` with plain options and files starts without the parser's reflection (see
            // `PlayOptions.init(fastParsing:)`); the rest, and any error, goes through it.
            let arguments = CommandLine.arguments
            if arguments.count > 1, arguments[1] == "play", let options = PlayOptions(fastParsing: arguments.dropFirst(2)),
               (try? options.validate()) != nil {
                try options.run()
                return
            }
            var command = try parseAsRoot()
            try command.run()
        } catch {
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
