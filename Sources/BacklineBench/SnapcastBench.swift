import Daemon
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Feeding Snapcast (issue 38): the CPU of `backline daemon --device pipe:FIFO` playing 60 s of
/// a 44.1 kHz MP3 into a private `snapserver`'s FIFO (resampled to its 48 kHz), beside mpd's
/// `fifo` output doing the same into the same snapserver, one after the other.
public enum SnapcastBench {
    static let seconds = 60

    /// Asks once a second (a status poll every 2 ms would be most of what is measured).
    static func waitSlowly(_ seconds: Int, _ done: () -> Bool) {
        for _ in 0..<seconds where !done() { sleep(1) }
    }

    public static func run(executable: String) throws -> [BenchResult] {
        guard let snapserver = ["/usr/bin/snapserver", "/usr/sbin/snapserver"].first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else {
            FileHandle.standardError.write(Data("bench: snapcast rows skipped: no snapserver (scripts/bootstrap --bench)\n".utf8))
            return []
        }
        let dir = NSTemporaryDirectory() + "backline-snapcast-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/data", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try DaemonBench.shell("""
            sox -n -r 44100 -c 2 -b 16 \(dir)/tone.wav synth \(seconds) sine 440 gain -6 && lame --quiet -b 192 \(dir)/tone.wav \(dir)/music/tone.mp3
            """)
        let fifo = dir + "/snapfifo"
        let port = Int.random(in: 20_000...30_000)
        try """
            [server]
            datadir = \(dir)/data
            [http]
            enabled = false
            [tcp]
            enabled = false
            [stream]
            bind_to_address = 127.0.0.1
            port = \(port)
            source = pipe://\(fifo)?name=default&mode=create
            [logging]
            """.write(toFile: dir + "/snapserver.conf", atomically: true, encoding: .utf8)
        let server = try Child(snapserver, ["-c", dir + "/snapserver.conf"], environment: [:])
        defer { server.stop() }
        guard DaemonBench.waitUntil(10, { FileManager.default.fileExists(atPath: fifo) }) else { throw BenchError("snapserver made no FIFO") }

        // Ours.
        let socket = dir + "/run/control.sock"
        let daemon = try Child(executable, ["daemon", "--socket", socket, "--music-dir", dir + "/music", "--state-file", dir + "/state.json",
                                            "--device", "pipe:\(fifo)?format=48000:16:2", "--config", "/dev/null", "--no-mpris",
                                            "--library", "off"],
                               environment: ["XDG_RUNTIME_DIR": dir + "/rt", "XDG_CACHE_HOME": dir + "/cache"])
        defer { daemon.stop() }
        guard DaemonBench.waitUntil(20, { (try? ControlClient(socketPath: socket).request("ping")) != nil }) else {
            throw BenchError("backline daemon did not start")
        }
        let c = try ControlClient(socketPath: socket)
        _ = try c.request("add", [("path", "tone.mp3")])
        let pid = daemon.process.processIdentifier
        let before = FormatsBench.cpuSeconds(pid)
        _ = try c.request("play")
        waitSlowly(seconds + 30) { (try? c.request("status"))?["state"]?.string == "stopped" }
        let ours = before.flatMap { b in FormatsBench.cpuSeconds(pid).map { $0 - b } }
        daemon.stop()

        // mpd's fifo output into the same FIFO.
        var theirs: Double?
        if let mpdPath = ["/usr/bin/mpd", "/usr/sbin/mpd"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
            let msock = dir + "/mpd.sock"
            try """
                music_directory "\(dir)/music"
                db_file "\(dir)/mpd.db"
                state_file "\(dir)/mpd.state"
                bind_to_address "\(msock)"
                audio_output {
                    type "fifo"
                    name "snapcast"
                    path "\(fifo)"
                    format "48000:16:2"
                }
                """.write(toFile: dir + "/mpd.conf", atomically: true, encoding: .utf8)
            let mpd = try Child(mpdPath, ["--no-daemon", dir + "/mpd.conf"], environment: [:])
            defer { mpd.stop() }
            if DaemonBench.waitUntil(20, { (try? LineConnection(unix: msock, greeting: true)) != nil }) {
                let m = try LineConnection(unix: msock, greeting: true)
                _ = try m.exchange("update")
                _ = DaemonBench.waitUntil(30) { ((try? m.exchange("status")) ?? "").contains("updating_db") == false }
                _ = try m.exchange("add \"tone.mp3\"")
                let mpid = mpd.process.processIdentifier
                let before = FormatsBench.cpuSeconds(mpid)
                _ = try m.exchange("play")
                waitSlowly(seconds + 30) { ((try? m.exchange("status")) ?? "").contains("state: stop") }
                theirs = before.flatMap { b in FormatsBench.cpuSeconds(mpid).map { $0 - b } }
            }
        }
        guard let ours else { throw BenchError("no CPU reading of the daemon") }
        return [BenchResult(name: "Snapcast: CPU of the daemon feeding snapserver's FIFO, 60 s MP3 44.1 → 48 kHz", value: ours,
                            unit: "s CPU", reference: theirs, referenceName: "mpd's fifo output, the same snapserver")]
    }
}
