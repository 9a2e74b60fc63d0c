import MediaCore
import CSoxr

/// libsoxr, opened with `dlopen` the first time the pipe output resamples (see `CSoxr`): a
/// `play` never loads it, nor the OpenMP runtime it depends on.
enum SoxrLibrary {
    /// The functions (loaded once, for the life of the process), or why they could not be loaded.
    static let library = DynamicLibrary(name: "libsoxr", empty: bl_soxr_api(), load: bl_soxr_load)

    /// Loads the library (the first time), or throws why it cannot be.
    static func load() throws(SoxrError) {
        do throws(MediaError) { _ = try library.functions() } catch { throw SoxrError(message: error.message) }
    }

    /// The loaded functions. Every call below comes after `PipeStream.init` or
    /// `VarispeedStretcher.init` loaded them (each throws the failure before it makes a
    /// resampler), so the failure is unreachable here.
    static var table: UnsafePointer<bl_soxr_api> {
        do throws(MediaError) { return try library.functions() } catch { preconditionFailure(error.message) }
    }
}

// The libsoxr functions the module calls, with the C declarations' names and types: declared in
// this module, they shadow `CSoxr`'s (which nothing links) inside it, so the call sites read as
// libsoxr's own API. Each calls through the table `SoxrLibrary.api` loaded.

@discardableResult func soxr_clear(_ resampler: soxr_t!) -> soxr_error_t! { SoxrLibrary.table.pointee.soxr_clear(resampler) }
func soxr_create(
    _ inputRate: Double, _ outputRate: Double, _ channels: UInt32, _ error: UnsafeMutablePointer<soxr_error_t?>!,
    _ io: UnsafePointer<soxr_io_spec_t>!, _ quality: UnsafePointer<soxr_quality_spec_t>!, _ runtime: UnsafePointer<soxr_runtime_spec_t>!
) -> soxr_t! {
    SoxrLibrary.table.pointee.soxr_create(inputRate, outputRate, channels, error, io, quality, runtime)
}
func soxr_delay(_ resampler: soxr_t!) -> Double { SoxrLibrary.table.pointee.soxr_delay(resampler) }
func soxr_delete(_ resampler: soxr_t!) { SoxrLibrary.table.pointee.soxr_delete(resampler) }
func soxr_io_spec(_ itype: soxr_datatype_t, _ otype: soxr_datatype_t) -> soxr_io_spec_t { SoxrLibrary.table.pointee.soxr_io_spec(itype, otype) }
func soxr_process(
    _ resampler: soxr_t!, _ input: soxr_in_t!, _ ilen: Int, _ idone: UnsafeMutablePointer<Int>!,
    _ output: soxr_out_t!, _ olen: Int, _ odone: UnsafeMutablePointer<Int>!
) -> soxr_error_t! {
    SoxrLibrary.table.pointee.soxr_process(resampler, input, ilen, idone, output, olen, odone)
}
func soxr_quality_spec(_ recipe: UInt, _ flags: UInt) -> soxr_quality_spec_t { SoxrLibrary.table.pointee.soxr_quality_spec(recipe, flags) }
