import CVorbisFile
import MediaCore

/// libvorbisfile, opened with `dlopen` the first time an Ogg Vorbis item is opened (see
/// `CVorbisFile`): a `play` of another format never loads it.
enum VorbisFileLibrary {
    /// The functions (loaded once, for the life of the process), or why they could not be loaded.
    nonisolated(unsafe) static let api: Result<UnsafePointer<bl_vorbisfile_api>, MediaError> = {
        let api = UnsafeMutablePointer<bl_vorbisfile_api>.allocate(capacity: 1)
        api.initialize(to: bl_vorbisfile_api())
        if let failure = bl_vorbisfile_load(api) {
            api.deallocate()
            return .failure(MediaError(.unsupportedFormat, "libvorbisfile is not installed (\(String(cString: failure)))",
                                       library: "libvorbisfile"))
        }
        return .success(UnsafePointer(api))
    }()

    /// Loads the library (the first time), or throws why it cannot be, about `item`.
    static func load(item: String) throws(MediaError) {
        if case .failure(let error) = api { throw error.about(item) }
    }

    /// The loaded functions. Every call below comes after `OggVorbisDecoder.init` called `load`
    /// (it throws the failure before any other call), so the failure is unreachable here.
    static var table: UnsafePointer<bl_vorbisfile_api> {
        switch api {
        case .success(let table): return table
        case .failure(let error): preconditionFailure("\(error)")
        }
    }
}

// The libvorbisfile functions the module calls, with the C declarations' names and types:
// declared in this module, they shadow `CVorbisFile`'s (which nothing links) inside it, so the
// call sites read as libvorbisfile's own API. Each calls through the table `VorbisFileLibrary.api`
// loaded.

func ov_bitrate(_ vf: UnsafeMutablePointer<OggVorbis_File>!, _ i: Int32) -> Int { VorbisFileLibrary.table.pointee.ov_bitrate(vf, i) }
@discardableResult func ov_clear(_ vf: UnsafeMutablePointer<OggVorbis_File>!) -> Int32 { VorbisFileLibrary.table.pointee.ov_clear(vf) }
func ov_comment(_ vf: UnsafeMutablePointer<OggVorbis_File>!, _ link: Int32) -> UnsafeMutablePointer<vorbis_comment>! {
    VorbisFileLibrary.table.pointee.ov_comment(vf, link)
}
func ov_info(_ vf: UnsafeMutablePointer<OggVorbis_File>!, _ link: Int32) -> UnsafeMutablePointer<vorbis_info>! {
    VorbisFileLibrary.table.pointee.ov_info(vf, link)
}
func ov_open_callbacks(
    _ datasource: UnsafeMutableRawPointer!, _ vf: UnsafeMutablePointer<OggVorbis_File>!, _ initial: UnsafePointer<CChar>!, _ ibytes: Int,
    _ callbacks: ov_callbacks
) -> Int32 {
    VorbisFileLibrary.table.pointee.ov_open_callbacks(datasource, vf, initial, ibytes, callbacks)
}
func ov_pcm_seek(_ vf: UnsafeMutablePointer<OggVorbis_File>!, _ pos: ogg_int64_t) -> Int32 { VorbisFileLibrary.table.pointee.ov_pcm_seek(vf, pos) }
func ov_pcm_total(_ vf: UnsafeMutablePointer<OggVorbis_File>!, _ i: Int32) -> ogg_int64_t { VorbisFileLibrary.table.pointee.ov_pcm_total(vf, i) }
func ov_read_float(
    _ vf: UnsafeMutablePointer<OggVorbis_File>!, _ pcm: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?>!,
    _ samples: Int32, _ bitstream: UnsafeMutablePointer<Int32>!
) -> Int {
    VorbisFileLibrary.table.pointee.ov_read_float(vf, pcm, samples, bitstream)
}
func ov_streams(_ vf: UnsafeMutablePointer<OggVorbis_File>!) -> Int { VorbisFileLibrary.table.pointee.ov_streams(vf) }
