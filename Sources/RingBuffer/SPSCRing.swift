import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A lock-free, wait-free single-producer/single-consumer ring of bytes.
///
/// The ring owns one power-of-two block of memory and two monotonic 64-bit counters: the number
/// of bytes ever written and the number ever read. `written - read` is the fill level, so no slot
/// is wasted and no extra bit is needed; the counters never wrap in practice (2⁶³ bytes).
///
/// Each counter lives on its own 128-byte line (two 64-byte lines, because the spatial prefetcher
/// of current x86 and big arm64 cores pulls pairs). A side loads the *other* side's counter with
/// acquire ordering and publishes its own with release ordering; its own counter it keeps in a
/// local. Each side also caches the last value it saw of the other's counter and reloads it only
/// when the cached view says "full" (producer) or "empty" (consumer).
///
/// The ring itself is only storage. Access goes through exactly one ``RingProducer`` and one
/// ``RingConsumer``, both non-copyable, made by ``makeProducer()`` and ``makeConsumer()``: each lives on one thread. After
/// ``init(minimumCapacity:)`` neither side allocates, locks, or performs reference counting; the
/// hot methods are annotated `@_noLocks @_noAllocation`, so the compiler checks that.
///
/// Byte counts are the caller's unit; a caller that stores frames of `2^k` bytes (up to 64)
/// never sees a frame split across the wrap, because the capacity is a power of two or, made
/// with ``init(exactCapacity:)``, a multiple of 64.
public final class SPSCRing: @unchecked Sendable {
    // @unchecked Sendable: the only shared mutable state is the two counters (atomics) and the
    // data block, whose regions are handed out disjointly by the counters' protocol.

    /// Capacity in bytes: a power of two, or a multiple of 64 (``init(exactCapacity:)``).
    public let capacity: Int
    /// `capacity - 1` for a power of two; -1 otherwise (offsets then take a remainder).
    @usableFromInline let mask: Int
    @usableFromInline let base: UnsafeMutableRawPointer
    @usableFromInline let lines: UnsafeMutableRawPointer
    private let producerMade = Atomic<Bool>(false)
    private let consumerMade = Atomic<Bool>(false)

    static let lineSize = 128

    /// Creates a ring of at least `minimumCapacity` bytes (rounded up to a power of two, ≥ 64).
    ///
    /// The memory is allocated and touched here (pre-faulted), so the first pass of either side
    /// takes no page faults.
    public convenience init(minimumCapacity: Int) {
        precondition(minimumCapacity > 0, "ring capacity must be positive")
        var c = 64
        while c < minimumCapacity { c <<= 1 }
        self.init(bytes: c)
    }

    /// Creates a ring of `exactCapacity` bytes rounded up to a multiple of 64 only (not to a
    /// power of two): for a large ring sized in time, which a power of two could make a third
    /// bigger than asked. Offsets then cost a remainder instead of a mask.
    public convenience init(exactCapacity: Int) {
        precondition(exactCapacity > 0, "ring capacity must be positive")
        self.init(bytes: (exactCapacity + 63) / 64 * 64)
    }

    /// The ring's memory, its bytes then its two counters' lines, in pages of its own.
    ///
    /// Mapped rather than taken from malloc: ``lockMemory()`` locks whole pages, and locked
    /// pages freed into malloc's heap stayed locked and resident (never given back by a trim,
    /// and locked again under the next allocation there); 400 partitions made and deleted left
    /// 20 MB so. Unmapped at `deinit`, the pages and their lock go.
    private let mapping: (address: UnsafeMutableRawPointer, length: Int)

