import Media
import MediaCore

/// The HTTP input: `http://` and `https://` through libcurl (``HTTPSource``). A program that
/// plays streams registers it once; the engine and the decoders know nothing of networking.
public enum HTTPInput {
    /// The input, as `InputSources.register(_:)` takes it.
    public static func input(options: HTTPOptions = HTTPOptions()) -> InputSources.Input {
        InputSources.Input(name: "curl", schemes: ["http", "https"]) { url, register throws(MediaError) in
            try HTTPSource(url: url, options: options, register: register)
        }
    }

    /// Registers the input for `http` and `https`.
    public static func register(options: HTTPOptions = HTTPOptions()) {
        InputSources.register(input(options: options))
    }
}
