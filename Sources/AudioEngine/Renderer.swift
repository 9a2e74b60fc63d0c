import RenderKernel
import RingBuffer

/// The render callback: the only code that touches samples on the output thread.
///
/// It copies whole frames from the PCM ring into the period buffer, converting float32 to the
/// device's format and applying the software gain (smoothed, so volume changes do not click).
/// At unity gain into a float32 device every sample is multiplied by exactly 1, so output is bit-exact.
/// No locks, allocation or reference counting: checked by `@_noLocks @_noAllocation`.
struct Renderer: ~Copyable {
    /// Current (smoothed) gain and the per-frame step towards the target.
    private(set) var gain: Float = 1

    /// Sets the gain at once, without a ramp: for a device that was just opened (nothing is
    /// sounding, so there is nothing to click), so a first item played at 0.5 or muted starts so.
    @_noLocks @_noAllocation
    mutating func snap(to target: Float) {
        gain = target
    }

    /// Fills `out` with up to `frames` frames read (not yet consumed) from `consumer`.
    ///
    /// - Parameters:
    ///   - bytesPerFrame: bytes per *source* frame (float32 × channels).
    ///   - channels: samples per frame.
    ///   - toS16: convert to S16 (else float32 out).
    ///   - target: the gain to move towards.
    ///   - rampFrames: frames over which a full 0↔1 gain change is spread.
    /// - Returns: frames rendered (≤ `frames`; fewer when the ring holds less).
    @_noLocks @_noAllocation
    mutating func render(from consumer: inout RingConsumer, into out: UnsafeMutableRawPointer, frames: Int,
                         channels: Int, toS16: Bool, target: Float, rampFrames: Int) -> Int {
        let bytesPerFrame = 4 &* channels
        let (a, b) = consumer.readableRegions(max: frames &* bytesPerFrame)
        let total = (a.count &+ b.count) / bytesPerFrame
        guard total > 0, let aBase = a.baseAddress else { return 0 }
        let aFrames = a.count / bytesPerFrame
        let outFrameBytes = (toS16 ? 2 : 4) &* channels
        renderRun(aBase, frames: Swift.min(aFrames, total), into: out, channels: channels, toS16: toS16,
                  target: target, rampFrames: rampFrames)
        if total > aFrames, let bBase = b.baseAddress {
            renderRun(bBase, frames: total &- aFrames, into: out + aFrames &* outFrameBytes, channels: channels,
                      toS16: toS16, target: target, rampFrames: rampFrames)
        }
        return total
    }

    @_noLocks @_noAllocation
    private mutating func renderRun(_ src: UnsafeRawPointer, frames: Int, into out: UnsafeMutableRawPointer,
                                    channels: Int, toS16: Bool, target: Float, rampFrames: Int) {
        let samples = frames &* channels
        let input = src.assumingMemoryBound(to: Float.self)
        let step: Float = 1 / Float(Swift.max(1, rampFrames))
        if gain == target && !toS16 {
            // Steady gain into a float32 device: one vectorised multiply (at unity gain, a copy
            // bit for bit), in C compiled optimised in every build (`backline_scale_f32`).
            // (`_unsafePerformance`: the checker cannot see into C; that function takes no lock and allocates nothing.)
            let (o, g) = (out.assumingMemoryBound(to: Float.self), gain)
            _unsafePerformance { backline_scale_f32(input, o, samples, g) }
            return
        }
        var g = gain
        if !toS16 {
            let o = out.assumingMemoryBound(to: Float.self)
            var i = 0
            while i < samples {
                g = Self.approach(g, target, step)
                for c in 0..<channels { o[i &+ c] = input[i &+ c] * g }
                i &+= channels
            }
        } else {
            let o = out.assumingMemoryBound(to: Int16.self)
            var i = 0
            while i < samples {
                g = Self.approach(g, target, step)
                for c in 0..<channels { o[i &+ c] = Self.toS16(input[i &+ c] * g) }
                i &+= channels
            }
        }
        gain = g
    }

    @inline(__always)
    private static func approach(_ g: Float, _ target: Float, _ step: Float) -> Float {
        g < target ? Swift.min(target, g + step) : (g > target ? Swift.max(target, g - step) : g)
    }

    /// float → S16: scale by 32768, round to nearest (halves away from zero), clip to the S16 range.
    @inline(__always)
    static func toS16(_ x: Float) -> Int16 {
        let v = x * 32768
        if v >= 32766.5 { return 32767 }
        if v <= -32767.5 { return -32768 }
        return Int16(v >= 0 ? v + 0.5 : v - 0.5)
    }
}
