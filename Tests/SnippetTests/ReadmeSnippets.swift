// The Swift snippets of README.md and docs/GUIDE.md, compiled as written (Swift 6 mode, warnings
// as errors). Each function body holds one block, line for line (its `import` lines are this
// file's imports): `player()` is README's QueuePlayer example, and the guide's copy of it without
// its first line; the others are the guide's. What a block leaves to the reader (an earlier
// block's `player`) is a parameter, and lines after a block only silence "never used".
// `ReadmeTests` checks that the blocks are still here. README's package manifest example is not
// Swift this target can compile: `ReadmeTests` checks the products it names instead.
// The functions are compiled, not run (they play to the default device); `IOSStyleClientTests`
// runs an app written the same way.
import AudioEngine
import Control
import Daemon
import Dispatch
import Lifecycle
import NowPlaying
import Player
import Session

enum ReadmeSnippets {
    static func engine() {
        let engine = PlaybackEngine(configuration: EngineConfiguration(output: OutputSettings(device: "default")))
        engine.onEvent { event in print(event) }          // itemStarted / itemEnded fire when *heard*
        engine.enqueue(["/music/a.mp3", "/music/b.mp3"])  // gapless across items
        engine.pause(); engine.resume()                   // no sample lost or repeated
        engine.seek(to: 42.0)                              // sample-accurate
        print(engine.position as Any)                      // item + frame actually audible now
    }

    static func player() async {
        let paths = Array(CommandLine.arguments.dropFirst())                  // the files to play
        let player = QueuePlayer(items: paths.map { PlayerItem(path: $0) })   // paused, first item current
        player.addObserver(queue: .main) { event in                           // PlayerEvent, in order
            if case .currentItemChanged(let item) = event { print("now playing:", item?.displayName ?? "nothing") }
        }
        let token = player.addPeriodicTimeObserver(forInterval: 1, queue: .main) { t in print(t) }
        player.play()                         // rate 1; timeControlStatus: waiting → playing
        player.insert(PlayerItem(path: "/music/next.mp3"), after: player.currentItem)  // gapless, even if decoded ahead
        player.seek(to: 30) { finished in }   // sample-accurate; a newer seek finishes this one with false
        let landed = await player.seek(to: 30) // the same, async (AVPlayer's `seek(to:) async -> Bool`)
        player.actionAtItemEnd = .pause       // .advance (default) / .pause / .none, applied at once
        player.removeTimeObserver(token)      // no call starts after this returns
        for await event in player.events() { print(event) }   // the same events as an AsyncStream
        _ = landed
    }

    static func sessionAndLifecycle() throws {
        try AudioSession.shared.setCategory(.playback, options: [.duckOthers])  // Apple's validity rules
        AudioSession.shared.addObserver(queue: .main) { event in print(event) } // interruptionBegan/Ended…
        AudioSession.shared.silentSwitch = true     // silences ambient/soloAmbient sessions in every process
        let app = Application.shared
        let task = app.beginBackgroundTask(name: "save") { /* expiring: finish now */ }
        app.addSuspensionHook { _ in /* save state; the device is released next */ }
        app.enterBackground()                       // a player in .playback keeps the app running
        app.endBackgroundTask(task)
        app.setKeepAliveTimeout(600) { /* at least every 10 minutes, even while suspended */ }
    }

    static func nowPlaying(player: QueuePlayer) async {
        let info = NowPlayingBinding(player: player)          // writes NowPlayingInfoCenter.default on transitions only
        let remote = RemoteCommandBinding(player: player)     // play/pause/toggle/stop/next/previous/seek/skip ±15 s
        RemoteCommandCenter.shared.receiveCommands(for: AudioSession.shared)   // be reachable as the now-playing app
        let elapsed = NowPlayingInfoCenter.default.elapsed()  // elapsed + rate × (now − stamp), clamped to [0, duration]
        await RemoteCommandCenter.shared.dispatch(RemoteCommandEvent(command: .skipForward))   // → .success / .commandFailed…
        let answer = await RemoteCommandCenter.send(RemoteCommandEvent(command: .pause), via: AudioSession.shared, timeout: 2)
        // the now-playing app's handlers answered (any process): answer.status, answer.reason
        _ = (info, remote, elapsed, answer)
    }

    static func lineProtocol() {
        struct Count: LineProtocol {
            func greeting() -> String? { "COUNT 1\n" }
            func answer(_ line: String, _ request: LineRequest) -> String {
                guard line == "count", case .success(.queue(let q)) = request.execute(ListCommand()) else { return "ERR\n" }
                return "\(q.items.count)\n"
            }
        }
        ListenerRegistry.shared.register(ListenerKind(name: "count", configKey: "count", protocol: Count()))
    }
}
