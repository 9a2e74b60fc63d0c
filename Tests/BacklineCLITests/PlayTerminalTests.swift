import BacklineTestSupport
import Foundation
import Testing

/// `backline play` on a real terminal (a private tmux server running bash), playing into a
/// PulseAudio null sink in real time: keys change what the sink's monitor records and what the
/// status line shows; every way out leaves the terminal's settings as they were and nothing
/// typed for the player reaches the shell.
@Suite("backline play on a terminal: keys and status line", Harness.audioTools)
struct PlayTerminalTests {
    static var available: Bool { Harness.which("tmux") != nil }

    /// Shell scripts: `run.sh NAME ARGS…` saves the terminal's settings (`stty -g`), runs the
    /// player, then `check.sh NAME STATUS` reports on one line its exit status, whether the
    /// settings are what they were, and what typed input was left for the shell:
    /// `DONE NAME exit=0 stty=same left=[]`.
    static func runner(in dir: URL) throws -> (run: String, check: String) {
        let run = dir.appendingPathComponent("run.sh").path, check = dir.appendingPathComponent("check.sh").path
        try """
            name=$1; shift
            stty -g > "\(dir.path)/before"
            '\(backline)' play --no-mpris "$@"
            bash '\(check)' "$name" $?

            """.write(toFile: run, atomically: true, encoding: .utf8)
        try """
            stty -g > "\(dir.path)/after"
            cmp -s "\(dir.path)/before" "\(dir.path)/after" && s=same || s=changed
            left=; read -r -t 0.5 -n 40 left
            echo "DONE $1 exit=$2 stty=$s left=[$left]"

            """.write(toFile: check, atomically: true, encoding: .utf8)
        return (run, check)
    }

    /// Zero crossings of the left channel per second over `frames` (a tone's frequency is half of it).
    static func crossingsPerSecond(_ s: ArraySlice<Int16>, rate: Int) -> Double {
        var n = 0
        var i = s.startIndex + 2
        while i < s.endIndex {
            if (s[i - 2] < 0) != (s[i] < 0) { n += 1 }
            i += 2
        }
        return Double(n) / (Double(s.count / 2) / Double(rate))
    }

