import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import Testing

/// Daemons that tests start on the shared PulseAudio server without holding its sink play into
/// its second sink: a test recording the first one in parallel must never hear them (an 880 Hz
/// tone was measured as 529 and 550 Hz in CI while other tests' daemons played).
@Suite("the shared sound server: daemons that do not hold the sink are never heard on it", Harness.audioTools)
struct SharedSinkTests {
    @Test("a daemon on the shared server plays, unmuted, in real time, and the recorded sink's monitor stays silent")
    func unheard() throws {
        let d = try DaemonFixture.onSharedSink(config: DaemonFixture.foreground)
        try d.start()
        #expect(try d.request("add", [("paths", ["long.mp3"])]).ok)
        try PulseNullSink.exclusive { sink in
            let (_, recording) = try sink.record { () throws -> Void in
                #expect(try d.request("play").ok)
                Thread.sleep(forTimeInterval: 1.5)
                // Playing, and paced by the server (not raced through as into ALSA's null
                // device, which would be far past 5 s of the 60 s item by now).
                let elapsed = try d.request("status")["elapsed"]?.number ?? 0
                #expect(elapsed > 0.1 && elapsed < 5, "playing, paced: \(elapsed) s")
            }
            let loudest = recording.map { abs(Int($0)) }.max() ?? 0
            #expect(recording.count > 44_100, "recorded \(recording.count) samples")
            #expect(loudest <= HeardTimeline.silenceThreshold, "the daemon was heard on the recorded sink: peak \(loudest)")
        }
        d.expectCleanStop()
    }
}
