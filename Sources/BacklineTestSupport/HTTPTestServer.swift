import Foundation

/// A small HTTP server on loopback, written in Python and started by the test: it serves files
/// with `Range`, and misbehaves on purpose at the paths below.
///
/// - `/files/NAME`: the file, `Accept-Ranges: bytes`, `206` for a range.
/// - `/slow/NAME?bps=N`: the file at N bytes a second.
/// - `/close/NAME`: the full `Content-Length`, then half the bytes, then the connection closes.
/// - `/norange/NAME`: the file, claiming `Accept-Ranges: bytes` but answering every request with
///   the whole body (`200`), as some servers do.
/// - `/plain/NAME`: the file, every request answered with the whole body (`200`) and no
///   `Accept-Ranges`: a server that knows nothing of ranges.
/// - `/paced/NAME?chunk=BYTES&ms=MS`: the file (ranges honoured) in pieces of BYTES, MS
///   milliseconds apart: what arrives by the time the reader jumps is neither all nor nothing.
/// - `/gate/NAME?after=BYTES`: the first BYTES at once, then a byte every 0.3 s (the
///   connection alive, the reader starved) until the file `open-NAME` appears in the
///   directory (``open(_:)``), then the rest.
/// - `/live/NAME?metaint=N&titles=A|B|C&every=BYTES&drop=BYTES&offset=BYTES`: the file as an endless
///   Icecast-style stream (no length, looping), `icy-metaint: N` with `StreamTitle` blocks,
///   the title moving to the next of `titles` every `every` audio bytes (the first block
///   carries the first); with `drop`, the connection closes after that many audio bytes
///   (each new connection starts again at the file's start); with `gone`, every connection
///   after the first gets `503`; with `offset`, each connection starts that far into the file
///   (as Icecast, a listener joins mid-frame). `Content-Type: audio/mpeg`, `icy-name: Test Radio`.
/// - `/chunked/NAME` (`Transfer-Encoding: chunked`) and `/eof/NAME` (no length: the body ends
///   when the connection closes): the file, with no `Content-Length`.
/// - `/drip/NAME`: no `Content-Length`, then the file a byte every 0.2 s, again and again, without end.
/// - `/gzip/NAME`: the file gzip-compressed, `Content-Encoding: gzip`, whatever the request accepts.
/// - `/error/NAME?code=N&size=BYTES`: status N (404 by default) with a body of BYTES (an
///   error page larger than any playlist); with `drip`, no length and a byte every 0.2 s
///   without end instead.
/// - `/html` (an HTML page), `/missing` (404), `/loop` (a redirect to itself), `/hls.m3u8`
///   (an HLS playlist), `/endless-header` (header lines forever), `/silent` (a head, then
///   nothing), `/hang` (nothing at all, not even a head).
///
/// Every request is logged, with its `Range` (``requests(_:)``).
public final class HTTPTestServer: @unchecked Sendable {
    public let port: Int
    public let directory: URL
    private let lock = NSLock()
    private var process: SpawnedProcess?  // guarded by lock

    /// Starts the server on a free loopback port, serving `directory`.
    public init(directory: URL) throws {
        self.directory = directory
        let script = directory.appendingPathComponent("server.py")
        try Self.script.write(to: script, atomically: true, encoding: .utf8)
        let (process, port) = try Self.start(directory, port: 0)
        self.process = process
        self.port = port
    }

