import CALSA  // (its headers declare poll, which the clean build finds there first)
import MediaCore
import Synchronization
import RingBuffer

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// The output drivers, by device name: the first whose ``AudioOutput/handles(_:)`` takes the
/// name plays it. Adding an output is its driver in one file and one line here.
enum OutputDrivers {
    static let all: [OutputDriver] = [
        .of(PacedOutput.self, OutputDeviceKind(
            name: "paced", forms: ["paced:NAME"],
            summary: "a device a test paces (never heard)", forTests: true)),
        .of(PulseStream.self, OutputDeviceKind(
            name: "PulseAudio", forms: ["pulse", "pulse:SINK"],
            summary: "the default sink of the PulseAudio or PipeWire-Pulse server, or a named one")),
        .of(PipeOutput.self, OutputDeviceKind(
            name: "pipe", forms: ["pipe:PATH"],
            summary: "raw PCM into a FIFO another program reads, such as snapserver")),
        .of(ALSAPCM.self, OutputDeviceKind(
            name: "ALSA", forms: ["default", "hw:0", "null", "file:…", "any other ALSA PCM name"],
            summary: "any PCM name no other kind takes")),
    ]

    /// The driver for `device`.
    static func driver(for device: String) -> any AudioOutput.Type {
        all.first { $0.type.handles(device) }?.type ?? ALSAPCM.self
    }

    /// `driver`'s entry (its specialised loop).
    static func entry(for driver: any AudioOutput.Type) -> OutputDriver? {
        all.first { ObjectIdentifier($0.type) == ObjectIdentifier(driver) }
    }

    /// What the decoder thread asks of `driver`'s device: its channel order, and the most
    /// channels it takes (from its last open, else probed once; capped by the settings).
    static func decoderOptions<D: AudioOutput>(_ driver: D.Type, shared: EngineShared, settings: OutputSettings) -> DecoderOptions {
        let (device, cap) = (settings.device, min(8, max(2, settings.maxChannels)))
        return DecoderOptions {
            let known = shared.deviceChannels.withLock { known in
                if known == 0, let probed = D.channelLimit(device: device) { known = probed }
                return known
            }
            return OutputChannels(maximum: min(cap, max(2, known)), order: D.channelOrder)
        }
    }

    /// An output thread for `driver`.
    static func thread<D: AudioOutput>(_ driver: D.Type, shared: EngineShared, settings: OutputSettings,
                                       consumer: consuming RingConsumer, markers: consuming RingConsumer,
                                       events: consuming RingProducer) -> any OutputThreadHandle {
        OutputThread<D>(shared: shared, settings: settings, consumer: consumer, markers: markers, events: events)
    }
}

/// Waits with no timeout until `wake` is readable: a paused device that cannot itself speak
/// (a paced device, a pipe) leaves only the control plane to wake the output thread.
func waitForWake(_ wake: Int32) {
    withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 1) { fds in
        fds[0] = pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
        _ = poll(fds.baseAddress, 1, -1)
    }
}

/// A driver and its output thread's loop compiled for it.
///
/// The engine reaches its output thread through the ``OutputThreadHandle`` existential, which
/// runs generic code: there every read of the device (a `Device?`) asked the runtime for
/// `Optional<Device>`'s metadata (`$sSqMa`: 5,244 calls, 1.7 M instructions a minute of audio,
/// callgrind of `play --device null`). ``of(_:)`` is called with each concrete driver type in
/// ``OutputDrivers/all``, so the loop it captures is specialised for that driver; the thread
/// runs it (`OutputThread.start`).
struct OutputDriver: Sendable {
    let type: any AudioOutput.Type
    /// The device names it plays, for people.
    let kind: OutputDeviceKind
    /// Runs the loop of `thread`, an `OutputThread<type>`.
    let run: @Sendable (AnyObject) -> Void

    static func of<D: AudioOutput>(_ driver: D.Type, _ kind: OutputDeviceKind) -> OutputDriver {
        OutputDriver(type: driver, kind: kind) { thread in (thread as! OutputThread<D>).runLoop() }
    }
}

/// A kind of output device: the device names one output driver plays, for help texts and
/// documentation.
public struct OutputDeviceKind: Sendable, Equatable {
    /// The driver's name (`PulseAudio`, `ALSA`).
    public var name: String
    /// The forms of device name it takes (`pulse`, `pulse:SINK`), in the order to show them.
    public var forms: [String]
    /// What it plays to, for people.
    public var summary: String
    /// Whether it exists for tests alone (a device nobody hears): help texts leave it out.
    public var forTests: Bool

    /// A kind from its parts.
    public init(name: String, forms: [String], summary: String, forTests: Bool = false) {
        (self.name, self.forms, self.summary, self.forTests) = (name, forms, summary, forTests)
    }

    /// Every kind the engine plays to, in the order device names are matched against them.
    public static var all: [OutputDeviceKind] { OutputDrivers.all.map(\.kind) }
}
