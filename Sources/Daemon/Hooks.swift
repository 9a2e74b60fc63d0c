import Dispatch
import FoundationEssentials
import Logging
import Platform

/// Runs the configured `on-suspend` / `on-resume` shell commands: `/bin/sh -c COMMAND` with the
/// daemon's state in `BACKLINE_*` environment variables, killed after a timeout; its output is
/// logged line by line. Runs off the caller's thread; one hook at a time, in order.
public final class HookRunner: Sendable {
    private let timeout: Double
    private let logger: Logger
    private let queue = DispatchQueue(label: "backline.hooks")

    public init(timeout: Double, logger: Logger) {
        self.timeout = timeout
        self.logger = logger
    }

    /// Runs `command` (named `name` in the log) with `environment` added; `done` gets the exit
    /// status (nil when it could not start or was killed by the timeout).
    public func run(_ name: String, command: String, environment: [String: String],
                    done: (@Sendable (Int32?) -> Void)? = nil) {
        queue.async { [logger, timeout] in
            let child: ChildProcess
            do {
                child = try ChildProcess(path: "/bin/sh", arguments: ["-c", command],
                                         environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
            } catch {
                logger.error("hook could not start", metadata: ["hook": "\(name)", "error": "\(error)"])
                done?(nil)
                return
            }
            let deadline = monotonicNanos() + Int(timeout * 1e9)
            // Its output, line by line, until it ends; a command that exits leaving a process
            // holding the pipe gets one more second of output, as a command still writing at
            // the deadline gets none.
            var exitedAt: Int?
            while monotonicNanos() < deadline {
                if child.wait(until: 0) != nil {
                    exitedAt = exitedAt ?? monotonicNanos()
                    if monotonicNanos() - exitedAt! > 1_000_000_000 { break }
                }
                if let line = child.readLine(until: min(deadline, monotonicNanos() + 100_000_000)) {
                    if !line.isEmpty { logger.info("hook output", metadata: ["hook": "\(name)", "line": "\(line)"]) }
                } else if child.outputEnded {
                    break
                }
            }
            guard let status = child.wait(until: deadline) else {
                child.kill()
                _ = child.wait(until: .max)
                logger.warning("hook timed out and was killed", metadata: ["hook": "\(name)", "timeout": "\(timeout)"])
                done?(nil)
                return
            }
            if status == 0 {
                logger.info("hook finished", metadata: ["hook": "\(name)"])
            } else {
                logger.warning("hook failed", metadata: ["hook": "\(name)", "status": "\(status)"])
            }
            done?(status)
        }
    }
}
