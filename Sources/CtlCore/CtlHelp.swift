/// `backline ctl help [COMMAND]`: ctl's own syntax (positions from 1, ids where an item is
/// meant), in lines that fit 80 columns, whether on a terminal or piped.
public enum CtlHelp {
    public struct Entry: Sendable {
        public let name: String
        public let usage: String
        public let summary: String
    }

    /// Every ctl command by group, in the order `help` lists them.
    public static let groups: [(String, [Entry])] = [
        ("Playing", [
            Entry(name: "play", usage: "play [ID]",
                  summary: "Play: resume when paused, start the current item when stopped; with ID, play that item from its start. Says which items failed, and exits 1 when nothing plays."),
            Entry(name: "pause", usage: "pause", summary: "Pause where it is."),
            Entry(name: "toggle", usage: "toggle", summary: "Pause when playing, play otherwise."),
            Entry(name: "stop", usage: "stop", summary: "Stop; the current item stays selected."),
            Entry(name: "next", usage: "next", summary: "The next item (past the last: stop)."),
            Entry(name: "previous", usage: "previous", summary: "Back to the item's start when more than 3 s in, else the item before."),
            Entry(name: "seek", usage: "seek SECONDS|+SECONDS|-SECONDS|M:SS",
                  summary: "Go to a time in the current item (+/-: from where it is); a time past its end is its end."),
            Entry(name: "skip", usage: "skip [±SECONDS]", summary: "Skip forward (default 15 s), or back with a minus."),
            Entry(name: "repeat", usage: "repeat [off|one|all]", summary: "Set or show repeat."),
            Entry(name: "shuffle", usage: "shuffle [on|off]", summary: "Shuffle on or off (no argument: switch it)."),
            Entry(name: "single", usage: "single [on|off|each]", summary: "Stop after the current item, once, or after each (no argument: switch it)."),
            Entry(name: "consume", usage: "consume [off|on|oneshot]", summary: "Remove items from the queue once played (oneshot: the next one only)."),
            Entry(name: "replay-gain", usage: "replay-gain [off|track|album|auto]",
                  summary: "ReplayGain: even loudness from the files' values (auto: album unless shuffled); from the next item."),
            Entry(name: "crossfade", usage: "crossfade [SECONDS|off]",
                  summary: "Overlap each item's end with the next one's start (equal power; an album's consecutive tracks stay gapless)."),
            Entry(name: "rate", usage: "rate 1|0", summary: "1 plays, 0 pauses."),
        ]),
        ("The queue (POS: a position, 1 is the first; ID: an item's id, [id N] in list)", [
            Entry(name: "list", usage: "list (or queue) | list TAG [FILTER] [--group TAG]…",
                  summary: "The queue: position, [id N], title — artist (length); > marks the current item. With TAG: that tag's values in the library (of the songs FILTER takes), grouped by other tags: list album --group albumartist."),
            Entry(name: "add", usage: "add PATH… [--at POS]",
                  summary: "Queue files, folders and playlists, at the end or at POS. A relative PATH is relative to the current folder when it is inside the music directory, else to the music directory. What cannot be added is skipped and listed."),
            Entry(name: "insert", usage: "insert POS PATH…", summary: "As add, at position POS."),
            Entry(name: "remove", usage: "remove ID…",
                  summary: "Remove items by id. An unknown id is an error; the others are still removed (as mpd does), and the message says which."),
            Entry(name: "move", usage: "move ID POS", summary: "Move the item ID to position POS."),
            Entry(name: "priority", usage: "priority N ID…", summary: "Priority 0–255: with shuffle on, higher priorities play first."),
            Entry(name: "clip", usage: "clip ID [START [END]]", summary: "Play only part of item ID, from START to END (no END: to its end; neither: all of it)."),
            Entry(name: "clear", usage: "clear", summary: "Empty the queue and stop."),
            Entry(name: "shuffle-queue", usage: "shuffle-queue [FROM TO]",
                  summary: "Put the queue (or positions FROM to TO) in a random order, once; the current item stays playing, first."),
            Entry(name: "clear-error", usage: "clear-error", summary: "Forget why the current item failed."),
        ]),
        ("Stored playlists", [
            Entry(name: "playlists", usage: "playlists", summary: "The stored playlists."),
            Entry(name: "playlist", usage: "playlist NAME", summary: "A stored playlist's entries, numbered from 1."),
            Entry(name: "save", usage: "save NAME [--replace]", summary: "Save the queue as a playlist (--replace: over one of that name)."),
            Entry(name: "load", usage: "load NAME [--at POS]", summary: "Queue a stored playlist."),
            Entry(name: "playlist-add", usage: "playlist-add NAME PATH…", summary: "Append to a playlist (created if need be); paths as for add."),
            Entry(name: "playlist-delete", usage: "playlist-delete NAME POS", summary: "Delete entry POS of a playlist."),
            Entry(name: "playlist-move", usage: "playlist-move NAME FROM TO", summary: "Move a playlist's entry FROM to position TO."),
            Entry(name: "playlist-clear", usage: "playlist-clear NAME", summary: "Empty a playlist."),
            Entry(name: "playlist-remove", usage: "playlist-remove NAME", summary: "Delete a playlist."),
            Entry(name: "playlist-rename", usage: "playlist-rename NAME NEW", summary: "Rename a playlist."),
            Entry(name: "browse", usage: "browse [PATH] [--recursive]", summary: "List a folder of the music directory, with tags."),
        ]),
        ("Partitions (zones: each its own queue, player and output; --partition NAME runs any command in one)", [
            Entry(name: "listpartitions", usage: "listpartitions (or partitions)",
                  summary: "The partitions: state, queue length, output; > marks this one."),
            Entry(name: "partition", usage: "partition NAME", summary: "Whether partition NAME exists (--partition NAME uses it)."),
            Entry(name: "newpartition", usage: "newpartition NAME [OUTPUT]",
                  summary: "Make a partition; it plays through the configured output named like it (or OUTPUT)."),
            Entry(name: "delpartition", usage: "delpartition NAME", summary: "Delete a partition: it stops, its output is free."),
            Entry(name: "moveoutput", usage: "moveoutput OUTPUT --partition NAME", summary: "Move a configured output into the partition."),
            Entry(name: "outputs", usage: "outputs", summary: "The outputs and the partition each plays in."),
        ]),
        ("The library (FILTER: TAG VALUE… pairs, or one MPD expression \"(Artist == 'X')\")", [
            Entry(name: "update", usage: "update [PATH] [--rescan] [--wait]",
                  summary: "Scan the music directory (or PATH in it) for new, changed, moved and removed files; --rescan reads every file again. On a terminal (or with --wait) it waits, with a bar."),
            Entry(name: "search", usage: "search FILTER [--sort TAG] [--window FROM:TO]",
                  summary: "Songs whose tags contain the values, ignoring case and accents (any: every tag). Piped, one path a line: ctl search artist miles | ctl add -"),
            Entry(name: "find", usage: "find FILTER [--sort TAG] [--window FROM:TO]", summary: "Songs whose tags are the values exactly."),
            Entry(name: "findadd", usage: "findadd FILTER [--at POS]", summary: "Queue what find finds, in its order."),
            Entry(name: "searchadd", usage: "searchadd FILTER [--at POS]", summary: "Queue what search finds, in its order."),
            Entry(name: "count", usage: "count [FILTER] [--group TAG]", summary: "How many songs, and how long, per value of a tag."),
            Entry(name: "ls", usage: "ls [PATH] [--recursive]", summary: "A folder of the library: subfolders, songs with their tags, playlists."),
            Entry(name: "stats", usage: "stats", summary: "Songs, artists, albums and time in the library; when it was last updated."),
        ]),
        ("What plays", [
            Entry(name: "status", usage: "status [--verbose] [--format FORMAT]",
                  summary: "What plays, the modes, the daemon; --verbose adds the item's format (and whether it is down-mixed) and the device's settings. --format prints one line: %title% %artist% %album% %elapsed% %duration% %state% %buffering% %id% %file% %position% are replaced (empty when unknown), e.g. --format '%artist% - %title%'."),
            Entry(name: "now-playing", usage: "now-playing", summary: "What desktop media controls are shown."),
            Entry(name: "watch", usage: "watch [KIND…]",
                  summary: "Print what changes, one line each, until the daemon stops. Kinds: state current queue modes failed seeked volume session lifecycle sleep alarm hook playlists shutdown, and position (every second while playing: only when asked for). --json: the events as sent."),
        ]),
        ("Sound and the daemon", [
            Entry(name: "volume", usage: "volume [N|+N|-N]", summary: "Set (0–100; more is 100), change or show the volume."),
            Entry(name: "mute", usage: "mute [on|off]", summary: "Mute or unmute; the volume is kept (no argument: switch it)."),
            Entry(name: "session", usage: "session [--category C] [--options O,…]\n[--silent-switch on|off] [--screen-lock on|off]",
                  summary: "How it shares the sound: C is playback (keeps playing in the background), soloAmbient (stops in the background, pauses for other players) or ambient (plays along with others); options mixWithOthers, duckOthers (lowers the others), interruptSpokenAudioAndMixWithOthers. The silent switch and screen lock mute all but playback. See docs/GLOSSARY.md."),
            Entry(name: "lifecycle", usage: "lifecycle [foreground|background]",
                  summary: "Move the daemon to the foreground or the background, or show where it is. In the background it stops (and is suspended when idle) unless it plays in playback."),
            Entry(name: "sleep", usage: "sleep [MINUTES [--fade S] | --end-of-item | --cancel]",
                  summary: "Pause after MINUTES (fading out over the last S seconds) or at the end of the item; 0 or --cancel turns it off; no argument shows it."),
            Entry(name: "alarm", usage: "alarm [TIME [--fade S] [--play ID|--load NAME] [--daily] | --cancel N]",
                  summary: "Start playing at TIME, HH:MM or HH:MM:SS (fading in over S seconds; the item ID or a stored playlist; once or daily); --cancel N removes alarm N; no argument lists them."),
            Entry(name: "channels", usage: "channels", summary: "The client-to-client channels someone listens on (MPD clients' and the protocol's)."),
            Entry(name: "channel-send", usage: "channel-send CHANNEL TEXT…", summary: "Send TEXT to a channel's listeners (an error when nobody listens)."),
            Entry(name: "ping", usage: "ping", summary: "Whether the daemon answers."),
            Entry(name: "version", usage: "version", summary: "The daemon's version."),
            Entry(name: "send", usage: "send JSON", summary: "Send one request of the protocol as it is (docs/PROTOCOL.md)."),
            Entry(name: "help", usage: "help [COMMAND]", summary: "This list, or one command."),
        ]),
    ]

    public static func entry(_ name: String) -> Entry? {
        let name = name == "queue" ? "list" : name
        return groups.lazy.flatMap(\.1).first { $0.name == name }
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
