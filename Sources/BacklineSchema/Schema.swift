/// The control protocol as data: every command and event kind, in the order `help` and
/// docs/PROTOCOL.md list them. The daemon's handlers, the JSON codec's argument checks,
/// `backline ctl`'s parser and help, the web remote's names and docs/PROTOCOL.md's tables all
/// come from here (tests fail on any drift).
public enum Schema {
    /// Every command of the protocol.
    public static let commands: [CommandSchema] = [
        .play, .pause, .toggle, .stop, .next, .previous, .seek, .skip,
        .repeat, .shuffle, .single, .consume, .replayGain, .crossfade, .rate,
        .add, .insert, .remove, .move, .priority, .clip, .clear, .shuffleQueue, .clearError, .list,
        .save, .load, .playlists, .playlist, .playlistAdd, .playlistDelete, .playlistMove, .playlistClear, .playlistRemove, .playlistRename,
        .browse,
        .update, .find, .search, .findAdd, .count, .ls, .stats,
        .status, .nowPlaying,
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
        EventSchema("position", "`item`, `elapsed`, `duration` — while playing, every `position-interval` s (1 s; at least 0.05)", watchedByDefault: false),
        EventSchema("volume", "`volume`, `muted`"),
        EventSchema("session", "`kind` (`interruptionBegan` {reason, by}, `interruptionEnded` {shouldResume}, `routeChanged` {reason}, `mediaServicesWereReset`, `silencedChanged` {silenced}, `duckingChanged` {ducked})"),
        EventSchema("lifecycle", "`kind` (`willResignActive`, `didEnterBackground`, `willEnterForeground`, `didBecomeActive`, `didSuspend`, `didResume`, `willTerminate`, `backgroundTaskExpiring`, `backgroundTaskLeaked`), `state`"),
        EventSchema("sleep", "`kind` (`set` {minutes, endOfItem}, `cancelled`, `fired`)"),
        EventSchema("alarm", "`kind` (`set` {alarm}, `cancelled` {id}, `fired` {alarm})"),
        EventSchema("hook", "`hook` (`on-suspend`/`on-resume`), `status` (exit status, null when it could not run or timed out)"),
        EventSchema("shutdown", "(the daemon is stopping)"),
        EventSchema("playlists", "`name` (a stored playlist saved, changed, renamed or deleted)"),
        EventSchema("update", "`job`, `path`, `rescan`, `done`, `scanned` (files looked at so far), `expected` (the files the last scan of this path saw, or null), `added`, `updated`, `removed`, `moved`, `failed` (files that could not be used), `read` (files opened for their tags: a hard link of a file already read in the scan takes its tags unopened), `error` (when the scan failed): at its start, four times a second at most while it runs, and at its end (`done`)"),
        EventSchema("partitions", "(a partition was made or deleted, or an output moved)"),
        EventSchema("message", "`channel`, `message`: a client-to-client message for this connection (channels, below)"),
    ]

    private static let byName: [String: CommandSchema] = {
        var names: [String: CommandSchema] = [:]
        for c in commands {
            names[c.name] = c
            for a in c.aliases { names[a] = c }
        }
        return names
    }()

    /// The command named `name` or one of its aliases.
    public static func command(_ name: String) -> CommandSchema? { byName[name] }

    /// The event kind named `kind`.
    public static func event(_ kind: String) -> EventSchema? { events.first { $0.kind == kind } }

    /// Every event kind's name, in order.
    public static let eventKinds: [String] = events.map(\.kind)
}
