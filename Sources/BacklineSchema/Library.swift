// The music library.
extension CommandSchema {
    /// `find`'s and `search`'s arguments.
    static let query: [ArgumentSchema] = [
        ArgumentSchema("terms", .strings, "an MPD filter: TAG VALUE pairs, or one expression", required: true),
        ArgumentSchema("sort", .string, "a tag (`-` before it: descending)"),
        ArgumentSchema("window", .string, "START:END of the sorted result"),
    ]

    public static let update = CommandSchema(
        "update", .library, "Scan the music directory (or a directory of it) for new, changed, moved and removed files.",
        arguments: [ArgumentSchema("path", .string, "a directory relative to the music directory (default: all of it)"),
                    ArgumentSchema("rescan", .boolean, "read unchanged files again (default: no)")],
        reply: "`job` (its number: `update` events carry it)",
        ctl: CtlSyntax("update [PATH] [--rescan] [--wait]", "Scan the music directory (or PATH in it) for new, changed, moved and removed files; --rescan reads every file again. On a terminal (or with --wait) it waits, with a bar.", example: ["Albums", "--rescan"]),
        mpd: ["update", "rescan"])
    public static let find = CommandSchema(
        "find", .library, "Songs of the library whose tags match exactly (an MPD filter).",
        arguments: query, reply: "`songs` [song]",
        ctl: CtlSyntax("find FILTER [--sort TAG] [--window FROM:TO]", "Songs whose tags are the values exactly.", example: ["artist", "Miles Davis", "--sort", "date"]),
        mpd: ["find"])
    public static let search = CommandSchema(
        "search", .library, "Songs of the library whose tags contain the values, ignoring case and accents.",
        arguments: query, reply: "`songs` [song]",
        ctl: CtlSyntax("search FILTER [--sort TAG] [--window FROM:TO]", "Songs whose tags contain the values, ignoring case and accents (any: every tag). Piped, one path a line: ctl search artist miles | ctl add -", example: ["any", "love", "--window", "0:50"]),
        mpd: ["search"])
    public static let findAdd = CommandSchema(
        "find-add", .library, "Queue the songs find takes (search: true for search's matching).", aliases: ["findadd"],
        arguments: [query[0], query[1],
                    ArgumentSchema("search", .boolean, "match as `search` does (default: no)"),
                    ArgumentSchema("position", .integer, "insert at this index (default: the end)", range: 0...Double(Int32.max))],
        reply: "as `add`: `items`, `skipped`",
        ctl: CtlSyntax("find-add FILTER [--at POS]", "Queue what find finds, in its order.", example: ["album", "Kind of Blue"]),
        mpd: ["findadd", "searchadd"])
    public static let count = CommandSchema(
        "count", .library, "How many songs (and seconds) a filter takes, grouped by a tag's values.",
        arguments: [ArgumentSchema("terms", .strings, "an MPD filter (default: every song)"), ArgumentSchema("group", .string, "a tag to group by")],
        reply: "`songs`, `playtime`; grouped: `group`, `counts` [{value, songs, playtime}]",
        ctl: CtlSyntax("count [FILTER] [--group TAG]", "How many songs, and how long, per value of a tag.", example: ["--group", "artist"]),
        mpd: ["count"])
    public static let ls = CommandSchema(
        "ls", .library, "A directory of the library: songs with their tags, playlist files, subdirectories.",
        arguments: [ArgumentSchema("path", .string, "relative to the music directory (default: its root)"),
                    ArgumentSchema("recursive", .boolean, "descend (default: no)")],
        reply: "`entries` [{kind `directory` or `playlist`, path, modified} or {kind `song`, …song}]",
        ctl: CtlSyntax("ls [PATH] [--recursive]", "A folder of the library: subfolders, songs with their tags, playlists.", example: ["Albums"]),
        mpd: ["lsinfo", "listallinfo"])
    public static let stats = CommandSchema(
        "stats", .library, "The library's artists, albums, songs and total time, and when it was last updated.",
        reply: "`artists`, `albums`, `songs`, `playtime`, `updated` (ISO 8601 or null), `unreadable` (files the scans could not use), `updating` (the running scan, as an `update` event, or null)",
        ctl: CtlSyntax("stats", "Songs, artists, albums and time in the library; when it was last updated."), mpd: ["stats"])
    public static let sticker = CommandSchema(
        "sticker", .library,
        "The listener's values kept on songs of the library (MPD's stickers: the same values MPD clients read and write). The daemon keeps `playCount` and `lastPlayed` (a song heard to its end), `skipCount` and `lastSkipped` (left before its end by next, previous or another song chosen) and `elapsed` (where a podcast or audiobook was left, as `bookmarks`) itself, as myMPD names them; a rating is `rating` (0–10, as myMPD and Cantata keep it).",
        arguments: [
            ArgumentSchema("action", .string, "what to do (default: `list`)", allowed: ["get", "set", "inc", "dec", "delete", "list", "find", "names"]),
            ArgumentSchema("path", .string, "the song (relative to the music directory, or absolute within it); for `find`, a directory (default: all of them)"),
            ArgumentSchema("name", .string, "the sticker (`get`, `set`, `inc`, `dec`, `find`; `delete`: without it, all of the song's)"),
            ArgumentSchema("value", .string, "`set`: the value (4,096 bytes at most, no control character); `find`: what `op` compares with"),
            ArgumentSchema("by", .integer, "`inc`/`dec`: how much (default 1)", range: 0...Double(Int32.max)),
            ArgumentSchema("op", .string, "`find`: how values compare with `value`: `=`, `<`, `>` as text, `eq`, `lt`, `gt` as integers, `contains`, `starts_with`",
                           allowed: ["=", "<", ">", "eq", "lt", "gt", "contains", "starts_with"]),
            ArgumentSchema("sort", .string, "`find`: `uri`, `value` or `value_int` (`-` before it: descending; default: by path)"),
            ArgumentSchema("window", .string, "`find`: START:END of the sorted result"),
        ],
        note: "`set` needs `path`, `name`, `value`; `get`, `inc`, `dec` `path` and `name`; `find` `name` (and `op` with `value`)",
        reply: "`stickers` [{path, name, value}] (`get`, `set`, `inc` and `dec`: the new value; `list`: by name; `find`: by `sort`); `names` [name] (`names`: every name in use)",
        ctl: CtlSyntax("sticker ACTION [PATH] [NAME] [VALUE]",
                       "Values kept on songs: list PATH; get PATH NAME; set PATH NAME VALUE; inc|dec PATH NAME [N]; delete PATH [NAME]; find NAME [DIR] [--op OP --value V] [--sort KEY] [--window A:B]; names.",
                       example: ["set", "Albums/a.flac", "rating", "8"]),
        mpd: ["sticker", "stickernames"])
}
