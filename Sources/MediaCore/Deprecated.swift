// Names of the API before 0.2.0, kept so code written against 0.1.0 still compiles, with a
// warning that names the replacement. Each stays for at least one minor version (CHANGELOG.md).

extension MediaError {
    /// The item's path or URL.
    @available(*, deprecated, renamed: "item")
    public var path: String {
        get { item }
        set { item = newValue }
    }

    /// An error from libmpg123 about the file at `path`, as 0.1.0's `MPG123Error` made it.
    /// - Parameters:
    ///   - code: The `mpg123_errors` code (`-1` when it did not come from libmpg123).
    ///   - message: What went wrong, for people.
    ///   - path: The file being decoded.
    @available(*, deprecated, message: "use init(_:_:library:code:item:), which says what kind of failure it is")
    public init(code: Int32, message: String, path: String) {
        self.init(.corrupt, message, library: "libmpg123", code: code, item: path)
    }
}
