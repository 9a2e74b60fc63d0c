import AudioEngine
import BacklineTestSupport
import Foundation
import MediaCore
import NowPlaying
import Player
import Session
import Synchronization
import Testing
import Locking

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    let now = Lock(100.0)
    func advance(_ s: Double) { now.withLock { $0 += s } }
    var read: @Sendable () -> Double { { [self] in now.withLock { $0 } } }
}

let testSession: AudioSession = {
    let dir = (try? Harness.makeTemporaryDirectory().path) ?? NSTemporaryDirectory()
    return AudioSession(registryDirectory: dir + "/sessions")
}()

func makePlayer(_ paths: [String], device: String) -> QueuePlayer {
    QueuePlayer(items: paths.map { PlayerItem(path: $0) },
                configuration: EngineConfiguration(output: OutputSettings(device: device, bufferMillis: 200, realtime: false)),
                session: testSession)
}


@Suite("NowPlayingInfoCenter")
struct InfoCenterTests {
    @Test("extrapolation: elapsed + rate × (now − stamp), clamped to [0, duration]; absent rate is 1; rate 0 stands still")
    func extrapolation() {
        let clock = ManualClock()
        let center = NowPlayingInfoCenter(clock: clock.read)
        #expect(center.elapsed() == nil)
        var info = NowPlayingInfo()
        info.title = "t"
        info.playbackDuration = 10
        info.elapsedPlaybackTime = 2
        info.playbackRate = 1
        center.nowPlayingInfo = info
        clock.advance(3)
        #expect(center.elapsed() == 5)
        clock.advance(100)
        #expect(center.elapsed() == 10, "clamped to the duration")
        info.playbackRate = 0
        info.elapsedPlaybackTime = 4
        center.nowPlayingInfo = info
        clock.advance(50)
        #expect(center.elapsed() == 4, "paused: no drift")
        info.playbackRate = nil
        center.nowPlayingInfo = info
        clock.advance(1.5)
        #expect(center.elapsed() == 5.5, "absent rate means 1")
        info.playbackRate = 2
        info.elapsedPlaybackTime = 1
        center.nowPlayingInfo = info
        #expect(center.elapsed(at: clock.read() - 10) == 0, "clamped at 0")
        #expect(center.writeCount == 4)
        center.nowPlayingInfo = nil
        #expect(center.nowPlayingInfo == nil && center.elapsed() == nil)
        center.playbackState = .interrupted
        #expect(center.playbackState == .interrupted)
    }
}

@Suite("RemoteCommandCenter")
struct CommandCenterTests {
    @Test("handlers run on the main thread by default, whichever thread dispatches (sync, completion, async); a center's own queue otherwise")
    func handlerThread() async throws {
        let center = RemoteCommandCenter()
        let mainKey = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: mainKey, value: true)
        center.pauseCommand.addTarget { _ in
            // An iOS app's handler: main-actor code. Off the main queue this traps. (The main
            // queue, not the main thread: after `dispatchMain()` a pool thread may serve it.)
            MainActor.assumeIsolated { DispatchQueue.getSpecific(key: mainKey) == true ? .success : .commandFailed }
        }
        let fromThread = await withCheckedContinuation { (c: CheckedContinuation<RemoteCommandResult, Never>) in
            Thread.detachNewThread { c.resume(returning: center.dispatch(RemoteCommandEvent(command: .pause))) }
        }
        #expect(fromThread == RemoteCommandResult(.success))
        let awaited = await center.dispatch(RemoteCommandEvent(command: .pause))
        #expect(awaited == RemoteCommandResult(.success))
        let viaCompletion = await withCheckedContinuation { (c: CheckedContinuation<RemoteCommandResult, Never>) in
            center.dispatch(RemoteCommandEvent(command: .pause)) { c.resume(returning: $0) }
        }
        #expect(viaCompletion == RemoteCommandResult(.success))

