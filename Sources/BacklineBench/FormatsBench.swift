import Foundation

/// Each open format decoded to ALSA's `null` device by `backline-player play`, beside its
/// reference command-line decoder writing to /dev/null, on the same 60 s file: instructions
/// (callgrind, stripped binary, as ``InstructionsBench``), wall time (median of 3; start-up
/// included: about 10 ms of the player's) and the player's peak RSS.
public enum FormatsBench {
    struct Format {
        var name: String
        var file: String
        var reference: [String]
        var referenceName: String
    }

    /// The 60 s test files (made once, in the bench directory) and their references.
    static func formats() throws -> [Format] {
        let dir = try BenchFiles.directory()
        func make(_ name: String, _ steps: [[String]]) throws -> String { try BenchFiles.make(name, steps) }
        let synth = ["synth", "60", "pinknoise", "sine", "220-880", "gain", "-12"]
        let wav = try make("fmt-60s-44k16.wav", [["sox", "-n", "-r", "44100", "-c", "2", "-b", "16", "\(dir)/fmt-60s-44k16.wav"] + synth])
        let hires = try make("fmt-60s-96k24.wav", [["sox", "-n", "-r", "96000", "-c", "2", "-b", "24", "\(dir)/fmt-60s-96k24.wav"] + synth])
        let flac = try make("fmt-60s-44k16.flac", [["flac", "--silent", "-f", "-o", "\(dir)/fmt-60s-44k16.flac", wav]])
        let flac24 = try make("fmt-60s-96k24.flac", [["flac", "--silent", "-f", "-o", "\(dir)/fmt-60s-96k24.flac", hires]])
        let vorbis = try make("fmt-60s.ogg", [["oggenc", "--quiet", "-q", "5", "-o", "\(dir)/fmt-60s.ogg", wav]])
        let opus = try make("fmt-60s.opus", [["opusenc", "--quiet", "--bitrate", "128", wav, "\(dir)/fmt-60s.opus"]])
        // 10 minutes of AAC and Apple Lossless (FFmpeg's decoders), so that the player's start-up
        // (about 10 ms) is a small part of what is measured: ten loops of the 60 s source.
        let long = try make("fmt-600s-44k16.wav", [["sox", wav, "\(dir)/fmt-600s-44k16.wav", "repeat", "9"]])
        let aac = try make("fmt-600s.m4a", [["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", long, "-c:a", "aac", "-b:a", "256k",
                                             "\(dir)/fmt-600s.m4a"]])
        let alac = try make("fmt-600s-alac.m4a", [["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", long, "-c:a", "alac",
                                                   "\(dir)/fmt-600s-alac.m4a"]])
        let ffmpeg = ["/usr/bin/ffmpeg", "-nostdin", "-loglevel", "error", "-i"]
        return [
            Format(name: "FLAC 16/44.1", file: flac, reference: ["/usr/bin/flac", "-d", "-c", "-s", flac], referenceName: "flac -d -c"),
            Format(name: "FLAC 24/96", file: flac24, reference: ["/usr/bin/flac", "-d", "-c", "-s", flac24], referenceName: "flac -d -c"),
            Format(name: "Ogg Vorbis q5", file: vorbis, reference: ["/usr/bin/oggdec", "-Q", "-o", "-", vorbis], referenceName: "oggdec"),
            Format(name: "Opus 128k", file: opus, reference: ["/usr/bin/opusdec", "--quiet", "--float", opus, "-"], referenceName: "opusdec --float"),
            Format(name: "WAV 16/44.1", file: wav, reference: ["/usr/bin/sox", "-q", wav, "-t", "raw", "-"], referenceName: "sox to raw"),
            Format(name: "AAC 256k, 10 min", file: aac, reference: ffmpeg + [aac, "-f", "null", "-"], referenceName: "ffmpeg -f null"),
            Format(name: "ALAC 16/44.1, 10 min", file: alac, reference: ffmpeg + [alac, "-f", "null", "-"], referenceName: "ffmpeg -f null"),
        ]
    }

