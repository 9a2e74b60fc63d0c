import BacklineTestSupport
import Control
@testable import Daemon
import Foundation
import Glibc
import Logging
import Testing

/// A line protocol a package registers: a real server on a Unix socket, its own registry (the
/// shared one is left alone: every test target runs in one process).
@Suite("a registered line protocol listens where the configuration says, answers in order through typed commands")
struct LineProtocolTests {
    /// `count` runs `list` and answers the number of items; `add PATH` adds; anything else is refused.
    struct Counter: LineProtocol {
        func greeting() -> String? { "COUNTER 1\n" }
        func answer(_ line: String, _ request: LineRequest) -> String {
            if line == "count" {
                guard case .success(.queue(let listing)) = request.execute(ListCommand()) else { return "ERR list\n" }
                return "\(listing.items.count)\n"
            }
            if line.hasPrefix("add ") {
                switch request.execute(AddCommand(paths: [String(line.dropFirst(4))])) {
                case .success: return "OK\n"
                case .failure(let e): return "ERR \(e.code)\n"
                }
            }
            return "ERR unknown \(line)\n"
        }

        func refusal(code: String, message: String) -> String? { "BYE \(code)\n" }
    }

    /// Connects to the Unix socket at `path`, sends `text`, reads until `lines` lines came (or
    /// the server closed); then the same with `more`, until `moreLines` lines came in all.
    static func exchange(_ path: String, _ text: String, lines: Int, then more: String? = nil, lines moreLines: Int = 0) throws -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() where i < raw.count - 1 { raw[i] = b }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(connected == 0, "connect \(path): errno \(errno)")
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var got: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        for (text, lines) in [(text, lines), (more, moreLines)] {
            guard let text else { continue }
            _ = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
            while got.filter({ $0 == 10 }).count < lines {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { break }
                got += buffer[0..<n]
            }
        }
        return String(decoding: got, as: UTF8.self)
    }

    @Test("greeting, then pipelined lines answered in order by commands that read files; a server with another registry does not listen there")
    func servesRegisteredKind() throws {
        let rig = try CodecTests.Rig()
        let tone = try Fixtures.tone("line-protocol", seconds: 0.5)
        try FileManager.default.copyItem(atPath: tone.path, toPath: rig.core.config.musicDirectory + "/a.mp3")
        var config = rig.core.config
        let socket = rig.dir.path + "/run/counter.sock"
        try config.set("listen-counter", socket)
        try config.validate()
        let registry = ListenerRegistry()
        registry.register(ListenerKind(name: "counter", configKey: "counter", protocol: Counter()))
        #expect(registry.kinds.map(\.name).suffix(1) == ["counter"])

        let server = ControlServer(config: config, logger: Logger(label: "line-test"), listeners: registry)
        defer { server.stop() }
        try server.claim()
        try server.start(core: rig.core)
        let answers = try Self.exchange(socket, "count\nadd a.mp3\nadd missing.mp3\ncount\nfrob\n", lines: 6)
        #expect(answers == "COUNTER 1\n0\nOK\nERR not-found\n1\nERR unknown frob\n", "\(answers)")
        server.stop()

        // The daemon's own registry knows no `counter`: the address stays unbound.
        let plain = ControlServer(config: config, logger: Logger(label: "line-test"), listeners: ListenerRegistry())
        defer { plain.stop() }
        #expect(!plain.endpoints(core: rig.core).contains { $0.address == socket })
    }

    @Test("listen-KEY takes socket paths and loopback addresses only: another host is refused with the key's name")
    func configuration() throws {
        var config = DaemonConfig.defaults(environment: ["HOME": "/tmp/none"])
        try config.set("listen-counter", "127.0.0.1:7700")
        try config.set("listen-counter", "/tmp/none/counter.sock")
        #expect(config.listen["counter"] == ["127.0.0.1:7700", "/tmp/none/counter.sock"])
        try config.validate()
        try config.set("listen-counter", "192.0.2.1:7700")
        #expect(throws: DaemonConfig.ParseError(file: "config", line: 0,
                                                message: "listen-counter: expected a socket path or a loopback HOST:PORT, got '192.0.2.1:7700'")) {
            try config.validate()
        }
        #expect(throws: DaemonConfig.BadValue.self) { try config.set("listen-", "/tmp/x.sock") }
    }

    @Test("the line limit (max-request-bytes, 1,024 here) at its boundary: 1,023 and 1,024 bytes answered, also when the newline comes later; 1,025 refused with the protocol's refusal and a close, with or without its newline")
    func lineLimit() throws {
        let rig = try CodecTests.Rig()
        #expect(rig.core.config.maxRequestBytes == 1024)
        var config = rig.core.config
        let socket = rig.dir.path + "/run/limit.sock"
        try config.set("listen-counter", socket)
        let registry = ListenerRegistry()
        registry.register(ListenerKind(name: "counter", configKey: "counter", protocol: Counter()))
        let server = ControlServer(config: config, logger: Logger(label: "line-test"), listeners: registry)
        defer { server.stop() }
        try server.claim()
        try server.start(core: rig.core)
        let x = { (n: Int) in String(repeating: "x", count: n) }

        let fits = try Self.exchange(socket, x(1023) + "\n" + x(1024) + "\n", lines: 3)
        #expect(fits == "COUNTER 1\nERR unknown \(x(1023))\nERR unknown \(x(1024))\n", "\(fits.prefix(80))")
        // 1,024 bytes with no newline yet wait for it.
        let later = try Self.exchange(socket, x(1024), lines: 1, then: "\n", lines: 2)
        #expect(later == "COUNTER 1\nERR unknown \(x(1024))\n", "\(later.prefix(80))")
        for text in [x(1025) + "\n", x(1025)] {
            let over = try Self.exchange(socket, text, lines: 3)
            #expect(over == "COUNTER 1\nBYE request-too-large\n", "closed after the refusal: \(over.prefix(80))")
        }
    }
}
