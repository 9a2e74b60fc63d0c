import Foundation

/// A private PulseAudio server with one null sink, for paced real-time tests.
///
/// It runs in its own runtime directory (nothing of the user's session is touched), keeps one
/// silent stream open so new streams do not hit the idle-sink start-up stall, and is watched by a
/// small shell guard that stops it when this test process ends — however it ends (a failed
/// expectation, a crash, a kill) — so nothing is left behind.
///
/// The sink runs with `norewinds=1`: audio a stream already handed over is played, never taken
/// back, so the monitor records exactly what a listener hears (with rewinds, a paused stream's
/// last ~10 ms reach the monitor twice).
///
/// ALSA reaches it through the `pulse` plugin: ``alsaDevice`` names that device, and
/// ``environment`` holds the `PULSE_*` variables a child process (or this one) needs.
public final class PulseNullSink: @unchecked Sendable {
    // @unchecked Sendable: all state is immutable after init except `guardProcess`, which only
    // `stop()` touches, under `lock`.

    /// The sink's sample rate (stereo, S16).
    public static let rate = 44100
    /// The sink's name; record from `\(sinkName).monitor`.
    public let sinkName = "backline_null"
    /// A second null sink on the same server, never recorded: where a test that does not hold
    /// the sink (``exclusive(_:)``) plays, so that a recording of ``sinkName`` in a parallel
    /// test never hears it (it did: an 880 Hz tone measured as 529 and 550 Hz in CI). Pass
    /// ``unheardEnvironment`` to such a player (libpulse's `PULSE_SINK`).
    public let unheardSinkName = "backline_unheard"
    /// ``environment`` with `PULSE_SINK` set to ``unheardSinkName``.
    public var unheardEnvironment: [String: String] { environment.merging(["PULSE_SINK": unheardSinkName]) { $1 } }
    /// The private directory holding the socket, logs and state.
    public let directory: URL
    /// `PULSE_SERVER` and friends: pass to a child, or use ``exportToProcess()``.
    public let environment: [String: String]
    /// The ALSA device name that plays into this sink (ALSA's `pulse` plugin).
    public let alsaDevice = "pulse"
    private var guardProcess: SpawnedProcess  // replaced only by `restart()`, under `lock`
    private let lock = NSLock()

    /// The server every test in this process shares, started on first use.
    public static func shared() throws -> PulseNullSink {
        try sharedLock.withLock {
            if let s = _shared { return s }
            let s = try PulseNullSink()
            s.exportToProcess()
            _shared = s
            return s
        }
    }
    /// Runs `body` with the shared sink to itself: tests in different suites run in parallel, and
    /// two of them playing into one sink would hear each other. Every test that plays into or
    /// records the sink goes through here.
    public static func exclusive<T>(_ body: (PulseNullSink) throws -> T) throws -> T {
        let sink = try shared()
        exclusiveLock.wait()
        defer { exclusiveLock.signal() }
        return try body(sink)
    }