    @Test("keys: 9 lowers the level, → seeks 5 s, space pauses (silence) and p resumes, n plays the next item; the status line shows each; a resize redraws it; q leaves the terminal as it was",
          .enabled(if: available))
    func keys() throws {
        let noise = try Fixtures.noise("keys-noise", seconds: 30)
        let tone = try Fixtures.tone("keys-tone", seconds: 10, frequency: 880)
        let reference = try ReferenceDecoder.decodeS16(noise)
        let dir = try Harness.makeTemporaryDirectory("play-keys")
        let run = try Self.runner(in: dir).run
        try PulseNullSink.exclusive { sink in
            let term = TmuxTerminal(socket: dir.path + "/tmux.sock", environment: try isolated(sink.environment))
            try term.start(["bash", "--norc", "--noprofile"], width: 100, height: 20)
            defer { term.kill() }
            let recording = try sink.startRecording()
            try term.line("bash \(run) keys --device \(sink.alsaDevice) '\(noise.path)' '\(tone.path)'")
            func wait(_ what: String, timeout: Double = 10, _ condition: (String) -> Bool) {
                let (ok, screen) = term.waitForScreen(timeout: timeout, condition)
                #expect(ok, "\(what):\n\(screen)")
            }
            // The status line's last row, whatever else the screen holds.
            func statusLine(_ screen: String) -> String {
                screen.split(separator: "\n").last { $0.contains(" / 0:") }.map(String.init) ?? ""
            }
            wait("playing, at 0:01") { statusLine($0).contains("▶ keys-noise.mp3  1/2  0:01 / 0:30 ") }
            try term.keys("x", "y", "z")  // not keys the player knows: read and dropped, never the shell's
            try term.keys("9", "9")
            wait("volume 90%") { statusLine($0).hasSuffix("vol 90%") }
            wait("at 0:03") { statusLine($0).contains(" 0:03 / 0:30") }
            try term.keys("Right")
            wait("seeked to 0:08 or 0:09") { s in [" 0:08 / 0:30", " 0:09 / 0:30"].contains { statusLine(s).contains($0) } }
            usleep(2_000_000)
            try term.keys("Space")
            wait("paused") { statusLine($0).hasPrefix("⏸ keys-noise.mp3") }
            usleep(1_500_000)
            try term.keys("p")
            wait("resumed") { statusLine($0).hasPrefix("▶ keys-noise.mp3") }
            usleep(1_000_000)
            try term.keys("r", "s")
            wait("repeat all, shuffle") { statusLine($0).hasSuffix("vol 90%  repeat all  shuffle") }
            try term.keys("i")
            wait("i: the item's tags, format and device") { s in
                s.contains("  file: \(noise.path)") && s.contains("  audio: MPEG audio, float, 44100 Hz, stereo")
                    && s.contains("  device: pulse: float32, 44100 Hz, 2 channels")
            }
            try term.keys("r", "s", "n")
            wait("next item") { statusLine($0).hasPrefix("▶ keys-tone.mp3  2/2  0:0") && statusLine($0).hasSuffix("vol 90%  repeat one") }
            usleep(1_500_000)
            try term.resize(width: 60, height: 20)
            wait("redrawn for 60 columns") { s in
                let line = statusLine(s)
                return line.count <= 59 && line.hasPrefix("▶ keys-tone.mp3  2/2  0:0") && line.hasSuffix("vol 90%  repeat one")
            }
            try term.keys("S-F2", "C-Right", "Escape")  // escape sequences whose last byte is no key (`ESC [ 1 ; 2 Q` is not q)
            usleep(500_000)
            #expect(statusLine(term.screen()).hasPrefix("▶ keys-tone.mp3"), "still playing: \(term.screen())")
            try term.keys("q")
            wait("quit: exit 0, terminal as it was, nothing typed left for the shell") { $0.contains("DONE keys exit=0 stty=same left=[]") }
            let audio = try recording.stop()
            let rate = PulseNullSink.rate

            // The noise's first second was heard at full level; after `9 9` and the seek, at 90%.
            func heard(at seconds: Double) -> (index: Int, correlation: Double) {
                let at = 2 * Int(seconds * Double(rate))
                return PCM.locate(reference, at: at, in: audio, near: audio.count / 2, radius: audio.count / 2 + 1)
            }
            func level(at seconds: Double) -> Double {
                let spot = heard(at: seconds)
                let at = 2 * Int(seconds * Double(rate)), n = 2 * rate / 4
                return PCM.rms(audio[spot.index..<min(audio.count, spot.index + n)]) / PCM.rms(reference[at..<at + n])
            }
            #expect(heard(at: 1.0).correlation > 0.9, "the start was heard")
            #expect(abs(level(at: 1.0) - 1.0) < 0.03, "full level at first: \(level(at: 1.0))")
            // → at 0:03.x lands at 0:08.x; two seconds on, 0:09.5 is heard, at 90%; 0:05.5 never is.
            #expect(heard(at: 9.5).correlation > 0.9, "heard after the seek")
            #expect(abs(level(at: 9.5) - 0.9) < 0.03, "90% after 9 9: \(level(at: 9.5))")
            #expect(heard(at: 5.5).correlation < 0.5, "the 5 s skipped were not heard: \(heard(at: 5.5).correlation)")
            // The pause: the only silence inside the noise, about as long as the keys held it.
            let timeline = HeardTimeline(recording: audio, rate: rate)
            let noiseEnd = heard(at: 9.5).index / 2 + 2 * rate
            let silence = timeline.longestSilence(from: heard(at: 1.0).index / 2, to: noiseEnd)
            #expect(silence > 0.9 && silence < 3, "paused for \(silence) s (held 1.5 s on the screen)")
            // After n: the 880 Hz tone (the noise crosses zero far more often). The median of the
            // last second's 50 ms blocks: a block a busy machine let run dry does not count.
            var last = audio.count / 2 - 1
            while last > 0, abs(Int(audio[2 * last])) <= HeardTimeline.silenceThreshold { last -= 1 }
            let block = rate / 20
            let blocks = (1...20).compactMap { k -> Double? in
                let end = last - (k - 1) * block, start = end - block
                guard start >= 0 else { return nil }
                return Self.crossingsPerSecond(audio[(2 * start)..<(2 * end)], rate: rate) / 2
            }.sorted()
            let frequency = blocks.isEmpty ? 0 : blocks[blocks.count / 2]
            #expect(abs(frequency - 880) < 25, "the last sound is the next item's 880 Hz tone: \(frequency) Hz")
        }
    }

