import CALSA
import CPulse

#if canImport(Glibc)
import Glibc
#endif

/// The output thread's device: an ALSA PCM, or a native PulseAudio stream (`pulse`,
/// `pulse:SINK`). Every operation the loop needs, with ALSA's meaning; errors are negative
/// errno-style codes (ALSA's own, or `-ENODEV` for a lost sound server).
///
/// An enum rather than a protocol: a `switch` on the case, no existential or witness table on
/// the real-time path.
enum OutputDevice {
    case alsa(ALSAPCM)
    case pulse(PulseStream)

    enum State {
        /// Ready, not started (ALSA, filling up to its start threshold).
        case prepared
        case running
        case paused
        case other
    }

    /// Opens `device` (see ``OutputSettings/device``).
    static func open(_ device: String, rate: Int, channels: Int, preferred: DeviceSampleFormat,
                     bufferMicros: Int, periodMicros: Int, mmap: Bool) throws(ALSAError) -> OutputDevice {
        if let sink = PulseStream.sink(forDevice: device) {
            do {
                return .pulse(try PulseStream(sink: sink, rate: rate, channels: channels, preferred: preferred,
                                              bufferMicros: bufferMicros, periodMicros: periodMicros))
            } catch {
                // Reported with an errno-style code, as ALSA would for the same failure.
                let code: Int32 = switch UInt32(error.code) {
                case PA_ERR_CONNECTIONREFUSED.rawValue, PA_ERR_CONNECTIONTERMINATED.rawValue: -ECONNREFUSED
                case PA_ERR_NOENTITY.rawValue: -ENOENT
                case PA_ERR_ACCESS.rawValue: -EACCES
                default: -EIO
                }
                throw ALSAError(code: code, function: error.function)
            }
        }
        return .alsa(try ALSAPCM(device: device, rate: rate, channels: channels, preferred: preferred,
                                 bufferMicros: bufferMicros, periodMicros: periodMicros, mmap: mmap))
    }

    var configuration: DeviceConfiguration {
        switch self {
        case .alsa(let p): p.configuration
        case .pulse(let s): s.configuration
        }
    }

    func state() -> State {
        switch self {
        case .alsa(let p):
            switch snd_pcm_state(p.pcm) {
            case SND_PCM_STATE_PREPARED: .prepared
            case SND_PCM_STATE_RUNNING: .running
            case SND_PCM_STATE_PAUSED: .paused
            default: .other
            }
        case .pulse(let s): s.isCorked ? .paused : .running
        }
    }

    /// Whether the device is gone (a card unplugged, a sound server that died): its readings
    /// (delay, state) no longer say what was heard, and nothing written to it will play.
    var isLost: Bool {
        switch self {
        case .alsa(let p): snd_pcm_state(p.pcm) == SND_PCM_STATE_DISCONNECTED
        case .pulse(let s): !s.isAlive
        }
    }

    /// Frames written and not yet heard; nil when the device cannot tell yet.
    func delay() -> Int? {
        switch self {
        case .alsa(let p):
            var d: snd_pcm_sframes_t = 0
            return snd_pcm_delay(p.pcm, &d) < 0 ? 0 : max(0, Int(d))
        case .pulse(let s): return s.delayFrames()
        }
    }

    /// Frames that can be written now, or a negative error.
    func avail() -> Int {
        switch self {
        case .alsa(let p): Int(snd_pcm_avail_update(p.pcm))
        case .pulse(let s): s.availFrames()
        }
    }

    /// Writes `frames` interleaved frames; returns the frames taken or a negative error.
    func write(_ buffer: UnsafeRawPointer, frames: Int) -> Int {
        switch self {
        case .alsa(let p): Int(snd_pcm_writei(p.pcm, buffer, snd_pcm_uframes_t(frames)))
        case .pulse(let s): s.write(buffer, frames: frames)
        }
    }

    /// Discards everything written and not yet heard; the device then takes new audio at once
    /// (ALSA: drop and prepare, which through ALSA's `pulse` plugin is a new server stream;
    /// PulseAudio: a flush of the same stream).
    func discard() {
        switch self {
        case .alsa(let p):
            snd_pcm_drop(p.pcm)
            snd_pcm_prepare(p.pcm)
        case .pulse(let s):
            // A drop also ends ALSA's pause; a flushed stream stays corked until told.
            s.flush()
            if s.isCorked { s.cork(false) }
        }
    }

    /// Stops at once, discarding what is queued (before closing).
    func stop() {
        switch self {
        case .alsa(let p): snd_pcm_drop(p.pcm)
        case .pulse(let s): s.flush()
        }
    }

    /// After an underrun: ready to be written again.
    func prepare() -> Int32 {
        switch self {
        case .alsa(let p): snd_pcm_prepare(p.pcm)
        case .pulse: 0
        }
    }

    /// After a system suspend (`-ESTRPIPE`).
    func resume() -> Int32 {
        switch self {
        case .alsa(let p): snd_pcm_resume(p.pcm)
        case .pulse: 0
        }
    }

    /// Hardware pause (or resume); false when the device refused.
    func pause(_ on: Bool) -> Bool {
        switch self {
        case .alsa(let p): snd_pcm_pause(p.pcm, on ? 1 : 0) >= 0
        case .pulse(let s): s.cork(on)
        }
    }

    /// Starts playing what is queued though the buffer is not full (the end of the input).
    func startIfWaiting() {
        switch self {
        case .alsa(let p): if snd_pcm_state(p.pcm) == SND_PCM_STATE_PREPARED { snd_pcm_start(p.pcm) }
        case .pulse(let s): s.trigger()
        }
    }

    /// Plays out what is queued, returning once it has been heard.
    func drain() {
        switch self {
        case .alsa(let p): snd_pcm_drain(p.pcm)
        case .pulse(let s): s.drain()
        }
    }

    func close() {
        switch self {
        case .alsa(let p): p.close()
        case .pulse(let s): s.close()
        }
    }
}
