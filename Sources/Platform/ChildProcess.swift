#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: the call's name, `errno` and its message.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public let call: String
    public let code: Int32
    public init(_ call: String, code: Int32 = errno) {
        self.call = call
        self.code = code
    }
    public var message: String { String(cString: strerror(code)) }
    public var description: String { "\(call): \(message) (errno \(code))" }
}

/// This process's environment (`environ`), for a child that should see it.
public func currentEnvironment() -> [String: String] {
    var out: [String: String] = [:]
    var p = environ
    while let e = p.pointee {
        let s = String(cString: e)
        if let eq = s.firstIndex(of: "=") { out[String(s[..<eq])] = String(s[s.index(after: eq)...]) }
        p += 1
    }
    return out
}

/// A program started with `posix_spawn`, its standard input `/dev/null` and its standard
/// output and error one pipe this process reads (what the daemon's hooks need of Foundation's
/// `Process`). As `Process` did, it runs in a process group of its own (a `kill 0` in it, or
/// the terminal's signals, stay there), with no signal blocked and SIGPIPE, SIGINT and SIGTERM
/// at their defaults whatever this process does with them.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked Sendable: one owner drives it (read, wait, kill) from one thread at a time.
    /// The child's process id.
    public let pid: pid_t
    private var output: Int32
    private var buffered: [UInt8] = []
    private var status: Int32?

    /// Starts `path` with `arguments` (argv[1...]) and exactly `environment`.
    public init(path: String, arguments: [String], environment: [String: String]) throws(SystemError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw SystemError("pipe") }
        // Close-on-exec: the child sees the write end only as its descriptors 1 and 2.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), defaults = sigset_t()
        sigemptyset(&none)
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child = pid_t()
        let r = posix_spawn(&child, path, &actions, &attributes, argv, envp)
        close(fds[1])
        guard r == 0 else {
            close(fds[0])
            throw SystemError("posix_spawn \(path)", code: r)
        }
        pid = child
        output = fds[0]
    }

    deinit {
        if output >= 0 { close(output) }
    }

    /// The next line of the child's output (without its newline), waiting until `deadline`
    /// (CLOCK_MONOTONIC nanoseconds); nil at the end of its output or at the deadline.
    public func readLine(until deadline: Int) -> Substring? {
        while true {
            if let nl = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<nl], as: UTF8.self)
                buffered.removeSubrange(...nl)
                return Substring(line)
            }
            guard output >= 0 else { return nil }
            let left = deadline - monotonicNanos()
            var p = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            if left <= 0 { return nil }
            let ready = poll(&p, 1, Int32(clamping: (left + 999_999) / 1_000_000))
            if ready < 0, errno == EINTR { continue }
            if ready == 0 { return nil }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(output, &chunk, chunk.count)
            if n < 0, errno == EINTR { continue }
            if n <= 0 {
                close(output)
                output = -1
                if buffered.isEmpty { return nil }
                let rest = String(decoding: buffered, as: UTF8.self)
                buffered = []
                return Substring(rest)
            }
            buffered += chunk[..<n]
        }
    }

    /// Whether the child's output has ended (it, and any process it left holding the pipe, closed it).
    public var outputEnded: Bool { output < 0 && buffered.isEmpty }

    /// Waits for the child to exit until `deadline` (CLOCK_MONOTONIC nanoseconds): its exit
    /// status (128 + the signal for a signalled child), or nil if it is still running then.
    public func wait(until deadline: Int) -> Int32? {
        while status == nil {
            var raw: Int32 = 0
            let r = waitpid(pid, &raw, WNOHANG)
            if r == pid {
                let signal = raw & 0x7f
                status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
            } else if r < 0, errno != EINTR {
                status = -1
            } else if monotonicNanos() >= deadline {
                return nil
            } else {
                sleepThread(seconds: 0.005)
            }
        }
        return status
    }

    /// Sends `signal` to the child's process group: the child and whatever it started.
    public func kill(_ signal: Int32 = SIGKILL) {
        if status == nil { _ = Glibc.kill(-pid, signal) }
    }
}
