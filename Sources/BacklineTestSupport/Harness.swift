import Foundation
import Locking
import Synchronization
public import Testing

/// The real-audio test harness: command-line tools, the private PulseAudio null sink,
/// bit-exact ALSA file capture and reference decodes with the `mpg123` tool.
///
/// Nothing here is mocked: every helper drives the real program. Tests that need a tool
/// gate themselves with ``Harness/toolsAvailable`` — which is always `true` under CI
/// (`CI` set), so a missing tool there fails loudly instead of skipping.
public enum Harness {
    /// Tools the audio tests drive.
    public static let requiredTools = ["pulseaudio", "pactl", "parec", "pacat", "aplay", "lame", "sox", "mpg123",
                                              "twolame", "script", "ps"]

    /// Absolute path of `tool` on `PATH`, or nil.
    public static func which(_ tool: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// The sanitizer the tests and the daemon they start were built with (`scripts/sanitize`
    /// sets `BACKLINE_SANITIZER`: `address` or `thread`), nil for a normal build. Resident
    /// memory is then the sanitizer's (shadow memory, a quarantine of freed blocks), so a test
    /// that bounds it checks everything else and leaves that bound out.
    public static let sanitizer: String? = ProcessInfo.processInfo.environment["BACKLINE_SANITIZER"]

    /// Tools from ``requiredTools`` that are not installed.
    public static var missingTools: [String] { requiredTools.filter { which($0) == nil } }

    /// Whether audio tests should run: the tools are there, or we are in CI (where absence is a failure).
    public static var toolsAvailable: Bool {
        missingTools.isEmpty || isCI
    }

    /// Whether the tests run under CI (`CI` set). There a test that needs a missing tool runs
    /// and fails, instead of being skipped.
    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] != nil }

    /// Whether a test that drives `tools` should run: each is on `PATH`, or the tests run under
    /// CI. The condition of `.enabled(if: Harness.has("mpc"), "needs mpc")`.
    public static func has(_ tools: String...) -> Bool {
        isCI || tools.allSatisfy { which($0) != nil }
    }

    /// The trait every audio test carries: runs when the tools are there (always under CI),
    /// otherwise skips with the names of the missing tools.
    public static var audioTools: ConditionTrait {
        .enabled(
            if: toolsAvailable,
            Comment(rawValue: "audio tools missing (\(missingTools.joined(separator: ", "))): run scripts/bootstrap --test")
        )
    }

    /// A fresh private directory under the system temporary directory.
    ///
    /// Removed with everything in it when the test process exits (each run made thousands of
    /// them, the format fixtures 171 MB, and left them all: a machine running the suite often
    /// filled its disk). `BACKLINE_KEEP_TEST_FILES=1` keeps them, to look at after a failure.
    public static func makeTemporaryDirectory(_ label: String = "backline-test") throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(label)-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        temporaryDirectories.withLock { made in
            if made.isEmpty, ProcessInfo.processInfo.environment["BACKLINE_KEEP_TEST_FILES"] == nil {
                atexit { Harness.removeTemporaryDirectories() }
            }
            made.append(url.path)
        }
        return url
    }

    /// The directories ``makeTemporaryDirectory(_:)`` made in this process.
    private static let temporaryDirectories = Lock<[String]>([])

    private static func removeTemporaryDirectories() {
        for path in temporaryDirectories.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    }

    /// The package root (found from this source file), for `Resources/` and the built `backline`.
    public static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()
}

/// The outcome of a finished child process.
public struct ProcessResult: Sendable {
    /// Exit status (or 128 + signal number when killed).
    public var status: Int32
    /// Everything it wrote to standard output.
    public var stdout: Data
    /// Everything it wrote to standard error, as text.
    public var stderr: String
    /// Standard output as UTF-8 text.
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

/// Failure to run a tool the harness depends on.
public struct HarnessError: Error, CustomStringConvertible {
    /// What went wrong, with the command and its output.
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Runs a program to completion, collecting its output.
///
/// Output goes through files, not pipes: a pipe's write end inherited by a concurrently spawned
/// long-lived child (the test sound server) would keep the read from ever ending.
/// - Parameters:
///   - executable: a name on `PATH` or an absolute path.
///   - environment: variables added to (overriding) this process's environment.
@discardableResult
public func runProcess(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                       timeout: TimeInterval = 120) throws -> ProcessResult
{
    let p = try SpawnedProcess(executable, arguments, environment: environment)
    let status = try p.wait(timeout: timeout)  // a hung child fails its test instead of hanging the run
    let out = Data(readWholeFile(p.stdoutFile.path))
    let err = p.stderr
    try? FileManager.default.removeItem(at: p.stdoutFile.deletingLastPathComponent())
    return ProcessResult(status: status, stdout: out, stderr: err)
}

/// Polls `condition` every `interval` seconds (5 ms) for up to `timeout` seconds (at least once); whether it held.
@discardableResult
public func eventually(timeout: Double = 10, every interval: Double = 0.005, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    repeat {
        if condition() { return true }
        usleep(useconds_t(interval * 1e6))
    } while Date() < deadline
    return false
}

extension Harness {
    /// A loopback TCP port nobody listens on (bound, then closed at once), never one this
    /// process handed out before: tests run side by side, and two servers started at once
    /// must not be given the same port (the second would fail to listen, and its clients would
    /// reach the first).
    public static func freePort() throws -> Int {
        for _ in 0..<64 {
            let port = try unusedPort()
            if handedOutPorts.withLock({ $0.insert(port).inserted }) { return port }
        }
        throw HarnessError("no loopback port left that was not handed out before")
    }

    private static let handedOutPorts = Lock<Set<Int>>([])

    private static func unusedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket failed") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0 else { throw HarnessError("bind failed") }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
