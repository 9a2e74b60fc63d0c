import BacklineWire
import Daemon
import Foundation
import MediaCore

#if canImport(Glibc)
import Glibc
#endif

/// The web remote: the WebSocket's `status` round trip beside the Unix socket's, in
/// one daemon and one run; the page's first paint (title and cover shown) in headless Chromium
/// and what it transferred; and the daemon's resident memory with the HTTP listener and 20
/// connected pages beside the same daemon without it.
public enum WebBench {
    public static func run(executable: String, device: String) throws -> [BenchResult] {
        let dir = NSTemporaryDirectory() + "backline-web-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try DaemonBench.shell("""
            sox -n -r 44100 -c 2 -b 16 \(dir)/tone.wav synth 60 sine 440 gain -6 && \
            lame --quiet -b 192 --tt 'Bench Tone' --ta 'Backline' \(dir)/tone.wav \(dir)/music/tone.mp3 && \
            sox \(dir)/tone.wav -n spectrogram -r -x 500 -y 513 -o \(dir)/music/cover.png
            """)
        let port = Int.random(in: 20_000...30_000)
        func start(http: Bool, tag: String) throws -> (Child, String) {
            let socket = dir + "/\(tag)/control.sock"
            var args = ["daemon", "--socket", socket, "--music-dir", dir + "/music", "--state-file", dir + "/\(tag)/state.json",
                        "--device", device, "--config", "/dev/null", "--no-mpris", "--library", "off"]
            if http { args += ["--http-listen", "127.0.0.1:\(port)"] }
            let d = try Child(executable, args, environment: ["XDG_RUNTIME_DIR": dir + "/rt", "XDG_CACHE_HOME": dir + "/cache"])
            guard DaemonBench.waitUntil(20, { (try? ControlClient(socketPath: socket).request("ping")) != nil }) else {
                throw BenchError("backline daemon did not start")
            }
            _ = try ControlClient(socketPath: socket).request("add", [("path", "tone.mp3")])
            return (d, socket)
        }
        func rssMiB(_ pid: Int32) -> Double {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            return (Double(line.split(separator: " ").dropFirst().first ?? "") ?? .nan) / 1024
        }

        // Memory without the listener (settled: the trimmer gives back what start-up used).
        let (plain, _) = try start(http: false, tag: "plain")
        Thread.sleep(forTimeInterval: 6)
        let without = rssMiB(plain.process.processIdentifier)
        plain.stop()

        let (daemon, socket) = try start(http: true, tag: "web")
        defer { daemon.stop() }
        // Round trips: `status` over the Unix socket and over the WebSocket, alternating blocks.
        let unix = try LineConnection(unix: socket, greeting: false)
        let ws = try WebSocketConnection(port: port)
        let request = "{\"command\":\"status\"}"
        for _ in 0..<200 { _ = try unix.exchange(request); _ = try ws.exchange(request) }
        var unixSamples: [Double] = [], wsSamples: [Double] = []
        for _ in 0..<10 {
            for _ in 0..<200 {
                let t0 = DaemonBench.clockNow()
                _ = try unix.exchange(request)
                unixSamples.append((DaemonBench.clockNow() - t0) * 1e6)
            }
            for _ in 0..<200 {
                let t0 = DaemonBench.clockNow()
                _ = try ws.exchange(request)
                wsSamples.append((DaemonBench.clockNow() - t0) * 1e6)
            }
        }
        func pct(_ s: [Double], _ p: Int) -> Double { let v = s.sorted(); return v[v.count * p / 100] }

        // 20 pages: each fetched the page's files and holds a subscribed WebSocket.
        var pages: [WebSocketConnection] = []
        for _ in 0..<20 {
            for path in ["/", "/app.js", "/app.css", "/art/1", "/status"] { _ = try WebSocketConnection.get(port: port, path) }
            let p = try WebSocketConnection(port: port)
            _ = try p.exchange("{\"command\":\"subscribe\"}")
            _ = try p.exchange(request)
            pages.append(p)
        }
        Thread.sleep(forTimeInterval: 6)
        let with = rssMiB(daemon.process.processIdentifier)
        _ = pages

        // First paint, in a fresh headless Chromium per load (cache off), median of 5.
        var paint: (ms: Double, kib: Double)?
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/lib/webpaint.py").path
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"), FileManager.default.fileExists(atPath: script) {
            _ = try ControlClient(socketPath: socket).request("play")
            let out = dir + "/paint.json"
            try DaemonBench.shell("/usr/bin/python3 \(script) http://127.0.0.1:\(port)/ 5 > \(out)")
            if let data = FileManager.default.contents(atPath: out), let j = try? JSON.parse(Array(data)),
               let ms = j["paint_ms"]?.number, let bytes = j["bytes"]?.number {
                paint = (ms, bytes / 1024)
            }
        }

        var rows = [
            BenchResult(name: "web remote: WebSocket `status` round trip p50", value: pct(wsSamples, 50), unit: "µs",
                        reference: pct(unixSamples, 50), referenceName: "the Unix socket's, same daemon, same run"),
            BenchResult(name: "web remote: WebSocket `status` round trip p99", value: pct(wsSamples, 99), unit: "µs",
                        reference: pct(unixSamples, 99), referenceName: "the Unix socket's, same daemon, same run"),
            BenchResult(name: "web remote: daemon resident memory with the HTTP listener and 20 connected pages", value: with, unit: "MiB",
                        reference: without, referenceName: "the same daemon without it (+\(String(format: "%.2f", with - without)) MiB)"),
        ]
        if let paint {
            rows.append(BenchResult(name: "web remote: first paint (title and cover shown), loopback, cold cache (median of 5)",
                                    value: paint.ms, unit: "ms"))
            rows.append(BenchResult(name: "web remote: bytes transferred by then (page, script, style, cover)", value: paint.kib, unit: "KiB"))
        }
        return rows
    }
}

/// A blocking WebSocket client (RFC 6455, text frames, masked as a client must): enough for
/// round trips.
final class WebSocketConnection {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int) throws {
        fd = try Self.connect(port)
        let upgrade = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:\(port)\r\n\r\n"
        try write(Array(upgrade.utf8))
        while !buffer.starts(with: Array("HTTP/1.1 101".utf8)) || Self.headerEnd(buffer) == nil {
            try fill()
            if buffer.count > 12, !buffer.starts(with: Array("HTTP/1.1 101".utf8)) { throw BenchError("WebSocket upgrade refused") }
        }
        buffer.removeFirst(Self.headerEnd(buffer)!)
    }

    deinit { close(fd) }

    static func connect(_ port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else { close(fd); throw BenchError("connect 127.0.0.1:\(port): errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    static func headerEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 0...(b.count - 4) where b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i + 4 }
        return nil
    }

    /// GET `path` on a connection of its own (`Connection: close`); the bytes received.
    static func get(port: Int, _ path: String) throws -> Int {
        let fd = try connect(port)
        defer { close(fd) }
        let r = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        _ = r.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var total = 0
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return total }
            total += n
        }
    }

    private func write(_ b: [UInt8]) throws {
        let n = b.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n == b.count else { throw BenchError("send failed") }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { throw BenchError("connection closed") }
        buffer += chunk[..<n]
    }

    /// Sends `text` as one masked text frame.
    func send(_ text: String) throws {
        let payload = Array(text.utf8), mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        var f: [UInt8] = [0x81]
        if payload.count < 126 { f.append(0x80 | UInt8(payload.count)) } else {
            f += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        f += mask
        for (i, b) in payload.enumerated() { f.append(b ^ mask[i & 3]) }
        try write(f)
    }

    /// The next message's text.
    func message() throws -> String {
        while true {
            if buffer.count >= 2 {
                var n = Int(buffer[1] & 0x7F), at = 2
                if n == 126, buffer.count >= 4 { n = Int(buffer[2]) << 8 | Int(buffer[3]); at = 4 }
                if n == 127, buffer.count >= 10 { n = buffer[2..<10].reduce(0) { $0 << 8 | Int($1) }; at = 10 }
                if n < 126 || at > 2, buffer.count >= at + n {
                    let text = String(decoding: buffer[at..<at + n], as: UTF8.self)
                    buffer.removeFirst(at + n)
                    return text
                }
            }
            try fill()
        }
    }

    /// Sends `request`, returns its reply (events skipped).
    func exchange(_ request: String) throws -> String {
        try send(request)
        while true {
            let m = try message()
            if !m.hasPrefix("{\"event\"") { return m }
        }
    }
}