    @Test("every way out restores the terminal and leaves nothing typed for the shell: the queue's end, Ctrl-C, Ctrl-Z then fg, SIGTERM, a crash",
          .enabled(if: available))
    func exits() throws {
        let short = try Fixtures.tone("exit-short", seconds: 1.5, frequency: 440)
        let long = try Fixtures.tone("exit-long", seconds: 30, frequency: 440)
        let dir = try Harness.makeTemporaryDirectory("play-exits")
        let (run, check) = try Self.runner(in: dir)
        let sink = try PulseNullSink()  // a server of its own: nothing here is recorded
        defer { sink.stop() }
        let term = TmuxTerminal(socket: dir.path + "/tmux.sock",
                                environment: try isolated(sink.environment.merging(["SWIFT_BACKTRACE": "enable=no", "PS1": "READY> "]) { $1 }))
        try term.start(["bash", "--norc", "--noprofile"], width: 100, height: 30)
        defer { term.kill() }
        func wait(_ what: String, timeout: Double = 10, _ condition: (String) -> Bool) {
            let (ok, screen) = term.waitForScreen(timeout: timeout, condition)
            #expect(ok, "\(what):\n\(screen)")
        }
        func playing(_ s: String) -> Bool { s.split(separator: "\n").last { $0.contains(" / 0:") }?.hasPrefix("▶") == true }
        /// The player's pid (by its unique file name).
        func pid() throws -> String {
            try runProcess("pgrep", ["-n", "-f", "play --no-mpris --device pulse .*exit-long"]).stdoutText
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }

        // The queue's end, with keys typed while it plays.
        try term.line("bash \(run) end --device pulse '\(short.path)'")
        wait("playing") { playing($0) }
        try term.keys("a", "b", "c")
        wait("the end") { $0.contains("DONE end exit=0 stty=same left=[]") }

        // Ctrl-C: the player ends by SIGINT, as any program, so the shell drops the rest of the
        // command line (and a loop around the player stops); the check is a line of its own.
        try term.line("clear; stty -g > '\(dir.path)/before'; '\(backline)' play --no-mpris --device pulse '\(long.path)'; echo NOT-ABORTED")
        wait("playing") { playing($0) }
        try term.keys("C-c")
        // (what is typed before the shell is back belongs to the player, which drops it)
        wait("the shell's prompt") { $0.split(separator: "\n").last { !$0.isEmpty } == "READY>" }
        try term.line("bash \(check) intr $?")
        wait("Ctrl-C") { $0.contains("DONE intr exit=130 stty=same left=[]") }
        #expect(!term.screen().contains("\nNOT-ABORTED"), "the shell saw the player die of SIGINT")

        // Ctrl-Z: the shell gets its terminal back as it was; fg brings the keys back.
        try term.line("clear; bash \(run) tstp --device pulse '\(long.path)'")
        wait("playing") { playing($0) }
        try term.keys("C-z")
        wait("stopped") { $0.contains("Stopped") }
        try term.line("stty -g > '\(dir.path)/stopped'; cmp -s '\(dir.path)/before' '\(dir.path)/stopped' && echo STOPPED-SAME || echo STOPPED-CHANGED")
        wait("the shell's terminal while the player is stopped") { $0.contains("\nSTOPPED-SAME") }
        try term.line("fg")
        wait("playing again") { playing($0) }
        try term.keys("p")
        wait("the keys work after fg") { $0.split(separator: "\n").last { $0.contains(" / 0:") }?.hasPrefix("⏸") == true }
        try term.keys("q")
        wait("quit after fg") { $0.contains("DONE tstp exit=0 stty=same left=[]") }

        // SIGTERM and a crash, from outside.
        for (name, signal, code) in [("term", "TERM", 143), ("segv", "SEGV", 139)] {
            try term.line("clear; bash \(run) \(name) --device pulse '\(long.path)'")
            wait("playing") { playing($0) }
            try term.keys("k", "j")  // typed, unread by the shell
            usleep(300_000)
            let p = try pid()
            #expect(!p.isEmpty)
            try runProcess("kill", ["-\(signal)", p])
            wait("SIG\(signal)") { $0.contains("DONE \(name) exit=\(code) stty=same left=[]") }
        }
    }
}
