import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, with an empty signal mask and default signal
/// dispositions, so it can be stopped with SIGINT/SIGTERM like a process started from a shell.
///
/// (Foundation's `Process` spawns from whatever thread calls it; from a Dispatch worker the
/// child inherits a mask blocking nearly every signal, and `parec` or `backline play` then
/// ignore Ctrl-C.) Output goes to files, so nothing can block on a full pipe. The child keeps
/// only its standard descriptors: tests in other threads open files and pipes meanwhile, and a
/// long-lived child (the test sound server, a daemon) that inherited one held it as long as it
/// lived (a pipe's read never ended; an executable being copied could not be run: `Text file
/// busy`, met by CI).
public final class SpawnedProcess: @unchecked Sendable {
    // @unchecked Sendable: `exitStatus` is only touched under `lock`.
    /// The child's process id.
    public let pid: pid_t
    /// Where standard output goes.
    public let stdoutFile: URL
    /// Where standard error goes.
    public let stderrFile: URL
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 on), which Swift's Glibc
    /// module leaves out (it is declared for `_GNU_SOURCE` only): the child closes every
    /// descriptor from the given one up.
    private static let addCloseFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else {
            fatalError("glibc 2.34 or later is needed (posix_spawn_file_actions_addclosefrom_np)")
        }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Starts `executable` (a name on `PATH` or a path) with `arguments`, this process's
    /// environment plus `environment`, standard input from /dev/null.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                stdoutFile: URL? = nil, stderrFile: URL? = nil) throws {
        guard let path = executable.hasPrefix("/") ? executable : Harness.which(executable) else {
            throw HarnessError("\(executable) is not installed: run scripts/bootstrap --test")
        }
        let dir = try Harness.makeTemporaryDirectory("backline-spawn")
        self.stdoutFile = stdoutFile ?? dir.appendingPathComponent("stdout")
        self.stderrFile = stderrFile ?? dir.appendingPathComponent("stderr")

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var empty = sigset_t(), all = sigset_t()
        sigemptyset(&empty)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attr, &empty)
        posix_spawnattr_setsigdefault(&attr, &all)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, self.stdoutFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, self.stderrFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard Self.addCloseFrom(&actions, 3) == 0 else { throw HarnessError("posix_spawn_file_actions_addclosefrom_np failed") }

        let env = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0)=\($1)" }
        let argv = [path] + arguments
        var child: pid_t = 0
        let rc = withCStrings(argv) { cargv in
            withCStrings(env) { cenv in posix_spawn(&child, path, &actions, &attr, cargv, cenv) }
        }
        guard rc == 0 else { throw HarnessError("posix_spawn \(path) failed: \(String(cString: strerror(rc)))") }
        pid = child
    }

    /// Sends `signal` to the child (if it is still running).
    public func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Whether the child has not yet exited.
    public var isRunning: Bool {
        lock.withLock {
            if exitStatus != nil { return false }
            var status: Int32 = 0
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { exitStatus = Self.decode(status); return false }
            return r == 0
        }
    }

    /// Waits for the child to exit; returns its status (128 + signal when killed).
    /// With a `timeout`, kills it (SIGKILL) when it has not exited in time and throws.
    @discardableResult
    public func wait(timeout: TimeInterval? = nil) throws -> Int32 {
        if let timeout {
            let deadline = Date().addingTimeInterval(timeout)
            while isRunning {
                if Date() > deadline {
                    kill(pid, SIGKILL)
                    _ = try? wait()
                    throw HarnessError("process \(pid) did not exit within \(timeout) s; killed")
                }
                usleep(10_000)
            }
        }
        return lock.withLock {
            if let s = exitStatus { return s }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            exitStatus = Self.decode(status)
            return exitStatus!
        }
    }

    /// Everything written to standard output so far.
    public var stdout: String { String(decoding: readWholeFile(stdoutFile.path), as: UTF8.self) }
    /// Everything written to standard error so far.
    public var stderr: String { String(decoding: readWholeFile(stderrFile.path), as: UTF8.self) }

    private static func decode(_ status: Int32) -> Int32 {
        let sig = status & 0x7f
        return sig == 0 ? (status >> 8) & 0xff : 128 + sig
    }
}

/// The bytes of the file at `path` (empty when it cannot be read), read with `read(2)`.
///
/// Not `Data(contentsOf:)`: on this toolchain Foundation leaks a 4 KiB buffer each time it reads a
/// file whose size is 0 (an empty log, anything in /proc), which AddressSanitizer's leak check
/// reports at the end of `scripts/sanitize address` (1,181 such leaks in one run).
public func readWholeFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        bytes += chunk[..<n]
    }
    return bytes
}

private func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
    var ptrs: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    ptrs.append(nil)
    defer { for p in ptrs { free(p) } }
    return body(ptrs)
}
