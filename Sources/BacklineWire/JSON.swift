/// A JSON value: what requests, replies and events are made of. Objects keep their keys' order
/// (replies read in the order they are written).
public enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    /// Whether two values are equal: objects key by key in order, numbers by value.
    public static func == (a: JSON, b: JSON) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x), .number(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// The member `key` of an object (nil otherwise).
    public subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members.last { $0.0 == key }?.1 }
        return nil
    }

    /// The string, when this is one.
    public var string: String? { if case .string(let s) = self { return s } else { return nil } }
    /// The number, when this is one.
    public var number: Double? { if case .number(let n) = self { return n } else { return nil } }
    /// The Boolean, when this is one.
    public var bool: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    /// The elements, when this is an array.
    public var array: [JSON]? { if case .array(let a) = self { return a } else { return nil } }
    /// An integral number.
    public var int: Int? {
        guard case .number(let n) = self, n.rounded() == n, abs(n) < 9e15 else { return nil }
        return Int(n)
    }

    /// The number `i`.
    public static func int(_ i: Int) -> JSON { .number(Double(i)) }

    // MARK: Parsing

    /// Parses one JSON text (RFC 8259). Throws on anything else.
    public static func parse(_ bytes: some Collection<UInt8>) throws -> JSON {
        var p = Parser(bytes: Array(bytes))
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        guard p.i == p.b.count else { throw p.error("unexpected data after the JSON value") }
        return v
    }

    /// A parse error with the byte offset.
    public struct ParseError: Error, CustomStringConvertible {
        /// What is wrong, for people.
        public let message: String
        /// The byte at which the text stopped being JSON.
        public let offset: Int
        /// The message and the offset.
        public var description: String { "\(message) at byte \(offset)" }
    }

    private struct Parser {
        let b: [UInt8]
        var i = 0
        init(bytes: [UInt8]) { b = bytes }

        func error(_ m: String) -> ParseError { ParseError(message: m, offset: i) }

        mutating func skipSpace() {
            while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
        }

        mutating func literal(_ word: String, _ v: JSON) throws -> JSON {
            let w = Array(word.utf8)
            guard i + w.count <= b.count, Array(b[i..<i + w.count]) == w else { throw error("invalid literal") }
            i += w.count
            return v
        }

        mutating func value(depth: Int) throws -> JSON {
            guard depth < 64 else { throw error("nested too deeply") }
            guard i < b.count else { throw error("unexpected end of input") }
            switch b[i] {
            case UInt8(ascii: "n"): return try literal("null", .null)
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "["):
                i += 1
                var items: [JSON] = []
                skipSpace()
                if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                while true {
                    skipSpace()
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard i < b.count else { throw error("unexpected end of input") }
                    if b[i] == UInt8(ascii: ",") { i += 1; continue }
                    if b[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                    throw error("expected ',' or ']'")
                }
            case UInt8(ascii: "{"):
                i += 1
                var members: [(String, JSON)] = []
                skipSpace()
                if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                while true {
                    skipSpace()
                    guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw error("expected a string key") }
                    let k = try string()
                    skipSpace()
                    guard i < b.count, b[i] == UInt8(ascii: ":") else { throw error("expected ':'") }
                    i += 1
                    skipSpace()
                    members.append((k, try value(depth: depth + 1)))
                    skipSpace()
                    guard i < b.count else { throw error("unexpected end of input") }
                    if b[i] == UInt8(ascii: ",") { i += 1; continue }
                    if b[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                    throw error("expected ',' or '}'")
                }
            default:
                return try number()
            }
        }

        mutating func number() throws -> JSON {
            let start = i
            if i < b.count, b[i] == UInt8(ascii: "-") { i += 1 }
            var digits = 0
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 { i += 1; digits += 1 }
            guard digits > 0 else { i = start; throw error("invalid value") }
            if i < b.count, b[i] == UInt8(ascii: ".") {
                i += 1
                var frac = 0
                while i < b.count, b[i] >= 0x30, b[i] <= 0x39 { i += 1; frac += 1 }
                guard frac > 0 else { throw error("invalid number") }
            }
            if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
                i += 1
                if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
                var exp = 0
                while i < b.count, b[i] >= 0x30, b[i] <= 0x39 { i += 1; exp += 1 }
                guard exp > 0 else { throw error("invalid number") }
            }
            let text = String(decoding: b[start..<i], as: UTF8.self)
            guard let d = Double(text), d.isFinite else { throw error("invalid number") }
            return .number(d)
        }

        mutating func hex4() throws -> UInt32 {
            guard i + 4 <= b.count else { throw error("bad \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = b[i]
                i += 1
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                case 0x61...0x66: d = UInt32(c - 0x61 + 10)
                default: throw error("bad \\u escape")
                }
                v = v << 4 | d
            }
            return v
        }

        mutating func string() throws -> String {
            i += 1  // opening quote
            var out: [UInt8] = []
            while true {
                guard i < b.count else { throw error("unterminated string") }
                let c = b[i]
                i += 1
                switch c {
                case UInt8(ascii: "\""):
                    guard let s = String(validating: out, as: UTF8.self) else { throw error("string is not UTF-8") }
                    return s
                case UInt8(ascii: "\\"):
                    guard i < b.count else { throw error("unterminated string") }
                    let e = b[i]
                    i += 1
                    switch e {
                    case UInt8(ascii: "\""): out.append(0x22)
                    case UInt8(ascii: "\\"): out.append(0x5C)
                    case UInt8(ascii: "/"): out.append(0x2F)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var u = try hex4()
                        if (0xD800...0xDBFF).contains(u) {
                            guard i + 2 <= b.count, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") else {
                                throw error("lone surrogate")
                            }
                            i += 2
                            let lo = try hex4()
                            guard (0xDC00...0xDFFF).contains(lo) else { throw error("lone surrogate") }
                            u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(u) else { throw error("invalid \\u escape") }
                        out.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default: throw error("invalid escape")
                    }
                case 0..<0x20:
                    throw error("control character in string")
                default:
                    out.append(c)
                }
            }
        }
    }

    // MARK: Writing

    /// The compact JSON text (one line: no raw newlines).
    public var text: String {
        var s = ""
        write(into: &s)
        return s
    }

    /// Appends the value's compact JSON text to `s`.
    public func write(into s: inout String) {
        switch self {
        case .null: s += "null"
        case .bool(let v): s += v ? "true" : "false"
        case .number(let n):
            if n.rounded() == n, abs(n) < 1e15 { s += String(Int64(n)) } else if n.isFinite { s += "\(n)" } else { s += "null" }
        case .string(let v): JSON.quote(v, into: &s)
        case .array(let a):
            s += "["
            for (k, v) in a.enumerated() {
                if k > 0 { s += "," }
                v.write(into: &s)
            }
            s += "]"
        case .object(let m):
            s += "{"
            for (k, (key, v)) in m.enumerated() {
                if k > 0 { s += "," }
                JSON.quote(key, into: &s)
                s += ":"
                v.write(into: &s)
            }
            s += "}"
        }
    }

    static func quote(_ v: String, into s: inout String) {
        s += "\""
        for u in v.unicodeScalars {
            switch u {
            case "\"": s += "\\\""
            case "\\": s += "\\\\"
            case "\n": s += "\\n"
            case "\r": s += "\\r"
            case "\t": s += "\\t"
            case let c where c.value < 0x20:
                s += "\\u" + String(repeating: "0", count: 4 - String(c.value, radix: 16).count) + String(c.value, radix: 16)
            default: s.unicodeScalars.append(u)
            }
        }
        s += "\""
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    /// A string value.
    public init(stringLiteral v: String) { self = .string(v) }
    /// A number value.
    public init(integerLiteral v: Int) { self = .number(Double(v)) }
    /// A Boolean value.
    public init(booleanLiteral v: Bool) { self = .bool(v) }
    /// A number value.
    public init(floatLiteral v: Double) { self = .number(v) }
    /// An array value.
    public init(arrayLiteral v: JSON...) { self = .array(v) }
    /// An object value, its keys in the order written.
    public init(dictionaryLiteral v: (String, JSON)...) { self = .object(v) }
    /// The null value.
    public init(nilLiteral: ()) { self = .null }
}
