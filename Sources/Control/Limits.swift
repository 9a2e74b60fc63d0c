/// The daemon's sizes, each bounded so that no client, file or saved state can make it slow or
/// large without end (docs/GUIDE.md's limits table lists them all). Past one, the request is refused
/// with ``CommandError/tooLarge(_:)`` and nothing changes.
public enum Limits {
    /// Entries in the queue (mpd's `max_playlist_length` defaults to 16,384; a library-wide
    /// queue needs more). A full queue saves to a state file of about 6 MB.
    public static let queueLength = 100_000
    /// Entries in a stored playlist, and files one `add` may expand to.
    public static let playlistEntries = queueLength
    /// Alarms set at once (each reply lists them all).
    public static let alarms = 100
    /// The longest fade (alarm fade-in, sleep fade-out), seconds.
    public static let fadeSeconds = 600.0
}
