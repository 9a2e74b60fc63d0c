import AudioEngine
import BacklineTestSupport
import Foundation
import HTTPInput
import Media
import MediaCore
import Testing

/// The help texts name exactly what the registries hold: every format and suffix of the decoder
/// registry, every URL scheme an input opens, every device kind a person can play to; and
/// nothing else.
@Suite("help texts against the registries")
struct HelpTextTests {
    /// `backline ARGS --help`, its lines joined and its runs of blanks made one space (the
    /// parser wraps help at the terminal's width).
    static func help(_ arguments: [String]) throws -> String {
        let r = try runProcess(backline, arguments + ["--help"], environment: try isolated())
        #expect(r.status == 0, "\(r.stderr)")
        return r.stdoutText.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// The text after `label` up to the first `. ` or `.` at its end.
    static func segment(_ text: String, after label: String) -> String? {
        guard let start = text.range(of: label)?.upperBound else { return nil }
        let rest = text[start...]
        let end = rest.range(of: ". ")?.lowerBound ?? rest.lastIndex(of: ".") ?? rest.endIndex
        return rest[..<end].trimmingCharacters(in: .whitespaces)
    }

    /// `NAME (a, b), NAME (c)` as names with their lists.
    static func namedLists(_ segment: String, separator: String = ", ") -> [(String, [String])] {
        var out: [(String, [String])] = []
        var rest = Substring(segment)
        while let open = rest.firstIndex(of: "("), let close = rest[open...].firstIndex(of: ")") {
            var name = rest[..<open].trimmingCharacters(in: .whitespaces)
            if name.hasPrefix(separator.trimmingCharacters(in: .whitespaces)) { name = String(name.dropFirst()).trimmingCharacters(in: .whitespaces) }
            let items = rest[rest.index(after: open)..<close].components(separatedBy: ", ")
            out.append((name, items))
            rest = rest[rest.index(after: close)...]
        }
        return out
    }

    static let registryFormats = DecoderRegistry.standard.plugins.map { ($0.formatName, $0.suffixes) }

    @Test("backline and play name each format with its suffixes, and no other", arguments: [[], ["play"]])
    func formats(_ command: [String]) throws {
        let text = try Self.help(command)
        let formats = try #require(Self.segment(text, after: "Formats:"), "no Formats: in \(text)")
        let listed = Self.namedLists(formats)
        #expect(listed.map(\.0) == Self.registryFormats.map(\.0))
        #expect(listed.map(\.1) == Self.registryFormats.map(\.1))
        #expect(!text.contains("MP3 playback") && !text.contains("MP3 files"))
    }

    @Test("backline and play name each URL scheme an input opens, and no other", arguments: [[], ["play"]])
    func urlSchemes(_ command: [String]) throws {
        HTTPInput.register()  // as the player registers it at start-up
        let text = try Self.help(command)
        let urls = try #require(Self.segment(text, after: "URLs"), "no URLs in \(text)")
        let list = urls.drop { $0 == " " || $0 == "(" || $0 == ":" }.prefix { $0 != ")" }
        let schemes = list.components(separatedBy: ", ").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(schemes == ["file"] + InputSources.schemes)
        #expect(InputSources.schemes.contains("https"))
    }

    @Test("every --device names each device kind people play to, and no test device",
          arguments: [["play"], ["daemon"], []])
    func devices(_ command: [String]) throws {
        let text = try Self.help(command)
        let label = command.isEmpty ? "Devices:" : "Where to play:"
        let devices = try #require(Self.segment(text, after: label), "no \(label) in \(text)")
        let kinds = devices.components(separatedBy: "; ")
        let expected = OutputDeviceKind.all.filter { !$0.forTests }
        #expect(kinds.count == expected.count, "\(kinds)")
        for (shown, kind) in zip(kinds, expected) {
            #expect(shown.hasPrefix(kind.forms.joined(separator: ", ") + " (\(kind.name): "), "\(shown)")
        }
        for kind in OutputDeviceKind.all where kind.forTests {
            for form in kind.forms { #expect(!text.contains(form), "\(form) is a test device") }
        }
        #expect(!text.contains("ALSA PCM device name"))
    }
}
