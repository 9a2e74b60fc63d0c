/// A chapter of an item (AVAsset's `chapterMetadataGroups`: a title over a time range): where it
/// starts and ends in the item, in seconds, and its title when it has one.
public struct Chapter: Sendable, Equatable, Codable {
    /// Its title (`Chapter 3`, or none).
    public var title: String?
    /// Where it starts, seconds into the item.
    public var start: Double
    /// Where it ends, seconds into the item (nil: at the next chapter's start, or the item's end).
    public var end: Double?

    /// A chapter from `start` (to `end`), titled `title`.
    public init(title: String?, start: Double, end: Double? = nil) {
        self.title = title
        self.start = start
        self.end = end
    }
}
