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

extension Chapter {
    /// The index of the chapter playing `seconds` into an item with `chapters` (in order of
    /// their starts): the last one that starts at or before it; nil before the first start or
    /// when there are none. A chapter's start is compared to a millisecond's precision, so a
    /// position taken from frames lands in the chapter that starts on that frame.
    public static func index(at seconds: Double, in chapters: [Chapter]) -> Int? {
        guard seconds.isFinite else { return nil }
        var found: Int?
        for (i, c) in chapters.enumerated() {
            if c.start <= seconds + 0.0005 { found = i } else { break }
        }
        return found
    }
}