    public static func run(player source: String) throws -> [BenchResult] {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/valgrind") else {
            throw BenchError("valgrind is not installed (scripts/bootstrap --bench installs it)")
        }
        let dir = NSTemporaryDirectory() + "backline-formats-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let player = "\(dir)/backline-player"
        try FileManager.default.copyItem(atPath: source, toPath: player)
        let s = try InstructionsBench.capture("/usr/bin/strip", [player])
        guard s.status == 0 else { throw BenchError("strip failed: \(s.stderr)") }
        var rows: [BenchResult] = []
        for f in try formats() {
            let ours = [player, "play", "--device", "null", "--no-keys", "--no-mpris", f.file]
            let a = try InstructionsBench.profile(ours, in: dir, tag: "ours")
            let b = try InstructionsBench.profile(f.reference, in: dir, tag: "ref")
            rows.append(BenchResult(name: "instructions, \(f.name)\(f.name.contains("min") ? "" : ", 60 s") → ALSA null (callgrind, stripped)", value: Double(a.total) / 1e6,
                                    unit: "M instr", reference: Double(b.total) / 1e6, referenceName: f.referenceName))
            var mine: [ChildUsage] = [], theirs: [ChildUsage] = []
            for _ in 0..<3 {
                mine.append(try measureChild(ours[0], Array(ours.dropFirst())))
                theirs.append(try measureChild(f.reference[0], Array(f.reference.dropFirst())))
            }
            func median(_ u: [ChildUsage], _ k: (ChildUsage) -> Double) -> Double { u.map(k).sorted()[u.count / 2] }
            rows.append(BenchResult(name: "wall, \(f.name)\(f.name.contains("min") ? "" : ", 60 s") → ALSA null (median of 3)", value: median(mine) { $0.wallSeconds },
                                    unit: "s", reference: median(theirs) { $0.wallSeconds }, referenceName: f.referenceName))
            // (No reference: a decoder that exits within milliseconds is gone before its peak can be read.)
            rows.append(BenchResult(name: "peak RSS, \(f.name), play --device null", value: median(mine) { Double($0.maxRSSKiB) / 1024 },
                                    unit: "MiB"))
        }
        return rows
    }

    /// CPU seconds of a process (user + system, all threads so far), from `/proc/PID/stat`.
    static func cpuSeconds(_ pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15 (1-based in proc(5)).
        guard fields.count > 12, let u = Double(fields[11]), let s = Double(fields[12]) else { return nil }
        return (u + s) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// 60 s of the 24/96 FLAC played in real time through the PulseAudio sink: the CPU of
    /// `backline play --device pulse`, of mpv (`--ao=pulse`) and of mpd (its pulse output; the
    /// whole daemon's CPU from `play` to the end), the same file, one after another.
    public static func pulseCPU(executable: String) throws -> [BenchResult] {
        guard let flac24 = try formats().first(where: { $0.name == "FLAC 24/96" })?.file else { throw BenchError("no FLAC 24/96 file") }
        let ours = try measureChild(executable, ["play", "--device", "pulse", "--no-keys", "--no-mpris", flac24])
        guard ours.status == 0 else { throw BenchError("backline play failed (\(ours.status))") }
        var rows = [BenchResult]()
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/mpv") {
            let mpv = try measureChild("/usr/bin/mpv", ["--no-config", "--really-quiet", "--no-video", "--ao=pulse", flac24])
            rows.append(BenchResult(name: "CPU, FLAC 24/96, 60 s real time via PulseAudio", value: ours.cpuSeconds, unit: "s CPU",
                                    reference: mpv.status == 0 ? mpv.cpuSeconds : nil, referenceName: "mpv --ao=pulse"))
        }
        let dir = NSTemporaryDirectory() + "backline-cpu-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.copyItem(atPath: flac24, toPath: dir + "/music/hires.flac")
        var mpdCPU: Double?
        if let (mpd, connect) = try DaemonBench.startMPD(in: dir) {
            defer { mpd.stop() }
            let m = try connect()
            _ = try m.exchange("add \"hires.flac\"")
            let pid = mpd.process.processIdentifier
            let before = cpuSeconds(pid)
            _ = try m.exchange("play")
            _ = DaemonBench.waitUntil(90) { ((try? m.exchange("status")) ?? "").contains("state: stop") }
            if let before, let after = cpuSeconds(pid) { mpdCPU = after - before }
        }
        rows.append(BenchResult(name: "CPU, FLAC 24/96, 60 s real time via PulseAudio", value: ours.cpuSeconds, unit: "s CPU",
                                reference: mpdCPU, referenceName: "mpd (pulse output)"))
        rows.append(BenchResult(name: "peak RSS, FLAC 24/96 via PulseAudio, same run", value: Double(ours.maxRSSKiB) / 1024, unit: "MiB"))
        return rows
    }
}
