// Partitions (zones) and their outputs.
extension CommandSchema {
    public static let newPartition = CommandSchema(
        "new-partition", .partitions, "Make a partition: its own queue and player, playing through the configured output of its name (or `output`).",
        aliases: ["newpartition"],
        arguments: [ArgumentSchema("name", .string, "1–64 letters, digits, `-`, `_`", required: true),
                    ArgumentSchema("output", .string, "a configured output (default: the one named like the partition, if free)")],
        reply: "`partitions`, `current`",
        ctl: CtlSyntax("new-partition NAME [OUTPUT]", "Make a partition; it plays through the configured output named like it (or OUTPUT).", example: ["kitchen"]),
        mpd: ["newpartition"])
    public static let partition = CommandSchema(
        "partition", .partitions, "Use a partition from now on (this connection's commands and events).",
        arguments: [ArgumentSchema("name", .string, "", required: true)], reply: "`partitions`, `current` (this connection's, now `name`)",
        ctl: CtlSyntax("partition NAME", "Whether partition NAME exists (--partition NAME uses it).", example: ["kitchen"]), mpd: ["partition"])
    public static let listPartitions = CommandSchema(
        "list-partitions", .partitions, "The partitions: each one's output, state and queue length.", aliases: ["listpartitions", "partitions"],
        reply: "`partitions` [{name, output, device, state, count}], `current`",
        ctl: CtlSyntax("list-partitions (or partitions)", "The partitions: state, queue length, output; > marks this one."), mpd: ["listpartitions"])
    public static let deletePartition = CommandSchema(
        "delete-partition", .partitions, "Delete a partition: it stops, and its output is free for another.", aliases: ["delpartition"],
        arguments: [ArgumentSchema("name", .string, "not `default`", required: true)], reply: "`partitions`, `current`",
        ctl: CtlSyntax("delete-partition NAME", "Delete a partition: it stops, its output is free.", example: ["kitchen"]), mpd: ["delpartition"])
    public static let moveOutput = CommandSchema(
        "move-output", .partitions, "Move a configured output into this connection's partition (which then plays through it).",
        aliases: ["moveoutput"], arguments: [ArgumentSchema("name", .string, "a configured output", required: true)], reply: "`outputs`",
        ctl: CtlSyntax("move-output OUTPUT --partition NAME", "Move a configured output into the partition.", example: ["speakers"]),
        mpd: ["moveoutput"])
    public static let outputs = CommandSchema(
        "outputs", .partitions, "The outputs: the daemon's device, the configured ones, and whose each is.",
        reply: "`outputs` [{id, name, device, plugin (its kind of device, as MPD names it: `alsa`, `pulse`, `fifo`), partition (null: none)}]",
        ctl: CtlSyntax("outputs", "The outputs and the partition each plays in."), mpd: ["outputs"])
}

// Events and client-to-client channels.
extension CommandSchema {
    public static let subscribe = CommandSchema(
        "subscribe", .events, "Receive events on this connection (all kinds, or those listed).",
        arguments: [ArgumentSchema("events", .strings, "event kinds (absent: all)")], reply: "`events` (the kinds)", ctl: nil, mpd: ["idle"])
    public static let unsubscribe = CommandSchema("unsubscribe", .events, "Stop receiving events.", ctl: nil)
    public static let channelSubscribe = CommandSchema(
        "channel-subscribe", .channels, "Receive the messages sent to a client-to-client channel ([A-Za-z0-9_.:-]+).",
        arguments: [ArgumentSchema("channel", .string, "", required: true)], reply: "`channels` (everyone's, sorted)", ctl: nil, mpd: ["subscribe"])
    public static let channelUnsubscribe = CommandSchema(
        "channel-unsubscribe", .channels, "Leave a client-to-client channel.",
        arguments: [ArgumentSchema("channel", .string, "", required: true)], reply: "`channels`", ctl: nil, mpd: ["unsubscribe"])
    public static let channels = CommandSchema(
        "channels", .channels, "The client-to-client channels someone is subscribed to.", reply: "`channels`",
        ctl: CtlSyntax("channels", "The client-to-client channels someone listens on (MPD clients' and the protocol's)."), mpd: ["channels"])
    public static let channelSend = CommandSchema(
        "channel-send", .channels, "Send a message to a client-to-client channel's subscribers (an error when nobody is).",
        arguments: [ArgumentSchema("channel", .string, "", required: true), ArgumentSchema("message", .string, "", required: true)],
        ctl: CtlSyntax("channel-send CHANNEL TEXT…", "Send TEXT to a channel's listeners (an error when nobody listens).", example: ["news", "hello", "there"]),
        mpd: ["sendmessage"])
    public static let channelRead = CommandSchema(
        "channel-read", .channels, "This connection's unread client-to-client messages (read now).",
        reply: "`messages` ([{channel, message}], oldest first; read now)", ctl: nil, mpd: ["readmessages"])
}
