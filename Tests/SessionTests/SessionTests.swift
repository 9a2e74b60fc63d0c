import AudioEngine
import BacklineTestSupport
import Foundation
import Lifecycle
import NowPlaying
import Player
import Session
import Synchronization
import Testing
import Locking

/// The `session-probe` executable built next to this test bundle.
let probe: String = {
    let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let candidate = dir.appendingPathComponent("session-probe").path
    return FileManager.default.isExecutableFile(atPath: candidate)
        ? candidate : Harness.packageRoot.appendingPathComponent(".build/debug/session-probe").path
}()

/// A session-probe process and its output lines.
struct Probe {
    let process: SpawnedProcess

    init(registry: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process = try SpawnedProcess(probe, ["--registry", registry] + arguments, environment: environment)
        guard waitFor("ready") else { throw HarnessError("probe did not start: \(process.stdout) \(process.stderr)") }
    }

    var lines: [String] { process.stdout.split(separator: "\n").map(String.init) }

    /// Waits until a line containing `text` appears.
    func waitFor(_ text: String, timeout: Double = 5) -> Bool {
        eventually(timeout: timeout) { lines.contains { $0.contains(text) } }
    }

    func stop() {
        process.signal(SIGKILL)
        _ = try? process.wait(timeout: 5)
    }
}


/// Collects a session's events.
final class SessionLog: Sendable {
    let events = Lock<[SessionEvent]>([])
    init(_ session: AudioSession) {
        session.addObserver(queue: DispatchQueue(label: "test.session")) { [self] e in events.withLock { $0.append(e) } }
    }
    var all: [SessionEvent] { events.withLock { $0 } }
    func wait(timeout: Double = 5, _ predicate: @escaping (SessionEvent) -> Bool) -> Bool {
        eventually(timeout: timeout) { all.contains(where: predicate) }
    }
}

@Suite("AudioSession: categories, options, activation rules")
struct SessionRuleTests {
    @Test("option validity by category; options reset on category change; ambient always mixes")
    func options() throws {
        let s = AudioSession(registryDirectory: try Harness.makeTemporaryDirectory().path)
        #expect(s.category == .soloAmbient && s.categoryOptions.isEmpty && s.mode == .default)
        #expect(throws: AudioSessionError.self) { try s.setCategory(.soloAmbient, options: .mixWithOthers) }
        #expect(throws: AudioSessionError.self) { try s.setCategory(.ambient, options: .duckOthers) }
        do {
            try s.setCategory(.ambient, options: .interruptSpokenAudioAndMixWithOthers)
            Issue.record("ambient accepted interruptSpokenAudioAndMixWithOthers")
        } catch {
            #expect(error.code == .incompatibleCategory && error.message.contains("ambient"))
        }
        try s.setCategory(.ambient)
        #expect(s.categoryOptions == .mixWithOthers)
        try s.setCategory(.playback, options: .duckOthers)
        #expect(s.categoryOptions == [.duckOthers, .mixWithOthers], "duckOthers implies mixWithOthers")
        try s.setCategory(.playback)
        #expect(s.categoryOptions.isEmpty, "options do not survive a category change")
        try s.setCategory(.playback, mode: .spokenAudio, options: .interruptSpokenAudioAndMixWithOthers)
        #expect(s.categoryOptions.contains(.mixWithOthers) && s.mode == .spokenAudio)
    }

    @Test("deactivating with a playing player stops it, deactivates, and reports isBusy (as iOS); paused, no error")
    func busy() throws {
        let s = AudioSession(registryDirectory: try Harness.makeTemporaryDirectory().path)
        try s.setCategory(.playback)
        let tone = try Fixtures.tone("session-busy", seconds: 5, frequency: 440)
        let player = QueuePlayer(items: [PlayerItem(path: tone.path)],
                                 configuration: EngineConfiguration(output: OutputSettings(device: "null", realtime: false)),
                                 session: s)
        let rates = Lock<[String]>([])
        let token = player.addObserver(queue: DispatchQueue(label: "busy")) { e in
            if case .rateChanged(let r, let reason) = e { rates.withLock { $0.append("\(r) \(reason)") } }
        }
        defer { player.removeObserver(token) }
        player.actionAtItemEnd = .none
        player.play()
        #expect(s.isActive, "players activate their session on play")
        do {
            try s.setActive(false)
            Issue.record("deactivated with running I/O and no error")
        } catch {
            #expect(error.code == .isBusy && error.message.contains("running I/O"))
        }
        #expect(!s.isActive, "deactivated all the same")
        #expect(player.rate == 0 && player.timeControlStatus == .paused, "the running player was stopped")
        #expect(eventually(timeout: 2) { rates.withLock { $0 } == ["1.0 setRateCalled", "0.0 audioSessionDeactivated"] },
                "\(rates.withLock { $0 })")
        player.play()
        #expect(s.isActive)
        player.pause()
        try s.setActive(false)
        #expect(!s.isActive)
    }
}

