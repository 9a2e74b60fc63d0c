import Foundation

/// Playback at 1.5 through the PulseAudio sink: 60 s of content (40 s of real time) of speech
/// (espeak-ng) and of music (the demo's chord and sweep), the CPU of `backline play --speed 1.5`
/// with each algorithm beside mpv's filter of the same kind on the same file (`--speed=1.5`
/// with `--af=scaletempo2`, `--af=rubberband=engine=finer`, or no pitch correction for
/// varispeed); and the peak RSS of `play --speed 1.5` beside `play` at 1.
public enum RateBench {
    /// The 60 s files, made once in the bench directory.
    static func files() throws -> (speech: String, music: String) {
        let dir = try BenchFiles.directory()
        func make(_ name: String, _ steps: [[String]]) throws -> String {
            try BenchFiles.make(name, steps, hint: " (scripts/bootstrap --bench installs espeak-ng)")
        }
        let text = """
            Chapter one. It was a bright cold day in April, and the clocks were striking thirteen. \
            The hallway smelt of boiled cabbage and old rag mats. At one end of it a coloured poster, \
            too large for indoor display, had been tacked to the wall. Outside, even through the shut \
            window pane, the world looked cold. Down in the street little eddies of wind were whirling \
            dust and torn paper into spirals, and though the sun was shining and the sky a harsh blue, \
            there seemed to be no colour in anything.
            """
        let speech = try make("rate-speech-60s.wav", [
            ["espeak-ng", "-s", "165", "-w", "\(dir)/rate-speech-raw.wav", text],
            ["sox", "\(dir)/rate-speech-raw.wav", "-r", "44100", "-c", "2", "-b", "16", "\(dir)/rate-speech-60s.wav", "repeat", "5", "trim", "0", "60"],
        ])
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let music = try make("rate-music-60s.wav", [
            ["mpg123", "-q", "-w", "\(dir)/rate-chord.wav", "\(root)/Resources/demo/01-sunrise.mp3"],
            ["mpg123", "-q", "-w", "\(dir)/rate-sweep.wav", "\(root)/Resources/demo/03-sweep.mp3"],
            ["sox", "\(dir)/rate-chord.wav", "\(dir)/rate-sweep.wav", "-r", "44100", "-c", "2", "-b", "16", "\(dir)/rate-music-60s.wav",
             "repeat", "4", "trim", "0", "60"],
        ])
        return (speech, music)
    }

    public static func run(executable: String) throws -> [BenchResult] {
        let (speech, music) = try files()
        let mpv = FileManager.default.isExecutableFile(atPath: "/usr/bin/mpv") ? "/usr/bin/mpv" : nil
        let kinds: [(algorithm: String, mpvFilter: [String], mpvName: String)] = [
            ("timeDomain", ["--af=scaletempo2"], "mpv --af=scaletempo2"),
            ("spectral", ["--af=rubberband=engine=finer"], "mpv --af=rubberband=engine=finer"),
            ("varispeed", ["--audio-pitch-correction=no"], "mpv --audio-pitch-correction=no"),
        ]
        var rows: [BenchResult] = []
        var rss: [String: Double] = [:]
        for (content, file) in [("speech", speech), ("music", music)] {
            for k in kinds {
                let ours = try measureChild(executable, ["play", "--device", "pulse", "--no-keys", "--no-mpris", "--speed", "1.5",
                                                         "--pitch-algorithm", k.algorithm, file])
                guard ours.status == 0 else { throw BenchError("backline play --speed 1.5 failed (\(ours.status))") }
                if content == "music" { rss[k.algorithm] = Double(ours.maxRSSKiB) / 1024 }
                var reference: Double?
                if let mpv {
                    let theirs = try measureChild(mpv, ["--no-config", "--really-quiet", "--no-video", "--ao=pulse", "--speed=1.5"] + k.mpvFilter + [file])
                    reference = theirs.status == 0 ? theirs.cpuSeconds : nil
                }
                rows.append(BenchResult(name: "CPU, \(content) 60 s at 1.5 via PulseAudio, \(k.algorithm)", value: ours.cpuSeconds, unit: "s CPU",
                                        reference: reference, referenceName: k.mpvName))
            }
        }
        let plain = try measureChild(executable, ["play", "--device", "pulse", "--no-keys", "--no-mpris", music])
        guard plain.status == 0 else { throw BenchError("backline play failed (\(plain.status))") }
        for k in kinds {
            rows.append(BenchResult(name: "peak RSS, music at 1.5 via PulseAudio, \(k.algorithm)", value: rss[k.algorithm] ?? 0, unit: "MiB",
                                    reference: Double(plain.maxRSSKiB) / 1024, referenceName: "play at 1"))
        }
        return rows
    }
}
