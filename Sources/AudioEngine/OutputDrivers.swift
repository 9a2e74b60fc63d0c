import CALSA  // (its headers declare poll, which the clean build finds there first)
import MediaCore
import Synchronization
import RingBuffer

#if canImport(Glibc)
import Glibc
import Locking
#endif

/// The output drivers, by device name: the first whose ``AudioOutput/handles(_:)`` takes the
/// name plays it: those registered (``OutputRegistry/register(_:kind:)``) first, in the order
/// they were, then the built-in ones, ALSA last (it takes any name). A built-in output is its
/// driver in one file and one line in ``builtIn``.
enum OutputDrivers {
    static let builtIn: [OutputDriver] = [
        .of(PulseStream.self, OutputDeviceKind(
            name: "PulseAudio", forms: ["pulse", "pulse:SINK"],
            summary: "the default sink of the PulseAudio or PipeWire-Pulse server, or a named one", plugin: "pulse")),
        .of(PipeOutput.self, OutputDeviceKind(
            name: "pipe", forms: ["pipe:PATH"],
            summary: "raw PCM into a FIFO another program reads, such as snapserver", plugin: "fifo")),
        .of(ALSAPCM.self, OutputDeviceKind(
            name: "ALSA", forms: ["default", "hw:0", "null", "file:…", "any other ALSA PCM name"],
            summary: "any PCM name no other kind takes", plugin: "alsa")),
    ]

    /// The drivers registered from outside the engine, in the order they were.
    static let registered = Lock<[OutputDriver]>([])

    /// Every driver, in the order device names are matched against them.
    static var all: [OutputDriver] { registered.withLock { $0 } + builtIn }

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

/// The one registry of output drivers: the engine's own (PulseAudio, a pipe, ALSA) and any a
/// program or test registers (a driver is an `AudioOutput` type and its ``OutputDeviceKind``).
public enum OutputRegistry {
    /// Registers `driver` for the device names its `AudioOutput.handles(_:)` takes, ahead of
    /// the built-in drivers (once, before an engine opens such a device; a second registration
    /// of the same driver is ignored).
    public static func register<D: AudioOutput>(_ driver: D.Type, kind: OutputDeviceKind) {
        OutputDrivers.registered.withLock { all in
            guard !all.contains(where: { ObjectIdentifier($0.type) == ObjectIdentifier(driver) }) else { return }
            all.append(.of(driver, kind))
        }
    }

    /// Every kind of device the engine plays to, in the order device names are matched.
    public static var kinds: [OutputDeviceKind] { OutputDrivers.all.map(\.kind) }

    /// The kind of device `device` names (ALSA's for any name no other driver takes).
    public static func kind(for device: String) -> OutputDeviceKind {
        let all = OutputDrivers.all
        return (all.first { $0.type.handles(device) } ?? all[all.count - 1]).kind
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
    /// The name MPD's `outputs` gives its plugin (`alsa`, `pulse`, `fifo`).
    public var plugin: String

    /// A kind from its parts (its plugin name: `name` in lower case).
    public init(name: String, forms: [String], summary: String, forTests: Bool = false) {
        self.init(name: name, forms: forms, summary: summary, forTests: forTests, plugin: name.lowercased())
    }

    /// A kind from its parts, with the name MPD's `outputs` gives its plugin.
    public init(name: String, forms: [String], summary: String, forTests: Bool = false, plugin: String) {
        (self.name, self.forms, self.summary, self.forTests, self.plugin) = (name, forms, summary, forTests, plugin)
    }

    /// Every kind the engine plays to, in the order device names are matched against them
    /// (``OutputRegistry/kinds``).
    public static var all: [OutputDeviceKind] { OutputRegistry.kinds }
}
