/// The control protocol as data: every command and event kind, in the order `help` and
/// docs/PROTOCOL.md list them. The daemon's handlers, the JSON codec's argument checks,
/// `backline ctl`'s parser and help, the web remote's names and docs/PROTOCOL.md's tables all
/// come from here (tests fail on any drift).
public enum Schema {
    /// Every command of the protocol.
    public static let commands: [CommandSchema] = [
        .play, .pause, .toggle, .stop, .next, .previous, .seek, .skip, .chapter,
        .repeat, .shuffle, .single, .consume, .replayGain, .crossfade, .rate, .speed,
        .add, .insert, .remove, .move, .priority, .clip, .clear, .shuffleQueue, .clearError, .list,
        .save, .load, .playlists, .playlist, .playlistAdd, .playlistDelete, .playlistMove, .playlistClear, .playlistRemove, .playlistRename,
        .browse,
        .update, .find, .search, .findAdd, .count, .ls, .stats, .sticker,
        .status, .nowPlaying, .bookmarks,
        .volume, .mute, .session, .lifecycle, .sleep, .alarm,
        .newPartition, .partition, .listPartitions, .deletePartition, .moveOutput, .outputs,
        .subscribe, .unsubscribe,
        .channelSubscribe, .channelUnsubscribe, .channels, .channelSend, .channelRead,
        .auth, .ping, .version, .help,
    ]

    /// `backline ctl`'s commands that are not protocol commands.
    public static let ctlOnly: [CtlOnlyCommand] = [
        CtlOnlyCommand("search-add", .library, aliases: ["searchadd"],
                       CtlSyntax("search-add FILTER [--at POS]", "Queue what search finds, in its order (find-add with search).",
                                 example: ["any", "love"])),
        CtlOnlyCommand("watch", .info,
                       CtlSyntax("watch [KIND…]", "Print what changes, one line each, until the daemon stops. Kinds: "
                                 + events.filter(\.watchedByDefault).map(\.kind).joined(separator: " ")
                                 + ", and " + events.filter { !$0.watchedByDefault }.map(\.kind).joined(separator: " ")
                                 + " (only when asked for). --json: the events as sent.", example: ["state", "current"])),
        CtlOnlyCommand("send", .daemon, CtlSyntax("send JSON", "Send one request of the protocol as it is (docs/PROTOCOL.md).",
                                                   example: ["{\"command\":\"ping\"}"])),
    ]

    /// Every event kind a subscribed connection may receive.
    public static let events: [EventSchema] = [
        EventSchema("state", "`state`"),
        EventSchema("buffering", "`buffering`: true when playback starts waiting for the network (a stream's first audio on its way, a stall: the device plays silence, the position holds), false when it is heard again"),
        EventSchema("current", "`item` (the item, or null at the end of the queue)"),
        EventSchema("queue", "`version`, `count`"),
        EventSchema("modes", "`repeat`, `shuffle`, `stopAfterCurrent`, `consume`"),
        EventSchema("failed", "`item` (id), `path`, `reason`"),
        EventSchema("seeked", "`item`, `time` (s)"),
        EventSchema("chapter", "`item`, `chapter` (index of the chapter heard, 0 the first; null before the first one starts), `count`, `title`, `start` (s): when the chapter's first sample is heard, when an item with chapters starts, and when a seek lands in another chapter"),
        EventSchema("position", "`item`, `elapsed`, `duration` — while playing, every `position-interval` s (1 s; at least 0.05)", watchedByDefault: false),
        EventSchema("volume", "`volume`, `muted`"),
        EventSchema("session", "`kind` (`interruptionBegan` {reason, by}, `interruptionEnded` {shouldResume}, `routeChanged` {reason}, `mediaServicesWereReset`, `silencedChanged` {silenced}, `duckingChanged` {ducked})"),
        EventSchema("lifecycle", "`kind` (`willResignActive`, `didEnterBackground`, `willEnterForeground`, `didBecomeActive`, `didSuspend`, `didResume`, `willTerminate`, `backgroundTaskExpiring`, `backgroundTaskLeaked`), `state`"),
        EventSchema("sleep", "`kind` (`set` {minutes, endOfItem, endOfChapter}, `cancelled`, `fired`)"),
        EventSchema("alarm", "`kind` (`set` {alarm}, `cancelled` {id}, `fired` {alarm})"),
        EventSchema("hook", "`hook` (`on-suspend`/`on-resume`), `status` (exit status, null when it could not run or timed out)"),
        EventSchema("shutdown", "(the daemon is stopping)"),
        EventSchema("playlists", "`name` (a stored playlist saved, changed, renamed or deleted)"),
        EventSchema("sticker", "`path` (the song, relative to the music directory), `name` (the sticker set, changed or deleted; null: all of the song's)"),
        EventSchema("update", "`job`, `path`, `rescan`, `done`, `scanned` (files looked at so far), `expected` (the files the last scan of this path saw, or null), `added`, `updated`, `removed`, `moved`, `failed` (files that could not be used), `read` (files opened for their tags: a hard link of a file already read in the scan takes its tags unopened), `error` (when the scan failed): at its start, four times a second at most while it runs, and at its end (`done`)"),
        EventSchema("partitions", "(a partition was made or deleted, or an output moved)"),
        EventSchema("message", "`channel`, `message`: a client-to-client message for this connection (channels, below)"),
    ]

