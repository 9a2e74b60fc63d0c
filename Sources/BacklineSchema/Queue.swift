// The play queue.
extension CommandSchema {
    public static let add = CommandSchema(
        "add", .queue, "Queue files, directories (recursively, name order) and M3U playlists; relative to the music directory.",
        arguments: [ArgumentSchema("paths", .strings, "files, directories, playlists, and `http`/`https` URLs (streams, and playlists by URL; unless `allow-streams = no`)"),
                    ArgumentSchema("path", .string, "one path"),
                    ArgumentSchema("position", .integer, "insert at this index (default: the end)", range: 0...Double(Int32.max)),
                    ArgumentSchema("partial", .boolean, "add what can be used and list the rest in `skipped` (default: one path that cannot be used adds nothing)")],
        note: "`paths` and/or `path`", reply: "`items` (new ids), `skipped` ([{path, reason}])",
        ctl: CtlSyntax("add PATH… [--at POS]", "Queue files, folders and playlists, at the end or at POS. A relative PATH is relative to the current folder when it is inside the music directory, else to the music directory. What cannot be added is skipped and listed.", example: ["a.mp3", "--at", "2"]),
        mpd: ["add", "addid"])
    public static let insert = CommandSchema(
        "insert", .queue, "Like add, at a position.",
        arguments: [ArgumentSchema("paths", .strings, "as `add`"), ArgumentSchema("path", .string, "one path"),
                    ArgumentSchema("position", .integer, "insert at this index", required: true, range: 0...Double(Int32.max)),
                    ArgumentSchema("partial", .boolean, "as `add`")],
        reply: "as `add`",
        ctl: CtlSyntax("insert POS PATH…", "As add, at position POS.", example: ["1", "a.mp3"]))
    public static let remove = CommandSchema(
        "remove", .queue, "Remove items by id (the current one: playback moves on); unknown ids are an error that says what was removed.",
        arguments: [ArgumentSchema("items", .integers, "item ids"), ArgumentSchema("item", .integer, "one item id")],
        note: "`items` or `item`", reply: "`count` (items left)",
        ctl: CtlSyntax("remove ID…", "Remove items by id. An unknown id is an error; the others are still removed (as mpd does), and the message says which.", example: ["4", "5"]),
        mpd: ["delete", "deleteid"])
    public static let move = CommandSchema(
        "move", .queue, "Move an item to an index.",
        arguments: [ArgumentSchema("item", .integer, "item id", required: true),
                    ArgumentSchema("position", .integer, "new index", required: true, range: 0...Double(Int32.max))],
        reply: "`index`",
        ctl: CtlSyntax("move ID POS", "Move the item ID to position POS.", example: ["4", "1"]), mpd: ["move", "moveid"])
    public static let priority = CommandSchema(
        "priority", .queue, "Set items' priority, 0–255: in shuffle, higher priorities play first.",
        arguments: [ArgumentSchema("priority", .integer, "higher plays first with shuffle on", required: true, range: 0...255),
                    ArgumentSchema("items", .integers, "item ids"), ArgumentSchema("item", .integer, "one item id")],
        note: "`items` or `item`",
        ctl: CtlSyntax("priority N ID…", "Priority 0–255: with shuffle on, higher priorities play first.", example: ["10", "4"]),
        mpd: ["prio", "prioid"])
    public static let clip = CommandSchema(
        "clip", .queue, "Play only part of an item: from start to end seconds (neither: all of it). Not the item playing now.",
        arguments: [ArgumentSchema("item", .integer, "item id", required: true), ArgumentSchema("start", .number, "seconds (default 0)"),
                    ArgumentSchema("end", .number, "seconds (default: the end)")],
        note: "play only that part of the item (MPD's `rangeid`); not the item playing now (`forbidden`); the item then carries `clip` {`start`, `end`} and its `duration` is the part's length",
        ctl: CtlSyntax("clip ID [START [END]]", "Play only part of item ID, from START to END (no END: to its end; neither: all of it).", example: ["4", "10", "20"]),
        mpd: ["rangeid"])
    public static let clear = CommandSchema(
        "clear", .queue, "Empty the queue and stop.", ctl: CtlSyntax("clear", "Empty the queue and stop."), mpd: ["clear"])
    public static let shuffleQueue = CommandSchema(
        "shuffle-queue", .queue, "Put the queue's items (or those at indexes start..<end) in a random order, once.",
        arguments: [ArgumentSchema("start", .integer, "first index"), ArgumentSchema("end", .integer, "index after the last")],
        note: "neither: the whole queue",
        ctl: CtlSyntax("shuffle-queue [FROM TO]", "Put the queue (or positions FROM to TO) in a random order, once; the current item stays playing, first.", example: ["1", "5"]),
        mpd: ["shuffle"])
    public static let clearError = CommandSchema(
        "clear-error", .queue, "Forget why the current item failed.",
        ctl: CtlSyntax("clear-error", "Forget why the current item failed."), mpd: ["clearerror"])
    public static let list = CommandSchema(
        "list", .queue, "The queue with tags and durations, the current item marked; with tag: that tag's values in the library.",
        aliases: ["queue"],
        arguments: [ArgumentSchema("tag", .string, "list this tag's values in the library instead (Artist, Album, …)"),
                    ArgumentSchema("terms", .strings, "with `tag`: an MPD filter the songs must match"),
                    ArgumentSchema("group", .strings, "with `tag`: tags to group by, outermost first")],
        reply: "`version`, `current` (id or null), `items`; with `tag`: `tags` (the group tags, then `tag`), `values` [[group values…, value]]",
        ctl: CtlSyntax("list (or queue) | list TAG [FILTER] [--group TAG]…", "The queue: position, [id N], title — artist (length); > marks the current item. With TAG: that tag's values in the library (of the songs FILTER takes), grouped by other tags: list album --group albumartist.", example: ["album", "--group", "albumartist"]),
        mpd: ["playlistinfo", "list"])
}
