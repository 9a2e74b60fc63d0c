import AudioEngine
import BacklineTestSupport
import Foundation
import Lifecycle
import Player
import Session
import Synchronization
import Testing
import Locking

/// Collects application events with their times.
final class AppLog: Sendable {
    let events = Lock<[(time: Double, event: ApplicationEvent)]>([])
    let start = Date()
    init(_ app: Application) {
        app.addObserver(queue: DispatchQueue(label: "test.app")) { [self] e in
            let t = Date().timeIntervalSince(start)
            events.withLock { $0.append((t, e)) }
        }
    }
    var all: [ApplicationEvent] { events.withLock { $0.map(\.event) } }
    func time(of predicate: (ApplicationEvent) -> Bool) -> Double? { events.withLock { $0.first { predicate($0.event) }?.time } }
}

func isSuspend(_ e: ApplicationEvent) -> Bool { if case .didSuspend = e { true } else { false } }

@Suite("Application life cycle: states, background tasks, suspension")
struct LifecycleTests {
    @Test("transitions post Apple's notifications in order; backgroundTimeRemaining is huge in the foreground")
    func transitions() throws {
        let app = Application(configuration: ApplicationConfiguration(backgroundTaskBudget: 30, suspensionGracePeriod: 60))
        let log = AppLog(app)
        #expect(app.applicationState == .active)
        #expect(app.backgroundTimeRemaining == .greatestFiniteMagnitude)
        app.resignActive()
        app.becomeActive()
        app.enterBackground()
        #expect(app.applicationState == .background)
        let remaining = app.backgroundTimeRemaining
        #expect(remaining > 29 && remaining <= 30)
        app.enterForeground()
        app.terminate()
        #expect(eventually(timeout: 2) { log.all.count == 7 })
        #expect(log.all == [.willResignActive, .didBecomeActive, .willResignActive, .didEnterBackground,
                            .willEnterForeground, .didBecomeActive, .willTerminate])
    }

    @Test("background task: expiration handler shortly before the budget, on the main queue; a leaked task is reported and the app suspended anyway")
    func taskBudget() throws {
        let app = Application(configuration: ApplicationConfiguration(backgroundTaskBudget: 1.0, expirationWarning: 0.3,
                                                                      suspensionGracePeriod: 0.2))
        let log = AppLog(app)
        let hooks = Lock(0)
        app.addSuspensionHook { _ in hooks.withLock { $0 += 1 } }
        let expiredAt = Lock<Double?>(nil)
        app.enterBackground()
        let entered = Date().timeIntervalSince(log.start)
        let ended = app.beginBackgroundTask(name: "well-behaved") {
            dispatchPrecondition(condition: .onQueue(.main))
            MainActor.assumeIsolated { expiredAt.withLock { $0 = Date().timeIntervalSince(log.start) } }
        }
        #expect(ended != .invalid)
        let leaked = app.beginBackgroundTask(name: "leaky")
        #expect(eventually(timeout: 3) { expiredAt.withLock { $0 } != nil })
        let at = try #require(expiredAt.withLock { $0 }) - entered
        #expect(at > 0.6 && at < 0.9, "expiration handler ran \(at) s after entering the background (budget 1 s, warning 0.3 s)")
        app.endBackgroundTask(ended)
        _ = leaked  // never ended
        #expect(eventually(timeout: 3) { app.applicationState == .suspended })
        #expect(log.all.contains(.backgroundTaskLeaked(name: "leaky")))
        #expect(!log.all.contains(.backgroundTaskLeaked(name: "well-behaved")))
        let suspendedAt = try #require(log.time(of: isSuspend)) - entered
        #expect(suspendedAt >= 1.0, "suspended \(suspendedAt) s in, before the budget ran out")
        #expect(hooks.withLock { $0 } == 1)
        let late = app.beginBackgroundTask(name: "late")
        #expect(late != .invalid && app.applicationState == .background, "a task wakes a suspended app, with a new budget")
        app.endBackgroundTask(late)
    }

    @Test("no task, nothing playing: suspended after the grace period; a task holds it off; the hook fires once")
    func graceAndTask() throws {
        let app = Application(configuration: ApplicationConfiguration(backgroundTaskBudget: 10, suspensionGracePeriod: 0.3))
        let hooks = Lock(0)
        app.addSuspensionHook { _ in hooks.withLock { $0 += 1 } }
        let task = app.beginBackgroundTask(name: "work")
        app.enterBackground()
        Thread.sleep(forTimeInterval: 0.8)
        #expect(app.applicationState == .background, "an open task keeps the app running")
        app.endBackgroundTask(task)
        let t0 = Date()
        #expect(eventually(timeout: 2) { app.applicationState == .suspended })
        #expect(Date().timeIntervalSince(t0) >= 0.25)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(hooks.withLock { $0 } == 1, "one hook call per suspension")
        app.resume(reason: "remote command")
        #expect(app.applicationState == .background)
        #expect(eventually(timeout: 2) { app.applicationState == .suspended })
        #expect(hooks.withLock { $0 } == 2)
        app.enterForeground()
        #expect(app.applicationState == .active)
    }
}