    /// ``exclusive(_:)`` for async tests (a main-actor test, say): the wait for the sink happens
    /// off the caller's thread, so the main queue keeps running meanwhile. Run such a test in the
    /// one-at-a-time pass: while it holds the sink across `await`s, synchronous tests waiting for
    /// the sink block the cooperative threads its continuations need.
    public static func exclusive<T>(isolation: isolated (any Actor)? = #isolation,
                                    _ body: (PulseNullSink) async throws -> T) async throws -> T {
        let sink = try shared()
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                exclusiveLock.wait()
                c.resume()
            }
        }
        defer { exclusiveLock.signal() }
        return try await body(sink)
    }
    /// A semaphore rather than a lock: the async form releases it from whichever thread it ends on.
    private static let exclusiveLock = DispatchSemaphore(value: 1)
    private static let sharedLock = NSLock()
    nonisolated(unsafe) private static var _shared: PulseNullSink?  // guarded by sharedLock

    /// This server's sinks' rate (``rate`` unless another was asked for).
    public let sampleRate: Int

    /// Starts a new server and waits until it answers.
    /// - Parameters:
    ///   - sampleRate: The sinks' rate.
    ///   - modules: More `default.pa` lines, after the sinks (remap sinks onto the recorded one).
    public init(sampleRate: Int = PulseNullSink.rate, modules: [String] = []) throws {
        self.sampleRate = sampleRate
        directory = try Harness.makeTemporaryDirectory("backline-pulse")
        let d = directory.path
        let config = """
            load-module module-native-protocol-unix auth-anonymous=1 socket=\(d)/native
            load-module module-null-sink sink_name=\(sinkName) rate=\(sampleRate) channels=2 norewinds=1
            load-module module-null-sink sink_name=\(unheardSinkName) rate=\(sampleRate) channels=2 norewinds=1
            \(modules.joined(separator: "\n"))
            set-default-sink \(sinkName)

            """
        try config.write(toFile: "\(d)/default.pa", atomically: true, encoding: .utf8)
        environment = [
            "PULSE_SERVER": "unix:\(d)/native",
            "PULSE_RUNTIME_PATH": "\(d)/run",
            "PULSE_STATE_PATH": "\(d)/state",
            "PULSE_COOKIE": "\(d)/cookie",
        ]
        // The guard: runs the server in the foreground plus a silent keep-alive stream, and
        // kills both when the test process (its parent) is gone or when it is told to stop.
        let script = """
            trap 'kill $k $pa 2>/dev/null; wait; exit 0' TERM INT
            trap 'kill -KILL $pa 2>/dev/null; kill $k 2>/dev/null; wait; exit 0' USR1
            pulseaudio -n -F "\(d)/default.pa" --daemonize=no --exit-idle-time=-1 --use-pid-file=no \
              --disallow-exit --log-target=file:"\(d)/log" &
            pa=$!
            for i in $(seq 100); do pactl info >/dev/null 2>&1 && break; sleep 0.1; done
            pacat --playback --raw --format=s16le --rate=\(sampleRate) --channels=2 --latency-msec=100 \
              --stream-name=keepalive /dev/zero &
            k=$!
            while kill -0 \(getpid()) 2>/dev/null && kill -0 $pa 2>/dev/null; do sleep 0.5 & wait $!; done
            kill $k $pa 2>/dev/null; wait
            """
        guardScript = script
        guardProcess = try SpawnedProcess("/bin/sh", ["-c", script], environment: environment)
        // Ready when `pactl info` answers and the keep-alive stream is up.
        for _ in 0..<100 {
            let r = try? runProcess("pactl", ["list", "short", "sink-inputs"], environment: environment)
            if let r, r.status == 0, !r.stdoutText.isEmpty {
                try warmUp()
                return
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        stop()
        let text = String(decoding: readWholeFile("\(d)/log"), as: UTF8.self)
        let log = text.isEmpty ? "(no log)" : text
        throw HarnessError("PulseAudio null sink did not start within 10 s. Log:\n\(log)")
    }

    /// Plays 0.3 s of silence through a separate stream and waits for it: the first streams on a
    /// new null sink stall for up to ~2 s, and this takes that stall out of the tests' timings.
    private func warmUp() throws {
        let silence = directory.appendingPathComponent("warmup.raw")
        try Data(count: sampleRate * 4 * 3 / 10).write(to: silence)
        for _ in 0..<2 {
            try runProcess("pacat", ["--playback", "--raw", "--format=s16le", "--rate=\(sampleRate)", "--channels=2",
                                     silence.path], environment: environment)
        }
    }

    /// Sets the `PULSE_*` variables in this process, so in-process ALSA `pulse` devices reach this server.
    public func exportToProcess() {
        for (k, v) in environment { setenv(k, v, 1) }
    }

    private let guardScript: String

    /// Starts the server again after ``stop()``, on the same socket: clients see a sound-server
    /// restart. Returns when it answers.
    public func restart() throws {
        try lock.withLock {
            guardProcess = try SpawnedProcess("/bin/sh", ["-c", guardScript], environment: environment)
        }
        for _ in 0..<100 {
            if let r = try? runProcess("pactl", ["info"], environment: environment), r.status == 0 { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw HarnessError("PulseAudio did not restart within 10 s")
    }

    /// Kills the server with SIGKILL (a crash: clients see their connection drop, nothing is
    /// said first) and returns once it is gone; ``restart()`` brings it back.
    public func kill() {
        lock.withLock {
            guardProcess.signal(SIGUSR1)
            _ = try? guardProcess.wait(timeout: 10)
        }
    }

    /// Stops the server and its keep-alive stream.
    public func stop() {
        lock.withLock {
            guardProcess.signal(SIGTERM)
            _ = try? guardProcess.wait(timeout: 10)
        }
    }

    deinit { stop() }

    /// Starts recording the sink's monitor (S16LE stereo at ``sampleRate``) into a raw file.
    public func startRecording() throws -> MonitorRecording {
        try MonitorRecording(sink: self)
    }

    /// Records the monitor for as long as `body` runs, stopping the recorder even when `body` throws.
    public func record<T>(_ body: () throws -> T) throws -> (result: T, recording: [Int16]) {
        let rec = try startRecording()
        let result: T
        do { result = try body() } catch {
            _ = try? rec.stop()
            throw error
        }
        return (result, try rec.stop())
    }
}

/// A running `parec` of the null sink's monitor.
public final class MonitorRecording: @unchecked Sendable {
    // @unchecked Sendable: `process` is only stopped once, from the owner's thread.
    /// The raw S16LE stereo file being written.
    public let file: URL
    private let process: SpawnedProcess

    init(sink: PulseNullSink) throws {
        file = sink.directory.appendingPathComponent("monitor-\(UUID().uuidString.prefix(8)).raw")
        process = try SpawnedProcess(
            "parec",
            [
                "-d", "\(sink.sinkName).monitor", "--raw", "--format=s16le", "--rate=\(sink.sampleRate)",
                "--channels=2", "--latency-msec=20", file.path,
            ], environment: sink.environment)
        // Wait until the recorder is actually connected (its stream shows up as a source output).
        // (A recording begun late would miss the start of what it is meant to hear: fail instead.)
        for attempt in 0..<100 {
            let r = try runProcess("pactl", ["list", "short", "source-outputs"], environment: sink.environment)
            if !r.stdoutText.isEmpty { break }
            if attempt == 99 {
                process.signal(SIGKILL)
                _ = try? process.wait(timeout: 5)
                throw HarnessError("parec did not connect to \(sink.sinkName).monitor within 5 s")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Stops recording and returns the interleaved stereo samples.
    public func stop() throws -> [Int16] {
        process.signal(SIGINT)
        try process.wait(timeout: 10)
        return try PCM.readS16(file)
    }
}
