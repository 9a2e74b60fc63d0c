import Foundation
import RingBuffer

/// One row of the benchmark table.
public struct BenchResult: Sendable {
    /// What was measured.
    public var name: String
    /// The measured value.
    public var value: Double
    /// Unit of `value` (and of `reference`).
    public var unit: String
    /// The reference measured in the same run, when there is one.
    public var reference: Double?
    /// What the reference is.
    public var referenceName: String?
    /// `value / reference` when both exist (for "higher is better" units); see `higherIsBetter`.
    public var ratio: Double? { reference.map { $0 == 0 ? 0 : value / $0 } }

    public init(name: String, value: Double, unit: String, reference: Double? = nil, referenceName: String? = nil) {
        self.name = name
        self.value = value
        self.unit = unit
        self.reference = reference
        self.referenceName = referenceName
    }

    /// One JSON object: `{"name":…,"value":…,"unit":…,"reference":…,"ratio":…}`.
    public var json: String {
        func num(_ d: Double?) -> String { d.map { String(format: "%.6g", $0) } ?? "null" }
        func str(_ s: String?) -> String {
            guard let s else { return "null" }
            let escaped = s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            return "\"\(escaped)\""
        }
        return "{\"name\":\(str(name)),\"value\":\(num(value)),\"unit\":\(str(unit)),"
            + "\"reference\":\(num(reference)),\"reference_name\":\(str(referenceName)),\"ratio\":\(num(ratio))}"
    }
}

/// Formats results as an aligned text table.
public func formatTable(_ results: [BenchResult]) -> String {
    var rows = [["benchmark", "value", "reference", "ratio"]]
    for r in results {
        rows.append([
            r.name,
            String(format: "%.3f %@", r.value, r.unit),
            r.reference.map { String(format: "%.3f %@ (%@)", $0, r.unit, r.referenceName ?? "") } ?? "-",
            r.ratio.map { String(format: "%.2f×", $0) } ?? "-",
        ])
    }
    let widths = (0..<4).map { c in rows.map { $0[c].count }.max() ?? 0 }
    return rows.map { row in
        row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ")
    }.joined(separator: "\n")
}

/// Monotonic seconds.
@inline(__always) func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

private final class Box<T: ~Copyable>: @unchecked Sendable {
    var value: T?
    init(_ v: consuming T) { value = consume v }
    func take() -> T { value.take()! }
}

/// Ring-buffer throughput between two threads, next to `memcpy` bandwidth measured in the same run.
public enum RingBench {
    /// Capacity of the benchmarked ring (and working set of the memcpy reference): 4 MiB.
    public static let ringCapacity = 4 << 20

    /// Moves `total` bytes through a ``ringCapacity`` ring in `chunk`-byte transfers between two threads.
    /// - Returns: GB/s (10⁹ bytes per second).
    public static func ringThroughput(chunk: Int, total: Int) -> Double {
        let ring = SPSCRing(minimumCapacity: ringCapacity)
        let pBox = Box(ring.makeProducer()), cBox = Box(ring.makeConsumer())
        let src = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 64)
        // Only the consumer thread touches `dst`, only the producer reads `src`.
        nonisolated(unsafe) let dst = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 64)
        src.initializeMemory(as: UInt8.self, repeating: 7)
        dst.initializeMemory(as: UInt8.self, repeating: 0)
        defer { src.deallocate(); dst.deallocate() }
        nonisolated(unsafe) let srcRO = UnsafeRawBufferPointer(src)
        let done = DispatchSemaphore(value: 0)
        let t0 = now()
        let producer = Thread {
            var p = pBox.take()
            var sent = 0
            while sent < total { sent += p.write(UnsafeRawBufferPointer(rebasing: srcRO[..<min(chunk, total - sent)])) }
            done.signal()
        }
        let consumer = Thread {
            var c = cBox.take()
            var got = 0
            while got < total { got += c.read(into: dst) }
            done.signal()
        }
        producer.start()
        consumer.start()
        done.wait()
        done.wait()
        return Double(total) / (now() - t0) / 1e9
    }

    /// Single-thread `memcpy` bandwidth copying `chunk`-byte blocks, in GB/s of bytes copied.
    public static func memcpyThroughput(chunk: Int, total: Int) -> Double {
        // Copy through a working set as large as the ring, so caches behave alike.
        let size = ringCapacity
        let a = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        let b = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 64)
        a.initializeMemory(as: UInt8.self, repeating: 3, count: size)
        b.initializeMemory(as: UInt8.self, repeating: 0, count: chunk)
        defer { a.deallocate(); b.deallocate() }
        var off = 0, copied = 0
        let t0 = now()
        while copied < total {
            // Two copies per chunk, like the ring (source → ring → destination).
            memcpy(a + off, b, chunk)
            memcpy(b, a + off, chunk)
            off = (off + chunk) % (size - chunk + 1)
            copied += chunk
        }
        return Double(total) / (now() - t0) / 1e9
    }

    /// The ring rows of the bench table: 4 KiB and 64 KiB transfers, each beside memcpy.
    /// Each figure is the median of `repetitions` alternating runs (this machine is a noisy VM).
    public static func run(totalBytes: Int = 1 << 30, repetitions: Int = 5) -> [BenchResult] {
        [4096, 65536].map { chunk in
            var mem: [Double] = [], ring: [Double] = []
            for _ in 0..<repetitions {
                mem.append(memcpyThroughput(chunk: chunk, total: totalBytes))
                ring.append(ringThroughput(chunk: chunk, total: totalBytes))
            }
            return BenchResult(name: "ring throughput, \(chunk / 1024) KiB transfers, 2 threads", value: median(ring),
                               unit: "GB/s", reference: median(mem), referenceName: "memcpy in+out, 1 thread")
        }
    }
}

/// The median of a non-empty list.
public func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

extension RingBench {
}
