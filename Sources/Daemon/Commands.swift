/// The protocol's commands: names, arguments and one-line summaries (what `help` returns and
/// `docs/PROTOCOL.md` documents).
public struct CommandSpec: Sendable {
    public struct Argument: Sendable {
        public let name: String
        /// "string", "number", "integer", "boolean", "strings", "integers".
        public let type: String
        public let summary: String
    }

    public let name: String
    public let arguments: [Argument]
    public let summary: String

    var json: JSON {
        .object([
            ("name", .string(name)), ("summary", .string(summary)),
            ("arguments", .array(arguments.map { .object([("name", .string($0.name)), ("type", .string($0.type)), ("summary", .string($0.summary))]) })),
        ])
    }
}

extension DaemonCore {
    private static func c(_ name: String, _ summary: String, _ args: [(String, String, String)] = []) -> CommandSpec {
        CommandSpec(name: name, arguments: args.map { CommandSpec.Argument(name: $0.0, type: $0.1, summary: $0.2) }, summary: summary)
    }

    /// Every command, in the order `help` lists them.
    public static let commands: [CommandSpec] = [
        c("play", "Play (resume when paused; from the current item's start when stopped), or play the queue item `item`.",
          [("item", "integer", "queue item id")]),
        c("pause", "Pause at the current position (no effect when stopped)."),
        c("toggle", "Pause when playing, play otherwise."),
        c("stop", "Stop: the device is released; the current item stays selected."),
        c("next", "Next item in play order (wraps with repeat); past the last, stop."),
        c("previous", "Restart the item when more than 3 s in, else the previously played item."),
        c("seek", "Seek the current item.", [("position", "number", "seconds from the start"),
                                             ("offset", "number", "seconds from the current position (±)")]),
        c("skip", "Skip forward (positive) or backward (negative).", [("seconds", "number", "default 15")]),
        c("repeat", "Set or read the repeat mode.", [("mode", "string", "off, one or all")]),
        c("shuffle", "Shuffle on or off (toggles without `on`).", [("on", "boolean", "")]),
        c("single", "Stop after the current item (toggles without `on`; clears when it takes effect).", [("on", "boolean", "")]),
        c("rate", "Playback rate (1; 0 pauses).", [("rate", "number", "")]),
        c("add", "Queue files, directories (recursively, name order) and M3U playlists; relative to the music directory.",
          [("paths", "strings", "what to add"), ("path", "string", "one path"), ("position", "integer", "insert at this index (default: end)")]),
        c("insert", "Like add, at a position.", [("paths", "strings", ""), ("path", "string", ""), ("position", "integer", "required")]),
        c("remove", "Remove items (the current one: playback moves on).", [("items", "integers", "item ids"), ("item", "integer", "one item id")]),
        c("move", "Move an item to an index.", [("item", "integer", "item id"), ("position", "integer", "new index")]),
        c("clear", "Empty the queue and stop."),
        c("list", "The queue with tags and durations, the current item marked."),
        c("status", "State, current item, elapsed (ms), duration, volume, queue, modes, session, app state, device, underruns, sleep timer."),
        c("now-playing", "The now-playing info (MPNowPlayingInfoCenter keys), elapsed extrapolated now."),
        c("volume", "Set or read the volume in percent.", [("volume", "number", "0–100"), ("change", "number", "relative (±)")]),
        c("mute", "Mute or unmute (toggles without `on`).", [("on", "boolean", "")]),
        c("session", "Audio session: category and options, silent switch, screen lock; returns the session.",
          [("category", "string", "ambient, soloAmbient or playback"), ("options", "strings", "mixWithOthers, duckOthers, interruptSpokenAudioAndMixWithOthers"),
           ("silentSwitch", "boolean", ""), ("screenLocked", "boolean", "")]),
        c("lifecycle", "Move the daemon to the foreground or the background; returns the app state.", [("state", "string", "foreground or background")]),
        c("sleep", "Sleep timer: pause after N minutes (with an optional fade) or at the end of the item; cancel; or read it.",
          [("minutes", "number", ""), ("endOfItem", "boolean", ""), ("fade", "number", "fade-out seconds before the deadline"), ("cancel", "boolean", "")]),
        c("subscribe", "Receive events on this connection (all kinds, or those listed).", [("events", "strings", "event kinds")]),
        c("unsubscribe", "Stop receiving events."),
        c("auth", "TCP clients: present the token first.", [("token", "string", "")]),
        c("ping", "Answers pong."),
        c("version", "Daemon and protocol versions."),
        c("help", "This list."),
    ]
}
