import BacklineTestSupport
import Foundation
import Testing

/// The `backline` executable built next to this test bundle.
let backline: String = {
    let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let candidate = dir.appendingPathComponent("backline").path
    return FileManager.default.isExecutableFile(atPath: candidate)
        ? candidate : Harness.packageRoot.appendingPathComponent(".build/debug/backline").path
}()

/// The environment for a `backline` child: its own `XDG_RUNTIME_DIR`, so the audio sessions of
/// tests running side by side (and the user's own) never interrupt each other.
func isolated(_ environment: [String: String] = [:]) throws -> [String: String] {
    environment.merging(["XDG_RUNTIME_DIR": try Harness.makeTemporaryDirectory().path]) { a, _ in a }
}

@Suite("backline play", Harness.audioTools)
struct PlayCommandTests {
    @Test("plays every file into the device bit-exact and exits 0")
    func playsAll() throws {
        let (a, b) = try Fixtures.gaplessPair()
        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let r = try runProcess(backline, ["play", "--device", cap.device, a.path, b.path], environment: try isolated())
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdoutText.components(separatedBy: "\n").filter { $0.hasPrefix("▶") }.count == 2)
        #expect(r.stdoutText.contains("gapless-a-44100.mp3") && r.stdoutText.contains("[0:02]"))
        let ref = try ReferenceDecoder.decodeF32(a) + ReferenceDecoder.decodeF32(b)
        let same = try cap.f32() == ref
        #expect(same)
    }

    @Test("--speed 1.5: the capture lasts the files' length / 1.5 (within 1,024 frames each); with --pitch-algorithm varispeed a 440 Hz tone sounds at 660 Hz; --speed 4 and an unknown algorithm are refused")
    func speed() throws {
        let (a, b) = try Fixtures.gaplessPair()
        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let r = try runProcess(backline, ["play", "--no-mpris", "--speed", "1.5", "--device", cap.device, a.path, b.path], environment: try isolated())
        #expect(r.status == 0, "\(r.stderr)")
        let content = try (ReferenceDecoder.decodeF32(a).count + ReferenceDecoder.decodeF32(b).count) / 2
        let heard = try cap.f32().count / 2
        #expect(abs(heard - Int((Double(content) / 1.5).rounded())) <= 2048, "\(heard) frames heard of \(content) at 1.5")
        let bad = try runProcess(backline, ["play", "--speed", "4", "--device", "null", a.path], environment: try isolated())
        #expect(bad.status != 0 && bad.stderr.contains("--speed must be 0.5…3"), "\(bad.stderr)")
        // --pitch-algorithm varispeed: a 440 Hz tone at 1.5 sounds at 660 Hz (rising zero
        // crossings in a second of the middle).
        let tone = try Fixtures.wav("cli-speed-440", seconds: 4, synth: ["sine", "440"], effects: ["gain", "-6"])
        let vcap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let v = try runProcess(backline, ["play", "--no-mpris", "--speed", "1.5", "--pitch-algorithm", "varispeed", "--device", vcap.device, tone.path],
                               environment: try isolated())
        #expect(v.status == 0, "\(v.stderr)")
        let left = try vcap.f32().enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        let middle = left[(left.count / 2 - 22050)..<(left.count / 2 + 22050)]
        let rising = zip(middle, middle.dropFirst()).filter { $0.0 < 0 && $0.1 >= 0 }.count
        #expect(abs(rising - 660) <= 3, "\(rising) rising zero crossings in a second")
        let wrong = try runProcess(backline, ["play", "--pitch-algorithm", "fast", "--device", "null", a.path], environment: try isolated())
        #expect(wrong.status != 0 && wrong.stderr.contains("--pitch-algorithm must be timeDomain, spectral or varispeed"), "\(wrong.stderr)")
    }

    @Test("prints title and artist from the tags")
    func tags() throws {
        let demo = try #require(Fixtures.demoTracks.first)
        let r = try runProcess(backline, ["play", "--device", "null", demo.path], environment: try isolated())
        #expect(r.status == 0)
        #expect(r.stdoutText.contains("▶ Sunrise Chord — Backline  [0:08]"))
    }

    @Test("--trim-silence all: 0.5 s of tone, 2 s of silence, 0.5 s of tone play as 1.3 s (the pause cut to 0.3 s); spoken leaves an untagged file whole; another word is refused")
    func trimSilence() throws {
        let dir = try Harness.makeTemporaryDirectory("trim-cli")
        let tone = dir.path + "/tone.wav", pause = dir.path + "/pause.wav", file = dir.path + "/paused.wav"
        for args in [["-n", "-r", "44100", "-c", "2", "-b", "16", tone, "synth", "0.5", "sine", "660", "gain", "-6"],
                     ["-n", "-r", "44100", "-c", "2", "-b", "16", pause, "trim", "0", "2"], [tone, pause, tone, file]] {
            let r = try runProcess("sox", args)
            try #require(r.status == 0, "\(r.stderr)")
        }
        func played(_ mode: String) throws -> Int {
            let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
            let r = try runProcess(backline, ["play", "--device", cap.device, "--trim-silence", mode, file], environment: try isolated())
            #expect(r.status == 0, "\(r.stderr)")
            return try cap.f32().count / 2
        }
        // (The tone's zero crossings are single quiet frames: kept; the pause keeps 0.3 s.)
        let trimmed = try played("all")
        #expect(abs(trimmed - (22050 + 13230 + 22050)) <= 4, "\(trimmed) frames")
        #expect(try played("spoken") >= 3 * 44100)
        let bad = try runProcess(backline, ["play", "--device", "null", "--trim-silence", "yes", file], environment: try isolated())
        #expect(bad.status != 0 && bad.stderr.contains("--trim-silence must be off, spoken or all"), "\(bad.stderr)")
    }

    @Test("bad inputs: each named with its reason on stderr, the good items still play gaplessly, exit 2")
    func badInputs() throws {
        let bad = try Fixtures.badInputs()
        let good = try Fixtures.tone("cli-good", seconds: 1.2, frequency: 660)
        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let order = ["missing", "empty", "random", "text", "truncated", "directory"]
        let args = order.flatMap { [bad[$0]!.path, good.path] }
        let r = try runProcess(backline, ["play", "--device", cap.device] + args, environment: try isolated())
        #expect(r.status == 2, "exit status \(r.status); stderr: \(r.stderr)")
        for name in ["missing", "empty", "random", "text", "truncated"] {
            let path = bad[name]!.path
            #expect(r.stderr.contains("cannot play \(path): "), "no error line for \(name): \(r.stderr)")
        }
        #expect(r.stderr.contains("no such file"))
        // A folder is searched for music: an empty one (even named like a file) is said so.
        #expect(r.stderr.contains("backline: \(bad["directory"]!.path): no audio files in the directory\n"), "\(r.stderr)")
        #expect(r.stderr.contains("\(bad["truncated"]!.path): truncated: it ends after "), "\(r.stderr)")
        #expect(r.stderr.contains("\(bad["empty"]!.path): unsupported format: empty file\n"), "\(r.stderr)")
        #expect(r.stderr.contains("\(bad["text"]!.path): unsupported format: no MPEG audio frames found (libmpg123)\n"), "\(r.stderr)")
        // Six good items played, each announced.
        #expect(r.stdoutText.components(separatedBy: "\n").filter { $0.contains("cli-good.mp3") }.count == 6, "\(r.stdoutText)")
        // The device was never reopened (same format), so the capture holds every good copy in full.
        let ref = try ReferenceDecoder.decodeF32(good)
        let got = try cap.f32()
        #expect(got.count >= 6 * ref.count)
        let lastCopy = Array(got.suffix(ref.count))
        #expect(lastCopy == ref)
    }

    @Test("nothing playable: exit 1; usage errors: exit 1 with a message; --help documents it")
    func exitCodes() throws {
        let r = try runProcess(backline, ["play", "--device", "null", "/nonexistent/x.mp3"], environment: try isolated())
        #expect(r.status == 1)
        #expect(r.stderr.contains("cannot play /nonexistent/x.mp3: no such file"))
        let u = try runProcess(backline, ["play"], environment: try isolated())
        #expect(u.status != 0)
        #expect(u.stderr.contains("Missing expected argument") || u.stderr.contains("give at least one file"))
        let h = try runProcess(backline, ["play", "--help"], environment: try isolated())
        #expect(h.status == 0)
        #expect(h.stdoutText.contains("--buffer-ms") && h.stdoutText.contains("Exit status"))
        let d = try runProcess(backline, ["play", "--device", "no_such_device_xyz", try Fixtures.tone("cli-dev", seconds: 0.5).path], environment: try isolated())
        #expect(d.status == 1)
        #expect(d.stderr.contains("audio device no_such_device_xyz"))
    }

    @Test("--resume: a podcast stopped by SIGTERM keeps where it was heard in play-bookmarks.json; played again with --resume it starts there less 5 s (heard: that second's tone); heard to its end, it is forgotten")
    func resume() throws {
        // 20 s, second k a tone of 300 + 100·k Hz, tagged as a podcast (remembered whatever its length).
        let dir = try Harness.makeTemporaryDirectory("resume-cli")
        let wav = dir.path + "/steps.wav", flac = dir.path + "/episode.flac"
        var synth: [String] = []
        for k in 0..<20 {
            if k > 0 { synth.append(":") }
            synth += ["synth", "1", "sine", String(300 + 100 * k), "gain", "-6"]
        }
        var r = try runProcess("sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", wav] + synth)
        try #require(r.status == 0, "\(r.stderr)")
        r = try runProcess("flac", ["-s", "-f", "--tag=GENRE=Podcast", "-o", flac, wav])
        try #require(r.status == 0, "\(r.stderr)")
        let state = try Harness.makeTemporaryDirectory("resume-state").path
        let file = state + "/backline/play-bookmarks.json"
        func bookmarks() throws -> [String: [String: Double]] {
            guard let data = FileManager.default.contents(atPath: file) else { return [:] }
            return (try JSONSerialization.jsonObject(with: data) as? [String: [String: Any]] ?? [:]).mapValues { $0.compactMapValues { $0 as? Double } }
        }
        try PulseNullSink.exclusive { sink in
            let p = try SpawnedProcess(backline, ["play", "--resume", "--device", sink.alsaDevice, flac],
                                       environment: try isolated(sink.environment.merging(["XDG_STATE_HOME": state]) { a, _ in a }))
            let deadline = Date().addingTimeInterval(10)
            while !p.stdout.contains("▶"), Date() < deadline { usleep(20_000) }
            usleep(7_000_000)
            p.signal(SIGTERM)
            #expect(try p.wait(timeout: 5) == 143)
        }
        let position = try #require(try bookmarks()[flac]?["position"], "no bookmark in \(file)")
        #expect(position > 5.5 && position < 12, "left at \(position) s")
        // Again, with --resume, into a capture: the first tenth of a second is second ⌊position − 5⌋'s tone.
        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        r = try runProcess(backline, ["play", "--resume", "--device", cap.device, flac],
                           environment: try isolated(["XDG_STATE_HOME": state]))
        #expect(r.status == 0, "\(r.stderr)")
        let samples = try cap.f32()
        try #require(samples.count > 8820)
        var crossings = 0
        for i in stride(from: 2, to: 8820, by: 2) where samples[i - 2] < 0 && samples[i] >= 0 { crossings += 1 }
        let step = Int((Double(crossings * 10 - 300) / 100).rounded())
        let start = position - 5
        let expected = start - start.rounded(.down) > 0.85 ? [Int(start), Int(start) + 1] : [Int(start)]
        #expect(expected.contains(step), "started in second \(step) (\(crossings * 10) Hz), left at \(position) s")
        #expect(abs(Double(samples.count / 2) / 44100 - (20 - start)) < 0.1, "played \(samples.count / 2) frames from \(start) s")
        // Heard to its end: forgotten.
        let after = try bookmarks()
        #expect(after[flac] == nil, "\(after)")
    }

    @Test("Ctrl-C stops at once: device closed, exit 130")
    func interrupt() throws {
        try PulseNullSink.exclusive { sink in
            let long = try Fixtures.tone("cli-long", seconds: 20)
            let p = try SpawnedProcess(backline, ["play", "--device", sink.alsaDevice, long.path], environment: try isolated(sink.environment))
            // Wait until it is playing (the item line is out), then interrupt.
            let deadline = Date().addingTimeInterval(10)
            while !p.stdout.contains("▶"), Date() < deadline { usleep(20_000) }
            usleep(300_000)
            // Its stream on the sound server, found by the player's process id.
            func hasStream() throws -> Bool {
                let inputs = try runProcess("pactl", ["list", "sink-inputs"], environment: sink.environment)
                return inputs.stdoutText.contains("application.process.id = \"\(p.pid)\"")
            }
            #expect(try hasStream(), "playing: a sink input of process \(p.pid)")
            let t0 = Date()
            p.signal(SIGINT)
            let status = try p.wait(timeout: 5)
            #expect(status == 130)
            #expect(Date().timeIntervalSince(t0) < 1, "took \(Date().timeIntervalSince(t0)) s to stop")
            // Its stream is gone from the sound server: the device was closed.
            #expect(try !hasStream(), "the stream outlived the player")
        }
    }

    @Test("a stalled process underruns: the underrun is recovered, counted and reported, playback completes")
    func underrunRecovered() throws {
        try PulseNullSink.exclusive { sink in
            let file = try Fixtures.tone("cli-underrun", seconds: 3)
            let p = try SpawnedProcess(backline, ["play", "--verbose", "--device", sink.alsaDevice, file.path],
                                       environment: try isolated(sink.environment))
            let deadline = Date().addingTimeInterval(10)
            while !p.stdout.contains("▶"), Date() < deadline { usleep(20_000) }
            usleep(800_000)
            // Freeze the whole player for 0.6 s (longer than its 200 ms device buffer).
            kill(p.pid, SIGSTOP)
            usleep(600_000)
            kill(p.pid, SIGCONT)
            let status = try p.wait(timeout: 15)
            #expect(status == 0, "\(p.stderr)")
            #expect(p.stderr.contains("backline: underrun (1)"), "\(p.stderr)")
        }
    }

    /// Runs `body` (bash) under `script`'s pseudo-terminal with job control on.
    static func underTerminal(_ body: String, environment: [String: String]) throws -> ProcessResult {
        let dir = try Harness.makeTemporaryDirectory()
        let file = dir.appendingPathComponent("job.sh")
        try ("set -m\n" + body).write(to: file, atomically: true, encoding: .utf8)
        return try runProcess("script", ["-qfec", "bash --norc --noprofile \(file.path)", "/dev/null"],
                              environment: environment, timeout: 60)
    }

    @Test("job control: in the background soloAmbient stays silent and stops itself after the hook; fg resumes it; playback plays on")
    func jobControl() throws {
        let tone = try Fixtures.tone("cli-job", seconds: 1.0, frequency: 550)
        let dir = try Harness.makeTemporaryDirectory()
        let cap = ALSAFileCapture(in: dir)
        let err = dir.appendingPathComponent("err.txt").path
        let r = try Self.underTerminal("""
            '\(backline)' play --category soloAmbient --background-grace 0.3 --device '\(cap.device)' '\(tone.path)' >/dev/null 2>'\(err)' &
            pid=$!
            ( sleep 20; kill -9 $pid 2>/dev/null ) &   # a watchdog: a hang fails, never blocks
            sleep 1.5
            echo "STAT $(ps -o stat= -p $pid)"
            test -s '\(cap.file.path)' && echo "HEARD-IN-BACKGROUND"
            fg %1 >/dev/null
            echo "EXIT $?"
            """, environment: try isolated())
        #expect(r.stdoutText.contains("STAT T"), "stopped itself: \(r.stdoutText)")
        #expect(!r.stdoutText.contains("HEARD-IN-BACKGROUND"), "soloAmbient played in the background")
        #expect(r.stdoutText.contains("EXIT 0"), "fg resumed it and it played to the end: \(r.stdoutText)")
        let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        #expect(stderr.contains("backline: stopped: nothing is playing in the background (soloAmbient pauses there); `fg` resumes"),
                "the suspension hook ran: \(stderr)")
        #expect(try cap.f32() == ReferenceDecoder.decodeF32(tone), "after fg the whole item played")

        let cap2 = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let r2 = try Self.underTerminal("""
            '\(backline)' play --device '\(cap2.device)' '\(tone.path)' >/dev/null 2>&1 &
            wait $!
            echo "EXIT $?"
            """, environment: try isolated())
        #expect(r2.stdoutText.contains("EXIT 0"), "\(r2.stdoutText)")
        #expect(try cap2.f32() == ReferenceDecoder.decodeF32(tone), "playback played in the background")
    }

    @Test("on a terminal: a live status line (in colour unless NO_COLOR), cleared at the end; plain lines when stdout is not a TTY")
    func progressLine() throws {
        try PulseNullSink.exclusive { sink in
            let tone = try Fixtures.tone("cli-progress", seconds: 1.6, frequency: 440)
            for noColor in [true, false] {
                let r = try Self.underTerminal("""
                    '\(backline)' play --no-mpris --device '\(sink.alsaDevice)' '\(tone.path)'
                    echo "EXIT $?"
                    """, environment: try isolated(sink.environment.merging(["NO_COLOR": noColor ? "1" : ""]) { $1 }))
                let out = r.stdoutText
                #expect(out.contains("▶ cli-progress.mp3  [0:01]"))
                #expect(out.contains("\r\u{1B}[2KEXIT 0"), "the status line cleared, then the shell's next line: \(out)")
                let updates = out.components(separatedBy: "\r\u{1B}[2K").filter { $0.contains("cli-progress.mp3") && $0.contains("  1/1  0:0") }
                #expect(updates.count >= 3, "status updates: \(updates)")
                if noColor {
                    #expect(updates.contains { $0.hasPrefix("▶ cli-progress.mp3  1/1  0:01 / 0:01 ━") && $0.hasSuffix("  vol 100%") }, "\(updates)")
                    #expect(updates.allSatisfy { !$0.contains("\u{1B}") }, "no colour under NO_COLOR: \(updates)")
                } else {
                    #expect(updates.allSatisfy { $0.hasPrefix("\u{1B}[32m▶\u{1B}[0m \u{1B}[1mcli-progress.mp3\u{1B}[0m  1/1  0:0") }, "in colour: \(updates)")
                }
            }
            // Not a TTY (the other tests): no control sequences at all.
            let plain = try runProcess(backline, ["play", "--no-mpris", "--device", "null", tone.path], environment: try isolated())
            #expect(!plain.stdoutText.contains("\u{1B}") && !plain.stdoutText.contains("\r"))
        }
    }
}