        let queue = DispatchQueue(label: "test.handlers")
        let own = RemoteCommandCenter(handlerQueue: queue)
        // (Weak, as an app's handler should hold its center: a handler the center keeps that
        // keeps the center is a cycle, which LeakSanitizer reports.)
        own.playCommand.addTarget { [weak own] _ in
            dispatchPrecondition(condition: .onQueue(queue))
            // Dispatching from inside a handler (on the handler queue) runs in place, no deadlock.
            guard let own else { return .commandFailed }
            return own.dispatch(RemoteCommandEvent(command: .pause)).status == .commandFailed ? .success : .commandFailed
        }
        #expect(await own.dispatch(RemoteCommandEvent(command: .play)) == RemoteCommandResult(.success))
    }

    @Test("every command: no handler and disabled answer commandFailed with a reason; handlers' statuses come back; events carry their fields")
    func commands() {
        let center = RemoteCommandCenter()
        let seen = Lock<[RemoteCommandEvent]>([])
        for kind in RemoteCommandKind.allCases {
            let r = center.dispatch(RemoteCommandEvent(command: kind))
            #expect(r.status == .commandFailed && r.reason == "\(kind.rawValue) has no handler")
            let cmd = center.command(kind)
            let token = cmd.addTarget { e in
                seen.withLock { $0.append(e) }
                return .success
            }
            #expect(center.dispatch(RemoteCommandEvent(command: kind)).status == .success)
            cmd.isEnabled = false
            let d = center.dispatch(RemoteCommandEvent(command: kind))
            #expect(d.status == .commandFailed && d.reason == "\(kind.rawValue) is disabled")
            cmd.isEnabled = true
            cmd.removeTarget(token)
            #expect(!cmd.hasTargets)
        }
        #expect(seen.withLock { $0.map(\.command) } == RemoteCommandKind.allCases)
        // Each status comes back, with its reason.
        for status in [RemoteCommandHandlerStatus.success, .noSuchContent, .noActionableNowPlayingItem, .deviceNotFound, .commandFailed] {
            let t = center.nextTrackCommand.addTarget { _ in status }
            let r = center.dispatch(RemoteCommandEvent(command: .nextTrack))
            #expect(r.status == status)
            #expect((r.reason == nil) == (status == .success))
            center.nextTrackCommand.removeTarget(t)
        }
        // Several handlers: all run in order; the first non-success status is the answer.
        let order = Lock<[Int]>([])
        center.likeCommand.addTarget { _ in order.withLock { $0.append(1) }; return .success }
        center.likeCommand.addTarget { _ in order.withLock { $0.append(2) }; return .noSuchContent }
        center.likeCommand.addTarget { _ in order.withLock { $0.append(3) }; return .deviceNotFound }
        #expect(center.dispatch(RemoteCommandEvent(command: .like, payload: .feedback(isNegative: true))).status == .noSuchContent)
        #expect(order.withLock { $0 } == [1, 2, 3])
        center.likeCommand.removeTarget(nil)
        #expect(!center.likeCommand.hasTargets)

        // Payloads.
        let got = Lock<[RemoteCommandEvent.Payload]>([])
        for kind in [RemoteCommandKind.skipForward, .skipBackward, .changePlaybackPosition, .changePlaybackRate,
                     .seekForward, .changeRepeatMode, .changeShuffleMode] {
            center.command(kind).addTarget { e in got.withLock { $0.append(e.payload) }; return .success }
        }
        center.skipForwardCommand.preferredIntervals = [30, 10]
        _ = center.dispatch(RemoteCommandEvent(command: .skipForward))
        _ = center.dispatch(RemoteCommandEvent(command: .skipBackward, payload: .skip(interval: 5)))
        _ = center.dispatch(RemoteCommandEvent(command: .changePlaybackPosition, payload: .position(42.5)))
        _ = center.dispatch(RemoteCommandEvent(command: .changePlaybackRate, payload: .rate(1)))
        let badRate = center.dispatch(RemoteCommandEvent(command: .changePlaybackRate, payload: .rate(2)))
        #expect(badRate.status == .commandFailed && badRate.reason?.contains("not supported") == true)
        _ = center.dispatch(RemoteCommandEvent(command: .seekForward, payload: .seek(.beginSeeking)))
        _ = center.dispatch(RemoteCommandEvent(command: .changeRepeatMode, payload: .repeatMode(.all, preservesRepeatMode: true)))
        _ = center.dispatch(RemoteCommandEvent(command: .changeShuffleMode, payload: .shuffleMode(.items, preservesShuffleMode: false)))
        #expect(got.withLock { $0 } == [.skip(interval: 30), .skip(interval: 5), .position(42.5), .rate(1), .seek(.beginSeeking),
                                         .repeatMode(.all, preservesRepeatMode: true), .shuffleMode(.items, preservesShuffleMode: false)])
    }
}

