import BacklineTestSupport
import Foundation
import Testing

/// `backline play`'s inputs (folders, playlists, standard input) and options (--shuffle,
/// --repeat, --volume, --start, --verbose), on ALSA's file and null devices (bit-exact, no pacing).
@Suite("backline play: inputs and options", Harness.audioTools)
struct PlayInputTests {
    /// The items announced on stdout (`▶ NAME  [M:SS]`), in order.
    static func announced(_ out: String) -> [String] {
        out.split(separator: "\n").filter { $0.hasPrefix("▶ ") }.map { line in
            let name = line.dropFirst(2)
            return String(name.range(of: "  [").map { name[..<$0.lowerBound] } ?? name)
        }
    }

    /// A folder of short tones: `2.mp3`, `10.mp3`, `sub/1.mp3`, plus a cover and a text file.
    static func folder() throws -> URL {
        let dir = try Harness.makeTemporaryDirectory("play-folder")
        let tone = try Fixtures.tone("input-tone", seconds: 0.3, frequency: 500)
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("sub"), withIntermediateDirectories: true)
        for name in ["2.mp3", "10.mp3", "sub/1.mp3", "B side.MP3"] {
            try FileManager.default.copyItem(at: tone, to: dir.appendingPathComponent(name))
        }
        try Data([0x89, 0x50, 0x4E, 0x47]).write(to: dir.appendingPathComponent("cover.png"))
        try Data("liner notes".utf8).write(to: dir.appendingPathComponent("notes.txt"))
        return dir
    }

    @Test("a folder plays its audio files recursively in natural order; what was left out is summarised")
    func folders() throws {
        let dir = try Self.folder()
        let r = try runProcess(backline, ["play", "--no-mpris", "--device", "null", dir.path], environment: try isolated())
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.announced(r.stdoutText) == ["2.mp3", "10.mp3", "B side.MP3", "1.mp3"], "\(r.stdoutText)")
        #expect(r.stderr == "backline: \(dir.path): left out 2 files that are not in a format Backline plays (cover.png, notes.txt)\n", "\(r.stderr)")

        let empty = try Harness.makeTemporaryDirectory("play-empty")
        let e = try runProcess(backline, ["play", "--no-mpris", "--device", "null", empty.path], environment: try isolated())
        #expect(e.status == 1)
        #expect(e.stderr == "backline: \(empty.path): no audio files in the directory\nbackline: nothing to play\n", "\(e.stderr)")
    }

    @Test("M3U and PLS playlists (a byte-order mark too): relative entries against the playlist, missing entries and a playlist including itself reported, the rest played")
    func playlists() throws {
        let dir = try Self.folder()
        try """
            #EXTM3U
            #EXTINF:1,ten
            10.mp3
            missing.mp3
            sub/1.mp3
            list.m3u
            \(dir.path)/2.mp3
            """.write(to: dir.appendingPathComponent("list.m3u"), atomically: true, encoding: .utf8)
        try """
            \u{FEFF}[playlist]
            File2=2.mp3
            Title2=two
            File1=file://\(dir.path)/B%20side.MP3
            NumberOfEntries=2
            Version=2
            """.write(to: dir.appendingPathComponent("two.pls"), atomically: true, encoding: .utf8)
        let elsewhere = try Harness.makeTemporaryDirectory("play-cwd")
        let r = try runProcess("/bin/sh", ["-c", "cd '\(elsewhere.path)' && '\(backline)' play --no-mpris --device null '\(dir.path)/list.m3u' '\(dir.path)/two.pls'"],
                               environment: try isolated())
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.announced(r.stdoutText) == ["10.mp3", "1.mp3", "2.mp3", "B side.MP3", "2.mp3"], "\(r.stdoutText)")
        #expect(r.stderr == """
            backline: skipped missing.mp3: no such file or directory
            backline: skipped list.m3u: the playlist includes itself

            """, "\(r.stderr)")
    }

    @Test("- reads paths (or a playlist) from standard input, relative to the current directory; keys stay off")
    func standardInput() throws {
        let dir = try Self.folder()
        let r = try runProcess("/bin/sh", ["-c", "cd '\(dir.path)' && printf '10.mp3\\n# a comment\\n\\nsub/1.mp3\\nnope.mp3\\n' | '\(backline)' play --no-mpris --device null -"],
                               environment: try isolated())
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.announced(r.stdoutText) == ["10.mp3", "1.mp3"], "\(r.stdoutText)")
        #expect(r.stderr == "backline: skipped nope.mp3: no such file or directory\n", "\(r.stderr)")
        let pls = try runProcess("/bin/sh", ["-c", "cd '\(dir.path)' && printf '[playlist]\\nFile1=2.mp3\\n' | '\(backline)' play --no-mpris --device null -"],
                                 environment: try isolated())
        #expect(Self.announced(pls.stdoutText) == ["2.mp3"], "\(pls.stdoutText) \(pls.stderr)")
        let none = try runProcess("/bin/sh", ["-c", "'\(backline)' play --no-mpris --device null - </dev/null"], environment: try isolated())
        #expect(none.status == 1)
        #expect(none.stderr == "backline: standard input: no paths on standard input\nbackline: nothing to play\n", "\(none.stderr)")
    }

    @Test("--volume scales the samples, --start skips into the first item exactly, --repeat one plays it again, --shuffle plays each item once")
    func options() throws {
        let tone = try Fixtures.tone("option-tone", seconds: 2, frequency: 330)
        let ref = try ReferenceDecoder.decodeF32(tone)

        let cap = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let v = try runProcess(backline, ["play", "--no-mpris", "--volume", "50", "--device", cap.device, tone.path], environment: try isolated())
        #expect(v.status == 0, "\(v.stderr)")
        let half = try cap.f32()
        #expect(half.count == ref.count)
        #expect(half == ref.map { $0 * 0.5 }, "volume 50 is a gain of exactly 0.5")

        let cap2 = ALSAFileCapture(in: try Harness.makeTemporaryDirectory())
        let s = try runProcess(backline, ["play", "--no-mpris", "--start", "0:01.5", "--device", cap2.device, tone.path], environment: try isolated())
        #expect(s.status == 0, "\(s.stderr)")
        let tail = try cap2.f32()
        #expect(tail == Array(ref.dropFirst(2 * 66_150)), "from frame 66150 (1.5 s) on, bit-exact: \(tail.count) samples vs \(ref.count - 2 * 66_150)")

        // Repeat one: the item is announced again and again until the player is stopped.
        let p = try SpawnedProcess(backline, ["play", "--no-mpris", "--repeat", "one", "--device", "null", tone.path], environment: try isolated())
        #expect(eventually(timeout: 20) { p.stdout.components(separatedBy: "▶ option-tone.mp3").count > 3 }, "\(p.stdout)")
        p.signal(SIGTERM)
        #expect(try p.wait(timeout: 5) == 128 + SIGTERM, "ends by the signal, after closing the device")

        let dir = try Harness.makeTemporaryDirectory("play-shuffle")
        let short = try Fixtures.tone("shuffle-tone", seconds: 0.2, frequency: 700)
        let names = (1...8).map { "s\($0).mp3" }
        for n in names { try FileManager.default.copyItem(at: short, to: dir.appendingPathComponent(n)) }
        let sh = try runProcess(backline, ["play", "--no-mpris", "--shuffle", "--device", "null"] + names.map { dir.appendingPathComponent($0).path },
                                environment: try isolated())
        let order = Self.announced(sh.stdoutText)
        #expect(order.sorted() == names, "each item once: \(order)")
        #expect(order != names, "shuffled (1 in 40320 to fail by chance): \(order)")

        let bad = try runProcess(backline, ["play", "--repeat", "twice", "--volume", "150", tone.path], environment: try isolated())
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("--repeat must be all, one or off (got 'twice')"), "\(bad.stderr)")
        let badStart = try runProcess(backline, ["play", "--start", "1:75", tone.path], environment: try isolated())
        #expect(badStart.stderr.contains("--start must be seconds, M:SS or H:MM:SS (got '1:75')"), "\(badStart.stderr)")
    }

    @Test("--verbose names each item's format: a 5.1 FLAC plays as 6 channels on ALSA's null device, down-mixed (and said so) on a stereo PulseAudio sink and under --channels 2")
    func verboseMultichannel() throws {
        let src = try FormatFixtures.source("cli-51", seconds: 0.4, rate: 48_000, channels: 6)
        let flac = try FormatFixtures.flac("cli-flac-51", from: src)
        let name = flac.lastPathComponent
        let alsa = try runProcess(backline, ["play", "--no-mpris", "--verbose", "--device", "null", flac.path], environment: try isolated())
        #expect(alsa.status == 0, "\(alsa.stderr)")
        #expect(alsa.stderr.contains("backline: device null: float32, 48000 Hz, 6 channels"), "\(alsa.stderr)")
        #expect(alsa.stderr.contains("backline: \(name): FLAC, 16-bit, 48000 Hz, 5.1, ") && !alsa.stderr.contains("down-mixed"), "\(alsa.stderr)")
        let capped = try runProcess(backline, ["play", "--no-mpris", "--verbose", "--channels", "2", "--device", "null", flac.path],
                                    environment: try isolated())
        #expect(capped.stderr.contains("backline: device null: float32, 48000 Hz, 2 channels"), "\(capped.stderr)")
        #expect(capped.stderr.contains("backline: \(name): FLAC, 16-bit, 48000 Hz, 5.1, down-mixed to stereo (ITU-R BS.775)"), "\(capped.stderr)")
        let sink = try PulseNullSink.shared()
        let pulse = try runProcess(backline, ["play", "--no-mpris", "--verbose", "--device", sink.alsaDevice, flac.path],
                                   environment: try isolated(sink.environment))
        #expect(pulse.status == 0, "\(pulse.stderr)")
        #expect(pulse.stderr.contains("backline: device pulse: float32, 48000 Hz, 2 channels"), "\(pulse.stderr)")
        #expect(pulse.stderr.contains("backline: \(name): FLAC, 16-bit, 48000 Hz, 5.1, down-mixed to stereo (ITU-R BS.775)"), "\(pulse.stderr)")
    }

    @Test("FFmpeg's libraries are opened by an item that needs them, not by an MP3 or a FLAC (nor is libcurl); an .m4a plays through them and --verbose names its codec")
    func ffmpegOnDemand() throws {
        let src = try FormatFixtures.source("cli-ff", seconds: 0.3)
        let mp3 = try Fixtures.mp3(from: src, name: "cli-ff")
        let flac = try FormatFixtures.flac("cli-ff", from: src)
        let m4a = try FormatFixtures.ffmpeg("cli-ff", from: src, ext: "m4a", args: ["-c:a", "alac"])
        func loaded(_ file: URL) throws -> (libraries: [String], result: ProcessResult) {
            var env = try isolated()
            env["LD_DEBUG"] = "files"
            let r = try runProcess(backline, ["play", "--no-mpris", "--verbose", "--device", "null", file.path], environment: env)
            let libs = r.stderr.split(separator: "\n").filter { $0.contains("file=") && $0.contains("[0];  needed by") || $0.contains("dynamically loaded by") }
            return (libs.map(String.init), r)
        }
        for file in [mp3, flac] {
            let (libs, r) = try loaded(file)
            #expect(r.status == 0, "\(r.stderr.suffix(500))")
            #expect(!libs.contains { $0.contains("libavcodec") || $0.contains("libavformat") }, "\(file.lastPathComponent): \(libs.filter { $0.contains("libav") })")
            #expect(!libs.contains { $0.contains("libcurl") }, "\(file.lastPathComponent): libcurl is opened by the first stream only")
        }
        let (libs, r) = try loaded(m4a)
        #expect(r.status == 0, "\(r.stderr.suffix(500))")
        #expect(libs.contains { $0.contains("libavformat") }, "m4a: FFmpeg opened")
        #expect(r.stderr.contains("backline: cli-ff.m4a: Apple Lossless (MPEG-4), 16-bit, 44100 Hz, stereo"), "\(r.stderr.suffix(800))")
    }

    @Test("an MP3 or a FLAC loads none of libvorbisfile, libopusfile, libsoxr, libgomp; an Ogg Vorbis and an Opus each open their own with dlopen, no other, and play")
    func codecLibrariesOnDemand() throws {
        let src = try FormatFixtures.source("cli-dl", seconds: 0.3)
        let mp3 = try Fixtures.mp3(from: src, name: "cli-dl")
        let flac = try FormatFixtures.flac("cli-dl", from: src)
        let ogg = try FormatFixtures.vorbis("cli-dl", from: src)
        let opus = try FormatFixtures.opus("cli-dl", from: src)
        /// The shared objects the dynamic loader loaded for the run, by name.
        func loaded(_ file: URL) throws -> (libraries: [String], result: ProcessResult) {
            var env = try isolated()
            env["LD_DEBUG"] = "files"
            let r = try runProcess(backline, ["play", "--no-mpris", "--device", "null", file.path], environment: env)
            let libs = r.stderr.split(separator: "\n").filter { $0.contains("file=") && ($0.contains("needed by") || $0.contains("dynamically loaded by")) }
            return (libs.map(String.init), r)
        }
        let onDemand = ["libvorbisfile", "libopusfile", "libsoxr", "libgomp"]
        for file in [mp3, flac] {
            let (libs, r) = try loaded(file)
            #expect(r.status == 0, "\(r.stderr.suffix(500))")
            for name in onDemand {
                #expect(!libs.contains { $0.contains(name) }, "\(file.lastPathComponent): \(name) loaded")
            }
        }
        for (file, name) in [(ogg, "libvorbisfile"), (opus, "libopusfile")] {
            let (libs, r) = try loaded(file)
            #expect(r.status == 0, "\(r.stderr.suffix(500))")
            #expect(libs.contains { $0.contains(name) && $0.contains("dynamically loaded by") }, "\(file.lastPathComponent): \(name) not opened")
            #expect(Self.announced(r.stdoutText) == [file.lastPathComponent], "\(r.stdoutText)")
            for other in onDemand where other != name {
                #expect(!libs.contains { $0.contains(other) }, "\(file.lastPathComponent): \(other) loaded")
            }
        }
    }

    @Test("--verbose prints the device's settings and scheduling; a bad device is named without ALSA's raw lines")
    func verboseAndDevice() throws {
        let tone = try Fixtures.tone("verbose-tone", seconds: 0.5, frequency: 550)
        let r = try runProcess(backline, ["play", "--no-mpris", "--verbose", "--buffer-ms", "200", "--device", "null", tone.path], environment: try isolated())
        #expect(r.status == 0, "\(r.stderr)")
        let line = r.stderr.split(separator: "\n").first { $0.hasPrefix("backline: device null: ") }.map(String.init) ?? ""
        #expect(line.hasPrefix("backline: device null: float32, 44100 Hz, 2 channels, buffer 8820 frames (200 ms), period 4410 frames (100 ms); output thread at "),
                "\(r.stderr)")
        #expect(line.hasSuffix("real-time (SCHED_FIFO)") || line.hasSuffix("normal priority (no SCHED_FIFO)"), "\(line)")
        let s16 = try runProcess(backline, ["play", "--no-mpris", "--verbose", "--format", "s16", "--device", "null", tone.path], environment: try isolated())
        #expect(s16.stderr.contains("backline: device null: s16, 44100 Hz, 2 channels, buffer 22050 frames (500 ms), period 11025 frames (250 ms)"), "\(s16.stderr)")

        let d = try runProcess(backline, ["play", "--no-mpris", "--device", "no_such_device_xyz", tone.path], environment: try isolated())
        #expect(d.status == 1)
        #expect(!d.stderr.contains("ALSA lib"), "\(d.stderr)")
        #expect(d.stderr.hasPrefix("backline: audio device no_such_device_xyz: "), "\(d.stderr)")
    }
}

extension PlayInputTests {
    @Test("URLs: `play URL` plays a stream, a playlist by URL plays its entries (one relative to it), ftp:// is refused with its name, a 404 fails its item with the status and the next plays")
    func urls() throws {
        let dir = try Harness.makeTemporaryDirectory("play-urls")
        let tone = try Fixtures.tone("input-tone", seconds: 0.3, frequency: 500)
        try FileManager.default.copyItem(at: tone, to: dir.appendingPathComponent("a.mp3"))
        let server = try HTTPTestServer(directory: dir)
        try "a.mp3\n\(server.url("files/a.mp3"))\n".write(to: dir.appendingPathComponent("list.m3u"), atomically: true, encoding: .utf8)
        let r = try runProcess(backline, ["play", "--no-mpris", "--device", "null", server.url("files/a.mp3"), server.url("files/list.m3u"),
                                          "ftp://127.0.0.1/x.mp3", server.url("files/missing.mp3"), tone.path], environment: try isolated())
        #expect(r.status == 2, "an item failed: \(r.stderr)")
        #expect(Self.announced(r.stdoutText) == ["a.mp3", "a.mp3", "a.mp3", "input-tone.mp3"], "\(r.stdoutText)")
        #expect(r.stderr.contains("ftp://127.0.0.1/x.mp3: no input for ftp: URLs"), "\(r.stderr)")
        #expect(r.stderr.contains("HTTP 404"), "\(r.stderr)")
    }
}
