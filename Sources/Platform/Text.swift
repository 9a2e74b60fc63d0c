#if canImport(Glibc)
import Glibc
#endif

extension StringProtocol {
    /// The string without leading and trailing blanks (spaces, tabs and other horizontal
    /// whitespace, newlines kept): Foundation's `trimmingCharacters(in: .whitespaces)`.
    public func trimmingBlanks() -> String {
        let isBlank: (Character) -> Bool = { $0.isWhitespace && !$0.isNewline }
        guard let first = firstIndex(where: { !isBlank($0) }) else { return "" }
        let last = lastIndex(where: { !isBlank($0) })!
        return String(self[first...last])
    }

    /// The string without leading and trailing occurrences of `character`.
    public func trimming(_ character: Character) -> String {
        guard let first = firstIndex(where: { $0 != character }) else { return "" }
        let last = lastIndex(where: { $0 != character })!
        return String(self[first...last])
    }
}

/// `printf`-style formatting through C's `vsnprintf` (Foundation's `String(format:)` without
/// Foundation). Pass Swift `Int` with `%ld`, `Int32` with `%d`, `Double` with `%f`/`%g`.
public func cFormat(_ format: String, _ arguments: any CVarArg...) -> String {
    withVaList(arguments) { list in
        var buffer = [CChar](repeating: 0, count: 128)
        let n = Int(vsnprintf(&buffer, buffer.count, format, list))
        if n < 0 { return "" }
        if n >= buffer.count {
            // A va_list is consumed by one use, so the longer result takes a new one.
            buffer = [CChar](repeating: 0, count: n + 1)
            _ = withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) }
        }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension String {
    /// File-manager order (what Foundation's `localizedStandardCompare` gives for file names):
    /// case-insensitive, with runs of digits compared as numbers (`2.mp3` before `10.mp3`);
    /// names equal that way fall back to plain string order, so the order is total.
    public func precedesInFileOrder(_ other: String) -> Bool {
        let a = Array(lowercased().unicodeScalars), b = Array(other.lowercased().unicodeScalars)
        var i = 0, j = 0
        func isDigit(_ s: Unicode.Scalar) -> Bool { s.value >= 48 && s.value <= 57 }
        while i < a.count, j < b.count {
            if isDigit(a[i]), isDigit(b[j]) {
                var ei = i, ej = j
                while ei < a.count, isDigit(a[ei]) { ei += 1 }
                while ej < b.count, isDigit(b[ej]) { ej += 1 }
                // Leading zeros do not count; then the longer number is the larger.
                var si = i, sj = j
                while si < ei - 1, a[si].value == 48 { si += 1 }
                while sj < ej - 1, b[sj].value == 48 { sj += 1 }
                if ei - si != ej - sj { return ei - si < ej - sj }
                for k in 0..<(ei - si) where a[si + k] != b[sj + k] { return a[si + k].value < b[sj + k].value }
                (i, j) = (ei, ej)
            } else {
                if a[i] != b[j] { return a[i].value < b[j].value }
                i += 1
                j += 1
            }
        }
        if a.count - i != b.count - j { return a.count - i < b.count - j }
        return self < other
    }
}

/// Everything readable from `fd` until its end (standard input, a pipe), or what was read
/// before an error.
public func readToEnd(_ fd: Int32) -> [UInt8] {
    var all: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = read(fd, &chunk, chunk.count)
        if n < 0, errno == EINTR { continue }
        if n <= 0 { return all }
        all += chunk[..<n]
    }
}
