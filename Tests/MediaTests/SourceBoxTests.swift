import BacklineTestSupport
import Foundation
import MediaCore
import Testing
@testable import Media

/// The bytes a live stream's MPEG decoder keeps (`SourceBox`'s look-back), so that libmpg123
/// can read a frame ahead and go back.
@Suite("SourceBox: a live stream's last bytes, read again")
struct SourceBoxTests {
    /// A live stream of a known sequence, read in pieces no larger than asked: at most 1,000
    /// bytes (a network's), or all that was asked (more than the box keeps).
    final class Stream: ByteSource {
        let name = "http://test/live"
        let count: Int
        private(set) var position = 0
        var length: Int? { nil }
        var isSeekable: Bool { false }
        var isLive: Bool { true }
        init(count: Int) { self.count = count }
        static func byte(_ i: Int) -> UInt8 { UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 7) }
        func read(into buffer: UnsafeMutableRawBufferPointer) throws(MediaError) -> Int {
            let n = min(buffer.count, count - position, position % 2 == 0 ? Int.max : 1000)
            for i in 0..<n { buffer[i] = Self.byte(position + i) }
            position += n
            return n
        }
        func seek(to offset: Int) throws(MediaError) {
            guard offset == position else { throw MediaError(.io, "a live stream cannot seek", item: name) }
        }
        func reopened() throws(MediaError) -> any ByteSource { Stream(count: count) }
    }

    @Test("reads, seeks back within the kept 16 KiB and forward past the newest byte give the stream's bytes at those offsets; further back, or from the end, is refused with no error; at the end a forward seek stops there")
    func lookback() throws {
        let stream = Stream(count: 200_000)
        let box = SourceBox(stream, lookback: 16384)
        #expect(box.looksBack)
        var rng = SplitMix64(seed: 39)
        var at = 0
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 40000, alignment: 1)
        defer { buffer.deallocate() }
        for step in 0..<5000 {
            switch rng.next() % 4 {
            case 0, 1:
                let want = Int(rng.next() % 40000)
                let n = box.read(buffer, want)
                #expect(n >= 0 && n <= want)
                for i in 0..<n where buffer.load(fromByteOffset: i, as: UInt8.self) != Stream.byte(at + i) {
                    Issue.record("step \(step): byte \(at + i) differs"); return
                }
                at += n
            case 2:
                let back = Int(rng.next() % 20000)
                let r = box.seek(Int64(-back), 1)
                if at - back >= max(0, stream.position - 16384) {
                    #expect(r == Int64(at - back), "step \(step): back \(back) from \(at)")
                    at -= back
                } else {
                    #expect(r == -1, "step \(step): back \(back) from \(at), newest \(stream.position)")
                }
            default:
                let target = at + Int(rng.next() % 30000)
                let r = box.seek(Int64(target), 0)
                at = min(target, stream.count)
                #expect(r == Int64(at), "step \(step): to \(target)")
            }
            if at >= stream.count { break }
        }
        #expect(at == stream.count, "the whole stream was read: \(at)")
        #expect(box.seek(0, 2) == -1 && box.seek(-16385, 1) == -1)
        #expect(box.error == nil)
    }
}
