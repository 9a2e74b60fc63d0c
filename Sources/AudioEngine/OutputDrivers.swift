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
        .of(PacedOutput.self),  // `paced:NAME`: a device the test paces
        .of(PulseStream.self),  // `pulse`, `pulse:SINK`
        .of(PipeOutput.self),   // `pipe:PATH`: a FIFO another program reads (snapserver)
        .of(ALSAPCM.self),      // every other name: an ALSA PCM
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
    /// Runs the loop of `thread`, an `OutputThread<type>`.
    let run: @Sendable (AnyObject) -> Void

    static func of<D: AudioOutput>(_ driver: D.Type) -> OutputDriver {
        OutputDriver(type: driver) { thread in (thread as! OutputThread<D>).runLoop() }
    }
}
