import BacklineTestSupport
import BacklineWire
import Daemon
import Foundation
import MediaCore
import Testing

/// The web remote in a real headless Chromium (Selenium and chromedriver,
/// `scripts/lib/webremote.py`) against a real daemon playing into the PulseAudio null sink: what
/// the page does is held against what the sink's monitor heard. Screenshots at phone and
/// desktop sizes are kept in `.build/test-artifacts/`.
@Suite("the web remote in a real browser, heard on the sink", .serialized, Harness.audioTools)
struct WebRemoteRealtimeTests {
    static var browserReady: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver")
    }

    /// A tagged MP3 of white noise (its every moment can be found in a recording) and its decode.
    static func noise(_ name: String, title: String, seconds: Double) throws -> URL {
        let w = try Fixtures.wav(name, seconds: seconds, synth: ["whitenoise"], effects: ["gain", "-10"])
        return try Fixtures.mp3(from: w, name: name, lameArgs: ["-b", "128", "--tt", title, "--ta", "The Testers", "--tl", "Browser Album"])
    }

    @Test("the page shows the title and cover of what plays; clicking pause is heard as silence and play as sound again; dragging the progress bar seeks to where it was dropped (heard there); the page sends nothing while it plays untouched (no polling); another client's ctl next reaches the page by its events; a rating chosen on the page is the song's sticker, another client's is shown, and Top rated lists it; a queue row dragged to the top moves in the daemon's queue; a search plays what it finds; the `p` key pauses and plays; every control has a name for screen readers",
          .enabled(if: browserReady || Harness.isCI, "needs chromium and chromedriver"))
    func browser() throws {
        try PulseNullSink.exclusive { sink in
            let d = try DaemonFixture(device: sink.alsaDevice, sinkEnvironment: sink.environment, config: DaemonFixture.foreground,
                                      musicDirectory: try Harness.makeTemporaryDirectory("web-music").path)
            // (The first item lasts long enough that the browser's steps all fall within it, on
            // however slow a machine: CI once took so long to start the browser that the 24 s
            // item it had was over, and the drag seeked in the next one.)
            let first = try Self.noise("web-noise-long", title: "Web Noise", seconds: 120)
            let files = [("01-web.mp3", first), ("02-second.mp3", try Self.noise("web-noise-2", title: "Second Noise", seconds: 12)),
                         ("03-third.mp3", try Self.noise("web-noise-3", title: "Third Noise", seconds: 12)),
                         ("04-glove.mp3", try Self.noise("web-noise-4", title: "Glove Song", seconds: 12))]
            for (name, file) in files { try FileManager.default.copyItem(atPath: file.path, toPath: d.music + "/" + name) }
            // The cover beside the songs (mpd's cover.png): a spectrogram of the first.
            let wav = try Fixtures.wav("web-noise-long", seconds: 120, synth: ["whitenoise"], effects: ["gain", "-10"])
            let sox = try runProcess("sox", [wav.path, "-n", "spectrogram", "-r", "-x", "300", "-y", "257", "-o", d.music + "/cover.png"])
            try #require(sox.status == 0, "\(sox.stderr)")
            let reference = try ReferenceDecoder.decodeS16(first)

            let port = HardeningTests.port()
            try d.start(["--http-listen", "127.0.0.1:\(port)"])
            #expect(eventually(timeout: 30) { (try? d.request("stats"))?["songs"] == 4 }, "the library's first scan")
            #expect(try d.request("add", [("paths", ["01-web.mp3", "02-second.mp3", "03-third.mp3"])]).ok)
            #expect(try d.request("play").ok)

            let artifacts = Harness.packageRoot.appendingPathComponent(".build/test-artifacts")
            let script = Harness.packageRoot.appendingPathComponent("scripts/lib/webremote.py").path
            let recording = try sink.startRecording()
            let recordingStart = ProcessInfo.processInfo.systemUptime
            let run = try runProcess("/usr/bin/python3", [script, "http://127.0.0.1:\(port)/", backline, d.socket, artifacts.path],
                                     environment: ["HOME": d.dir.path], timeout: 180)
            let heard = try recording.stop()
            try #require(run.status == 0, "\(run.stderr.suffix(2000))")
            let steps = Dictionary(run.stdoutText.split(separator: "\n").compactMap { try? JSON.parse(Array($0.utf8)) }
                .map { ($0["step"]?.string ?? "", $0) }) { $1 }

            // Shown: title, artist, a cover that loaded.
            let shown = try #require(steps["shown"])
            #expect(shown["title"] == "Web Noise" && shown["artist"]?.string?.contains("The Testers") == true
                    && (shown["cover"]?.int ?? 0) > 0, "\(shown.text)")

            // The recording, on the test's clock (parec's start is within tens of ms of `recordingStart`).
            let rate = Double(PulseNullSink.rate)
            func frame(_ t: Double) -> Int { Int((t - recordingStart) * rate) }
            func rms(_ from: Double, _ to: Double) -> Double {
                let a = max(0, frame(from) * 2), b = min(heard.count, frame(to) * 2)
                return a < b ? PCM.rms(heard[a..<b]) : 0
            }
            let pause = try #require(steps["pause"]?["t"]?.number), play = try #require(steps["play"]?["t"]?.number)
            // (RMS of full scale: the noise is about 0.15; silence on the monitor is 0.)
            // (Each stamped just before its click; a quarter of a second of margin on either side
            // of a window covers the recorder's start and the browser's own delay.)
            #expect(rms(pause - 0.8, pause - 0.25) > 0.05, "sound before the click on pause: \(rms(pause - 0.8, pause - 0.25))")
            #expect(rms(pause + 0.6, play - 0.25) < 0.001, "silence after it: \(rms(pause + 0.6, play - 0.25))")
            #expect(rms(play + 0.6, play + 1.2) > 0.05, "sound again after play: \(rms(play + 0.6, play + 1.2))")

            // The seek: what is heard from half a second after the drop is the item at the dropped place.
            let seek = try #require(steps["seek"]), seekTime = try #require(seek["t"]?.number), target = try #require(seek["value"]?.number)
            let length = try #require(seek["max"]?.number)
            #expect(seek["title"] == "Web Noise" && abs(length - 120) < 1 && abs(target / length - 0.6) < 0.1,
                    "dropped at 60 % of the first item's 120 s: \(seek.text)")
            let at = frame(seekTime + 0.6) * 2
            try #require(at + 4096 < heard.count)
            let expected = Int((target + 0.6) * rate) * 2
            let found = PCM.locate(heard, at: at, length: 4096, in: reference, near: expected, radius: Int(0.6 * rate) * 2)
            #expect(found.correlation > 0.9, "the audio after the drop is the item's: \(found.correlation)")
            let heardAt = Double(found.index / 2) / rate
            #expect(abs(heardAt - (target + 0.6)) < 0.3, "heard at \(heardAt) s, dropped at \(target) s (+0.6 s)")

            // No polling: 3 s of playing untouched, nothing sent.
            #expect(steps["idle"]?["sent"]?.int == 0, "the page sent requests while idle: \(steps["idle"]?.text ?? "")")
            #expect((steps["done"]?["sent"]?.int ?? 0) > 0, "the count sees what the page sends (the reorder, the search)")

            // Another client's next: the page changed through its events.
            let next = try #require(steps["next"])
            #expect(next["title"] == "Second Noise", "\(next.text)")
            // (How soon is printed, not asserted: a speed, for a benchmark, not a test.)
            if let ms = next["after_reply_ms"]?.number { print("web remote: the page showed another client's next \(Int(ms)) ms after its reply") }

            // The rating: the page's choice is the song's sticker; another client's is shown.
            let rating = try #require(steps["rating"])
            #expect(rating["page"] == "rating=8" && rating["shown"] == "4", "\(rating.text)")
            let rated = steps["rated"]?["rows"]?.array?.compactMap(\.string) ?? []
            #expect(rated.count == 1 && rated.first?.contains("Second Noise") == true && rated.first?.contains("4/10") == true, "\(rated)")

            // The queue: the dragged row is first in the daemon's queue too.
            let reorder = try #require(steps["reorder"])
            let after = (reorder["after"]?.array ?? []).compactMap { $0.string.flatMap(Int.init) }
            let daemon = (try d.request("list")["items"]?.array ?? []).compactMap { $0["id"]?.int }.prefix(3)  // (the search added a 4th)
            #expect(after.count == 3 && after == Array(daemon) && after.first == (reorder["before"]?.array?.last?.string.flatMap(Int.init)),
                    "\(reorder.text) daemon: \(daemon)")

            // The search played what it found.
            #expect(steps["search"]?["playing"]?.string?.contains("Glove Song") == true, "\(steps["search"]?.text ?? "")")
            let current = try d.request("status")["current"]
            #expect(current?["path"]?.string?.hasSuffix("04-glove.mp3") == true && current?["title"] == "Glove Song", "\(current?.text ?? "")")
            #expect(steps["keys"] != nil, "the `p` key paused and played through the daemon")
            #expect(steps["accessible"]?["unnamed"]?.array?.isEmpty == true && (steps["accessible"]?["tabs"]?.int ?? 0) >= 4,
                    "every control has a name for screen readers: \(steps["accessible"]?.text ?? "")")
            #expect(steps["done"]?["errors"]?.array?.isEmpty == true, "the page logged no errors: \(steps["done"]?.text ?? "")")
            for shot in ["web-remote-phone.png", "web-remote-desktop.png"] {
                #expect(FileManager.default.fileExists(atPath: artifacts.appendingPathComponent(shot).path))
            }
            d.expectCleanStop()
        }
    }
}
