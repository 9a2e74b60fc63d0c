import Media
import MediaCore
import Platform

/// The HTTP input: `http://` and `https://` through libcurl (``HTTPSource``; a playlist by URL
/// is fetched whole, `InputSources.fetch(_:limit:deadline:)`). A program that plays streams
/// registers it once; the engine and the decoders know nothing of networking.
public enum HTTPInput {
    /// The input, as `InputSources.register(_:)` takes it.
    public static func input(options: HTTPOptions = HTTPOptions()) -> InputSources.Input {
        InputSources.Input(
            name: "curl", schemes: ["http", "https"],
            open: { url, register throws(MediaError) in try HTTPSource(url: url, options: options, register: register) },
            fetch: { url, limit, deadline throws(MediaError) in
                try HTTPFetch.fetch(url, limit: limit, deadline: deadline, options: options)
            },
            cancelFetches: { HTTPFetch.cancelAll() })
    }

    /// Registers the input for `http` and `https`.
    public static func register(options: HTTPOptions = HTTPOptions()) {
        InputSources.register(input(options: options))
    }

    /// Cancels every transfer and fetch and waits (at most `seconds` in all) for them to end.
    /// Call it before the process exits, after the players are stopped: a transfer thread still
    /// in libcurl, or ending, while `exit` runs OpenSSL's clean-up would crash the process.
    public static func shutdown(seconds: Double = 3) {
        let deadline = monotonicNanos() + Int(seconds * 1e9)
        HTTPFetch.cancelAllAndWait(until: deadline)
        TransferThreads.cancelAllAndJoin(until: deadline)
    }
}
