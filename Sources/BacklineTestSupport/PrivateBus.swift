import Foundation

/// A private D-Bus session bus for one test (`dbus-daemon --session --fork`), stopped by
/// ``stop()`` or when released. Its ``environment`` points clients (playerctl, busctl, a
/// daemon) at it and nowhere else.
public final class PrivateBus: @unchecked Sendable {
    // @unchecked: immutable after init; `stop` is idempotent (kill of a reaped pid is ignored).
    public let address: String
    public let pid: pid_t

    public init() throws {
        let dir = try Harness.makeTemporaryDirectory("backline-bus")
        let config = dir.appendingPathComponent("session.conf")
        // The session bus's own configuration, with a socket in our directory.
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:dir=\(dir.path)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """.write(to: config, atomically: true, encoding: .utf8)
        let r = try runProcess("/usr/bin/dbus-daemon", ["--config-file=" + config.path, "--fork", "--print-address=1", "--print-pid=1"],
                               timeout: 20)
        let lines = r.stdoutText.split(separator: "\n").map(String.init)
        guard r.status == 0, lines.count >= 2, let pid = pid_t(lines[1]) else {
            throw HarnessError("dbus-daemon did not start: \(r.stderr)")
        }
        address = lines[0]
        self.pid = pid
    }

    /// What a client needs to use this bus.
    public var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": address] }

    public func stop() { kill(pid, SIGTERM) }

    deinit { stop() }
}
