/// How an item played at a rate other than 1 is stretched (AVFoundation's
/// `AVAudioTimePitchAlgorithm`). At rate 1 none applies: the decoded audio goes to the output
/// untouched.
public enum TimePitchAlgorithm: String, Sendable, Equatable, CaseIterable, Codable {
    /// The pitch kept, by a time-domain stretch that follows the signal's pitch period (libsonic:
    /// made for speech, cheap at any rate). The default: podcasts and audiobooks.
    case timeDomain
    /// The pitch kept, by a phase vocoder (Rubber Band's finer engine: music's quality, several
    /// times the time-domain stretch's CPU).
    case spectral
    /// No stretch: the audio is resampled, so the pitch follows the rate (libsoxr), as a tape
    /// played faster.
    case varispeed
}
