import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// The machine-wide (per-user) registry that lets Backline sessions in different processes
/// coordinate, like the system's audio server does on iOS.
///
/// A directory (mode 0700) holding, per live session, `ID.json` (its state, rewritten atomically
/// with a temp file and `rename`) and `ID.sock` (a datagram socket it reads messages on), plus
/// `system.json` (the silent switch and screen lock). A session's id is `PID-N`; an entry whose
/// process is gone is ignored and removed by whoever lists the registry, so a crash leaves
/// nothing that matters behind.
final class SessionRegistry: Sendable {
    struct Entry: Codable, Sendable, Equatable {
        var id: String
        var pid: Int32
        var active: Bool
        var mixable: Bool
        var spoken: Bool
        var category: String
    }

    struct SystemInputs: Codable, Sendable, Equatable {
        var silentSwitch = false
        var screenLocked = false
    }

    let directory: String

    /// `$XDG_RUNTIME_DIR/backline/sessions`, else a private per-user directory under /tmp.
    static var defaultDirectory: String {
        if let run = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !run.isEmpty {
            return run + "/backline/sessions"
        }
        return "/tmp/backline-\(getuid())/sessions"
    }

    init(directory: String) throws(AudioSessionError) {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw AudioSessionError(.mediaServicesFailed, "cannot create the session registry \(directory): \(error)")
        }
        var st = stat()
        guard stat(directory, &st) == 0, st.st_uid == getuid() else {
            throw AudioSessionError(.mediaServicesFailed, "the session registry \(directory) is not owned by this user")
        }
        chmod(directory, 0o700)
    }

    func socketPath(_ id: String) -> String { "\(directory)/\(id).sock" }
    private func entryPath(_ id: String) -> String { "\(directory)/\(id).json" }
    private var systemPath: String { "\(directory)/system.json" }

    /// Writes `data` to `path` atomically (temp file, rename): readers see the old or the new
    /// file, never a torn one. No fsync: this is runtime state (it lives in `XDG_RUNTIME_DIR`,
    /// normally tmpfs) that a reboot discards anyway, and writes happen on play().
    private func atomicWrite(_ data: Data, to path: String) {
        let tmp = "\(path).tmp-\(getpid())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        data.withUnsafeBytes { _ = Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        rename(tmp, path)
    }

    func write(_ entry: Entry) {
        if let data = try? JSONEncoder().encode(entry) { atomicWrite(data, to: entryPath(entry.id)) }
    }

    func remove(_ id: String) {
        unlink(entryPath(id))
        unlink(socketPath(id))
    }

    static func isAlive(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    /// Whether the session `id` is still registered by a live process.
    func isLive(_ id: String) -> Bool {
        guard let pid = Int32(id.split(separator: "-").first ?? ""), Self.isAlive(pid) else { return false }
        return FileManager.default.fileExists(atPath: entryPath(id))
    }

    /// Live entries; those of dead processes are removed.
    func entries() -> [Entry] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var out: [Entry] = []
        for name in names where name.hasSuffix(".json") && name != "system.json" {
            guard let data = FileManager.default.contents(atPath: "\(directory)/\(name)"),
                  let e = try? JSONDecoder().decode(Entry.self, from: data) else { continue }
            if Self.isAlive(e.pid) { out.append(e) } else { remove(e.id) }
        }
        return out
    }

    private var nowPlayingPath: String { "\(directory)/nowplaying" }

    /// The now-playing app: the last non-mixable session that played (nil if it is gone).
    func nowPlaying() -> String? {
        guard let data = FileManager.default.contents(atPath: nowPlayingPath) else { return nil }
        let id = String(decoding: data, as: UTF8.self)
        return isLive(id) ? id : nil
    }

    func setNowPlaying(_ id: String) {
        atomicWrite(Data(id.utf8), to: nowPlayingPath)
    }

    func readSystem() -> SystemInputs {
        guard let data = FileManager.default.contents(atPath: systemPath),
              let s = try? JSONDecoder().decode(SystemInputs.self, from: data) else { return SystemInputs() }
        return s
    }

    func writeSystem(_ s: SystemInputs) {
        if let data = try? JSONEncoder().encode(s) { atomicWrite(data, to: systemPath) }
    }

    /// Sends one datagram to session `id`; false if it is not listening.
    @discardableResult
    func send(_ message: String, to id: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = Self.address(socketPath(id))
        let bytes = Array(message.utf8)
        let r = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return r == bytes.count
    }

    /// Binds a datagram socket at `id`'s path; returns the descriptor.
    func listen(_ id: String) throws(AudioSessionError) -> Int32 {
        let path = socketPath(id)
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw AudioSessionError(.mediaServicesFailed, "socket: \(String(cString: strerror(errno)))") }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var addr = Self.address(path)
        let r = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw AudioSessionError(.mediaServicesFailed, "bind \(path): \(message)")
        }
        chmod(path, 0o600)
        return fd
    }

    private static func address(_ path: String) -> sockaddr_un {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8.prefix(MemoryLayout.size(ofValue: addr.sun_path) - 1))
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        return addr
    }
}