    private init(bytes c: Int) {
        capacity = c
        mask = c & (c - 1) == 0 ? c - 1 : -1
        #if canImport(Glibc)
        let page = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))
        let ringPages = (c + page - 1) / page * page
        let length = ringPages + (2 * Self.lineSize + page - 1) / page * page
        guard let m = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), m != MAP_FAILED else {
            fatalError("SPSCRing: cannot map \(length) bytes: errno \(errno)")
        }
        // Anonymous pages are zero but not yet there: each is touched now, so that neither side
        // (the output thread, real-time, produces into the event ring, which is not locked)
        // takes a page fault on its first pass.
        m.initializeMemory(as: UInt8.self, repeating: 0, count: length)
        mapping = (m, length)
        base = m
        lines = m + ringPages
        #else
        let m = UnsafeMutableRawPointer.allocate(byteCount: c + 2 * Self.lineSize, alignment: Self.lineSize)
        m.initializeMemory(as: UInt8.self, repeating: 0, count: c + 2 * Self.lineSize)
        mapping = (m, c + 2 * Self.lineSize)
        base = m
        lines = m + c
        #endif
        lines.bindMemory(to: Atomic<Int>.self, capacity: 1).initialize(to: Atomic(0))
        (lines + Self.lineSize).bindMemory(to: Atomic<Int>.self, capacity: 1).initialize(to: Atomic(0))
    }

    deinit {
        lines.assumingMemoryBound(to: Atomic<Int>.self).deinitialize(count: 1)
        (lines + Self.lineSize).assumingMemoryBound(to: Atomic<Int>.self).deinitialize(count: 1)
        #if canImport(Glibc)
        munmap(mapping.address, mapping.length)
        #else
        mapping.address.deallocate()
        #endif
    }

    var writeCounter: UnsafeMutablePointer<Atomic<Int>> { lines.assumingMemoryBound(to: Atomic<Int>.self) }
    var readCounter: UnsafeMutablePointer<Atomic<Int>> {
        (lines + Self.lineSize).assumingMemoryBound(to: Atomic<Int>.self)
    }

    /// Makes the ring's only producer. Call once; a second call is a programming error.
    public func makeProducer() -> RingProducer {
        let (first, _) = producerMade.compareExchange(expected: false, desired: true, ordering: .relaxed)
        precondition(first, "SPSCRing.makeProducer() called twice: a ring has one producer")
        return RingProducer(ring: self)
    }

    /// Makes the ring's only consumer. Call once; a second call is a programming error.
    public func makeConsumer() -> RingConsumer {
        let (first, _) = consumerMade.compareExchange(expected: false, desired: true, ordering: .relaxed)
        precondition(first, "SPSCRing.makeConsumer() called twice: a ring has one consumer")
        return RingConsumer(ring: self)
    }

    /// Bytes currently stored, as seen from a third thread (a snapshot; for monitoring only).
    public var approximateFill: Int {
        writeCounter.pointee.load(ordering: .acquiring) &- readCounter.pointee.load(ordering: .acquiring)
    }

    /// Locks the ring's memory into RAM (`mlock`), so the real-time side never pages.
    /// - Returns: `true` when locked; `false` when the limit (`RLIMIT_MEMLOCK`) does not allow it.
    @discardableResult
    public func lockMemory() -> Bool {
        #if canImport(Glibc)
        return mlock(mapping.address, mapping.length) == 0
        #else
        return false
        #endif
    }
}

/// The writing side of an ``SPSCRing``. Owned by exactly one thread.
public struct RingProducer: ~Copyable, @unchecked Sendable {
    // @unchecked Sendable: it is moved (never copied) to the one thread that writes.
    @usableFromInline let ring: SPSCRing
    @usableFromInline let base: UnsafeMutableRawPointer
    @usableFromInline let counter: UnsafeMutablePointer<Atomic<Int>>
    @usableFromInline let other: UnsafeMutablePointer<Atomic<Int>>
    /// Capacity of the ring in bytes.
    public let capacity: Int
    @usableFromInline let mask: Int
    @usableFromInline var written = 0
    @usableFromInline var cachedRead = 0

    init(ring: SPSCRing) {
        self.ring = ring
        base = ring.base
        counter = ring.writeCounter
        other = ring.readCounter
        capacity = ring.capacity
        mask = ring.mask
    }

    /// Total bytes ever committed by this producer: the ring's absolute write position.
    public var position: Int { written }

    /// Bytes that can be written now (refreshes the cached read position).
    @inlinable @_noLocks @_noAllocation
    public mutating func availableToWrite() -> Int {
        cachedRead = other.pointee.load(ordering: .acquiring)
        return capacity &- (written &- cachedRead)
    }

    /// Up to `max` bytes of free space as at most two regions (the second is empty unless the
    /// space wraps). Write into them, then ``commit(_:)`` how many bytes were filled.
    @inlinable @_noLocks @_noAllocation
    public mutating func writableRegions(max: Int) -> (UnsafeMutableRawBufferPointer, UnsafeMutableRawBufferPointer) {
        if capacity &- (written &- cachedRead) < max {
            cachedRead = other.pointee.load(ordering: .acquiring)
        }
        let n = Swift.min(max, capacity &- (written &- cachedRead))
        let start = mask >= 0 ? written & mask : written % capacity
        let first = Swift.min(n, capacity &- start)
        return (
            UnsafeMutableRawBufferPointer(start: base + start, count: first),
            UnsafeMutableRawBufferPointer(start: base, count: n &- first)
        )
    }