@Suite("AudioSession across processes", .serialized, Harness.audioTools)
struct CrossProcessTests {
    @Test("playback interrupts another process's playback; notify ends it with shouldResume and it resumes")
    func interruptAndResume() throws {
        try PulseNullSink.exclusive { sink in
            let dir = try Harness.makeTemporaryDirectory().path
            let tone = try Fixtures.tone("session-long", seconds: 30, frequency: 440)
            let other = try Probe(registry: dir, ["--category", "playback", "--play", tone.path, "--device", sink.alsaDevice],
                                  environment: sink.environment)
            defer { other.stop() }
            #expect(other.waitFor("player rate 1 setRateCalled"))
            let me = AudioSession(registryDirectory: dir)
            try me.setCategory(.playback)
            try me.setActive(true)
            #expect(other.waitFor("session interruptionBegan"), "\(other.lines)")
            #expect(other.waitFor("player rate 0 audioSessionInterrupted"), "\(other.lines)")
            try me.setActive(false, options: .notifyOthersOnDeactivation)
            #expect(other.waitFor("session interruptionEnded shouldResume=true"), "\(other.lines)")
            #expect(eventually(timeout: 5) { other.lines.filter { $0 == "player rate 1 setRateCalled" }.count == 2 },
                    "the interrupted player resumed: \(other.lines)")
        }
    }

    @Test("an interruption ending with shouldResume leaves the player paused (the app resumes), unless it opted in to resume; a pause during the interruption is the user's and holds")
    func resumeRules() throws {
        let tone = try Fixtures.tone("session-resume", seconds: 30, frequency: 440)
        for (optIn, pauseMeanwhile) in [(false, false), (true, false), (true, true)] {
            let dir = try Harness.makeTemporaryDirectory().path
            let session = AudioSession(registryDirectory: dir)
            try session.setCategory(.playback)
            let player = QueuePlayer(items: [PlayerItem(path: tone.path)],
                                     configuration: EngineConfiguration(output: OutputSettings(device: "null", realtime: false)),
                                     session: session)
            defer { player.engine.shutdown() }
            #expect(player.resumesAfterInterruption == false, "AVPlayer's default: it pauses, the app resumes")
            player.resumesAfterInterruption = optIn
            let log = SessionLog(session)
            player.play()
            let interrupter = try Probe(registry: dir, ["--category", "playback"])
            #expect(log.wait { if case .interruptionBegan = $0 { true } else { false } }, "\(log.all)")
            #expect(eventually { player.rate == 0 }, "interrupted: paused")
            if pauseMeanwhile { player.pause() }
            interrupter.stop()  // a peer gone ends the interruption with shouldResume
            #expect(log.wait { $0 == .interruptionEnded(shouldResume: true) }, "\(log.all)")
            let resumes = optIn && !pauseMeanwhile
            if resumes {
                #expect(eventually(timeout: 3) { player.rate == 1 }, "opted in: resumed")
            } else {
                usleep(500_000)
                #expect(player.rate == 0, "opt-in \(optIn), paused meanwhile \(pauseMeanwhile): stays paused")
            }
        }
    }

    @Test("remote commands from another process run on the receiver's main thread (assumeIsolated holds); the sender gets the handlers' status")
    func remoteCommandsAcrossProcesses() async throws {
        let dir = try Harness.makeTemporaryDirectory().path
        let tone = try Fixtures.tone("session-remote", seconds: 30, frequency: 440)
        let app = try Probe(registry: dir, ["--category", "playback", "--play", tone.path, "--device", "null", "--commands"])
        defer { app.stop() }
        #expect(app.waitFor("player rate 1 setRateCalled"))
        let remote = AudioSession(registryDirectory: dir)  // a controller in this process
        let paused = await RemoteCommandCenter.send(RemoteCommandEvent(command: .pause), via: remote, timeout: 5)
        #expect(paused == RemoteCommandResult(.success), "\(paused)")
        #expect(app.waitFor("handler pause main=true"), "\(app.lines) \(app.process.stderr)")
        #expect(app.waitFor("player rate 0 setRateCalled"))
        let next = await RemoteCommandCenter.send(RemoteCommandEvent(command: .nextTrack), via: remote, timeout: 5)
        #expect(next == RemoteCommandResult(.noSuchContent, "nextTrack: no such content"), "\(next)")
        let stop = await RemoteCommandCenter.send(RemoteCommandEvent(command: .stop), via: remote, timeout: 5)
        #expect(stop == RemoteCommandResult(.commandFailed, "stop has no handler"), "\(stop)")
        #expect(!app.lines.contains { $0.contains("main=false") }, "\(app.lines)")
        app.stop()
        let gone = await RemoteCommandCenter.send(RemoteCommandEvent(command: .pause), via: remote, timeout: 1)
        #expect(gone.status == .commandFailed, "the now-playing app is gone: \(gone)")
    }

    @Test("a remote command wakes a suspended app before its handler runs")
    func remoteCommandWakes() throws {
        let dir = try Harness.makeTemporaryDirectory().path
        let session = AudioSession(registryDirectory: dir)
        try session.setCategory(.playback)
        let app = Application(configuration: ApplicationConfiguration(suspensionGracePeriod: 0.2), handlerQueue: DispatchQueue(label: "t.app"))
        let center = RemoteCommandCenter(handlerQueue: DispatchQueue(label: "t.remote"), application: app)
        let states = Lock<[ApplicationState]>([])
        center.playCommand.addTarget { _ in
            states.withLock { $0.append(app.applicationState) }
            return .success
        }
        center.receiveCommands(for: session)
        let tone = try Fixtures.tone("session-wake", seconds: 1, frequency: 440)
        let player = QueuePlayer(items: [PlayerItem(path: tone.path)],
                                 configuration: EngineConfiguration(output: OutputSettings(device: "null", realtime: false)),
                                 session: session, application: app)
        defer { player.engine.shutdown() }
        player.play()
        player.pause()  // now the now-playing app, paused
        #expect(session.isNowPlayingApp)
        app.enterBackground()
        #expect(eventually(timeout: 3) { app.applicationState == .suspended })
        let remote = AudioSession(registryDirectory: dir)
        #expect(RemoteCommandCenter.send(RemoteCommandEvent(command: .play), via: remote) == session.id)
        #expect(eventually(timeout: 2) { states.withLock { $0 } == [.background] }, "\(states.withLock { $0 })")
    }

    @Test("mixable sessions are never interrupted; soloAmbient interrupts; no notify: ended without shouldResume")
    func mixAndSolo() throws {
        let dir = try Harness.makeTemporaryDirectory().path
        let other = try Probe(registry: dir, ["--category", "playback"])
        defer { other.stop() }
        let ambient = AudioSession(registryDirectory: dir)
        try ambient.setCategory(.ambient)
        let ambientLog = SessionLog(ambient)
        try ambient.setActive(true)
        let mixing = AudioSession(registryDirectory: dir)
        try mixing.setCategory(.playback, options: .mixWithOthers)
        let mixingLog = SessionLog(mixing)
        try mixing.setActive(true)
        Thread.sleep(forTimeInterval: 0.4)
        #expect(!other.lines.contains { $0.contains("interruptionBegan") }, "mixable activation interrupted: \(other.lines)")
        let solo = AudioSession(registryDirectory: dir)
        try solo.setActive(true)  // the default category, soloAmbient
        #expect(other.waitFor("session interruptionBegan"))
        try solo.setActive(false)
        #expect(other.waitFor("session interruptionEnded shouldResume=false"))
        // The two mixable sessions were active throughout: neither was interrupted (logged
        // from before their activation, so the check can fail).
        Thread.sleep(forTimeInterval: 0.3)
        for log in [ambientLog, mixingLog] {
            #expect(!log.all.contains { if case .interruptionBegan = $0 { true } else { false } }, "\(log.all)")
        }
        #expect(ambient.isActive && mixing.isActive, "the mixable ones were left alone")
    }

    @Test("duckOthers ducks another process while active and restores it after")
    func duck() throws {
        let dir = try Harness.makeTemporaryDirectory().path
        let other = try Probe(registry: dir, ["--category", "playback"])
        defer { other.stop() }
        let ducker = AudioSession(registryDirectory: dir)
        try ducker.setCategory(.playback, options: .duckOthers)
        try ducker.setActive(true)
        #expect(other.waitFor("session ducking true"), "\(other.lines)")
        #expect(!other.lines.contains { $0.contains("interruptionBegan") })
        try ducker.setActive(false)
        #expect(other.waitFor("session ducking false"), "\(other.lines)")
    }

    @Test("an interrupter or ducker killed with SIGKILL leaves nobody interrupted or ducked")
    func crashedPeer() throws {
        let dir = try Harness.makeTemporaryDirectory().path
        let me = AudioSession(registryDirectory: dir)
        try me.setCategory(.playback)
        try me.setActive(true)
        let log = SessionLog(me)
        let interrupter = try Probe(registry: dir, ["--category", "playback"])
        #expect(log.wait { if case .interruptionBegan = $0 { true } else { false } })
        #expect(!me.isActive)
        interrupter.stop()  // kill -9
        #expect(log.wait(timeout: 2) { $0 == .interruptionEnded(shouldResume: true) }, "\(log.all)")

        try me.setActive(true)
        let ducker = try Probe(registry: dir, ["--category", "playback", "--options", "duck"])
        #expect(log.wait { $0 == .duckingChanged(true) } && me.isDucked)
        ducker.stop()
        #expect(log.wait(timeout: 2) { $0 == .duckingChanged(false) } && !me.isDucked, "\(log.all)")
    }
}

