// What plays, and the daemon itself.
extension CommandSchema {
    public static let status = CommandSchema(
        "status", .info, "State, current item, elapsed (ms), duration, volume, queue, modes, session, app state, device, underruns, sleep timer.",
        reply: "`state` (`playing`/`paused`/`stopped`), `buffering` (playing but waiting for the network: a stream's first audio on its way, or a stall), `current` (item), `elapsed` (s, ms precision), `duration`, `volume` (%), `muted`, `rate`, `index`, `count`, `queueVersion`, `repeat`, `shuffle`, `stopAfterCurrent`, `consume`, `session` {category, options, active, interrupted, silentSwitch, screenLocked, silenced, ducked, nowPlayingApp}, `app` (`active`/`inactive`/`background`/`suspended`), `device`, `output` (the device's settings while open), `audio` (the item heard: `format`, `encoding`, `rate`, `channels`, `playedChannels`, `downmix`, `bitrate`, `description`), `replayGain` (as `replay-gain` answers), `replayGainScale` and `replayGainDecibels` (the item heard), `crossfade` (seconds, 0: off), `speed` (the rate items play at, paused or not), `silenceTrimmed` (seconds of silence cut so far from the item heard: `trim-silence`), `chapter` (for an item with chapters: `chapter` (index at `elapsed`, or null), `count`, `title`, `start`; null otherwise), `underruns`, `sleep`, `musicDirectory` (symlinks resolved: what relative paths are relative to)",
        ctl: CtlSyntax("status [--verbose] [--format FORMAT]", "What plays, the modes, the daemon; --verbose adds the item's format (and whether it is down-mixed) and the device's settings. --format prints one line: %title% %artist% %album% %elapsed% %duration% %state% %buffering% %id% %file% %position% are replaced (empty when unknown), e.g. --format '%artist% - %title%'.", example: ["--verbose"]),
        mpd: ["status", "currentsong"])
    public static let nowPlaying = CommandSchema(
        "now-playing", .info, "The now-playing info (MPNowPlayingInfoCenter keys), elapsed extrapolated now.",
        reply: "`item`, `info` (MPNowPlayingInfo keys: `title`, `artist`, `albumTitle`, `albumArtist`, `albumTrackNumber`, `albumTrackCount`, `discNumber`, `discCount`, `genre`, `playbackDuration`, `elapsedPlaybackTime` (extrapolated to now), `playbackRate`, `defaultPlaybackRate`, `playbackQueueIndex`, `playbackQueueCount`, `chapterNumber` (the chapter heard, 0 the first) and `chapterCount` (an item with chapters), `mediaType`, `artwork` {mimeType, bytes, base64}), `playbackState`",
        ctl: CtlSyntax("now-playing", "What desktop media controls are shown."))
    public static let bookmarks = CommandSchema(
        "bookmarks", .info,
        "Where podcasts and audiobooks were left (items at least `resume-after` minutes long, 10 unless configured, or whose genre says podcast or audiobook, or `.m4b`): played again, each starts there less `resume-rewind` s (5); heard to its end, it is forgotten. With `clear`, forget those paths; with `all`, forget every one.",
        arguments: [ArgumentSchema("clear", .strings, "paths to forget"), ArgumentSchema("all", .boolean, "true: forget every one")],
        note: "`clear` **or** `all: true`, or neither (list)",
        reply: "`bookmarks` ([{path, position, duration, saved}], the most recent first); after `clear`/`all`, `forgotten` (how many)",
        ctl: CtlSyntax("bookmarks [clear [PATH…]]", "Where podcasts and audiobooks were left (each plays on from there, 5 s back); clear forgets the PATHs given, or all of them.", example: ["clear"]))
    public static let ping = CommandSchema(
        "ping", .daemon, "Answers pong.", reply: "`pong`",
        ctl: CtlSyntax("ping", "Whether the daemon answers."), mpd: ["ping"])
    public static let version = CommandSchema(
        "version", .daemon, "Daemon and protocol versions.", reply: "`version`, `protocol`",
        ctl: CtlSyntax("version", "The daemon's version."))
    public static let help = CommandSchema(
        "help", .daemon, "This list.", reply: "`commands` [name]",
        ctl: CtlSyntax("help [COMMAND]", "This list, or one command.", example: ["play"]), mpd: ["commands"])
    public static let auth = CommandSchema(
        "auth", .daemon, "TCP clients: present the token first.",
        arguments: [ArgumentSchema("token", .string, "the `token` of the configuration", required: true)],
        permission: .anyone, ctl: nil, mpd: ["password"])
}