    /// The command named `name` or one of its aliases. A switch, not a table built from
    /// ``commands``: a lookup makes only the entry it finds, so `backline ctl status` does not
    /// build all of them (which cost the small front end 0.4 MiB of resident memory and a
    /// third more time). SchemaTests checks that it finds every entry by every name.
    public static func command(_ name: String) -> CommandSchema? {
        switch name {
        case "play": .play
        case "pause": .pause
        case "toggle": .toggle
        case "stop": .stop
        case "next": .next
        case "previous": .previous
        case "seek": .seek
        case "skip": .skip
        case "chapter": .chapter
        case "repeat": .`repeat`
        case "shuffle": .shuffle
        case "single": .single
        case "consume": .consume
        case "replay-gain": .replayGain
        case "crossfade": .crossfade
        case "rate": .rate
        case "speed": .speed
        case "add": .add
        case "insert": .insert
        case "remove": .remove
        case "move": .move
        case "priority": .priority
        case "clip": .clip
        case "clear": .clear
        case "shuffle-queue": .shuffleQueue
        case "clear-error": .clearError
        case "list", "queue": .list
        case "save": .save
        case "load": .load
        case "playlists": .playlists
        case "playlist": .playlist
        case "playlist-add": .playlistAdd
        case "playlist-delete": .playlistDelete
        case "playlist-move": .playlistMove
        case "playlist-clear": .playlistClear
        case "playlist-remove": .playlistRemove
        case "playlist-rename": .playlistRename
        case "browse": .browse
        case "update": .update
        case "find": .find
        case "search": .search
        case "find-add", "findadd": .findAdd
        case "count": .count
        case "ls": .ls
        case "stats": .stats
        case "sticker": .sticker
        case "status": .status
        case "now-playing": .nowPlaying
        case "bookmarks": .bookmarks
        case "volume": .volume
        case "mute": .mute
        case "session": .session
        case "lifecycle": .lifecycle
        case "sleep": .sleep
        case "alarm": .alarm
        case "new-partition", "newpartition": .newPartition
        case "partition": .partition
        case "list-partitions", "listpartitions", "partitions": .listPartitions
        case "delete-partition", "delpartition": .deletePartition
        case "move-output", "moveoutput": .moveOutput
        case "outputs": .outputs
        case "subscribe": .subscribe
        case "unsubscribe": .unsubscribe
        case "channel-subscribe": .channelSubscribe
        case "channel-unsubscribe": .channelUnsubscribe
        case "channels": .channels
        case "channel-send": .channelSend
        case "channel-read": .channelRead
        case "auth": .auth
        case "ping": .ping
        case "version": .version
        case "help": .help
        default: nil
        }
    }

    /// The event kind named `kind`.
    public static func event(_ kind: String) -> EventSchema? { events.first { $0.kind == kind } }

    /// Every event kind's name, in order.
    public static let eventKinds: [String] = events.map(\.kind)
}
