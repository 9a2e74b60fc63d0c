/// Sample format written to the device.
///
/// Cases may be added in a minor version: `switch` over it with a `default:` case, as over Apple's
/// non-frozen enums.
public enum DeviceSampleFormat: Sendable, Equatable, CustomStringConvertible {
    /// 32-bit float, little-endian: the decoder's own format, copied bit-exact.
    case float32
    /// 16-bit signed, little-endian: converted with rounding and clipping.
    case s16

    /// Bytes per sample.
    public var bytes: Int { self == .float32 ? 4 : 2 }
    public var description: String { self == .float32 ? "float32" : "s16" }
}

/// What the device agreed to.
public struct DeviceConfiguration: Sendable, Equatable, CustomStringConvertible {
    /// The device's sample rate, frames per second.
    public var rate: Int
    /// The number of channels (1 mono, 2 stereo, up to 8).
    public var channels: Int
    /// The most channels the device takes (ALSA's hardware limit, a PulseAudio sink's own
    /// channels), at most 8: a file with more is down-mixed.
    public var maxChannels: Int
    /// The sample format written to the device.
    public var sampleFormat: DeviceSampleFormat
    /// Device buffer and period, in frames.
    public var bufferFrames: Int
    /// The device's period (how much it takes per wake-up of the output thread), in frames.
    public var periodFrames: Int
    /// Whether the device can pause in place (`snd_pcm_pause`, a corked stream).
    public var canPause: Bool
    /// Whether the output renders straight into the device's buffer (ALSA mmap access) rather
    /// than handing it a copy (`snd_pcm_writei`, a PulseAudio stream write).
    public var mmap: Bool = false

    /// The configuration from its parts.
    public init(rate: Int, channels: Int, sampleFormat: DeviceSampleFormat, bufferFrames: Int, periodFrames: Int,
                canPause: Bool, mmap: Bool = false, maxChannels: Int? = nil) {
        (self.rate, self.channels, self.sampleFormat) = (rate, channels, sampleFormat)
        self.maxChannels = min(8, max(channels, maxChannels ?? channels))
        (self.bufferFrames, self.periodFrames, self.canPause, self.mmap) = (bufferFrames, periodFrames, canPause, mmap)
    }

    /// Milliseconds of `frames` at this rate.
    public func milliseconds(_ frames: Int) -> Double { rate > 0 ? Double(frames) * 1000 / Double(rate) : 0 }

    /// `float32, 44100 Hz, 2 channels, buffer 22050 frames (500 ms), period 11025 frames (250 ms), mmap`.
    public var description: String {
        func ms(_ f: Int) -> String {
            let v = milliseconds(f)
            let tenths = Int((v * 10).rounded())
            return tenths % 10 == 0 ? String(tenths / 10) : "\(tenths / 10).\(tenths % 10)"
        }
        return "\(sampleFormat), \(rate) Hz, \(channels) channel\(channels == 1 ? "" : "s"), "
            + "buffer \(bufferFrames) frames (\(ms(bufferFrames)) ms), period \(periodFrames) frames (\(ms(periodFrames)) ms)"
            + (mmap ? ", mmap" : "")
    }
}

/// What an output's device is doing.
public enum OutputState: Sendable, Equatable {
    /// Ready, not started (filling up to its start threshold).
    case prepared
    case running
    case paused
    case other
}

/// Where the output thread renders next when a device lets it write into its own buffer.
public enum DirectWrite {
    /// The device takes copies only (``AudioOutput/write(_:frames:)``).
    case unsupported
    /// `frames` contiguous frames at `pointer`; `offset` goes back with the commit.
    case area(pointer: UnsafeMutableRawPointer, frames: Int, offset: Int)
    /// A negative errno-style error.
    case error(Int32)
}

