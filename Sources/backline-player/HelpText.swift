import AudioEngine
import Media
import MediaCore

/// The parts of the help texts that name what the registries hold: formats (the decoder
/// registry's plugins and their suffixes), URL schemes (the inputs registered at start-up) and
/// device kinds (the output drivers). Built from the registries, so a format, input or output
/// added in one file and one registration is in the help with no edit here.
enum HelpText {
    /// `MPEG audio (mp3, mp2, …), FLAC (flac), …`: each decoder's format and file suffixes.
    static var formats: String {
        DecoderRegistry.standard.plugins
            .map { "\($0.formatName) (\($0.suffixes.joined(separator: ", ")))" }
            .joined(separator: ", ")
    }

    /// `file, http, https`: the URL schemes items may have.
    static var urlSchemes: String { (["file"] + InputSources.schemes).joined(separator: ", ") }

    /// The device names each output kind takes, the test-only kinds left out.
    static var devices: String {
        OutputDeviceKind.all.filter { !$0.forTests }
            .map { "\($0.forms.joined(separator: ", ")) (\($0.name): \($0.summary))" }
            .joined(separator: "; ")
    }

    /// The `--device` option's help.
    static var deviceOption: String { "Where to play: \(devices)." }

    /// What `play` takes as arguments.
    static var items: String {
        "Audio files, folders (searched recursively for the formats below), playlists (.m3u, .m3u8, .pls), "
            + "URLs (\(urlSchemes)), or - for a list on standard input. Formats: \(formats)."
    }
}
