// The DocC articles' examples (Sources/*/*.docc/*.md), compiled as written (Swift 6 mode,
// warnings as errors). Each article has one complete program for an executable target's
// main.swift; its top-level code is a function body here, line for line (its `import` lines are
// this file's imports). `ReadmeTests` checks that the articles' blocks are still here. The
// functions are compiled, not run (they play to the default device and call `dispatchMain()`).
import Dispatch
import Foundation
import Lifecycle
import NowPlaying
import Player
import Session

enum ArticleSnippets {
    /// The example of `Sources/Player/Player.docc/Player.md`.
    static func player() {
        // Plays the MP3 files given on the command line gaplessly, prints what plays and the time
        // every second, and exits when the queue is done.
        let paths = Array(CommandLine.arguments.dropFirst())
        guard !paths.isEmpty else {
            print("usage: play-files FILE…")
            exit(1)
        }
        let player = QueuePlayer(items: paths.map { PlayerItem(path: $0) })   // paused, first item current
        let ticks = player.addPeriodicTimeObserver(forInterval: 1, queue: .main) { seconds in
            print(String(format: "  %6.1f s", seconds))
        }
        player.addObserver(queue: .main) { event in
            switch event {
            case .currentItemChanged(let item?):
                print("now playing:", item.displayName)
            case .itemFailedToPlayToEnd(_, let error):
                print("cannot play", error)   // file: reason; the queue goes on
            case .currentItemChanged(nil):
                player.removeTimeObserver(ticks)
                print("done")
                exit(0)
            default:
                break
            }
        }
        print("now playing:", player.currentItem?.displayName ?? "nothing")
        player.play()
        dispatchMain()   // observers with queue .main (or nil) run here
    }

    /// The example of `Sources/Session/Session.docc/Session.md`.
    static func session() {
        // Plays a spoken-word file in the playback category as an iOS app does: another app's
        // session interrupts it (run a second copy, or `backline play`), and it resumes when the
        // interruption ends with shouldResume.
        guard CommandLine.arguments.count == 2 else {
            print("usage: audiobook FILE")
            exit(1)
        }
        let session = AudioSession.shared
        do {
            try session.setCategory(.playback, mode: .spokenAudio)   // background audio; not mixable
            try session.setActive(true)                              // interrupts other non-mixable sessions
        } catch {
            print("cannot use the audio session:", error)            // e.g. '!cat' for invalid options
            exit(1)
        }
        let player = QueuePlayer(items: [PlayerItem(path: CommandLine.arguments[1])], session: session)
        session.addObserver(queue: .main) { event in
            switch event {
            case .interruptionBegan(_, let by):
                print("interrupted by", by ?? "another app", "- paused")
            case .interruptionEnded(let shouldResume):
                print("interruption ended")
                if shouldResume { player.play() }                    // AVPlayer stays paused otherwise
            case .routeChanged(.oldDeviceUnavailable):
                print("the output device is gone - paused")
            case .routeChanged(.newDeviceAvailable):
                print("the output device is back")
                player.play()
            default:
                break
            }
        }
        player.addObserver(queue: .main) { event in
            if case .currentItemChanged(nil) = event {               // played to the end
                player.pause()                                       // deactivating while playing throws isBusy
                try? session.setActive(false, options: .notifyOthersOnDeactivation)   // others may resume
                exit(0)
            }
        }
        player.play()
        dispatchMain()
    }

    /// The example of `Sources/Lifecycle/Lifecycle.docc/Lifecycle.md`.
    static func lifecycle() {
        // Goes to the background, saves its state to the file given on the command line in a
        // background task, is suspended once nothing keeps it running, and comes back to the
        // foreground: every UIApplication-style event is printed as it happens.
        guard CommandLine.arguments.count == 2 else {
            print("usage: save-on-background STATE-FILE")
            exit(1)
        }
        let stateFile = CommandLine.arguments[1]
        let app = Application(configuration: ApplicationConfiguration(suspensionGracePeriod: 1))   // iOS timing, faster suspension
        app.addObserver(queue: .main) { event in
            print("event:", event)
            if event == .didBecomeActive { exit(0) }  // back in the foreground: done
        }
        app.addSuspensionHook { _ in print("suspending: the app releases what it holds") }

        app.enterBackground()                        // willResignActive, didEnterBackground
        let task = app.beginBackgroundTask(name: "save state") {
            print("background time is running out")  // end the task now, or it is ended for you
        }
        DispatchQueue.global().async {
            try? "position 42.0\n".write(toFile: stateFile, atomically: true, encoding: .utf8)
            print("saved \(stateFile) with \(Int(app.backgroundTimeRemaining)) s of background time left")
            app.endBackgroundTask(task)              // nothing keeps the app running now: suspended 1 s later
        }
        DispatchQueue.main.asyncAfter(deadline: .now() + 3) {
            print("state:", app.applicationState)   // suspended
            app.enterForeground()                    // didResume, willEnterForeground, didBecomeActive
        }
        dispatchMain()                               // handlers (queue .main) run here
    }

    /// The example of `Sources/NowPlaying/NowPlaying.docc/NowPlaying.md`.
    static func nowPlaying() throws {
        // `remote-demo FILE…` plays the files as the now-playing app and prints its now-playing info;
        // `remote-demo --send COMMAND` (pause, play, nextTrack, skipForward, …), run in another
        // terminal, sends that remote command to it, as a headset button or the lock screen would.
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.count == 2, arguments[0] == "--send" {
            guard let kind = RemoteCommandKind(rawValue: arguments[1]) else {
                print("commands:", RemoteCommandKind.allCases.map(\.rawValue).joined(separator: ", "))
                exit(1)
            }
            Task {
                let result = await RemoteCommandCenter.send(RemoteCommandEvent(command: kind), via: .shared, timeout: 2)
                print(result.status, result.reason ?? "")   // the now-playing app's handlers answered
                exit(result.status == .success ? 0 : 1)
            }
            dispatchMain()
        }
        guard !arguments.isEmpty else {
            print("usage: remote-demo FILE… | remote-demo --send COMMAND")
            exit(1)
        }
        try AudioSession.shared.setCategory(.playback)   // not mixable: playing makes this the now-playing app
        let player = QueuePlayer(items: arguments.map { PlayerItem(path: $0) })
        let info = NowPlayingBinding(player: player)       // writes NowPlayingInfoCenter.default on transitions
        let remote = RemoteCommandBinding(player: player)  // play, pause, toggle, stop, next, previous, seek, skip ±15 s
        RemoteCommandCenter.shared.receiveCommands(for: .shared)   // handlers run on the main queue
        NowPlayingInfoCenter.default.addObserver(queue: .main) { event in
            guard case .infoChanged(let now?) = event else { return }
            let elapsed = NowPlayingInfoCenter.default.elapsed() ?? 0   // extrapolated: never written on a timer
            print("\(now.title ?? "?") — \(now.artist ?? "unknown artist")",
                  String(format: "%.1f / %.1f s, rate %.0f", elapsed, now.playbackDuration ?? 0, now.playbackRate ?? 1))
        }
        player.addObserver(queue: .main) { event in
            if case .currentItemChanged(nil) = event {     // the queue is done
                info.unbind()
                remote.unbind()
                exit(0)
            }
        }
        player.play()
        dispatchMain()
    }
}