@Suite("Route change: the device disappears")
struct RouteChangeTests {
    @Test("the sound server goes away while playing: the player pauses (oldDeviceUnavailable); when it returns: media services reset, nothing auto-plays",
          .enabled(if: Harness.has("pulseaudio"), "needs pulseaudio"))
    func deviceLost() throws {
        let server = try PulseNullSink()  // a private server, killed below; the shared one is untouched
        let dir = try Harness.makeTemporaryDirectory().path
        let tone = try Fixtures.tone("route-long", seconds: 30, frequency: 440)
        let p = try Probe(registry: dir, ["--category", "playback", "--play", tone.path, "--device", server.alsaDevice],
                          environment: server.environment)
        defer { p.stop() }
        #expect(p.waitFor("player rate 1 setRateCalled"))
        Thread.sleep(forTimeInterval: 0.5)
        server.stop()
        #expect(p.waitFor("player rate 0 oldDeviceUnavailable", timeout: 10), "\(p.lines) \(p.process.stderr)")
        #expect(p.waitFor("session routeChanged oldDeviceUnavailable"), "\(p.lines)")
        Thread.sleep(forTimeInterval: 0.5)
        #expect(p.lines.filter { $0.hasPrefix("player rate 1") }.count == 1, "nothing plays again by itself")
        #expect(!p.lines.contains("session mediaServicesWereReset"), "the server is still down")

        // The sound server comes back: media services were reset, a device is available again,
        // and still nothing plays by itself.
        try server.restart()
        defer { server.stop() }
        #expect(p.waitFor("session mediaServicesWereReset", timeout: 5), "\(p.lines)")
        #expect(p.waitFor("session routeChanged newDeviceAvailable"), "\(p.lines)")
        Thread.sleep(forTimeInterval: 0.3)
        #expect(p.lines.filter { $0.hasPrefix("player rate 1") }.count == 1, "nothing plays again by itself")
    }
}

