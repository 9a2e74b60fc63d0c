/// Spoken word (podcasts, audiobooks): what resumes where it was left whatever its length,
/// and whose silences may be shortened.
public enum SpokenWord {
    /// Genres (case-insensitive) that make an item spoken word.
    public static let genres: Set<String> = ["podcast", "podcasts", "audiobook", "audiobooks", "audio book", "speech", "spoken word", "spoken"]

    /// Whether an item at `path` with `genre` is spoken word: its genre says so, or it is an `.m4b`.
    public static func matches(path: String, genre: String?) -> Bool {
        if let g = genre?.lowercased(), genres.contains(g) { return true }
        return path.lowercased().hasSuffix(".m4b")
    }
}
