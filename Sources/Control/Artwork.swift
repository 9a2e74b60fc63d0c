import MediaCore
import Media
import Platform
import PlayQueue

extension Playback {
    /// The file names looked for beside a song for its cover, in mpd's order.
    public static let coverNames = ["cover.png", "cover.jpg", "cover.jpeg", "cover.webp", "cover.tiff", "cover.bmp"]

    /// The first cover file in `file`'s directory (``coverNames``), confined to the music
    /// directory as `add` is; nil when there is none. (MPD's `albumart`.)
    public func coverFile(beside file: String) -> [UInt8]? {
        let dir = Path.deletingLastComponent(file)
        for n in Self.coverNames {
            guard let real = PathResolver.realPath(dir + "/" + n), let root = resolver.root,
                  resolver.allowAbsolutePaths || real.hasPrefix(root + "/"),
                  case .success(let data) = readRegularFile(real, limit: 32 << 20, beneath: resolver.allowAbsolutePaths ? nil : root)
            else { continue }
            return [UInt8](data)
        }
        return nil
    }

    /// The picture of queue item `id`: the one in its tags, else a cover file beside it; nil
    /// for a stream, an item not in the queue, or a song without either. Reads the file (call
    /// it off an event loop).
    public func artwork(forItem id: Int) -> TrackMetadata.Artwork? {
        guard let path = queue.entries.first(where: { $0.id == id })?.path, !InputSources.isStream(path) else { return nil }
        if let embedded = tags.info(path).metadata.artwork { return embedded }
        return coverFile(beside: path).map { TrackMetadata.Artwork(data: $0, mimeType: Self.imageType($0)) }
    }

    /// An image's MIME type from its first bytes (cover files have no tag to say it; a tag's
    /// word is not trusted for what a browser is sent); `application/octet-stream` when it is
    /// none of PNG, JPEG, WebP, GIF, BMP, TIFF.
    public static func imageType(_ b: [UInt8]) -> String {
        if b.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if b.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if b.count >= 12, b[0..<4].elementsEqual(Array("RIFF".utf8)), b[8..<12].elementsEqual(Array("WEBP".utf8)) { return "image/webp" }
        if b.starts(with: Array("GIF8".utf8)) { return "image/gif" }
        if b.starts(with: Array("BM".utf8)) { return "image/bmp" }
        if b.starts(with: [0x49, 0x49, 0x2A, 0x00]) || b.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) { return "image/tiff" }
        return "application/octet-stream"
    }
}
