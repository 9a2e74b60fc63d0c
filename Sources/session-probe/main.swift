// A second "app" for the audio-session tests: one session (and optionally a playing queue
// player) in its own process, reporting what happens to it, one line per event on stdout.
//
//   session-probe --registry DIR --category ambient|soloAmbient|playback [--options mix,duck,spoken]
//                 [--mode spoken] [--play FILE --device NAME] [--commands]
//   --commands: receive remote commands in `RemoteCommandCenter.shared` (handlers on the main
//   thread, written as an iOS app writes them); pause pauses, nextTrack answers noSuchContent.
//   SIGUSR1: pause, then deactivate with notifyOthersOnDeactivation.  SIGTERM: exit.
import AudioEngine
import Dispatch
import FoundationEssentials
import Glibc
import NowPlaying
import Player
import Session

/// One line, written straight to the file descriptor (no buffering to lose on SIGKILL).
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
}

let args = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    guard let i = args.firstIndex(of: name), i + 1 < args.count else { return nil }
    return args[i + 1]
}

let session = AudioSession(registryDirectory: option("--registry"))
var options: SessionCategoryOptions = []
for o in (option("--options") ?? "").split(separator: ",") {
    switch o {
    case "mix": options.insert(.mixWithOthers)
    case "duck": options.insert(.duckOthers)
    case "spoken": options.insert(.interruptSpokenAudioAndMixWithOthers)
    default: break
    }
}
do {
    try session.setCategory(SessionCategory(rawValue: option("--category") ?? "playback") ?? .playback,
                            mode: option("--mode") == "spoken" ? .spokenAudio : .default, options: options)
} catch {
    say("error \(error)")
    exit(1)
}
session.addObserver(queue: .main) { e in
    switch e {
    case .interruptionBegan: say("session interruptionBegan")
    case .interruptionEnded(let resume):
        say("session interruptionEnded shouldResume=\(resume)")
        if resume { MainActor.assumeIsolated { player?.play() } }  // the app resumes (the player only pauses), as on iOS
    case .duckingChanged(let on): say("session ducking \(on)")
    case .silencedChanged(let on): say("session silenced \(on)")
    case .routeChanged(let reason): say("session routeChanged \(reason)")
    case .mediaServicesWereReset: say("session mediaServicesWereReset")
    }
}

var player: QueuePlayer?
if let file = option("--play") {
    let p = QueuePlayer(items: [PlayerItem(path: file)],
                        configuration: EngineConfiguration(output: OutputSettings(device: option("--device") ?? "default",
                                                                                  bufferMillis: 200, realtime: false)),
                        session: session)
    p.addObserver(queue: .main) { e in
        if case .rateChanged(let r, let why) = e { say("player rate \(Int(r)) \(why)") }
    }
    p.play()
    player = p
} else {
    do { try session.setActive(true) } catch { say("error \(error)"); exit(1) }
}

/// Whether this code runs on the main queue (after `dispatchMain()` a pool thread serves it, so
/// `Thread.isMainThread` is not the test).
let mainKey = DispatchSpecificKey<Bool>()
DispatchQueue.main.setSpecific(key: mainKey, value: true)
func onMainQueue() -> Bool { DispatchQueue.getSpecific(key: mainKey) == true }

if args.contains("--commands") {
    let center = RemoteCommandCenter.shared
    // As an iOS app writes them: main-actor code, trusting MediaPlayer's main-thread promise.
    center.pauseCommand.addTarget { _ in
        MainActor.assumeIsolated {
            player?.pause()
            say("handler pause main=\(onMainQueue())")
            return .success
        }
    }
    center.nextTrackCommand.addTarget { _ in
        MainActor.assumeIsolated {
            say("handler nextTrack main=\(onMainQueue())")
            return .noSuchContent
        }
    }
    center.receiveCommands(for: session)
}

signal(SIGUSR1, SIG_IGN)
let usr1 = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: .main)
usr1.setEventHandler {
    player?.pause()
    do {
        try session.setActive(false, options: .notifyOthersOnDeactivation)
        say("deactivated")
    } catch {
        say("error \(error)")
    }
}
usr1.resume()
DispatchQueue.main.asyncAfter(deadline: .now() + 0.2) { say("ready \(session.id)") }
dispatchMain()