@Suite("Silent switch and screen lock, heard", .serialized, Harness.audioTools)
struct SilenceTests {
    @Test("soloAmbient is silenced by the switch and the lock; playback ignores both")
    func silencing() throws {
        try PulseNullSink.exclusive { sink in
            let dir = try Harness.makeTemporaryDirectory().path
            let tone = try Fixtures.tone("session-silence", seconds: 3, frequency: 440)
            func run(_ category: SessionCategory) throws -> [Int16] {
                let s = AudioSession(registryDirectory: dir)
                try s.setCategory(category)
                let player = QueuePlayer(items: [PlayerItem(path: tone.path)],
                                         configuration: EngineConfiguration(output: OutputSettings(
                                             device: sink.alsaDevice, bufferMillis: 100, realtime: false)),
                                         session: s)
                let (_, rec) = try sink.record { () -> Void in
                    player.play()
                    // The timeline starts when the first sound is heard (`.playing`), as the
                    // levels are read from the first sound: on a loaded machine the device may
                    // take a while to open.
                    #expect(eventually(timeout: 5) { player.timeControlStatus == .playing })
                    Thread.sleep(forTimeInterval: 0.8)
                    s.silentSwitch = true
                    Thread.sleep(forTimeInterval: 0.8)
                    s.silentSwitch = false
                    s.screenLocked = true
                    Thread.sleep(forTimeInterval: 0.8)
                    s.screenLocked = false
                    Thread.sleep(forTimeInterval: 0.4)
                }
                player.pause()
                return rec
            }
            /// RMS in 0.2 s windows at the given seconds after the first sound.
            func levels(_ rec: [Int16], at times: [Double]) throws -> [Double] {
                let first = try #require(PCM.firstNonSilent(rec, threshold: 64))
                return times.map { t in
                    let i = first + Int(t * 44100) * 2
                    return PCM.rms(rec[min(rec.count, i)..<min(rec.count, i + 8820)])
                }
            }
            let solo = try levels(try run(.soloAmbient), at: [0.3, 1.1, 1.9, 2.5])
            #expect(solo[0] > 0.1 && solo[1] < 0.001 && solo[2] < 0.001 && solo[3] > 0.1, "soloAmbient levels \(solo)")
            let playback = try levels(try run(.playback), at: [0.3, 1.1, 1.9, 2.5])
            #expect(playback.allSatisfy { $0 > 0.1 }, "playback levels \(playback)")
        }
    }
}