    private static func start(_ directory: URL, port wanted: Int) throws -> (SpawnedProcess, Int) {
        let portFile = directory.appendingPathComponent("port")
        try? FileManager.default.removeItem(at: portFile)
        let process = try SpawnedProcess("/usr/bin/python3", [directory.appendingPathComponent("server.py").path, directory.path,
                                                              portFile.path, String(wanted)])
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let text = try? String(contentsOf: portFile, encoding: .utf8), let p = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                return (process, p)
            }
            if !process.isRunning { break }
            usleep(20_000)
        }
        process.signal(SIGKILL)
        throw HarnessError("the test HTTP server did not start: \(process.stderr)")
    }

    /// Kills the server (SIGKILL: every connection drops at once, as a crashed server's).
    public func kill() {
        lock.withLock {
            process?.signal(SIGKILL)
            _ = try? process?.wait(timeout: 5)
            process = nil
        }
    }

    /// Stalls the server (SIGSTOP: connections stay open, nothing more arrives), until ``resume()``.
    public func stall() { lock.withLock { process?.signal(SIGSTOP) } }

    /// Lets a stalled server go on.
    public func resume() { lock.withLock { process?.signal(SIGCONT) } }

    /// Starts it again after ``kill()``, on the same port.
    public func restart() throws {
        try lock.withLock {
            guard process == nil else { return }
            process = try Self.start(directory, port: port).0
        }
    }

    deinit { kill() }

    /// Lets `/gate/NAME` send the rest of NAME.
    public func open(_ name: String) throws {
        try Data().write(to: directory.appendingPathComponent("open-" + name))
    }

    /// `http://127.0.0.1:PORT/PATH`.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    /// The requests made so far for `path` (as given to ``url(_:)``), in order: each one's
    /// `Range` header, `-` for none.
    public func requests(_ path: String) -> [String] {
        let log = (try? String(contentsOf: directory.appendingPathComponent("requests.log"), encoding: .utf8)) ?? ""
        return log.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            return parts.count == 2 && parts[0] == "/" + path ? String(parts[1]) : nil
        }
    }

    static let script = #"""
import os, sys, time, gzip, socketserver, http.server, urllib.parse

