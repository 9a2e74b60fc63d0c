// Playing: the transport and the play modes.
extension CommandSchema {
    public static let play = CommandSchema(
        "play", .transport, "Play (resume when paused; from the current item's start when stopped), or play the queue item `item`.",
        arguments: [ArgumentSchema("item", .integer, "queue item id")],
        reply: "`state`",
        ctl: CtlSyntax("play [ID]", "Play: resume when paused, start the current item when stopped; with ID, play that item from its start. Says which items failed, and exits 1 when nothing plays.", example: ["3"]),
        mpd: ["play", "playid"])
    public static let pause = CommandSchema(
        "pause", .transport, "Pause at the current position (no effect when stopped).", reply: "`state`",
        ctl: CtlSyntax("pause", "Pause where it is."), mpd: ["pause"])
    public static let toggle = CommandSchema(
        "toggle", .transport, "Pause when playing, play otherwise.", reply: "`state`",
        ctl: CtlSyntax("toggle", "Pause when playing, play otherwise."), mpd: ["pause"])
    public static let stop = CommandSchema(
        "stop", .transport, "Stop: the device is released; the current item stays selected.", reply: "`state`",
        ctl: CtlSyntax("stop", "Stop; the current item stays selected."), mpd: ["stop"])
    public static let next = CommandSchema(
        "next", .transport, "Next item in play order (wraps with repeat); past the last, stop.", reply: "`current` (item or null)",
        ctl: CtlSyntax("next", "The next item (past the last: stop)."), mpd: ["next"])
    public static let previous = CommandSchema(
        "previous", .transport, "Restart the item when more than 3 s in, else the previously played item.", reply: "`current`",
        ctl: CtlSyntax("previous", "Back to the item's start when more than 3 s in, else the item before."), mpd: ["previous"])
    public static let seek = CommandSchema(
        "seek", .transport, "Seek the current item (or, with `item`, that item, which becomes current; a pause is kept).",
        arguments: [ArgumentSchema("position", .number, "seconds from the start"),
                    ArgumentSchema("offset", .number, "seconds from the current position (±)"),
                    ArgumentSchema("item", .integer, "seek in this item, which becomes current; a pause is kept")],
        note: "`position` **or** `offset`", reply: "`position`",
        ctl: CtlSyntax("seek SECONDS|+SECONDS|-SECONDS|M:SS", "Go to a time in the current item (+/-: from where it is); a time past its end is its end.", example: ["1:30"]),
        mpd: ["seek", "seekid", "seekcur"])
    public static let skip = CommandSchema(
        "skip", .transport, "Skip forward (positive) or backward (negative); without `seconds`, by the skip interval (Apple Podcasts': 30 s forward, 15 s back; `skip-forward`, `skip-backward` in the configuration).",
        arguments: [ArgumentSchema("seconds", .number, "±, not 0; absent: the interval"),
                    ArgumentSchema("back", .boolean, "without seconds: back by the backward interval")],
        reply: "`position`",
        ctl: CtlSyntax("skip [±SECONDS|back]", "Skip forward (by the skip interval, 30 s unless configured), back with `back` (15 s), or by SECONDS (a minus: back).", example: ["back"]))
    public static let chapter = CommandSchema(
        "chapter", .transport,
        "The current item's chapters and the one heard; with `to` or `index`, go to the start of the next chapter, the previous one (the heard chapter's own start when more than 3 s into it, as `previous`), or chapter `index` (0 the first).",
        arguments: [ArgumentSchema("to", .string, "absent: list", allowed: ["next", "previous"]),
                    ArgumentSchema("index", .integer, "the chapter to go to, 0 the first")],
        note: "`to` **or** `index`, or neither",
        reply: "`chapters` ([{title, start, end}], seconds), `chapter` (index heard, or null); after a move, `position`",
        ctl: CtlSyntax("chapter [next|previous|N]", "List the current item's chapters, the one heard marked; or go to the next, the previous (the chapter's own start when more than 3 s in), or chapter N (1 the first).", example: ["next"]))
    public static let rate = CommandSchema(
        "rate", .transport, "Play at a rate (AVPlayer's `rate`): 0 pauses, 0.5–3 plays at it (the speed from then on).",
        arguments: [ArgumentSchema("rate", .number, "0 pauses; 0.5…3 plays", required: true, range: 0...3)], reply: "`rate`",
        ctl: CtlSyntax("rate 0|RATE", "0 pauses; 0.5 to 3 plays at that rate (and sets the speed).", example: ["1"]))
    public static let speed = CommandSchema(
        "speed", .transport,
        "The rate items play at, 0.5–3, the pitch kept (each item's stretch: time-domain, spectral or varispeed); playing, heard at once; paused, from the next play. Times stay the items' own.",
        arguments: [ArgumentSchema("speed", .number, "0.5…3; absent: read it", range: 0.5...3)],
        reply: "`speed` (saved)",
        ctl: CtlSyntax("speed [RATE]", "Play at RATE times (0.5 to 3, the pitch kept) from now; without RATE, the speed.", example: ["1.5"]))
    public static let `repeat` = CommandSchema(
        "repeat", .transport, "Set or read the repeat mode.",
        arguments: [ArgumentSchema("mode", .string, "absent: read", allowed: ["off", "one", "all"])], reply: "`repeat`",
        ctl: CtlSyntax("repeat [off|one|all]", "Set or show repeat.", example: ["all"]), mpd: ["repeat", "single"])
    public static let shuffle = CommandSchema(
        "shuffle", .transport, "Shuffle on or off (toggles without `on`).",
        arguments: [ArgumentSchema("on", .boolean, "absent: toggle")], reply: "`shuffle`",
        ctl: CtlSyntax("shuffle [on|off]", "Shuffle on or off (no argument: switch it).", example: ["on"]), mpd: ["random"])
    public static let single = CommandSchema(
        "single", .transport,
        "Stop after the current item (toggles without `on`; clears when it takes effect, or with `each` stays on: stop after every item).",
        arguments: [ArgumentSchema("on", .boolean, "absent: toggle; stop after the current item, once"),
                    ArgumentSchema("each", .boolean, "true: stays on (stop after every item)")],
        reply: "`stopAfterCurrent`, `stopAfterEach`",
        ctl: CtlSyntax("single [on|off|each]", "Stop after the current item, once, or after each (no argument: switch it).", example: ["each"]),
        mpd: ["single", "repeat"])
    public static let consume = CommandSchema(
        "consume", .transport, "Remove items from the queue once played (oneshot: the next one only).",
        arguments: [ArgumentSchema("mode", .string, "absent: read", allowed: ["off", "on", "oneshot"])], reply: "`consume`",
        ctl: CtlSyntax("consume [off|on|oneshot]", "Remove items from the queue once played (oneshot: the next one only).", example: ["oneshot"]),
        mpd: ["consume"])
    public static let crossfade = CommandSchema(
        "crossfade", .transport,
        "Crossfade: seconds each item's end overlaps the next one's start (0: off; consecutive tracks of one album stay gapless); from the next join.",
        arguments: [ArgumentSchema("seconds", .number, "0: off; absent: read it", range: 0...3600)],
        reply: "`crossfade` (seconds; from the next join; saved)",
        ctl: CtlSyntax("crossfade [SECONDS|off]", "Overlap each item's end with the next one's start (equal power; an album's consecutive tracks stay gapless).", example: ["3"]),
        mpd: ["crossfade"])
    public static let replayGain = CommandSchema(
        "replay-gain", .transport,
        "ReplayGain: off, track, album or auto (album unless shuffled), with preamps (dB) and peak limiting; from the next item.",
        arguments: [ArgumentSchema("mode", .string, "auto: album unless shuffled", allowed: ["off", "track", "album", "auto"]),
                    ArgumentSchema("preamp", .number, "dB added to tagged files", range: -60...60),
                    ArgumentSchema("missingPreamp", .number, "dB for files without values", range: -60...60),
                    ArgumentSchema("limit", .boolean, "keep peaks below full scale")],
        note: "each absent: unchanged", reply: "`replayGain` {mode, preamp, missingPreamp, limit} (from the next item; saved)",
        ctl: CtlSyntax("replay-gain [off|track|album|auto]", "ReplayGain: even loudness from the files' values (auto: album unless shuffled); from the next item.", example: ["album"]),
        mpd: ["replay_gain_mode"])
}