/// An audio output driver, as mpv's `ao_driver`: it only talks to its device; the output
/// thread's scheduling (waiting for room and being woken, pause, flush, drain, recovery,
/// position) is written once, over this. Codes are negative errno values, ALSA's meaning
/// (`-EPIPE` an underrun, `-ESTRPIPE` a suspend, `-ENODEV` a device or server gone).
///
/// Every method is called from the output thread only, in its real-time loop: no allocation,
/// no lock held across a wait, no logging. ``open(device:rate:channels:preferred:bufferMicros:periodMicros:mmap:)``
/// and ``close()`` may allocate (they happen at format changes, not in the steady state).
public protocol AudioOutput: Sendable {
    /// Whether this driver plays the device named `device` (`pulse`, `paced:NAME`; ALSA takes the rest).
    static func handles(_ device: String) -> Bool
    /// Opens `device` for `rate` and `channels`, `preferred` format first.
    static func open(device: String, rate: Int, channels: Int, preferred: DeviceSampleFormat,
                     bufferMicros: Int, periodMicros: Int, mmap: Bool) throws(MediaError) -> Self
    /// How the device numbers more than two channels (the decoder writes them in this order).
    static var channelOrder: ChannelOrder { get }
    /// The most channels `device` takes, found without playing (nil: it cannot be told now).
    /// Asked by the decoder thread before the device was ever opened, when a file has more
    /// than two channels; once it was, its ``DeviceConfiguration/maxChannels`` answers.
    static func channelLimit(device: String) -> Int?
    /// Whether `device` can be opened now, and whether it is a sound server (whose return after
    /// a loss means the media services restarted).
    static func probe(device: String) -> (available: Bool, soundServer: Bool)
    /// What the device agreed to.
    var configuration: DeviceConfiguration { get }
    /// What the device is doing.
    func state() -> OutputState
    /// Whether the device is gone: its readings no longer say what was heard.
    var isLost: Bool { get }
    /// Frames written and not yet heard; nil when the device cannot tell yet.
    func delay() -> Int?
    /// Frames that can be written now, or a negative error.
    func avail() -> Int
    /// Waits until a period can be written or `timeoutMillis` passes (1), the descriptor `wake`
    /// becomes readable (0: the caller drains it and re-checks), or the device fails (< 0).
    func waitForRoom(timeoutMillis: Int32, wake: Int32) -> Int32
    /// While paused: waits with no timeout until `wake` is readable (false) or the device
    /// itself speaks (true: the caller asks ``isLost``).
    func waitWhilePaused(wake: Int32) -> Bool
    /// Where to render `frames` frames in the device's own buffer, if it offers that.
    func beginDirectWrite(frames: Int) -> DirectWrite
    /// Hands over `frames` frames rendered at ``beginDirectWrite(frames:)``'s area; the frames
    /// taken or a negative error.
    func commitDirectWrite(offset: Int, frames: Int) -> Int
    /// Writes `frames` interleaved frames; the frames taken or a negative error.
    func write(_ buffer: UnsafeRawPointer, frames: Int) -> Int
    /// Discards everything written and not yet heard; new audio is taken at once.
    func discard()
    /// Stops at once, discarding what is queued (before closing).
    func stop()
    /// After an underrun: ready to be written again.
    func prepare() -> Int32
    /// After a system suspend.
    func resume() -> Int32
    /// Pauses (or resumes) in place; false when the device refused.
    func pause(_ on: Bool) -> Bool
    /// Starts playing what is queued though the buffer is not full (the end of the input).
    func startIfWaiting()
    /// Plays out what is queued, returning once it has been heard.
    func drain()
    /// Closes the device (once).
    func close()
    /// Whether the device takes audio as fast as it comes, playing nothing in real time
    /// (ALSA's `null` and `file` plugins): the output never stalls on it (a stall's silence
    /// would be written into the capture), it only waits for the decoder.
    var takesAudioAtOnce: Bool { get }
    /// Whether the device plays in real time (a sound card, a sound server, ALSA's `null` at
    /// its own pace): then the heard position is extrapolated between readings. False for a
    /// device the test paces: its position moves only when its clock does.
    static var playsInRealTime: Bool { get }
    /// Why `device` fails now, in the driver's own words (asked after a failure, off the
    /// output thread); nil: the code's own message says it.
    static func failureReason(device: String) -> String?
}

extension AudioOutput {
    /// The code's own message.
    public static func failureReason(device: String) -> String? { nil }
    /// Real time, unless a driver says otherwise.
    public static var playsInRealTime: Bool { true }
    /// A device that plays what it is given in its own time.
    public var takesAudioAtOnce: Bool { false }
}
