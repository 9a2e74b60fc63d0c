import BacklineWire
import Control
import Daemon

/// The request parsers of the socket protocols, on their own.
enum ProtocolTargets {
    /// A JSON text: whatever parses writes back to text that parses to the same value, and that
    /// text is stable (written again, it is the same).
    static let json = FuzzTarget("json", "JSON.parse; a parsed value written and parsed again is the same value, and its text stable") { input throws(InvariantFailure) in
        guard let value = try? JSON.parse(input) else { return }
        let text = value.text
        guard let again = try? JSON.parse(Array(text.utf8)) else {
            throw InvariantFailure("json", "written value does not parse: \(shown(text))")
        }
        try check(again == value, "json", "round trip changed the value: \(shown(text)) → \(shown(again.text))")
        try check(again.text == text, "json", "text not stable: \(shown(text)) vs \(shown(again.text))")
        try check(!text.utf8.contains(0x0A), "json", "a written value spans lines (the protocol is one per line): \(shown(text))")
    }

    /// A JSON request line: a request that names a command with valid arguments becomes a typed
    /// command; the request written for that command (what `ctl` sends) becomes the same
    /// command again. A refused one is refused with one of the protocol's codes, on one line.
    static let jsonRequest = FuzzTarget("json-request", "JSONCodec.command; a command's request round-trips; errors are the protocol's codes") { input throws(InvariantFailure) in
        guard let value = try? JSON.parse(input) else { return }
        let command: any ControlCommand
        do throws(ProtocolError) {
            command = try JSONCodec.command(value)
        } catch {
            let codes: Set<String> = ["invalid-request", "unknown-command", "bad-argument"]
            try check(codes.contains(error.code), "json-request", "unexpected error code \(error.code) (\(error.message))")
            return
        }
        let request = JSONCodec.request(command)
        let again: any ControlCommand
        do throws(ProtocolError) {
            again = try JSONCodec.command(request)
        } catch {
            throw InvariantFailure("json-request", "the request written for \(command.descriptor.name) is refused: \(error) (\(shown(request.text)))")
        }
        let second = JSONCodec.request(again)
        try check(second == request, "json-request", "round trip changed the command: \(shown(request.text)) → \(shown(second.text))")
    }

    /// MPD request lines (one per input line): the words of a line, quoted as libmpdclient
    /// quotes them, split to the same words; a command's argument check answers with one line.
    static let mpdRequest = FuzzTarget("mpd-request", "MPD tokenizer and argument checks; quoted words split back the same; ACK messages on one line") { input throws(InvariantFailure) in
        for raw in input.split(separator: 0x0A, omittingEmptySubsequences: false) {
            var bytes = raw[...]
            if bytes.last == 0x0D { bytes = bytes.dropLast() }
            let line = String(decoding: bytes, as: UTF8.self)
            let words: [String]
            do throws(MPDError) {
                words = try MPDProtocol.tokenize(line)
            } catch {
                try check(!error.message.contains("\n"), "mpd-request", "tokenizer error spans lines")
                continue
            }
            try check(!words.contains { $0.contains(" ") && !line.contains("\"") }, "mpd-request", "an unquoted word holds a space: \(shown(line))")
            let requoted = words.map { quoted($0) }.joined(separator: " ")
            let again: [String]
            do throws(MPDError) { again = try MPDProtocol.tokenize(requoted) } catch {
                throw InvariantFailure("mpd-request", "quoted words do not split: \(shown(requoted)): \(error.message)")
            }
            try check(again == words, "mpd-request", "quoted words split differently: \(words.map(shown)) → \(again.map(shown))")
            guard let name = words.first, let command = MPDCommandTable.command(name) else { continue }
            do throws(MPDError) { try command.check(Array(words.dropFirst())) } catch {
                try check(!error.message.contains("\n"), "mpd-request", "ACK message spans lines: \(shown(error.message))")
            }
        }
    }
}

/// `word` in `quote`s, the quote and `\` escaped with a backslash: an MPD argument as
/// libmpdclient sends it (`"`), a value in a filter expression (`'`).
func quoted(_ word: String, _ quote: Unicode.Scalar = "\"") -> String {
    var s = String(quote)
    for c in word.unicodeScalars {
        if c == "\\" || c == quote { s += "\\" }
        s.unicodeScalars.append(c)
    }
    return s + String(quote)
}