@Suite("Bindings drive and describe a real QueuePlayer (PulseAudio null sink)", .serialized, Harness.audioTools)
struct BindingTests {
    @Test("the info is written on transitions only (no per-tick writes in 10 s of playback), with tags, file names and queue index")
    func writesOnTransitions() throws {
        try PulseNullSink.exclusive { sink in
            let tagged = try #require(Fixtures.demoTracks.first)  // tagged: title, artist, album, artwork
            let w = try Fixtures.wav("np-untagged", seconds: 8.5, synth: ["sine", "500"], effects: ["gain", "-9"])
            let untagged = try Fixtures.mp3(from: w, name: "np-untagged")
            let player = makePlayer([untagged.path, tagged.path], device: sink.alsaDevice)
            let center = NowPlayingInfoCenter()
            let writes = Lock<[(Double, NowPlayingInfo?)]>([])
            let t0 = Date()
            center.addObserver(queue: DispatchQueue(label: "w")) { e in
                if case .infoChanged(let info) = e { writes.withLock { $0.append((Date().timeIntervalSince(t0), info)) } }
            }
            let binding = NowPlayingBinding(player: player, center: center)
            #expect(eventually { center.nowPlayingInfo?.title == "np-untagged.mp3" }, "untagged: the file name")
            player.play()
            Thread.sleep(forTimeInterval: 10)
            let all = writes.withLock { $0 }
            let steady = all.filter { $0.0 > 1.5 && $0.0 < 8.0 }
            #expect(steady.isEmpty, "no writes while nothing changes: \(steady.map(\.0))")
            #expect(all.count <= 12, "\(all.count) writes")
            let info = try #require(center.nowPlayingInfo)
            #expect(info.title == "Sunrise Chord" && info.artist == "Backline" && info.artwork?.mimeType == "image/png")
            #expect(info.playbackQueueIndex == 1 && info.playbackQueueCount == 2)
            #expect(info.playbackRate == 1 && center.playbackState == .playing)
            // The extrapolated elapsed time tracks the player.
            let e = try #require(center.elapsed())
            #expect(abs(e - player.currentTime()) < 0.1, "extrapolated \(e), player \(player.currentTime())")
            let before = center.writeCount
            player.pause()
            #expect(eventually { center.nowPlayingInfo?.playbackRate == 0 && center.playbackState == .paused })
            let pausedAt = try #require(center.elapsed())
            Thread.sleep(forTimeInterval: 0.5)
            // Paused: no extrapolation (0.5 s of drift at rate 1). The binding may refine the time
            // once more when the output has actually stopped (a fraction of a millisecond later).
            #expect(center.elapsed().map { abs($0 - pausedAt) < 0.005 } == true,
                    "paused: no drift (\(String(describing: center.elapsed())) vs \(pausedAt))")
            player.seek(to: 2)
            #expect(eventually { center.nowPlayingInfo?.elapsedPlaybackTime == 2 })
            #expect(center.writeCount - before <= 6)
            binding.unbind()
            player.removeAllItems()
        }
    }

    @Test("a skipped item counts in the queue index, as played and failed ones do: after advanceToNextItem the index is 1 of 2")
    func skippedItemCounts() throws {
        let a = try Fixtures.tone("np-skip-a", seconds: 3, frequency: 500), b = try Fixtures.tone("np-skip-b", seconds: 3, frequency: 600)
        let player = makePlayer([a.path, b.path], device: "null")  // paused: nothing plays
        defer { player.engine.shutdown() }
        let center = NowPlayingInfoCenter()
        let binding = NowPlayingBinding(player: player, center: center)
        defer { binding.unbind() }
        func position() -> String { "\(String(describing: center.nowPlayingInfo?.playbackQueueIndex)) of \(String(describing: center.nowPlayingInfo?.playbackQueueCount))" }
        #expect(eventually { position() == "Optional(0) of Optional(2)" }, "\(position())")
        player.advanceToNextItem()
        #expect(eventually { position() == "Optional(1) of Optional(2)" && center.nowPlayingInfo?.title == "np-skip-b.mp3" }, "\(position())")
    }

    @Test("remote commands drive the player: pause is heard as silence, next changes the audible item, position lands where asked")
    func remoteCommands() throws {
        try PulseNullSink.exclusive { sink in
            let a = try Fixtures.mp3(from: Fixtures.wav("rc-a", seconds: 6, synth: ["sine", "440"], effects: ["gain", "-20"]), name: "rc-a")
            let b = try Fixtures.mp3(from: Fixtures.wav("rc-b", seconds: 6, synth: ["sine", "440"], effects: ["gain", "-3"]), name: "rc-b")
            let player = makePlayer([a.path, b.path], device: sink.alsaDevice)
            let center = RemoteCommandCenter()
            let binding = RemoteCommandBinding(player: player, center: center)
            #expect(center.dispatch(RemoteCommandEvent(command: .seekForward, payload: .seek(.beginSeeking))).status == .commandFailed)
            let (_, rec) = try sink.record { () -> Void in
                #expect(center.dispatch(RemoteCommandEvent(command: .play)).status == .success)
                Thread.sleep(forTimeInterval: 1.0)
                #expect(center.dispatch(RemoteCommandEvent(command: .pause)).status == .success)   // ~1.0 s
                Thread.sleep(forTimeInterval: 0.8)
                #expect(center.dispatch(RemoteCommandEvent(command: .togglePlayPause)).status == .success)  // plays
                Thread.sleep(forTimeInterval: 0.5)
                #expect(center.dispatch(RemoteCommandEvent(command: .nextTrack)).status == .success)  // loud B
                #expect(eventually { player.currentItem?.path == b.path })
                Thread.sleep(forTimeInterval: 0.5)
                #expect(center.dispatch(RemoteCommandEvent(command: .changePlaybackPosition, payload: .position(4.0))).status == .success)
                Thread.sleep(forTimeInterval: 0.3)
                let t = player.currentTime()
                #expect(t >= 4.0 && t < 4.45, "position landed at \(t)")
                #expect(center.dispatch(RemoteCommandEvent(command: .nextTrack)).status == .noSuchContent)
                #expect(center.dispatch(RemoteCommandEvent(command: .previousTrack)).status == .success)  // > 3 s: restart
                #expect(eventually { player.currentTime() < 0.5 })
                #expect(center.dispatch(RemoteCommandEvent(command: .previousTrack)).status == .success)  // back to A
                #expect(eventually { player.currentItem?.path == a.path })
                #expect(player.items().map(\.path) == [a.path, b.path])
                Thread.sleep(forTimeInterval: 0.3)
                #expect(center.dispatch(RemoteCommandEvent(command: .stop)).status == .success)
                Thread.sleep(forTimeInterval: 0.3)
            }
            #expect(player.rate == 0 && player.currentTime() == 0)
            // The recording: quiet A ~1 s, a silent gap (the pause), quiet A again, then loud B.
            let first = try #require(PCM.firstNonSilent(rec, threshold: 64))
            func level(_ at: Double) -> Double {
                let i = first + Int(at * 44100) * 2
                return PCM.rms(rec[min(rec.count, i)..<min(rec.count, i + 4410)])
            }
            #expect(level(0.5) > 0.02 && level(0.5) < 0.1, "A playing: \(level(0.5))")
            #expect(level(1.4) < 0.001, "paused: \(level(1.4))")
            #expect(level(2.1) > 0.02 && level(2.1) < 0.1, "A again: \(level(2.1))")
            #expect(level(2.65) > 0.3, "B, loud: \(level(2.65)); profile \(stride(from: 0.0, to: 6.0, by: 0.2).map { String(format: "%.1f:%.3f", $0, level($0)) })")
            binding.unbind()
            #expect(!center.playCommand.hasTargets)
            player.removeAllItems()
        }
    }
}

