import Foundation

/// A private tmux server (its socket in a test's directory, no user configuration) with one
/// detached session: a terminal a test types into (`send-keys`) and reads (`capture-pane`).
public struct TmuxTerminal: Sendable {
    public let socket: String
    public let session: String
    /// Added to the environment of the server (and so of what runs in it).
    public let environment: [String: String]

    public init(socket: String, session: String = "test", environment: [String: String] = [:]) {
        self.socket = socket
        self.session = session
        self.environment = environment
    }

    /// Runs `tmux` against this server.
    @discardableResult
    public func tmux(_ args: [String]) throws -> ProcessResult {
        try runProcess("tmux", ["-S", socket, "-f", "/dev/null"] + args, environment: environment, timeout: 20)
    }

    /// Starts `command` (executed directly, no shell) in a detached `width`×`height` pane.
    public func start(_ command: [String], width: Int = 120, height: Int = 40) throws {
        let r = try tmux(["new-session", "-d", "-s", session, "-x", "\(width)", "-y", "\(height)"] + command)
        guard r.status == 0 else { throw HarnessError("tmux new-session failed: \(r.stderr)") }
    }

    /// Types `keys` (tmux key names: `Enter`, `Home`, `C-c`, or literal characters).
    public func keys(_ keys: String...) throws {
        let r = try tmux(["send-keys", "-t", session] + keys)
        guard r.status == 0 else { throw HarnessError("tmux send-keys \(keys) failed: \(r.stderr)") }
    }

    /// Types `text` literally, then Enter: a shell command line.
    public func line(_ text: String) throws {
        try tmux(["send-keys", "-t", session, "-l", text])
        try keys("Enter")
    }

    /// Resizes the pane's window to `width`×`height`.
    public func resize(width: Int, height: Int) throws {
        try tmux(["resize-window", "-t", session, "-x", "\(width)", "-y", "\(height)"])
    }

    /// The pane's text now ("" once the session is gone).
    public func screen() -> String {
        (try? tmux(["capture-pane", "-p", "-t", session]))?.stdoutText ?? ""
    }

    /// Polls the screen every 100 ms until `condition` holds or `timeout` seconds pass;
    /// whether it held, and the last screen (for the failure message).
    public func waitForScreen(timeout: Double = 10, _ condition: (String) -> Bool) -> (Bool, String) {
        let deadline = Date().addingTimeInterval(timeout)
        var text = screen()
        while !condition(text) {
            if Date() > deadline { return (false, text) }
            usleep(100_000)
            text = screen()
        }
        return (true, text)
    }

    /// Whether the session (its program) is still there.
    public var isRunning: Bool { (try? tmux(["has-session", "-t", session]))?.status == 0 }

    public func kill() { _ = try? tmux(["kill-server"]) }
}
