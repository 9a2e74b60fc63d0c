import MediaCore
import Platform

/// Recognising formats by their first bytes (after any ID3v2 tag in front).
public enum Sniff {
    /// How many bytes of the file the registry reads to recognise it.
    public static let headerBytes = 64

    /// Whether `h` starts with `ascii` at `offset`.
    public static func has(_ h: [UInt8], _ ascii: String, at offset: Int = 0) -> Bool {
        let bytes = Array(ascii.utf8)
        guard h.count >= offset + bytes.count else { return false }
        return h[offset..<(offset + bytes.count)].elementsEqual(bytes)
    }

    /// An MPEG audio frame header at the start: 11 sync bits, a version that exists, a layer
    /// (not ADTS's `00`), a bit rate index that is not `1111`, a sample rate index that is not `11`.
    public static func isMPEGAudio(_ h: [UInt8]) -> Bool {
        guard h.count >= 4, h[0] == 0xFF, h[1] & 0xE0 == 0xE0 else { return false }
        let version = (h[1] >> 3) & 3, layer = (h[1] >> 1) & 3
        let bitrate = h[2] >> 4, rate = (h[2] >> 2) & 3
        return version != 1 && layer != 0 && bitrate != 15 && rate != 3
    }

    /// The codec of an Ogg stream, from its first page's first packet: `vorbis`, `opus`,
    /// `flac`, `speex`, `theora`, or nil.
    public static func oggCodec(_ h: [UInt8]) -> String? {
        guard has(h, "OggS"), h.count > 27 else { return nil }
        let segments = Int(h[26])
        let body = 27 + segments
        guard h.count > body else { return nil }
        if has(h, "\u{01}vorbis", at: body) { return "vorbis" }
        if has(h, "OpusHead", at: body) { return "opus" }
        if has(h, "\u{7F}FLAC", at: body) { return "flac" }
        if has(h, "Speex   ", at: body) { return "speex" }
        if has(h, "\u{80}theora", at: body) { return "theora" }
        return nil
    }

    /// Whether the bytes start with ASF's header object GUID (WMA, WMV).
    public static func isASF(_ h: [UInt8]) -> Bool {
        h.starts(with: [0x30, 0x26, 0xB2, 0x75, 0x8E, 0x66, 0xCF, 0x11])
    }

    /// What the bytes look like, for the error when no decoder takes them
    /// (`MPEG-4 audio (AAC or ALAC)`, `Matroska or WebM`, …).
    public static func describe(_ h: [UInt8]) -> String { recognised(h) ?? "not an audio format this player knows" }

    /// What the bytes are when some format's magic (or emptiness) says so; nil for bytes
    /// nothing claims.
    public static func recognised(_ h: [UInt8]) -> String? {
        // The (up to) four bytes at `offset` as text: a short header gives what it has (a
        // `FORM` file of 7 bytes stopped the fuzzer's process with an inverted range).
        func fourCC(_ h: [UInt8], at offset: Int) -> String {
            String(decoding: h[min(offset, h.count)..<min(offset + 4, h.count)], as: UTF8.self)
        }
        if h.isEmpty { return "empty file" }
        if has(h, "ftyp", at: 4) {
            if has(h, "M4A ", at: 8) || has(h, "M4B ", at: 8) || has(h, "M4P ", at: 8) { return "MPEG-4 audio (AAC or ALAC)" }
            return "MPEG-4 (\(fourCC(h, at: 8).trimming(" ")))"
        }
        if h.count >= 2, h[0] == 0xFF, h[1] & 0xF6 == 0xF0 { return "AAC (ADTS)" }
        if has(h, "ADIF") { return "AAC (ADIF)" }
        if has(h, "OggS") { return "Ogg \(oggCodec(h).map { "(\($0))" } ?? "(unknown codec)")" }
        if h.count >= 4, h[0] == 0x1A, h[1] == 0x45, h[2] == 0xDF, h[3] == 0xA3 { return "Matroska or WebM" }
        if isASF(h) { return "ASF (WMA)" }
        if has(h, "wvpk") { return "WavPack" }
        if has(h, "MAC ") { return "Monkey's Audio" }
        if has(h, "MPCK") || has(h, "MP+") { return "Musepack" }
        if has(h, "TTA1") { return "TTA" }
        if has(h, "#!AMR") { return "AMR" }
        if has(h, ".snd") { return "Sun/NeXT audio" }
        if has(h, "RIFF"), has(h, "WAVE", at: 8) { return "WAV (an encoding this player does not decode)" }
        if has(h, "RIFF") { return "RIFF \(fourCC(h, at: 8))".trimming(" ") }
        if has(h, "FORM") { return "IFF \(fourCC(h, at: 8))".trimming(" ") }
        if has(h, "fLaC") { return "FLAC" }
        if has(h, "#EXTM3U") || has(h, "[playlist]") { return "a playlist, not audio" }
        if has(h, "<?xml") || has(h, "<!DOCTYPE") || has(h, "<html") { return "a text document, not audio" }
        return nil
    }
}
