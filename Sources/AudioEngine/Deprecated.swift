import MediaCore

// Names of the API before 0.2.0, kept so code written against 0.1.0 still compiles, with a
// warning that names the replacement. Each stays for at least one minor version (CHANGELOG.md).

/// 0.1.0's error from libmpg123, now the one error of every decoder, source and output.
@available(*, deprecated, renamed: "MediaError")
public typealias MPG123Error = MediaError
