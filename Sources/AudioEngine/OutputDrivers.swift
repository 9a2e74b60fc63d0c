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
    static let all: [any AudioOutput.Type] = [
        PacedOutput.self,  // `paced:NAME`: a device the test paces
        PulseStream.self,  // `pulse`, `pulse:SINK`
        PipeOutput.self,   // `pipe:PATH`: a FIFO another program reads (snapserver)
        ALSAPCM.self,      // every other name: an ALSA PCM
    ]

    /// The driver for `device`.
    static func driver(for device: String) -> any AudioOutput.Type {
        all.first { $0.handles(device) } ?? ALSAPCM.self
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

    /// An output thread specialised for `driver`.
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
