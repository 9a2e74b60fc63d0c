import Foundation

/// nginx (Debian's `nginx-light`) serving a directory on loopback, started by the test: a real
/// server's answers to `Range` (`206`, `Content-Range`, `Accept-Ranges: bytes`), as users' are.
///
/// It runs as one process (`master_process off`: as root it does not switch to a worker user
/// that could not read the test's private directory), in the foreground, killed with the
/// object.
public final class NginxServer: @unchecked Sendable {
    /// Where Debian installs it.
    public static let binary = "/usr/sbin/nginx"
    /// Whether nginx is installed (tests that need it are skipped, and say so, when not).
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: binary) }

    public let port: Int
    public let directory: URL
    private let work: URL
    private let process: SpawnedProcess

    /// Starts nginx on a free loopback port, serving `directory` (its files as `/NAME`).
    public init(directory: URL) throws {
        self.directory = directory
        work = try Harness.makeTemporaryDirectory("nginx")
        var started: (SpawnedProcess, Int)?
        var failure = ""
        // A port the kernel gave may be taken again before nginx binds it: a few tries.
        for _ in 0..<3 where started == nil {
            let port = try Harness.freePort()
            let conf = work.appendingPathComponent("nginx.conf")
            let w = work.path
            try """
            daemon off; master_process off; worker_processes 1;
            pid \(w)/nginx.pid; error_log \(w)/error.log;
            events { worker_connections 64; }
            http {
              types { audio/mpeg mp3; audio/mp4 m4a; audio/ogg opus ogg; audio/flac flac; }
              default_type application/octet-stream;
              access_log off;
              client_body_temp_path \(w)/body; proxy_temp_path \(w)/proxy; fastcgi_temp_path \(w)/fastcgi;
              uwsgi_temp_path \(w)/uwsgi; scgi_temp_path \(w)/scgi;
              server { listen 127.0.0.1:\(port); root \(directory.path); }
            }
            """.write(to: conf, atomically: true, encoding: .utf8)
            let p = try SpawnedProcess(Self.binary, ["-p", w, "-c", conf.path])
            eventually(timeout: 10, every: 0.02) { !p.isRunning || Self.answers(port) }
            if p.isRunning, Self.answers(port) { started = (p, port) } else {
                failure = p.stderr + ((try? String(contentsOf: work.appendingPathComponent("error.log"), encoding: .utf8)) ?? "")
                p.signal(SIGKILL)
                _ = try? p.wait(timeout: 5)
            }
        }
        guard let started else { throw HarnessError("nginx did not start: \(failure)") }
        (process, port) = started
    }

    deinit {
        process.signal(SIGKILL)
        _ = try? process.wait(timeout: 5)
    }

    /// `http://127.0.0.1:PORT/NAME`.
    public func url(_ name: String) -> String { "http://127.0.0.1:\(port)/\(name)" }

    /// Whether something accepts a TCP connection on the loopback port.
    private static func answers(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(port).bigEndian)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &a) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