    /// Publishes `count` bytes written into the regions last returned by ``writableRegions(max:)``.
    @inlinable @_noLocks @_noAllocation
    public mutating func commit(_ count: Int) {
        precondition(count >= 0 && count <= capacity &- (written &- cachedRead), "commit beyond free space")
        written &+= count
        counter.pointee.store(written, ordering: .releasing)
    }

    /// Copies as much of `bytes` as fits and publishes it.
    /// - Returns: the number of bytes written (fewer than `bytes.count` when the ring is full).
    @inlinable @_noLocks @_noAllocation
    public mutating func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        let (a, b) = writableRegions(max: bytes.count)
        guard let src = bytes.baseAddress, a.count > 0 else { return 0 }
        a.baseAddress!.copyMemory(from: src, byteCount: a.count)
        if b.count > 0 { b.baseAddress!.copyMemory(from: src + a.count, byteCount: b.count) }
        commit(a.count &+ b.count)
        return a.count &+ b.count
    }
}

/// The reading side of an ``SPSCRing``. Owned by exactly one thread.
public struct RingConsumer: ~Copyable, @unchecked Sendable {
    // @unchecked Sendable: it is moved (never copied) to the one thread that reads.
    @usableFromInline let ring: SPSCRing
    @usableFromInline let base: UnsafeMutableRawPointer
    @usableFromInline let counter: UnsafeMutablePointer<Atomic<Int>>
    @usableFromInline let other: UnsafeMutablePointer<Atomic<Int>>
    /// Capacity of the ring in bytes.
    public let capacity: Int
    @usableFromInline let mask: Int
    @usableFromInline var read = 0
    @usableFromInline var cachedWrite = 0

    init(ring: SPSCRing) {
        self.ring = ring
        base = ring.base
        counter = ring.readCounter
        other = ring.writeCounter
        capacity = ring.capacity
        mask = ring.mask
    }

    /// Total bytes ever consumed: the ring's absolute read position.
    public var position: Int { read }

    /// Bytes that can be read now (refreshes the cached write position).
    @inlinable @_noLocks @_noAllocation
    public mutating func availableToRead() -> Int {
        cachedWrite = other.pointee.load(ordering: .acquiring)
        return cachedWrite &- read
    }

    /// Up to `max` readable bytes as at most two regions (the second is empty unless the data
    /// wraps). Read from them, then ``commit(_:)`` how many bytes were consumed.
    @inlinable @_noLocks @_noAllocation
    public mutating func readableRegions(max: Int) -> (UnsafeRawBufferPointer, UnsafeRawBufferPointer) {
        if cachedWrite &- read < max {
            cachedWrite = other.pointee.load(ordering: .acquiring)
        }
        let n = Swift.min(max, cachedWrite &- read)
        let start = mask >= 0 ? read & mask : read % capacity
        let first = Swift.min(n, capacity &- start)
        return (
            UnsafeRawBufferPointer(start: base + start, count: first),
            UnsafeRawBufferPointer(start: base, count: n &- first)
        )
    }

    /// Frees `count` bytes after they have been read (or skipped).
    @inlinable @_noLocks @_noAllocation
    public mutating func commit(_ count: Int) {
        precondition(count >= 0 && count <= cachedWrite &- read, "commit beyond readable data")
        read &+= count
        counter.pointee.store(read, ordering: .releasing)
    }

    /// Copies up to `buffer.count` bytes out of the ring and frees them.
    /// - Returns: the number of bytes read (fewer when the ring holds less).
    @inlinable @_noLocks @_noAllocation
    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let (a, b) = readableRegions(max: buffer.count)
        guard let dst = buffer.baseAddress, a.count > 0 else { return 0 }
        dst.copyMemory(from: a.baseAddress!, byteCount: a.count)
        if b.count > 0 { (dst + a.count).copyMemory(from: b.baseAddress!, byteCount: b.count) }
        commit(a.count &+ b.count)
        return a.count &+ b.count
    }
}
