import BacklineWire

extension CtlText {
    /// `text` as ctl shows it to a person: each control character (Unicode's `Cc`: C0, DEL,
    /// C1) as `\xNN`, by the rule the daemon names refused paths by (`escapedName`).
    /// A name from the daemon (a file's, a tag's, a URL) then can neither start a terminal's
    /// control sequence (an OSC that retitles the window, a clear screen) nor begin a line of
    /// its own. The one rule for every name and title ctl prints.
    public static func printable(_ text: String) -> String { escapedName(text) }

    /// `value` with each of its strings (an object's keys too) through ``printable(_:)-(String)``:
    /// what every human-readable output of a reply or an event is made from.
    public static func printable(_ value: JSON) -> JSON {
        switch value {
        case .string(let s): .string(printable(s))
        case .array(let a): .array(a.map(printable))
        case .object(let fields): .object(fields.map { (printable($0.0), printable($0.1)) })
        case .null, .bool, .number: value
        }
    }
}
