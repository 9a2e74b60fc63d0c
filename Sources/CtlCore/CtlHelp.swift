import BacklineSchema

/// `backline ctl help [COMMAND]`: ctl's own syntax (positions from 1, ids where an item is
/// meant), in lines that fit 80 columns, whether on a terminal or piped.
public enum CtlHelp {
    public struct Entry: Sendable {
        public let name: String
        public let usage: String
        public let summary: String
        /// Older names `ctl` still takes.
        public let aliases: [String]
    }

    /// Every ctl command by group, in the order `help` lists them: the schema's commands that
    /// ctl has (``CtlSyntax``), then ctl's own (``Schema/ctlOnly``).
    public static let groups: [(String, [Entry])] = CommandGroup.all.compactMap { group in
        let commands = Schema.commands.filter { $0.group == group }.compactMap { c in
            c.ctl.map { Entry(name: c.name, usage: $0.usage, summary: $0.summary, aliases: c.aliases) }
        }
        let own = Schema.ctlOnly.filter { $0.group == group }.map {
            Entry(name: $0.name, usage: $0.syntax.usage, summary: $0.syntax.summary, aliases: $0.aliases)
        }
        let entries = commands + own
        return entries.isEmpty ? nil : (group.title, entries)
    }

    /// The command `name` names (its name or an older one).
    public static func entry(_ name: String) -> Entry? {
        groups.lazy.flatMap(\.1).first { $0.name == name || $0.aliases.contains(name) }
    }

    /// The name of the command `name` names: itself, or the command it is an older name of
    /// (`findadd` → `find-add`, `queue` → `list`); unknown names stay as they are.
    /// (The schema's lookup and ctl's own three: the help's table is not built for a command.)
    public static func canonical(_ name: String) -> String {
        Schema.command(name)?.name ?? Schema.ctlOnly.first { $0.name == name || $0.aliases.contains(name) }?.name ?? name
    }

    /// Every command, grouped, each usage then its summary.
    public static func all() -> String {
        var out = """
            usage: backline ctl [--socket PATH] [--json] COMMAND [ARGUMENTS]
            One command in detail: backline ctl help COMMAND


            """
        for (title, entries) in groups {
            out += wrap(title + ":", indent: 0)
            for e in entries {
                out += "  " + e.usage.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n      ") + "\n"
                out += wrap(e.summary, indent: 6)
            }
            out += "\n"
        }
        out += wrap("Output is for people; --json prints the daemon's reply as it is. Exit status: 0 done; 1 the daemon refused, nothing could play, or a usage error; 3 no daemon is running.", indent: 0)
        return out
    }

    /// One command: its usage and what it does.
    public static func detail(_ name: String) -> String? {
        guard let e = entry(name) else { return nil }
        return usage(e) + "\n" + wrap(e.summary, indent: 0)
    }

    /// `usage: backline ctl …`, continuation lines indented under the command.
    public static func usage(_ e: Entry) -> String {
        "usage: backline ctl " + e.usage.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n" + String(repeating: " ", count: 20))
    }

    /// `text` wrapped at 80 columns, every line indented by `indent`.
    public static func wrap(_ text: String, indent: Int, width: Int = 80) -> String {
        let pad = String(repeating: " ", count: indent)
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, pad.count + line.count + 1 + word.count > width {
                lines.append(pad + line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(pad + line) }
        return lines.map { $0 + "\n" }.joined()
    }
}
