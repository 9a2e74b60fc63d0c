// The position timeline: the device frames at which each stretch of an item starts
// (`Segment`s, registered as the output reports them), and the audible position read from
// them and the output's position reading.

import Locking
import Platform
import Synchronization

extension PlaybackEngine {
    /// A stretch of the device timeline: from `deviceFrame`, `item` from `itemFrame` (held
    /// there, not advancing, while `frozen`: a stall's silence). A `continuation` (a stall's
    /// start or end) goes on with the item already started: it announces nothing.
    struct Segment {
        /// The device frame the stretch starts at.
        var deviceFrame: Int
        /// The item heard in it.
        var item: ItemID
        /// The item's frame heard at `deviceFrame`.
        var itemFrame: Int
        /// The item's sample rate.
        var rate: Int
        /// Whether its start was heard and announced (or needs no announcing: a restart that
        /// continues where the item was heard).
        var announced: Bool
        /// Whether it starts where a seek landed (its `itemStarted` says `fromSeek`).
        var seek: Bool
        /// Whether the item holds at `itemFrame` throughout (a stall).
        var frozen: Bool
        /// Whether it goes on with the item already started (a stall's start or end).
        var continuation: Bool
        /// Content frames per device frame: 1, or the rate the decoder stretched the item to.
        var speed: Double = 1

        /// The item's frame heard `frames` device frames into the stretch.
        func itemFrame(after frames: Int) -> Int {
            frozen ? itemFrame : itemFrame + (speed == 1 ? frames : Int((Double(frames) * speed).rounded()))
        }
    }

    // MARK: - Position

    /// The audible item and position: frames written to the device minus what it still holds,
    /// mapped onto the item whose frames those are.
    public var position: PlaybackPosition? {
        let reading = shared.position()
        return state.withLock { s in
            if let target = s.flushTarget { return target }
            let heard = Self.heardFrame(reading, segments: s.segments, high: &s.heardHigh)
            guard let seg = s.segments.last(where: { $0.deviceFrame <= heard }) ?? s.segments.first else { return nil }
            // (A live stream, or anything of unknown length, is not held to a length.)
            let length = s.infos[seg.item].flatMap { $0.durationFrames > 0 ? $0.durationFrames : nil } ?? Int.max
            return PlaybackPosition(item: seg.item, frame: min(length, seg.itemFrame(after: max(0, heard - seg.deviceFrame))), rate: seg.rate)
        }
    }

    /// The device frame heard now: the last (framesWritten − delay) reading, advanced by the
    /// time since at the playing segment's rate (the reading is refreshed once per period), and
    /// never past what was written. Within one device run it never goes back: when the device
    /// corrects its latency estimate downwards (PulseAudio's, once its timing arrives) or the
    /// advance overshot, the heard frame holds until the audio catches up (`high`, the largest
    /// frame returned in the run).
    static func heardFrame(_ r: PositionReading, segments: [Segment], high: inout (floor: Int, frame: Int)) -> Int {
        var heard = r.framesWritten - r.delay
        if let t = r.stampNanos {
            let rate = (segments.last(where: { $0.deviceFrame <= heard }) ?? segments.first)?.rate ?? 0
            let elapsed = max(0, monotonicNanos() - t)
            heard = min(r.framesWritten, heard + Int(Double(elapsed) * Double(rate) / 1e9))
        }
        if high.floor == r.floor { heard = max(heard, high.frame) }
        high = (r.floor, heard)
        return heard
    }
}
