extension StringProtocol {
    /// Whether the text holds a control character: Unicode's `Cc` (C0 `U+0000`–`U+001F`, DEL
    /// `U+007F`, C1 `U+0080`–`U+009F`). A line feed or carriage return in a name ends the
    /// line of a line-based protocol early; an escape starts a terminal's control sequence.
    public var containsControlCharacter: Bool {
        // Read as UTF-8: C1 is `C2 80`…`C2 9F` (a lead byte is never a continuation byte).
        var previous: UInt8 = 0
        for b in utf8 {
            if b < 0x20 || b == 0x7F || (previous == 0xC2 && b >= 0x80 && b <= 0x9F) { return true }
            previous = b
        }
        return false
    }
}

extension Unicode.Scalar {
    /// Whether this is a control character (Unicode's `Cc`: C0, DEL, C1).
    public var isControlCharacter: Bool { value < 0x20 || (value >= 0x7F && value <= 0x9F) }
}

/// A file name's bytes as text to log or show: valid UTF-8 as it is, but each control
/// character (`Unicode.Scalar.isControlCharacter`) and each byte that is not valid UTF-8 as
/// `\xNN` (so a name holding a newline or an escape sequence stays on its line and does nothing
/// to a terminal).
public func escapedName(_ raw: [UInt8]) -> String {
    var out = ""
    var i = 0
    func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".unicodeScalars)
        return "\\x" + String(digits[Int(b >> 4)]) + String(digits[Int(b & 0xF)])
    }
    while i < raw.count {
        // The longest valid UTF-8 sequence at i (1–4 bytes), else one stray byte.
        let b = raw[i]
        let length = b < 0x80 ? 1 : b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0
        if length > 0, i + length <= raw.count,
           let s = String(validating: raw[i..<(i + length)], as: UTF8.self), let scalar = s.unicodeScalars.first {
            out += scalar.isControlCharacter ? hex(UInt8(scalar.value)) : s  // (every Cc is ≤ U+009F)
            i += length
        } else {
            out += hex(b)
            i += 1
        }
    }
    return out
}

/// ``escapedName(_:)`` of a name that is valid UTF-8.
public func escapedName(_ name: String) -> String {
    name.containsControlCharacter ? escapedName(Array(name.utf8)) : name
}
