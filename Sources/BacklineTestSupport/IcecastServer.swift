import Foundation

/// Debian's `icecast2` on a loopback port with a private config, and `ffmpeg -re` as its source
/// (a file looped at real-time pace, copied, to the mount `/live.mp3` or `/live.ogg`); titles set through its
/// admin interface, the server killed, restarted, stopped and continued by the test.
public final class IcecastServer: @unchecked Sendable {
    public let port: Int
    public let directory: URL
    private let file: URL
    private var server: SpawnedProcess?
    private var source: SpawnedProcess?

    public static var available: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/icecast2") }

    /// The mount's format: `mp3` (`/live.mp3`) or `ogg` (`/live.ogg`: Vorbis or Opus, copied as they are).
    private let format: String

    /// Starts icecast2 and its source playing `file` (MP3, or an Ogg file with `format: "ogg"`) in a loop.
    public init(file: URL, format: String = "mp3") throws {
        self.format = format
        directory = try Harness.makeTemporaryDirectory("icecast")
        // icecast2 refuses to run as root unless it changes owner: its logs must be writable then.
        chmod(directory.path, 0o777)
        port = try Harness.freePort()
        self.file = file
        let owner = getuid() == 0 ? "<changeowner><user>nobody</user><group>nogroup</group></changeowner>" : ""
        let config = """
            <icecast>
              <limits><sources>2</sources><burst-size>65536</burst-size><source-timeout>30</source-timeout></limits>
              <authentication><source-password>hackme</source-password><admin-user>admin</admin-user><admin-password>adminpw</admin-password></authentication>
              <hostname>127.0.0.1</hostname><location>test</location><admin>test@localhost</admin>
              <listen-socket><port>\(port)</port><bind-address>127.0.0.1</bind-address></listen-socket>
              <paths><basedir>/usr/share/icecast2</basedir><logdir>\(directory.path)</logdir>
                <webroot>/usr/share/icecast2/web</webroot><adminroot>/usr/share/icecast2/admin</adminroot></paths>
              <logging><errorlog>error.log</errorlog><accesslog>access.log</accesslog><loglevel>2</loglevel></logging>
              <security><chroot>0</chroot>\(owner)</security>
            </icecast>
            """
        try config.write(to: directory.appendingPathComponent("icecast.xml"), atomically: true, encoding: .utf8)
        try startServer()
        try startSource()
    }

    deinit {
        source?.signal(SIGKILL)
        server?.signal(SIGKILL)
        _ = try? source?.wait(timeout: 5)
        _ = try? server?.wait(timeout: 5)
    }

    /// The mount's URL.
    public var url: String { "http://127.0.0.1:\(port)/live.\(format)" }

    /// Starts icecast2 and waits until it listens (and is still running: an answer from another
    /// server on the port would not be this one).
    public func startServer() throws {
        let started = try SpawnedProcess("/usr/bin/icecast2", ["-c", directory.appendingPathComponent("icecast.xml").path])
        server = started
        guard eventually(timeout: 10, { self.answers("/status-json.xsl") }), started.isRunning else {
            throw HarnessError("icecast2 did not start: \(started.stderr) \(errorLogTail)")
        }
    }

    /// Starts the source and waits until the mount is up. A source that exits before (icecast
    /// refused it, or a loaded machine let the connection time out) is started again, twice at
    /// most; what it and icecast said is in the error when the mount never comes up.
    public func startSource() throws {
        var said: [String] = []
        for _ in 0..<3 {
            let started = try SpawnedProcess("/usr/bin/ffmpeg", ["-nostdin", "-loglevel", "error", "-re", "-stream_loop", "-1", "-i", file.path,
                                                                 "-c", "copy", "-content_type", format == "ogg" ? "application/ogg" : "audio/mpeg",
                                                                 "-f", format, "icecast://source:hackme@127.0.0.1:\(port)/live.\(format)"])
            source = started
            if eventually(timeout: 15, { self.answers("/live.\(self.format)") || !started.isRunning }), started.isRunning { return }
            started.signal(SIGKILL)
            _ = try? started.wait(timeout: 5)
            said.append("ffmpeg: \(started.stderr.suffix(300))")
        }
        throw HarnessError("the icecast mount did not come up: \(said.joined(separator: "; ")); icecast: \(errorLogTail)")
    }

    /// The last lines icecast logged.
    private var errorLogTail: String {
        String(decoding: readWholeFile(directory.appendingPathComponent("error.log").path).suffix(600), as: UTF8.self)
    }

    /// Kills the server (SIGKILL) and its source.
    public func kill() {
        server?.signal(SIGKILL)
        source?.signal(SIGKILL)
        _ = try? server?.wait(timeout: 5)
        _ = try? source?.wait(timeout: 5)
    }

    /// Stops (SIGSTOP) or continues (SIGCONT) the server.
    public func pause(_ on: Bool) { server?.signal(on ? SIGSTOP : SIGCONT) }

    /// Sets the mount's title (`StreamTitle`) through the admin interface.
    public func setTitle(_ title: String) throws {
        let song = title.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? title
        let r = try runProcess("/usr/bin/curl", ["-s", "-u", "admin:adminpw",
                                                 "http://127.0.0.1:\(port)/admin/metadata?mount=/live.mp3&mode=updinfo&song=\(song)"], timeout: 10)
        guard r.status == 0, r.stdoutText.contains("successful") else { throw HarnessError("metadata update failed: \(r.stdoutText) \(r.stderr)") }
    }

    /// Whether `path` answers 200 (the first bytes of it).
    private func answers(_ path: String) -> Bool {
        let r = try? runProcess("/usr/bin/curl", ["-s", "-o", "/dev/null", "-m", "2", "-r", "0-0", "-w", "%{http_code}",
                                                  "http://127.0.0.1:\(port)\(path)"], timeout: 5)
        return r?.stdoutText.hasPrefix("200") == true
    }
}
