import AudioEngine
import BacklineTestSupport
import Foundation
import Lifecycle
import NowPlaying
import Player
import Session
import Testing

/// A player controller as an iOS developer writes one: main-actor state, the async API, and
/// handlers that rely on Apple's threading promises (observers on the main queue, remote-command
/// handlers on the main thread). It compiles in Swift 6 mode with no warnings and no
/// `@unchecked`, and `IOSStyleClientTests` runs it.
@MainActor
final class PlayerController {
    let session: AudioSession
    let player: QueuePlayer
    let commands: RemoteCommandCenter
    private(set) var nowPlaying = "—"
    private(set) var elapsed: Double = 0
    private(set) var interrupted = false
    private(set) var log: [String] = []
    private var timeTask: Task<Void, Never>?

    init(files: [URL], device: String, registry: String) {
        session = AudioSession(registryDirectory: registry)
        player = QueuePlayer(items: files.map { PlayerItem(url: $0) },
                             configuration: EngineConfiguration(output: OutputSettings(device: device, realtime: false)),
                             session: session)
        commands = RemoteCommandCenter()  // handlers on the main queue, as MPRemoteCommandCenter's
        player.addObserver { [weak self] event in self?.handle(event) }
        session.addObserver { [weak self] event in self?.handle(event) }
        commands.pauseCommand.addTarget { [weak self] _ in
            MainActor.assumeIsolated {
                guard let self else { return .commandFailed }
                self.log.append("pause command")
                self.player.pause()
                return .success
            }
        }
        commands.playCommand.addTarget { [weak self] _ in
            MainActor.assumeIsolated {
                guard let self, self.player.currentItem != nil else { return .noActionableNowPlayingItem }
                self.log.append("play command")
                self.player.play()
                return .success
            }
        }
        commands.receiveCommands(for: session)
    }

    func start() async throws {
        try session.setCategory(.playback)
        try await session.activate()
        nowPlaying = player.currentItem?.displayName ?? "—"  // events tell changes; the first item is there already
        player.play()
        let times = player.periodicTimes(forInterval: 0.25)
        timeTask = Task { [weak self] in
            for await t in times { self?.elapsed = t }
        }
    }

    func stop() {
        timeTask?.cancel()
        player.pause()
    }

    private func handle(_ event: PlayerEvent) {
        switch event {
        case .currentItemChanged(let item): nowPlaying = item?.displayName ?? "—"
        case .rateChanged(let rate, let reason): log.append("rate \(rate) \(reason)")
        default: break
        }
    }

    private func handle(_ event: SessionEvent) {
        switch event {
        case .interruptionBegan:
            interrupted = true
        case .interruptionEnded(let shouldResume):
            interrupted = false
            if shouldResume { player.play() }  // the app decides, as on iOS
        default:
            break
        }
    }
}

@Suite("An iOS-style client (main actor, async API) drives a real player", .serialized, Harness.audioTools)
struct IOSStyleClientTests {
    @MainActor
    @Test("remote commands from another app reach its main-actor handlers; it resumes after an interruption itself; the sink hears every sample once")
    func controller() async throws {
        let a = try Fixtures.tone("ios-a", seconds: 3, frequency: 440), b = try Fixtures.tone("ios-b", seconds: 2, frequency: 660)
        let registry = try Harness.makeTemporaryDirectory().path
        try await PulseNullSink.exclusive { sink in
            let recording = try sink.startRecording()
            let controller = PlayerController(files: [a, b], device: sink.alsaDevice, registry: registry)
            try await controller.start()
            #expect(try await until { controller.nowPlaying.hasPrefix("ios-a") && controller.elapsed > 0.2 }, "\(controller.nowPlaying) \(controller.elapsed)")

            // Another app (a controller with no player) sends commands to the now-playing app.
            let remote = AudioSession(registryDirectory: registry)
            let paused = await RemoteCommandCenter.send(RemoteCommandEvent(command: .pause), via: remote, timeout: 2)
            #expect(paused == RemoteCommandResult(.success))
            #expect(controller.player.rate == 0 && controller.log.contains("pause command"))
            try await Task.sleep(for: .milliseconds(300))
            let played = await RemoteCommandCenter.send(RemoteCommandEvent(command: .play), via: remote, timeout: 2)
            #expect(played == RemoteCommandResult(.success))

            // Another app interrupts, then ends with notifyOthersOnDeactivation: the controller resumes.
            try await Task.sleep(for: .milliseconds(300))
            try remote.setCategory(.playback)
            try await remote.activate()
            #expect(try await until { controller.interrupted && controller.player.rate == 0 })
            try await Task.sleep(for: .milliseconds(300))
            try await remote.deactivate(options: .notifyOthersOnDeactivation)
            #expect(try await until { !controller.interrupted && controller.player.rate == 1 })

            #expect(try await until(timeout: 10) { controller.nowPlaying == "—" }, "the queue played to its end")
            controller.stop()
            try await Task.sleep(for: .milliseconds(300))
            let heard = try recording.stop()
            let ref = try ReferenceDecoder.decodeS16(a) + ReferenceDecoder.decodeS16(b)
            try expectSameAudio(removingSilence(heard, minRun: 400), ref)
            #expect(controller.log.filter { $0.hasPrefix("rate") } == [
                "rate 1.0 setRateCalled", "rate 0.0 setRateCalled", "rate 1.0 setRateCalled",
                "rate 0.0 audioSessionInterrupted", "rate 1.0 setRateCalled", "rate 0.0 setRateCalled",  // (the last: stop())
            ], "\(controller.log)")
        }
    }

    /// Polls `condition` on the main actor until it holds or `timeout` passes.
    @MainActor
    private func until(timeout: Double = 5, _ condition: @MainActor () -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() > deadline { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }
}
