import Foundation
import Logging

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
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", command]
            p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let out = Pipe()
            p.standardOutput = out
            p.standardError = out
            p.standardInput = FileHandle.nullDevice
            do {
                try p.run()
            } catch {
                logger.error("hook could not start", metadata: ["hook": "\(name)", "error": "\(error)"])
                done?(nil)
                return
            }
            let finished = DispatchSemaphore(value: 0)
            p.terminationHandler = { _ in finished.signal() }
            let reader = DispatchQueue(label: "backline.hooks.output")
            let output = DispatchGroup()
            output.enter()
            reader.async {
                let data = out.fileHandleForReading.readDataToEndOfFile()
                for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
                    logger.info("hook output", metadata: ["hook": "\(name)", "line": "\(line)"])
                }
                output.leave()
            }
            if finished.wait(timeout: .now() + timeout) == .timedOut {
                kill(p.processIdentifier, SIGKILL)
                finished.wait()
                logger.warning("hook timed out and was killed", metadata: ["hook": "\(name)", "timeout": "\(timeout)"])
                _ = output.wait(timeout: .now() + 1)
                done?(nil)
                return
            }
            _ = output.wait(timeout: .now() + 1)
            let status = p.terminationStatus
            if status == 0 {
                logger.info("hook finished", metadata: ["hook": "\(name)"])
            } else {
                logger.warning("hook failed", metadata: ["hook": "\(name)", "status": "\(status)"])
            }
            done?(status)
        }
    }
}
