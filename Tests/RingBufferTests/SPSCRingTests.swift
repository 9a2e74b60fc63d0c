import Foundation
import RingBuffer
import Testing

/// Writes `bytes` into the producer through the zero-copy regions API.
private func put(_ p: inout RingProducer, _ bytes: [UInt8]) -> Int {
    bytes.withUnsafeBytes { p.write($0) }
}

private func take(_ c: inout RingConsumer, _ n: Int) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: n)
    let got = out.withUnsafeMutableBytes { c.read(into: $0) }
    return Array(out.prefix(got))
}

@Suite("SPSCRing, one thread")
struct SPSCRingSingleThreadTests {
    @Test("capacity rounds up to a power of two")
    func capacityRounding() {
        #expect(SPSCRing(minimumCapacity: 1).capacity == 64)
        #expect(SPSCRing(minimumCapacity: 100).capacity == 128)
        #expect(SPSCRing(minimumCapacity: 4096).capacity == 4096)
        #expect(SPSCRing(minimumCapacity: 4097).capacity == 8192)
    }

    @Test("an exact-capacity ring rounds to a multiple of 64 only")
    func exactCapacity() {
        #expect(SPSCRing(exactCapacity: 768_000).capacity == 768_000)
        #expect(SPSCRing(exactCapacity: 100).capacity == 128)
        #expect(SPSCRing(exactCapacity: 1).capacity == 64)
    }

    @Test("empty ring reads nothing and offers empty regions")
    func empty() {
        let ring = SPSCRing(minimumCapacity: 64)
        var p = ring.makeProducer()
        var c = ring.makeConsumer()
        #expect(c.availableToRead() == 0)
        let (a, b) = c.readableRegions(max: 64)
        #expect(a.count == 0 && b.count == 0)
        #expect(take(&c, 10).isEmpty)
        #expect(p.availableToWrite() == 64)
    }

    @Test("full ring refuses further writes until read")
    func full() {
        let ring = SPSCRing(minimumCapacity: 64)
        var p = ring.makeProducer()
        var c = ring.makeConsumer()
        #expect(put(&p, Array(0..<64)) == 64)
        #expect(p.availableToWrite() == 0)
        #expect(put(&p, [1, 2, 3]) == 0)
        let (a, b) = p.writableRegions(max: 10)
        #expect(a.count == 0 && b.count == 0)
        #expect(take(&c, 3) == [0, 1, 2])
        #expect(put(&p, [200, 201, 202, 203]) == 3, "only the three freed bytes fit")
        #expect(take(&c, 100) == Array(3..<64) + [200, 201, 202])
    }

    @Test("data wraps around the end as two regions, in order (a power-of-two ring, and an exact 192-byte one)",
          arguments: [false, true])
    func wrapAround(exact: Bool) {
        let ring = exact ? SPSCRing(exactCapacity: 192) : SPSCRing(minimumCapacity: 64)
        let size = ring.capacity
        var p = ring.makeProducer()
        var c = ring.makeConsumer()
        #expect(put(&p, Array(repeating: 9, count: size - 14)) == size - 14)
        #expect(take(&c, size - 14).count == size - 14)
        // 14 bytes left before the end: the next 30 bytes are split 14 + 16.
        let (wa, wb) = p.writableRegions(max: 30)
        #expect(wa.count == 14 && wb.count == 16)
        for i in 0..<14 { wa[i] = UInt8(i) }
        for i in 0..<16 { wb[i] = UInt8(14 + i) }
        p.commit(30)
        let (ra, rb) = c.readableRegions(max: size)
        #expect(ra.count == 14 && rb.count == 16)
        #expect(Array(ra) + Array(rb) == Array(0..<30))
        c.commit(30)
        #expect(p.position == size + 16 && c.position == size + 16, "counters are monotonic, not wrapped")
        #expect(put(&p, Array(repeating: 1, count: size + 8)) == size, "full at exactly the capacity")
    }

