import BacklineWire
import NIOCore

/// Text of an MPD response: its literal parts are the protocol's own (keys, `: `, line ends),
/// and every value interpolated into it goes through ``MPDText/field(_:)``. Replies, ACK
/// lines and `changed:` lines are built as `MPDText` (or written with
/// ``NIOCore/ByteBuffer/writeMPDField(_:)``), so no value — a file name, a tag, a URL, an
/// error's text — can end its line and start one of its own (a forged `OK`, a forged `file:`).
struct MPDText: ExpressibleByStringInterpolation, Sendable, Equatable {
    /// The text as sent.
    private(set) var string: String

    /// `value` as it may stand in one MPD line: each control character (Unicode's `Cc`: line
    /// feed, carriage return, the other C0 codes, DEL, C1) replaced by a space, as mpd replaces
    /// those of tag values. The one rule for every value in every MPD response.
    static func field(_ value: String) -> String {
        guard value.containsControlCharacter else { return value }
        var scalars = String.UnicodeScalarView()
        for s in value.unicodeScalars { scalars.append(s.isControlCharacter ? " " : s) }
        return String(scalars)
    }

    init(stringLiteral literal: String) { string = literal }

    init(stringInterpolation: Interpolation) { string = stringInterpolation.string }

    /// Literals as written, values through ``MPDText/field(_:)``, MPD text as it is.
    struct Interpolation: StringInterpolationProtocol {
        var string = ""

        init(literalCapacity: Int, interpolationCount: Int) {
            string.reserveCapacity(literalCapacity + 16 * interpolationCount)
        }

        mutating func appendLiteral(_ literal: String) { string += literal }

        /// A value (a name, a tag, a number): through ``MPDText/field(_:)``.
        mutating func appendInterpolation(_ value: some CustomStringConvertible) { string += MPDText.field(value.description) }

        /// MPD text built already (its values went through the rule when it was made).
        mutating func appendInterpolation(_ text: MPDText) { string += text.string }
    }

    static func + (a: MPDText, b: MPDText) -> MPDText {
        var out = a
        out.string += b.string
        return out
    }

    static func += (a: inout MPDText, b: MPDText) { a.string += b.string }

    /// How many bytes it takes (mpd's output limit counts them).
    var byteCount: Int { string.utf8.count }
}

extension Sequence where Element == MPDText {
    /// The parts one after the other.
    func joined() -> MPDText {
        var out: MPDText = ""
        for t in self { out += t }
        return out
    }
}

extension ByteBuffer {
    /// Writes MPD text (its values made safe when it was built).
    mutating func writeMPD(_ text: MPDText) { writeString(text.string) }

    /// Writes one value of an MPD line, through ``MPDText/field(_:)`` (the replies written
    /// straight into bytes: a `search`'s thousands of songs).
    mutating func writeMPDField(_ value: String) { writeString(MPDText.field(value)) }
}