root, portfile = sys.argv[1], sys.argv[2]
wanted = int(sys.argv[3]) if len(sys.argv) > 3 else 0
seen = {}  # connections by request path

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass

    def send_head(self, code, headers):
        self.send_response(code)
        for k, v in headers: self.send_header(k, v)
        self.end_headers()

    def do_GET(self):
        with open(os.path.join(root, "requests.log"), "a") as log:
            log.write("%s %s\n" % (self.path, self.headers.get("Range") or "-"))
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        parts = u.path.strip("/").split("/", 1)
        kind, name = parts[0], (parts[1] if len(parts) > 1 else "")
        try:
            if kind == "files": return self.file(name, None, False)
            if kind == "slow": return self.file(name, int(q["bps"][0]), False)
            if kind == "close": return self.file(name, None, True)
            if kind == "norange": return self.file(name, None, False, ranges=False)
            if kind == "plain": return self.file(name, None, False, ranges=False, advertise=False)
            if kind == "paced": return self.file(name, None, False, pace=(int(q["chunk"][0]), int(q["ms"][0])))
            if kind == "gate": return self.file(name, None, False, gate=int(q["after"][0]))
            if kind == "live": return self.live(name, q)
            if kind in ("chunked", "eof", "drip", "gzip"):
                data = open(os.path.join(root, name), "rb").read()
                if kind == "gzip":
                    body = gzip.compress(data)
                    self.send_head(200, [("Content-Type", "audio/x-mpegurl"), ("Content-Encoding", "gzip"), ("Content-Length", str(len(body)))])
                    return self.wfile.write(body)
                if kind == "chunked":
                    self.send_head(200, [("Content-Type", "audio/x-mpegurl"), ("Transfer-Encoding", "chunked")])
                    for i in range(0, len(data), 7):
                        part = data[i:i + 7]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part)); self.wfile.flush()
                    return self.wfile.write(b"0\r\n\r\n")
                self.send_head(200, [("Content-Type", "audio/x-mpegurl"), ("Connection", "close")])
                self.close_connection = True
                if kind == "eof": return self.wfile.write(data)
                while True:
                    for b in data:
                        self.wfile.write(bytes([b])); self.wfile.flush(); time.sleep(0.2)
            if kind == "error":
                code = int(q.get("code", ["404"])[0])
                if "drip" in q:
                    self.send_head(code, [("Content-Type", "text/html"), ("Connection", "close")])
                    self.close_connection = True
                    while True:
                        self.wfile.write(b"x"); self.wfile.flush(); time.sleep(0.2)
                size = int(q.get("size", ["0"])[0])
                self.send_head(code, [("Content-Type", "text/html"), ("Content-Length", str(size))])
                return self.wfile.write(b"x" * size)
            if kind == "html":
                body = b"<!DOCTYPE html><html><body>Not audio</body></html>"
                self.send_head(200, [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))])
                return self.wfile.write(body)
            if kind == "loop":
                return self.send_head(302, [("Location", "/loop"), ("Content-Length", "0")])
            if kind == "hls.m3u8":
                body = b"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nseg0.ts\n"
                self.send_head(200, [("Content-Type", "application/vnd.apple.mpegurl"), ("Content-Length", str(len(body)))])
                return self.wfile.write(body)
            if kind == "endless-header":
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                i = 0
                while True:
                    self.wfile.write(b"X-Header-%d: more\r\n" % i); self.wfile.flush()
                    i += 1; time.sleep(0.1)
            if kind == "hang":
                time.sleep(3600)
            if kind == "silent":
                self.send_head(200, [("Content-Type", "audio/mpeg")])
                self.wfile.flush()
                time.sleep(3600)
            self.send_head(404, [("Content-Length", "0")])
        except (BrokenPipeError, ConnectionResetError):
            pass

    def file(self, name, bps, close, ranges=True, gate=None, advertise=True, pace=None):
        path = os.path.join(root, name)
        if not os.path.isfile(path): return self.send_head(404, [("Content-Length", "0")])
        data = open(path, "rb").read()
        start, end = 0, len(data)
        rng = self.headers.get("Range")
        headers = [("Content-Type", "application/octet-stream")] + ([("Accept-Ranges", "bytes")] if advertise else [])
        if rng and rng.startswith("bytes=") and not close and ranges:
            a, _, b = rng[6:].partition("-")
            start = int(a)
            end = int(b) + 1 if b else len(data)
            if start >= len(data):
                return self.send_head(416, [("Content-Range", "bytes */%d" % len(data)), ("Content-Length", "0")])
            headers += [("Content-Range", "bytes %d-%d/%d" % (start, end - 1, len(data))), ("Content-Length", str(end - start))]
            self.send_head(206, headers)
        else:
            headers.append(("Content-Length", str(len(data))))
            self.send_head(200, headers)
        body = data[start:end]
        if close:
            self.wfile.write(body[:len(body) // 2]); self.wfile.flush()
            self.close_connection = True
            return
        if gate is not None:
            # The first bytes at once; then a byte every 0.3 s (the connection stays alive)
            # until the test creates `open-NAME`; then the rest at once.
            self.wfile.write(body[:gate]); self.wfile.flush()
            i = gate
            while i < len(body) and not os.path.exists(os.path.join(root, "open-" + name)):
                time.sleep(0.3)
                self.wfile.write(body[i:i + 1]); self.wfile.flush()
                i += 1
            self.wfile.write(body[i:])
            return
        if pace:
            for i in range(0, len(body), pace[0]):
                self.wfile.write(body[i:i + pace[0]]); self.wfile.flush(); time.sleep(pace[1] / 1000.0)
        elif bps:
            step = max(1, bps // 20)
            for i in range(0, len(body), step):
                self.wfile.write(body[i:i + step]); self.wfile.flush(); time.sleep(0.05)
        else:
            self.wfile.write(body)

    def live(self, name, q):
        seen[self.path] = seen.get(self.path, 0) + 1
        if "gone" in q and seen[self.path] > 1:
            return self.send_head(503, [("Content-Length", "0")])
        data = open(os.path.join(root, name), "rb").read()
        metaint = int(q.get("metaint", ["0"])[0])
        titles = q.get("titles", [""])[0].split("|") if "titles" in q else []
        every = int(q.get("every", ["0"])[0])
        drop = int(q.get("drop", ["0"])[0])
        headers = [("Content-Type", "audio/mpeg"), ("icy-name", "Test Radio"), ("icy-genre", "Testing")]
        if metaint: headers.append(("icy-metaint", str(metaint)))
        self.send_response(200)
        for k, v in headers: self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        sent = 0
        pos = int(q.get("offset", ["0"])[0])
        until_meta = metaint
        while True:
            if drop and sent >= drop: return
            n = min(4096, len(data) - pos)
            if metaint: n = min(n, until_meta)
            if drop: n = min(n, drop - sent)
            self.wfile.write(data[pos:pos + n])
            sent += n; pos = (pos + n) % len(data)
            if metaint:
                until_meta -= n
                if until_meta == 0:
                    block = b""
                    if titles:
                        t = titles[min(len(titles) - 1, (sent // every) if every else 0)]
                        block = ("StreamTitle='%s';" % t).encode("utf-8")
                    length = (len(block) + 15) // 16
                    self.wfile.write(bytes([length]) + block.ljust(length * 16, b"\0"))
                    until_meta = metaint
            self.wfile.flush()
            time.sleep(0.001)

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

s = Server(("127.0.0.1", wanted), Handler)
with open(portfile + ".tmp", "w") as f: f.write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
"""#
}
