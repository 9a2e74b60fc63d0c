// Stored playlists.
extension CommandSchema {
    public static let save = CommandSchema(
        "save", .playlists, "Save the queue as a stored playlist.",
        arguments: [ArgumentSchema("name", .string, "playlist name", required: true),
                    ArgumentSchema("replace", .boolean, "overwrite an existing one (else `exists`)")],
        reply: "`count`",
        ctl: CtlSyntax("save NAME [--replace]", "Save the queue as a playlist (--replace: over one of that name).", example: ["mix", "--replace"]),
        mpd: ["save"])
    public static let load = CommandSchema(
        "load", .playlists, "Queue a stored playlist (or a range of it).",
        arguments: [ArgumentSchema("name", .string, "playlist name", required: true),
                    ArgumentSchema("start", .integer, "first entry (0-based)", range: 0...Double(Int32.max)),
                    ArgumentSchema("end", .integer, "entry after the last", range: 0...Double(Int32.max)),
                    ArgumentSchema("position", .integer, "insert at this index (default: the end)", range: 0...Double(Int32.max))],
        reply: "as `add` (entries that cannot be used are in `skipped`)",
        ctl: CtlSyntax("load NAME [--at POS]", "Queue a stored playlist.", example: ["mix", "--at", "1"]), mpd: ["load"])
    public static let playlists = CommandSchema(
        "playlists", .playlists, "The stored playlists.", reply: "`playlists` ([{name, modified}])",
        ctl: CtlSyntax("playlists", "The stored playlists."), mpd: ["listplaylists"])
    public static let playlist = CommandSchema(
        "playlist", .playlists, "A stored playlist's entries.",
        arguments: [ArgumentSchema("name", .string, "playlist name", required: true)], reply: "`items` (entries as stored)",
        ctl: CtlSyntax("playlist NAME", "A stored playlist's entries, numbered from 1.", example: ["mix"]),
        mpd: ["listplaylist", "listplaylistinfo"])
    public static let playlistAdd = CommandSchema(
        "playlist-add", .playlists, "Append files, directories or playlists to a stored playlist (created if need be).",
        arguments: [ArgumentSchema("name", .string, "playlist name", required: true),
                    ArgumentSchema("paths", .strings, "resolved as `add`'s", required: true)],
        reply: "`count`",
        ctl: CtlSyntax("playlist-add NAME PATH…", "Append to a playlist (created if need be); paths as for add.", example: ["mix", "a.mp3"]),
        mpd: ["playlistadd"])
    public static let playlistDelete = CommandSchema(
        "playlist-delete", .playlists, "Delete an entry of a stored playlist.",
        arguments: [ArgumentSchema("name", .string, "playlist name", required: true),
                    ArgumentSchema("position", .integer, "entry index", required: true)],
        reply: "`count`",
        ctl: CtlSyntax("playlist-delete NAME POS", "Delete entry POS of a playlist.", example: ["mix", "2"]), mpd: ["playlistdelete"])
    public static let playlistMove = CommandSchema(
        "playlist-move", .playlists, "Move an entry of a stored playlist.",
        arguments: [ArgumentSchema("name", .string, "playlist name", required: true),
                    ArgumentSchema("from", .integer, "entry index", required: true), ArgumentSchema("to", .integer, "new index", required: true)],
        reply: "`index`",
        ctl: CtlSyntax("playlist-move NAME FROM TO", "Move a playlist's entry FROM to position TO.", example: ["mix", "2", "1"]),
        mpd: ["playlistmove"])
    public static let playlistClear = CommandSchema(
        "playlist-clear", .playlists, "Empty a stored playlist.",
        arguments: [ArgumentSchema("name", .string, "playlist name", required: true)],
        ctl: CtlSyntax("playlist-clear NAME", "Empty a playlist.", example: ["mix"]), mpd: ["playlistclear"])
    public static let playlistRemove = CommandSchema(
        "playlist-remove", .playlists, "Delete a stored playlist.",
        arguments: [ArgumentSchema("name", .string, "playlist name", required: true)],
        ctl: CtlSyntax("playlist-remove NAME", "Delete a playlist.", example: ["mix"]), mpd: ["rm"])
    public static let playlistRename = CommandSchema(
        "playlist-rename", .playlists, "Rename a stored playlist.",
        arguments: [ArgumentSchema("name", .string, "playlist name", required: true), ArgumentSchema("to", .string, "new name", required: true)],
        ctl: CtlSyntax("playlist-rename NAME NEW", "Rename a playlist.", example: ["mix", "old-mix"]), mpd: ["rename"])
}

// The music directory as files.
extension CommandSchema {
    public static let browse = CommandSchema(
        "browse", .browse, "List a directory of the music directory (recursively, with tags).",
        arguments: [ArgumentSchema("path", .string, "relative to the music directory (default: its root)"),
                    ArgumentSchema("recursive", .boolean, "descend (default: no)"),
                    ArgumentSchema("tags", .boolean, "read audio files' tags (default: yes)")],
        reply: "`entries` [{path, kind (`directory`, `audio`, `playlist`, `other`), size, modified, and for audio files `title`, `artist`, `album`, `track`, `duration`}]",
        ctl: CtlSyntax("browse [PATH] [--recursive]", "List a folder of the music directory, with tags.", example: ["Albums", "--recursive"]),
        mpd: ["listfiles"])
}