@Suite("Background audio keeps the app running (PulseAudio null sink)", .serialized, Harness.audioTools)
struct BackgroundAudioTests {
    @Test("playback keeps playing in the background; when the queue ends the app is suspended once, after the grace period")
    func playbackInBackground() throws {
        try PulseNullSink.exclusive { sink in
            let dir = try Harness.makeTemporaryDirectory().path
            let tone = try Fixtures.tone("bg-tone", seconds: 1.5, frequency: 440)
            let session = AudioSession(registryDirectory: dir)
            try session.setCategory(.playback)
            let app = Application(configuration: ApplicationConfiguration(suspensionGracePeriod: 0.4))
            let log = AppLog(app)
            let hooks = Lock<[Double]>([])
            app.addSuspensionHook { _ in hooks.withLock { $0.append(Date().timeIntervalSince(log.start)) } }
            let player = QueuePlayer(items: [PlayerItem(path: tone.path)],
                                     configuration: EngineConfiguration(output: OutputSettings(device: sink.alsaDevice, bufferMillis: 200, realtime: false)),
                                     session: session, application: app)
            let ended = Lock<Double?>(nil)
            player.addObserver(queue: DispatchQueue(label: "t")) { e in
                if case .currentItemChanged(nil) = e { ended.withLock { $0 = Date().timeIntervalSince(log.start) } }
            }
            let (_, rec) = try sink.record { () -> Void in
                player.play()
                Thread.sleep(forTimeInterval: 0.3)
                app.enterBackground()
                #expect(eventually(timeout: 4) { app.applicationState == .suspended })
            }
            let endTime = try #require(ended.withLock { $0 })
            let hookTimes = hooks.withLock { $0 }
            #expect(hookTimes.count == 1)
            if let h = hookTimes.first { #expect(h - endTime >= 0.35 && h - endTime < 0.8, "hook \(h - endTime) s after the end") }
            let sound = rec.filter { abs(Int($0)) > 64 }.count / 2
            #expect(abs(Double(sound) / 44100 - 1.5) < 0.1, "the whole item was heard in the background")
            Thread.sleep(forTimeInterval: 0.6)
            #expect(hooks.withLock { $0.count } == 1, "exactly once")
        }
    }

    @Test("soloAmbient stops in the background (appBackgrounded) and the app is suspended")
    func soloAmbientInBackground() throws {
        let dir = try Harness.makeTemporaryDirectory().path
        let tone = try Fixtures.tone("bg-solo", seconds: 5, frequency: 440)
        let session = AudioSession(registryDirectory: dir)
        let app = Application(configuration: ApplicationConfiguration(suspensionGracePeriod: 0.3))
        let player = QueuePlayer(items: [PlayerItem(path: tone.path)],
                                 configuration: EngineConfiguration(output: OutputSettings(device: "null", realtime: false)),
                                 session: session, application: app)
        player.actionAtItemEnd = .none
        let reasons = Lock<[RateChangeReason]>([])
        player.addObserver(queue: DispatchQueue(label: "t")) { e in
            if case .rateChanged(0, let why) = e { reasons.withLock { $0.append(why) } }
        }
        player.play()
        app.enterBackground()
        #expect(eventually(timeout: 2) { reasons.withLock { $0 } == [.appBackgrounded] })
        #expect(player.rate == 0)
        #expect(eventually(timeout: 2) { app.applicationState == .suspended })
    }
    @Test("a suspended app is woken (didResume, background) by playing and by an interruption's end; playing keeps it awake")
    func wokenFromSuspension() throws {
        try PulseNullSink.exclusive { sink in
            let dir = try Harness.makeTemporaryDirectory().path
            let tone = try Fixtures.tone("bg-wake", seconds: 10, frequency: 440)
            let session = AudioSession(registryDirectory: dir)
            try session.setCategory(.playback)
            let app = Application(configuration: ApplicationConfiguration(suspensionGracePeriod: 0.3))
            let log = AppLog(app)
            let player = QueuePlayer(items: [PlayerItem(path: tone.path)],
                                     configuration: EngineConfiguration(output: OutputSettings(device: sink.alsaDevice, bufferMillis: 200, realtime: false)),
                                     session: session, application: app)
            try session.setActive(true)
            app.enterBackground()
            #expect(eventually(timeout: 3) { app.applicationState == .suspended }, "paused in the background: suspended")
            let resumes = { log.all.filter { $0 == .didResume }.count }
            let (_, rec) = try sink.record { () -> Void in
                player.play()
                #expect(app.applicationState == .background, "playing wakes the app at once")
                Thread.sleep(forTimeInterval: 1.0)
                #expect(app.applicationState == .background, "playing keeps it awake")
                player.pause()
            }
            #expect(resumes() == 1)
            let sound = Double(rec.filter { abs(Int($0)) > 64 }.count / 2) / 44100
            #expect(sound > 0.7, "the woken app was heard: \(sound) s")
            #expect(eventually(timeout: 3) { app.applicationState == .suspended }, "paused again: suspended again")

            // Another app interrupts ours (already suspended) and ends with notifyOthersOnDeactivation.
            let other = AudioSession(registryDirectory: dir)
            try other.setCategory(.playback)
            try other.setActive(true)
            #expect(eventually(timeout: 2) { !session.isActive }, "interrupted")
            try other.setActive(false, options: .notifyOthersOnDeactivation)
            #expect(eventually(timeout: 2) { app.applicationState == .background && resumes() == 2 },
                    "the interruption's end wakes the app: \(app.applicationState), \(log.all)")
            #expect(player.rate == 0, "the player does not resume by itself (the app decides)")
            #expect(eventually(timeout: 3) { app.applicationState == .suspended }, "nothing plays: suspended again")
        }
    }
    @Test("keep-alive: below the minimum is refused; the handler runs before each timeout on the handler queue, waking the suspended app; cleared, it stops")
    func keepAlive() throws {
        let handlers = DispatchQueue(label: "test.handlers")
        let app = Application(configuration: ApplicationConfiguration(suspensionGracePeriod: 0.2, minimumKeepAliveTimeout: 1,
                                                                       keepAliveHandlerTime: 0.5), handlerQueue: handlers)
        let log = AppLog(app)
        let calls = Lock<[(time: Double, state: ApplicationState)]>([])
        #expect(!app.setKeepAliveTimeout(0.5) { Issue.record("a refused handler ran") }, "below the minimum timeout")
        #expect(app.setKeepAliveTimeout(1.0) {
            dispatchPrecondition(condition: .onQueue(handlers))
            calls.withLock { $0.append((Date().timeIntervalSince(log.start), app.applicationState)) }
        })
        app.enterBackground()
        #expect(eventually(timeout: 2) { app.applicationState == .suspended })
        Thread.sleep(forTimeInterval: 3.3)
        let seen = calls.withLock { $0 }
        #expect(seen.count >= 3, "\(seen)")
        #expect(seen.allSatisfy { $0.state == .background }, "the app runs (in the background) for its handler: \(seen)")
        let gaps = zip(seen.dropFirst(), seen).map { $0.time - $1.time }
        #expect((seen.first?.time ?? 9) <= 1.05 && gaps.allSatisfy { $0 <= 1.05 }, "at least once per timeout: \(seen.map(\.time))")
        #expect(log.all.filter { $0 == .didResume }.count >= 2, "woken from suspension for it: \(log.all)")
        #expect(eventually(timeout: 2) { app.applicationState == .suspended }, "suspended again after the handler")
        app.clearKeepAliveTimeout()
        let before = calls.withLock { $0.count }
        Thread.sleep(forTimeInterval: 1.5)
        #expect(calls.withLock { $0.count } == before, "cleared: no more calls")
        #expect(app.applicationState == .suspended)
    }
}