@Suite("The now-playing app receives the remote commands")
struct NowPlayingAppTests {
    @Test("commands reach the last non-mixable session that played; a mixWithOthers session never becomes it")
    func routing() throws {
        let dir = try Harness.makeTemporaryDirectory().path
        let tone = try Fixtures.tone("np-route", seconds: 1, frequency: 440)
        func app(_ options: SessionCategoryOptions) throws -> (AudioSession, QueuePlayer, RemoteCommandCenter, RemoteCommandBinding) {
            let s = AudioSession(registryDirectory: dir)
            try s.setCategory(.playback, options: options)
            let p = QueuePlayer(items: [PlayerItem(path: tone.path)],
                                configuration: EngineConfiguration(output: OutputSettings(device: "null", realtime: false)),
                                session: s)
            p.actionAtItemEnd = .none  // stays current, rate 1, after its end
            let c = RemoteCommandCenter()
            let b = RemoteCommandBinding(player: p, center: c)
            c.receiveCommands(for: s)
            return (s, p, c, b)
        }
        let (s1, p1, _, b1) = try app([])
        let (s2, p2, _, b2) = try app(.mixWithOthers)
        let remote = AudioSession(registryDirectory: dir)  // a controller that never plays
        #expect(RemoteCommandCenter.send(RemoteCommandEvent(command: .pause), via: remote) == nil, "no now-playing app yet")
        p1.play()
        p2.play()
        #expect(s1.isNowPlayingApp && !s2.isNowPlayingApp)
        #expect(RemoteCommandCenter.send(RemoteCommandEvent(command: .pause), via: remote) == s1.id)
        #expect(eventually { p1.rate == 0 })
        #expect(p2.rate == 1, "the mixable app got nothing")
        #expect(RemoteCommandCenter.send(RemoteCommandEvent(command: .togglePlayPause), via: remote) == s1.id)
        #expect(eventually { p1.rate == 1 })

        let (s3, p3, _, b3) = try app([])
        let jumps = Lock<[Double]>([])
        p3.addObserver(queue: DispatchQueue(label: "j")) { e in
            if case .timeJumped(_, let t) = e { jumps.withLock { $0.append(t) } }
        }
        p3.play()
        #expect(s3.isNowPlayingApp && !s1.isNowPlayingApp, "the last non-mixable session that played")
        #expect(RemoteCommandCenter.send(RemoteCommandEvent(command: .changePlaybackPosition, payload: .position(0.25)), via: remote) == s3.id)
        #expect(eventually { jumps.withLock { $0.contains { abs($0 - 0.25) < 0.01 } } }, "\(jumps.withLock { $0 })")
        #expect(RemoteCommandCenter.send(RemoteCommandEvent(command: .pause), via: remote) == s3.id)
        #expect(eventually { p3.rate == 0 })
        _ = (b1, b2, b3)
    }
}
