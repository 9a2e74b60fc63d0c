import MediaCore

/// A C library's functions, opened with `dlopen` the first time an item needs them (its
/// module's `bl_*_load` fills the table), or why they could not be: nothing links such a
/// library, so what never plays at another rate never loads it.
final class DynamicLibrary<API>: @unchecked Sendable {
    // @unchecked Sendable: the table is written once, in `init`, and only read after.
    /// The library's name in errors (`libsonic`).
    let name: String
    private let table: Result<UnsafePointer<API>, MediaError>

    init(name: String, empty: API, load: (UnsafeMutablePointer<API>) -> UnsafePointer<CChar>?) {
        self.name = name
        let api = UnsafeMutablePointer<API>.allocate(capacity: 1)
        api.initialize(to: empty)
        if let failure = load(api) {
            api.deallocate()
            table = .failure(MediaError(.unsupportedFormat, "\(name) is not installed (\(String(cString: failure)))", library: name))
        } else {
            table = .success(UnsafePointer(api))
        }
    }

    /// The loaded functions, or the error saying the library is missing.
    func functions() throws(MediaError) -> UnsafePointer<API> {
        switch table {
        case .success(let api): return api
        case .failure(let error): throw error
        }
    }
}
