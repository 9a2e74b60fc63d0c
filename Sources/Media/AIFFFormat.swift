import MediaCore
import Platform

extension DecoderPlugin {
    /// AIFF and AIFF-C (uncompressed: `NONE`, `twos`, `sowt`, `fl32`, `fl64`); tags from an
    /// `ID3 ` chunk or the `NAME`/`AUTH` chunks.
    public static let aiff = DecoderPlugin(
        name: "aiff", formatName: "AIFF", suffixes: ["aiff", "aif", "aifc"], mimeTypes: ["audio/aiff", "audio/x-aiff"],
        matches: { Sniff.has($0, "FORM") && (Sniff.has($0, "AIFF", at: 8) || Sniff.has($0, "AIFC", at: 8)) },
        open: { (source, options) throws(MediaError) in
            try PCMFileDecoder(source: source, layout: AIFFFormat.layout(source), options: options)
        },
        info: { (source) throws(MediaError) in try AIFFFormat.layout(source).info(source.name) })
}

/// The AIFF / AIFF-C header reader.
enum AIFFFormat {
    static func layout(_ source: any ByteSource) throws(MediaError) -> PCMLayout {
        let name = source.name
        guard let h = source.read(count: 12, at: 0), Sniff.has(h, "FORM") else { throw MediaError(.unsupportedFormat, "not AIFF", item: name) }
        let compressed = Sniff.has(h, "AIFC", at: 8)
        var offset = 12
        var comm: ArraySlice<UInt8>?
        var data: (Int, Int)?
        var meta = TrackMetadata()
        var names: [(TagKey, String)] = []
        let end = source.length ?? Int.max
        while offset + 8 <= end, let ch = source.read(count: 8, at: offset) {
            let id = String(decoding: ch[0..<4], as: UTF8.self)
            let size = Int(ch[4]) << 24 | Int(ch[5]) << 16 | Int(ch[6]) << 8 | Int(ch[7])
            let body = offset + 8
            switch id {
            case "COMM":
                guard size <= 4096, let b = source.read(count: size, at: body) else { throw MediaError(.truncated, "it ends inside COMM", item: name) }
                comm = b[...]
            case "SSND":
                // Offset and block size come first; the samples follow.
                guard let o = source.read(count: 8, at: body) else { throw MediaError(.truncated, "it ends inside SSND", item: name) }
                let skip = Int(o[0]) << 24 | Int(o[1]) << 16 | Int(o[2]) << 8 | Int(o[3])
                let start = body + 8 + skip
                data = (start, max(0, min(size - 8 - skip, end - start)))
            case "ID3 ", "id3 ":
                if size <= ID3Scan.maximumTagBytes, let b = source.read(count: size, at: body) { meta = ID3Scan.metadata(bytes: b[...]) }
            case "NAME", "AUTH", "ANNO":
                if size <= 65_536, let b = source.read(count: size, at: body) {
                    let key: TagKey = id == "NAME" ? .title : id == "AUTH" ? .artist : .comment
                    names.append((key, String(decoding: b.prefix { $0 != 0 }, as: UTF8.self).trimmingBlanks()))
                }
            default: break
            }
            offset = body + size + (size & 1)
        }
        if meta.tags.isEmpty, !names.isEmpty {
            for (k, v) in names { meta.addTag(k, v) }
            meta.deriveFields(track: nil, disc: nil)
        }
        guard let comm else { throw MediaError(.corrupt, "no COMM chunk", item: name) }
        guard let (dataOffset, dataLength) = data else { throw MediaError(.corrupt, "no SSND chunk", item: name) }
        var r = ByteReader(comm, bigEndian: true)
        guard let channels = r.u16(), r.skip(4), let bits = r.u16(), let rateBytes = r.bytes(10) else {
            throw MediaError(.corrupt, "COMM chunk too short", item: name)
        }
        let rate = extended80(Array(rateBytes))
        var sample = PCMLayout.Sample.signed(bytes: (Int(bits) + 7) / 8, bits: Int(bits))
        var big = true
        if compressed, let type = r.bytes(4) {
            switch String(decoding: type, as: UTF8.self) {
            case "NONE", "twos": break
            case "sowt": big = false
            case "fl32", "FL32": sample = .float(bytes: 4)
            case "fl64", "FL64": sample = .float(bytes: 8)
            case let other: throw MediaError(.unsupportedFormat, "AIFF-C with \(other) compression", item: name)
            }
        }
        if case .signed(let b, _) = sample, !(1...4).contains(b) {
            throw MediaError(.unsupportedFormat, "AIFF with \(bits)-bit samples", item: name)
        }
        return PCMLayout(rate: rate, channels: Int(channels), sample: sample, bigEndian: big,
                         dataOffset: dataOffset, dataLength: dataLength, metadata: meta)
    }

    /// An IEEE 754 80-bit extended number (AIFF's sample rate), rounded to an integer.
    static func extended80(_ b: [UInt8]) -> Int {
        let exponent = Int(UInt16(b[0] & 0x7F) << 8 | UInt16(b[1])) - 16383
        var mantissa: UInt64 = 0
        for i in 2..<10 { mantissa = mantissa << 8 | UInt64(b[i]) }
        guard mantissa != 0, exponent >= 0, exponent < 64 else { return 0 }
        return Int((Double(mantissa) * Double(sign: .plus, exponent: exponent - 63, significand: 1)).rounded())
    }
}
