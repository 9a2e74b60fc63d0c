import FoundationEssentials
import Glibc

/// A directory of this process's own for targets that need files (a tmpfs where there is one:
/// a state save fsyncs), made once and removed by ``remove()``.
public enum FuzzScratch {
    /// `/dev/shm/backline-fuzz-PID` (or under `$TMPDIR`).
    public static let directory: String = {
        let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp")
        let dir = base + "/backline-fuzz-\(getpid())"
        mkdir(dir, 0o700)
        return dir
    }()

    /// A path in the directory.
    static func path(_ name: String) -> String { directory + "/" + name }

    /// Writes `bytes` to `path` (replacing it).
    static func write(_ bytes: some Collection<UInt8>, to path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return }
        let a = Array(bytes)
        a.withUnsafeBytes { p in
            var done = 0
            while done < p.count {
                let n = Glibc.write(fd, p.baseAddress! + done, p.count - done)
                if n <= 0 { break }
                done += n
            }
        }
        close(fd)
    }

    /// The contents of `path` (nil if it cannot be read).
    static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 { return nil }
            if n == 0 { return out }
            out += buf[0..<n]
        }
    }

    /// Removes the directory and everything in it.
    public static func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