    @Test("partial commits publish only what was committed")
    func partialCommits() {
        let ring = SPSCRing(minimumCapacity: 64)
        var p = ring.makeProducer()
        var c = ring.makeConsumer()
        let (wa, _) = p.writableRegions(max: 20)
        for i in 0..<20 { wa[i] = UInt8(i) }
        p.commit(5)
        #expect(c.availableToRead() == 5)
        p.commit(0)
        #expect(c.availableToRead() == 5)
        let (ra, rb) = c.readableRegions(max: 64)
        #expect(Array(ra) == [0, 1, 2, 3, 4] && rb.count == 0)
        c.commit(2)
        #expect(c.availableToRead() == 3)
        #expect(p.availableToWrite() == 61, "3 bytes still stored")
        #expect(take(&c, 10) == [2, 3, 4])
        // The 15 uncommitted bytes were never published: the next write starts right after 4.
        #expect(put(&p, [77]) == 1)
        #expect(take(&c, 10) == [77])
    }

    @Test("fill level is visible from a third party")
    func approximateFill() {
        let ring = SPSCRing(minimumCapacity: 128)
        var p = ring.makeProducer()
        var c = ring.makeConsumer()
        _ = put(&p, Array(repeating: 1, count: 100))
        _ = take(&c, 40)
        #expect(ring.approximateFill == 60)
    }
}

/// Moves a box between threads; the handle inside is non-copyable, so it is consumed once.
private final class Box<T: ~Copyable>: @unchecked Sendable {
    var value: T?
    init(_ v: consuming T) { value = consume v }
    func take() -> T { value.take()! }
}

@Suite("SPSCRing, two threads")
struct SPSCRingStressTests {
    /// The byte at absolute stream position `i` of the known sequence: a position-dependent
    /// pattern (not a plain counter), so a lost, doubled or reordered chunk changes the values.
    @inline(__always) static func pattern(_ i: UInt64) -> UInt8 {
        UInt8(truncatingIfNeeded: (i &* 0x9E37_79B9_7F4A_7C15) >> 56 ^ i)
    }

    @Test("1 GiB of a known sequence arrives once, in order, through odd-sized chunks (a power-of-two ring; 256 MiB through an exact-capacity one)",
          arguments: [false, true])
    func gigabyteStress(exact: Bool) async throws {
        let total: UInt64 = exact ? 1 << 28 : 1 << 30
        let ring = exact ? SPSCRing(exactCapacity: 49_216) : SPSCRing(minimumCapacity: 1 << 16)
        let pBox = Box(ring.makeProducer())
        let cBox = Box(ring.makeConsumer())

        let producer = Thread {
            var p = pBox.take()
            var pos: UInt64 = 0
            var chunk = 1
            while pos < total {
                chunk = chunk % 7919 + 61  // vary chunk sizes: 61…7979 bytes
                let (a, b) = p.writableRegions(max: min(chunk, Int(total - pos)))
                if a.count == 0 { continue }
                for i in 0..<a.count { a[i] = Self.pattern(pos + UInt64(i)) }
                for i in 0..<b.count { b[i] = Self.pattern(pos + UInt64(a.count + i)) }
                p.commit(a.count + b.count)
                pos += UInt64(a.count + b.count)
            }
        }
        let result = Box<(UInt64, UInt64)>((0, 0))
        let done = DispatchSemaphore(value: 0)
        let consumer = Thread {
            var c = cBox.take()
            var pos: UInt64 = 0
            var mismatches: UInt64 = 0
            var chunk = 3
            while pos < total {
                chunk = chunk % 6007 + 17
                let (a, b) = c.readableRegions(max: chunk)
                if a.count == 0 { continue }
                for i in 0..<a.count where a[i] != Self.pattern(pos + UInt64(i)) { mismatches += 1 }
                for i in 0..<b.count where b[i] != Self.pattern(pos + UInt64(a.count + i)) { mismatches += 1 }
                c.commit(a.count + b.count)
                pos += UInt64(a.count + b.count)
            }
            // Nothing more may arrive after the last byte.
            if c.availableToRead() != 0 { mismatches += 1 }
            result.value = (pos, mismatches)
            done.signal()
        }
        producer.start()
        consumer.start()
        await withCheckedContinuation { (k: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { done.wait(); k.resume() }
        }
        let (received, mismatches) = result.value!
        #expect(received == total)
        #expect(mismatches == 0)
        #expect(ring.approximateFill == 0)
    }
}
