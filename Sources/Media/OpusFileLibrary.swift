import COpusFile
import MediaCore

/// libopusfile, opened with `dlopen` the first time an Opus item is opened (see `COpusFile`):
/// a `play` of another format never loads it.
enum OpusFileLibrary {
    /// The functions (loaded once, for the life of the process), or why they could not be loaded.
    nonisolated(unsafe) static let api: Result<UnsafePointer<bl_opusfile_api>, MediaError> = {
        let api = UnsafeMutablePointer<bl_opusfile_api>.allocate(capacity: 1)
        api.initialize(to: bl_opusfile_api())
        if let failure = bl_opusfile_load(api) {
            api.deallocate()
            return .failure(MediaError(.unsupportedFormat, "libopusfile is not installed (\(String(cString: failure)))",
                                       library: "libopusfile"))
        }
        return .success(UnsafePointer(api))
    }()

    /// Loads the library (the first time), or throws why it cannot be, about `item`.
    static func load(item: String) throws(MediaError) {
        if case .failure(let error) = api { throw error.about(item) }
    }

    /// The loaded functions. Every call below comes after `OpusDecoder.init` called `load` (it
    /// throws the failure before any other call), so the failure is unreachable here.
    static var table: UnsafePointer<bl_opusfile_api> {
        switch api {
        case .success(let table): return table
        case .failure(let error): preconditionFailure("\(error)")
        }
    }
}

// The libopusfile functions the module calls, with the C declarations' names and types:
// declared in this module, they shadow `COpusFile`'s (which nothing links) inside it, so the call
// sites read as libopusfile's own API. Each calls through the table `OpusFileLibrary.api` loaded.

func op_bitrate(_ of: OpaquePointer, _ li: Int32) -> opus_int32 { OpusFileLibrary.table.pointee.op_bitrate(of, li) }
func op_channel_count(_ of: OpaquePointer, _ li: Int32) -> Int32 { OpusFileLibrary.table.pointee.op_channel_count(of, li) }
func op_free(_ of: OpaquePointer!) { OpusFileLibrary.table.pointee.op_free(of) }
func op_link_count(_ of: OpaquePointer) -> Int32 { OpusFileLibrary.table.pointee.op_link_count(of) }
func op_open_callbacks(
    _ stream: UnsafeMutableRawPointer!, _ cb: UnsafePointer<OpusFileCallbacks>, _ initialData: UnsafePointer<UInt8>!, _ initialBytes: Int,
    _ error: UnsafeMutablePointer<Int32>!
) -> OpaquePointer! {
    OpusFileLibrary.table.pointee.op_open_callbacks(stream, cb, initialData, initialBytes, error)
}
func op_pcm_seek(_ of: OpaquePointer, _ offset: ogg_int64_t) -> Int32 { OpusFileLibrary.table.pointee.op_pcm_seek(of, offset) }
func op_pcm_total(_ of: OpaquePointer, _ li: Int32) -> ogg_int64_t { OpusFileLibrary.table.pointee.op_pcm_total(of, li) }
func op_read_float(_ of: OpaquePointer, _ pcm: UnsafeMutablePointer<Float>!, _ bufSize: Int32, _ li: UnsafeMutablePointer<Int32>!) -> Int32 {
    OpusFileLibrary.table.pointee.op_read_float(of, pcm, bufSize, li)
}
func op_tags(_ of: OpaquePointer, _ li: Int32) -> UnsafePointer<OpusTags>! { OpusFileLibrary.table.pointee.op_tags(of, li) }