// Sound, the audio session, the app's life cycle, the timers.
extension CommandSchema {
    public static let volume = CommandSchema(
        "volume", .sound, "Set or read the volume in percent (clamped to 0–100, as mpc does).",
        arguments: [ArgumentSchema("volume", .number, "0–100 (beyond: clamped)"), ArgumentSchema("change", .number, "relative (±)")],
        note: "`volume` **or** `change`; none: read", reply: "`volume`, `muted`",
        ctl: CtlSyntax("volume [N|+N|-N]", "Set (0–100; more is 100), change or show the volume.", example: ["+5"]),
        mpd: ["setvol", "volume", "getvol"])
    public static let mute = CommandSchema(
        "mute", .sound, "Mute or unmute (toggles without `on`).",
        arguments: [ArgumentSchema("on", .boolean, "absent: toggle")], reply: "`volume`, `muted`",
        ctl: CtlSyntax("mute [on|off]", "Mute or unmute; the volume is kept (no argument: switch it).", example: ["on"]),
        mpd: ["disableoutput", "enableoutput", "toggleoutput"])
    public static let session = CommandSchema(
        "session", .sound, "Audio session: category and options, silent switch, screen lock; returns the session.",
        arguments: [ArgumentSchema("category", .string, "", allowed: ["ambient", "soloAmbient", "playback"]),
                    ArgumentSchema("options", .strings, "with a category", allowed: ["mixWithOthers", "duckOthers", "interruptSpokenAudioAndMixWithOthers"]),
                    ArgumentSchema("silentSwitch", .boolean), ArgumentSchema("screenLocked", .boolean)],
        reply: "the session (as in `status`)",
        ctl: CtlSyntax("session [--category C] [--options O,…]\n[--silent-switch on|off] [--screen-lock on|off]", "How it shares the sound: C is playback (keeps playing in the background), soloAmbient (stops in the background, pauses for other players) or ambient (plays along with others); options mixWithOthers, duckOthers (lowers the others), interruptSpokenAudioAndMixWithOthers. The silent switch and screen lock mute all but playback. See docs/GLOSSARY.md.", example: ["--category", "playback", "--options", "mixWithOthers"]))
    public static let lifecycle = CommandSchema(
        "lifecycle", .sound, "Move the daemon to the foreground or the background; returns the app state.",
        arguments: [ArgumentSchema("state", .string, "absent: read", allowed: ["foreground", "background"])], reply: "`app`",
        ctl: CtlSyntax("lifecycle [foreground|background]", "Move the daemon to the foreground or the background, or show where it is. In the background it stops (and is suspended when idle) unless it plays in playback.", example: ["background"]))
    public static let sleep = CommandSchema(
        "sleep", .sound, "Sleep timer: pause after N minutes (with an optional fade), at the end of the item, or at the end of the chapter (the item's end when it has none); cancel; or read it.",
        arguments: [ArgumentSchema("minutes", .number, "more than 0, at most 1440", range: 0...1440), ArgumentSchema("endOfItem", .boolean),
                    ArgumentSchema("endOfChapter", .boolean, "pause where the next chapter starts (played on from there)"),
                    ArgumentSchema("fade", .number, "fade-out seconds before the deadline"), ArgumentSchema("cancel", .boolean)],
        note: "`minutes` (+ `fade`) **or** `endOfItem: true` **or** `endOfChapter: true` **or** `cancel: true`; none: read",
        reply: "`sleep` {remaining, endOfItem, endOfChapter, fade} or null",
        ctl: CtlSyntax("sleep [MINUTES [--fade S] | --end-of-item | --end-of-chapter | --cancel]", "Pause after MINUTES (fading out over the last S seconds), at the end of the item, or at the end of the chapter; 0 or --cancel turns it off; no argument shows it.", example: ["30", "--fade", "10"]))
    public static let alarm = CommandSchema(
        "alarm", .sound, "Alarms: start playing at a time of day (HH:MM[:SS], fading in; an item or a stored playlist; once or daily); cancel one; or list them.",
        arguments: [ArgumentSchema("time", .string, "HH:MM or HH:MM:SS, local time"), ArgumentSchema("fade", .number, "fade-in seconds"),
                    ArgumentSchema("item", .integer, "play this item"), ArgumentSchema("playlist", .string, "load this stored playlist"),
                    ArgumentSchema("daily", .boolean), ArgumentSchema("cancel", .integer, "alarm id")],
        note: "`time` (+ `fade`, `item` or `playlist`, `daily`) **or** `cancel`; none: read", reply: "`alarms`",
        ctl: CtlSyntax("alarm [TIME [--fade S] [--play ID|--load NAME] [--daily] | --cancel N]", "Start playing at TIME, HH:MM or HH:MM:SS (fading in over S seconds; the item ID or a stored playlist; once or daily); --cancel N removes alarm N; no argument lists them.", example: ["7:30", "--fade", "60", "--daily"]))
}
