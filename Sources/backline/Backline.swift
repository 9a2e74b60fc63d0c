import ArgumentParser
import BacklineBench

/// `backline`: the command-line front end.
@main
struct Backline: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backline",
        abstract: "Gapless, sample-exact MP3 playback on Linux (ALSA + libmpg123).",
        subcommands: [Play.self, Bench.self]
    )
}
