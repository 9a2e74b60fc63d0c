#if canImport(Glibc)
import Glibc
#endif

/// A request's `Host` header, read as the URL grammar reads an authority without user
/// information (RFC 3986 §3.2.2–3.2.3, RFC 9110 §7.2): an IPv6 literal in brackets and nothing
/// else around it, or a name or IPv4 address of ASCII letters, digits, `-`, `.` and `_`; then
/// an optional `:` and port of ASCII digits. Anything else (`[::1].evil.example`,
/// `127.0.0.1:80@evil.example`, digits of another script) is no host at all.
struct HTTPHost: Equatable {
    /// The host: a name, an IPv4 address, or an IPv6 address without its brackets.
    let name: String
    /// Whether it was an IPv6 literal (`[…]`).
    let isIPv6: Bool
    /// The port, when one was given.
    let port: Int?

    /// `value` parsed, or nil when it is not a host as the grammar has it.
    init?(_ value: String) {
        let bytes = Array(value.utf8)
        var rest: ArraySlice<UInt8>
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            let literal = bytes[1..<close]
            guard !literal.isEmpty, literal.allSatisfy({ Self.isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }),
                  Self.ipv6(String(decoding: literal, as: UTF8.self)) != nil else { return nil }
            name = String(decoding: literal, as: UTF8.self)
            isIPv6 = true
            rest = bytes[(close + 1)...]
        } else {
            let end = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.endIndex
            let host = bytes[..<end]
            guard !host.isEmpty, host.allSatisfy(WebHandler.isNameByte) else { return nil }
            name = String(decoding: host, as: UTF8.self)
            isIPv6 = false
            rest = bytes[end...]
        }
        guard let colon = rest.first else {
            port = nil
            return
        }
        // `:` then ASCII digits only (none, as the grammar allows, or a port 0–65535).
        let digits = rest.dropFirst()
        guard colon == UInt8(ascii: ":"), digits.count <= 5,
              digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        guard !digits.isEmpty else {
            port = nil
            return
        }
        guard let p = Int(String(decoding: digits, as: UTF8.self)), p <= 65535 else { return nil }
        port = p
    }

    /// Whether it names this machine: `localhost`, an IPv4 address in 127/8, or the IPv6
    /// loopback address (`[::1]`, however written).
    var isLoopback: Bool {
        if isIPv6 { return Self.ipv6(name) == [UInt8](repeating: 0, count: 15) + [1] }
        return name.lowercased() == "localhost" || DaemonConfig.isLoopback(name)
    }

    /// The 16 bytes of an IPv6 address in text, or nil.
    private static func ipv6(_ text: String) -> [UInt8]? {
        var address = [UInt8](repeating: 0, count: 16)  // (an `in6_addr`)
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        return address
    }

    private static func isHexDigit(_ b: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(b)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(b)
    }
}
