import MediaCore
import Platform

extension DecoderPlugin {
    /// RIFF WAVE: PCM 8/16/24/32-bit, IEEE float, `WAVE_FORMAT_EXTENSIBLE`; tags from a `LIST`
    /// `INFO` chunk or an `id3 ` chunk.
    public static let wave = DecoderPlugin(
        name: "wave", formatName: "WAV", suffixes: ["wav", "wave"], mimeTypes: ["audio/wav", "audio/x-wav", "audio/wave"],
        matches: { Sniff.has($0, "RIFF") && Sniff.has($0, "WAVE", at: 8) },
        open: { (source, options) throws(MediaError) in
            try PCMFileDecoder(source: source, layout: WAVEFormat.layout(source), options: options)
        },
        info: { (source) throws(MediaError) in try WAVEFormat.layout(source).info(source.name) })
}

/// The WAVE header reader.
enum WAVEFormat {
    static func layout(_ source: any ByteSource) throws(MediaError) -> PCMLayout {
        let name = source.name
        guard let h = source.read(count: 12, at: 0), Sniff.has(h, "RIFF"), Sniff.has(h, "WAVE", at: 8) else {
            throw MediaError(.unsupportedFormat, "not WAV", item: name)
        }
        var offset = 12
        var fmt: ArraySlice<UInt8>?
        var data: (Int, Int)?
        var meta = TrackMetadata()
        let end = source.length ?? Int.max
        while offset + 8 <= end, let ch = source.read(count: 8, at: offset) {
            let id = String(decoding: ch[0..<4], as: UTF8.self)
            let size = Int(ch[4]) | Int(ch[5]) << 8 | Int(ch[6]) << 16 | Int(ch[7]) << 24
            let body = offset + 8
            switch id {
            case "fmt ":
                guard size <= 4096, let b = source.read(count: size, at: body) else { throw MediaError(.truncated, "it ends inside the fmt chunk", item: name) }
                fmt = b[...]
            case "data":
                // A length past the end (a file still being written, or 0xFFFFFFFF) plays what is there.
                data = (body, min(size, max(0, end - body)))
            case "LIST":
                if size <= 1 << 20, let b = source.read(count: size, at: body), Sniff.has(b, "INFO") { RIFFInfo.parse(b.dropFirst(4), into: &meta) }
            case "id3 ", "ID3 ":
                if size <= ID3Scan.maximumTagBytes, let b = source.read(count: size, at: body) {
                    meta = ID3Scan.metadata(bytes: b[...])
                }
            default: break
            }
            offset = body + size + (size & 1)
            if data != nil, fmt != nil, offset >= end { break }
        }
        guard let fmt else { throw MediaError(.corrupt, "no fmt chunk", item: name) }
        guard let (dataOffset, dataLength) = data else { throw MediaError(.corrupt, "no data chunk", item: name) }
        var r = ByteReader(fmt, bigEndian: false)
        guard var tag = r.u16(), let channels = r.u16(), let rate = r.u32(), r.skip(4), r.skip(2), let bits = r.u16() else {
            throw MediaError(.corrupt, "fmt chunk too short", item: name)
        }
        var validBits = Int(bits)
        var layout: [Downmix.Position]?
        if tag == 0xFFFE {
            // WAVE_FORMAT_EXTENSIBLE: the real tag is the sub-format GUID's first two bytes.
            guard r.skip(2), let valid = r.u16(), let mask = r.u32(), let sub = r.u16() else {
                throw MediaError(.corrupt, "WAVE_FORMAT_EXTENSIBLE fmt chunk too short", item: name)
            }
            if valid > 0 { validBits = Int(valid) }
            tag = sub
            layout = Self.positions(mask: mask, channels: Int(channels))
        }
        let sample: PCMLayout.Sample
        switch (tag, bits) {
        case (1, 8): sample = .unsigned8
        case (1, 16), (1, 24), (1, 32): sample = .signed(bytes: Int(bits) / 8, bits: validBits)
        case (3, 32), (3, 64): sample = .float(bytes: Int(bits) / 8)
        default:
            let what = switch tag {
            case 2: "WAV with MS ADPCM"
            case 6: "WAV with A-law"
            case 7: "WAV with µ-law"
            case 0x11: "WAV with IMA ADPCM"
            case 0x55: "WAV with MP3 inside"
            default: "WAV with format tag \(tag), \(bits) bits"
            }
            throw MediaError(.unsupportedFormat, what, item: name)
        }
        return PCMLayout(rate: Int(rate), channels: Int(channels), sample: sample, bigEndian: false,
                         dataOffset: dataOffset, dataLength: dataLength, metadata: meta, layout: layout)
    }

    /// The speakers of a WAVE channel mask, in channel order (nil when it does not say).
    private static func positions(mask: UInt32, channels: Int) -> [Downmix.Position]? {
        let bits: [(UInt32, Downmix.Position)] = [
            (0x1, .frontLeft), (0x2, .frontRight), (0x4, .frontCenter), (0x8, .lfe), (0x10, .backLeft), (0x20, .backRight),
            (0x100, .backCenter), (0x200, .sideLeft), (0x400, .sideRight),
        ]
        let p = bits.filter { mask & $0.0 != 0 }.map(\.1)
        return p.count == channels ? p : nil
    }
}

/// A RIFF `LIST` `INFO` chunk's tags (`INAM` title, `IART` artist, `IPRD` album, `ICRD` date,
/// `IGNR` genre, `ICMT` comment, `ITRK`/`IPRT` track), as mpd's RIFF tag reader maps them.
enum RIFFInfo {
    static func parse(_ data: ArraySlice<UInt8>, into meta: inout TrackMetadata) {
        var r = ByteReader(data, bigEndian: false)
        var track: String?
        let keys: [String: TagKey] = ["INAM": .title, "IART": .artist, "IPRD": .album, "ICRD": .date, "IGNR": .genre,
                                      "ICMT": .comment, "ITRK": .track, "IPRT": .track, "ICMP": .composer]
        while let id = r.bytes(4), let size = r.u32(), let body = r.bytes(Int(size)) {
            if size & 1 == 1 { _ = r.skip(1) }
            let name = String(decoding: id, as: UTF8.self)
            let value = String(decoding: body.prefix { $0 != 0 }, as: UTF8.self).trimmingBlanks()
            meta.comments.append(TagPair(name: name, value: value))
            guard let key = keys[name], !value.isEmpty else { continue }
            if key == .track { track = track ?? value }
            meta.addTag(key, value)
        }
        meta.deriveFields(track: track, disc: nil)
    }
}
