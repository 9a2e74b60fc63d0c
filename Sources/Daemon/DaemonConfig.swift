import AudioEngine
import BacklineWire
import Control
import MediaCore
import FoundationEssentials
import Platform

/// The daemon's settings: defaults, then the config file, then command-line options.
///
/// The config file (`$XDG_CONFIG_HOME/backline/daemon.conf` unless `--config`) has one
/// `key = value` per line; `#` starts a comment; values may be double-quoted. Unknown keys and
/// bad values are errors (a typo must not silently change behaviour).
public struct DaemonConfig: Sendable, Equatable {
    /// The control socket (`$XDG_RUNTIME_DIR/backline/control.sock`).
    public var socketPath: String
    /// Relative paths in `add` resolve here; only files inside it can be added, unless
    /// ``allowAbsolutePaths``.
    public var musicDirectory: String
    /// Absolute paths anywhere (still no directory escapes through `..` for relative ones).
    public var allowAbsolutePaths = false
    /// Whether `add` takes http and https URLs (`allow-streams`, default yes): streams are not
    /// files, so the music directory does not confine them.
    public var allowStreams = true
    /// The saved state (`$XDG_STATE_HOME/backline/state.json`).
    public var stateFile: String
    /// Stored playlists, one M3U file each (default: `$XDG_STATE_HOME/backline/playlists`).
    public var playlistDirectory: String?
    /// The music library's database (`library`; default `$XDG_STATE_HOME/backline/library.sqlite`
    /// beside the state file; nil: `library = off`, no database, `browse` only).
    public var libraryPath: String?
    /// Whether the library's database was set (else it follows the state file).
    private var libraryPathSet = false
    /// Scan the music directory at start (`update-on-start`): `auto` (default) when the library
    /// is new, `yes` at every start, `no` never (a scan waits for `update` or a change).
    public var updateOnStart = "auto"
    /// Watch the music directory with inotify and scan what changes (`auto-update`).
    public var autoUpdate = true
    /// Scans run on a thread of the daemon instead of a `library-scan` process of their own
    /// (`scan-in-process`; for embedding, where the executable has no `library-scan`).
    public var scanInProcess = false
    /// Seconds of quiet after a change before its directory is scanned (`auto-update-delay`).
    public var autoUpdateDelay: Double = 1
    /// ALSA device name.
    public var device = "default"
    /// Device buffer in milliseconds.
    public var bufferMilliseconds = 200
    /// The most channels sent to the device, 2…8 (`channels`): files with more are down-mixed.
    public var maxChannels = 8
    /// ReplayGain (`replay-gain`, `replay-gain-preamp`, `replay-gain-missing-preamp`,
    /// `replay-gain-limit`); once changed at run time (MPD, JSON, `ctl`), the state file's wins
    /// until it is set back to these.
    public var replayGain = ReplayGainSettings.off
    /// Crossfade in seconds (`crossfade`, 0: off); the state file's, once saved, wins.
    public var crossfade: Double = 0
    /// How far a skip without seconds goes (`skip-forward`, `skip-backward`, 1–3600 s).
    public var skipForward = 30.0, skipBackward = 15.0
    /// Which items have their long silences shortened (`trim-silence`: off, spoken, all).
    public var trimSilence = SilenceTrimMode.off
    /// Which items remember where they were left (`resume-after`: at least this many minutes
    /// long, 0 turns it off, default 10; `resume-rewind`: seconds played again, 0–60, default 5).
    public var resume = ResumeSettings()
    /// Start playing when the saved state was playing (default: restore paused).
    public var restorePlaying = false
    /// Shell commands run on suspension and on resumption (state in the environment).
    public var onSuspend: String?
    public var onResume: String?
    /// Seconds a hook may run before it is killed.
    public var hookTimeout: Double = 10
    /// Seconds in the background with nothing keeping the daemon running before it is suspended.
    public var backgroundGrace: Double = 5
    /// Whether the daemon starts in the background (a daemon has no UI; the default) or foreground.
    public var startInBackground = true
    /// Audio-session category: `playback` (default), `soloAmbient` or `ambient`.
    public var category = "playback"
    /// Optional TCP listener, `HOST:PORT` (loopback unless a host is named); needs ``token``.
    public var tcpListen: String?
    /// The token TCP clients must present with `auth` first.
    public var token: String?
    /// MPD-protocol listeners: Unix socket paths or `HOST:PORT` (loopback unless a host is
    /// named; any other host needs ``mpdPassword``).
    public var mpdListen: [String] = []
    /// The partition an MPD listener's clients start in (`mpd-listen = ADDRESS PARTITION`): a
    /// snapserver stream's plugin (`meta_mpd.py`, which knows no partitions) on the listener of
    /// its room's partition shows and controls that partition. Made at start if need be.
    public var mpdListenPartition: [String: String] = [:]
    /// The password MPD clients give with `password` first (on TCP listeners).
    public var mpdPassword: String?
    /// HTTP listeners (`http-listen`, `--http-listen`, repeatable; none by default), `HOST:PORT`:
    /// the web remote's page, its WebSocket (`/ws`: the JSON protocol), cover art and
    /// `GET /status`. Loopback unless a host is named; any other host needs ``httpPassword``
    /// (or ``token``).
    public var httpListen: [String] = []
    /// The addresses of the listener kinds a package registers (``ListenerKind``), by their
    /// config key: `listen-KEY = ADDRESS`, repeatable; each a Unix socket path or a loopback
    /// `HOST:PORT`.
    public var listen: [String: [String]] = [:]
    /// Named outputs partitions play through (`output = NAME DEVICE`, `--output NAME=DEVICE`,
    /// repeatable): a partition takes the one named like it (a snapserver stream per room).
    public var outputs: [OutputDefinition] = []
    /// The web remote's login password (`http-password`): a login sets a session cookie.
    /// Without it, loopback listeners ask for nothing (the `Host` must then be a loopback name).
    public var httpPassword: String?
    /// Where the page's files are (`web-root`; default: `Resources/web` found beside the
    /// executable, else `/usr/share/backline/web`).
    public var webRoot: String?
    /// Connections at once; more are refused with an error and closed.
    public var maxConnections = 256
    /// Longest request line (bytes); longer gets an error and the connection is closed.
    public var maxRequestBytes = 64 * 1024
    /// Seconds a request line may take to arrive once begun (a slow-drip client is cut off).
    public var requestTimeout: Double = 10
    /// Seconds a TCP client has to authenticate.
    public var authTimeout: Double = 5
    /// TCP connections not yet authenticated, at most (they never crowd out the Unix socket).
    public var maxUnauthenticated = 16
    /// Replies and events queued for a client that does not read; past it, the client is dropped.
    public var maxOutputBytes = 1024 * 1024
    /// Seconds between position events to subscribers (rate limit; at least 0.05).
    public var positionInterval: Double = 1
    /// Seconds between state saves while playing.
    public var saveInterval: Double = 1
    /// swift-log level name.
    public var logLevel = "info"
    /// Publish the player on the session bus as MPRIS2 (`org.mpris.MediaPlayer2.backline`).
    public var mpris = true
    /// Post a desktop notification when the current item changes (replacing the previous one).
    public var notify = false

    /// The defaults for this user (XDG directories).
    public static func defaults(environment env: [String: String] = ProcessInfo.processInfo.environment) -> DaemonConfig {
        let home = env["HOME"] ?? Path.homeDirectory()
        let runtime = SocketDirectory.runtimeDirectory(xdgRuntimeDir: env["XDG_RUNTIME_DIR"])
        let state = env["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.local/state"
        let music = env["XDG_MUSIC_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/Music"
        return DaemonConfig(socketPath: runtime + "/control.sock", musicDirectory: music,
                            stateFile: state + "/backline/state.json")
    }

    /// The default config file path.
    public static func defaultConfigFile(environment env: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let home = env["HOME"] ?? Path.homeDirectory()
        let config = env["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.config"
        return config + "/backline/daemon.conf"
    }

    /// A config-file error, with the file and line.
    public struct ParseError: Error, CustomStringConvertible, Equatable {
        public let file: String
        public let line: Int
        public let message: String
        public var description: String { "\(file):\(line): \(message)" }
    }

    /// Applies the settings in `text` (the contents of `file`).
    public mutating func apply(configText text: String, file: String) throws(ParseError) {
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = Substring(raw)
            if let hash = line.firstIndex(of: "#"), !line[..<hash].contains("\"") { line = line[..<hash] }
            line = line.trimmingWhitespace()
            if line.isEmpty { continue }
            guard let eq = line.firstIndex(of: "=") else {
                throw ParseError(file: file, line: n + 1, message: "expected 'key = value'")
            }
            let key = String(line[..<eq].trimmingWhitespace())
            var value = String(line[line.index(after: eq)...].trimmingWhitespace())
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            do {
                try set(key, value)
            } catch {
                throw ParseError(file: file, line: n + 1, message: error.message)
            }
        }
    }

    /// A setting's value was not acceptable.
    public struct BadValue: Error { public let message: String }

    /// Applies one setting, as the config file would.
    public mutating func set(_ key: String, _ value: String) throws(BadValue) {
        func number(_ min: Double, _ max: Double) throws(BadValue) -> Double {
            // Plain decimal only: `Double` also reads `0x10` (16), `1e3`, `inf` and `nan`.
            guard Self.isPlainDecimal(value), let d = Double(value), d >= min, d <= max else {
                throw BadValue(message: "\(key): expected a decimal number from \(Self.decimal(min)) to \(Self.decimal(max)), got '\(value)'")
            }
            return d
        }
        func flag() throws(BadValue) -> Bool {
            switch value.lowercased() {
            case "yes", "true", "on", "1": return true
            case "no", "false", "off", "0": return false
            default: throw BadValue(message: "\(key): expected yes or no, got '\(value)'")
            }
        }
        // `~/` at the start of a path is the home directory.
        var path: String {
            guard value.hasPrefix("~/") else { return value }
            return (ProcessInfo.processInfo.environment["HOME"] ?? Path.homeDirectory()) + value.dropFirst(1)
        }
        switch key {
        case "socket": socketPath = path
        case "music-dir", "music-directory": musicDirectory = path
        case "allow-absolute-paths": allowAbsolutePaths = try flag()
        case "allow-streams": allowStreams = try flag()
        case "state-file": stateFile = path
        case "playlist-dir": playlistDirectory = path
        case "library":
            libraryPathSet = true
            libraryPath = value == "off" || value.isEmpty ? nil : path
        case "update-on-start":
            guard ["auto", "yes", "no"].contains(value) else { throw BadValue(message: "update-on-start: expected auto, yes or no, got '\(value)'") }
            updateOnStart = value
        case "auto-update": autoUpdate = try flag()
        case "auto-update-delay": autoUpdateDelay = try number(0.05, 3600)
        case "scan-in-process": scanInProcess = try flag()
        case "device": device = value
        case "buffer-ms": bufferMilliseconds = Int(try number(20, 5000))
        case "channels": maxChannels = Int(try number(2, 8))
        case "replay-gain":
            guard let mode = ReplayGainMode(rawValue: value) else {
                throw BadValue(message: "replay-gain: expected off, track, album or auto, got '\(value)'")
            }
            replayGain.mode = mode
        case "replay-gain-preamp": replayGain.preamp = try number(-60, 60)
        case "crossfade": crossfade = try number(0, 3600)
        case "trim-silence":
            switch value {
            case "off": trimSilence = .off
            case "spoken": trimSilence = .spoken
            case "all": trimSilence = .all
            default: throw BadValue(message: "trim-silence: expected off, spoken or all, got '\(value)'")
            }
        case "skip-forward": skipForward = try number(1, 3600)
        case "skip-backward": skipBackward = try number(1, 3600)
        case "resume-after":
            let minutes = try number(0, 24 * 60)
            resume.enabled = minutes > 0
            resume.minimumLength = minutes * 60
        case "resume-rewind": resume.rewind = try number(0, 60)
        case "replay-gain-missing-preamp": replayGain.missingPreamp = try number(-60, 60)
        case "replay-gain-limit": replayGain.limit = try flag()
        case "restore":
            guard value == "paused" || value == "playing" else {
                throw BadValue(message: "restore: expected paused or playing, got '\(value)'")
            }
            restorePlaying = value == "playing"
        case "on-suspend": onSuspend = value.isEmpty ? nil : value
        case "on-resume": onResume = value.isEmpty ? nil : value
        case "hook-timeout": hookTimeout = try number(0.1, 3600)
        case "background-grace": backgroundGrace = try number(0, 86400)
        case "start-state":
            guard value == "background" || value == "foreground" else {
                throw BadValue(message: "start-state: expected background or foreground, got '\(value)'")
            }
            startInBackground = value == "background"
        case "category":
            guard ["playback", "soloAmbient", "ambient"].contains(value) else {
                throw BadValue(message: "category: expected playback, soloAmbient or ambient, got '\(value)'")
            }
            category = value
        case "tcp": tcpListen = value.isEmpty ? nil : value
        case "token": token = value.isEmpty ? nil : value
        case "mpd-listen":
            let words = value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard let address = words.first else { break }
            guard words.count <= 2, words.count == 1 || Partitions.isValidName(words[1]) else {
                throw BadValue(message: "mpd-listen: expected ADDRESS [PARTITION], got '\(value)'")
            }
            mpdListen.append(address)
            if words.count == 2 { mpdListenPartition[address] = words[1] }
        case "mpd-password": mpdPassword = value.isEmpty ? nil : value
        case "http-listen": if !value.isEmpty { httpListen.append(value) }
        case "output":
            // NAME DEVICE (the config file) or NAME=DEVICE (the command line).
            let cut = value.firstIndex { $0 == " " || $0 == "\t" || $0 == "=" }
            guard let cut, case let name = String(value[..<cut]), Partitions.isValidName(name),
                  case let device = String(value[value.index(after: cut)...].trimmingWhitespace()), !device.isEmpty else {
                throw BadValue(message: "output: expected NAME DEVICE (a name of letters, digits, - and _), got '\(value)'")
            }
            guard !outputs.contains(where: { $0.name == name }) else { throw BadValue(message: "output: \(name) is named twice") }
            outputs.append(OutputDefinition(name: name, device: device))
        case "http-password": httpPassword = value.isEmpty ? nil : value
        case "web-root": webRoot = value.isEmpty ? nil : value
        case "mpris":
            guard ["yes", "no"].contains(value) else { throw BadValue(message: "mpris: expected yes or no, got '\(value)'") }
            mpris = value == "yes"
        case "notify":
            guard ["yes", "no"].contains(value) else { throw BadValue(message: "notify: expected yes or no, got '\(value)'") }
            notify = value == "yes"
        case "max-connections": maxConnections = Int(try number(1, 100_000))
        case "max-request-bytes": maxRequestBytes = Int(try number(256, 64 * 1024 * 1024))
        case "request-timeout": requestTimeout = try number(0.5, 600)
        case "auth-timeout": authTimeout = try number(0.5, 600)
        case "max-unauthenticated": maxUnauthenticated = Int(try number(1, 10_000))
        case "max-output-bytes": maxOutputBytes = Int(try number(4096, 1024 * 1024 * 1024))
        case "position-interval": positionInterval = try number(0.05, 3600)
        case "save-interval": saveInterval = try number(0.2, 60)
        case "log-level":
            guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(value) else {
                throw BadValue(message: "log-level: unknown level '\(value)'")
            }
            logLevel = value
        case let k where k.hasPrefix("listen-") && k.count > 7:
            if !value.isEmpty { listen[String(k.dropFirst(7)), default: []].append(value) }
        default:
            throw BadValue(message: "unknown setting '\(key)'")
        }
    }

    /// Whether `text` is a number as the config file writes them: an optional `-` or `+`,
    /// ASCII digits, and an optional `.` with more digits (`3`, `-0.5`); not hexadecimal,
    /// exponents, `inf` or `nan`.
    static func isPlainDecimal(_ text: String) -> Bool {
        var b = ArraySlice(Array(text.utf8))
        if let f = b.first, f == UInt8(ascii: "-") || f == UInt8(ascii: "+") { b = b.dropFirst() }
        let isDigit = { (c: UInt8) in c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
        let whole = b.prefix(while: isDigit)
        guard !whole.isEmpty else { return false }
        b = b.dropFirst(whole.count)
        guard let dot = b.first else { return true }
        let fraction = b.dropFirst()
        return dot == UInt8(ascii: ".") && !fraction.isEmpty && fraction.allSatisfy(isDigit)
    }

    /// A bound as the config file would write it (`3600`, `0.05`).
    private static func decimal(_ v: Double) -> String {
        v.rounded() == v && abs(v) < 1e15 ? String(Int(v)) : String(v)
    }

    /// The library's database: as set, else beside the state file.
    public var library: String? {
        libraryPathSet ? libraryPath : Path.deletingLastComponent(stateFile) + "/library.sqlite"
    }

    /// Whether `host` (a listener's) is this machine only.
    static func isLoopback(_ host: String) -> Bool {
        if host == "::1" || host == "localhost" { return true }
        // An IPv4 literal in 127/8 (not a name that merely starts so: `127.example.net`).
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { p in !p.isEmpty && p.count <= 3 && p.allSatisfy(\.isASCII) && UInt8(p) != nil }
    }

    /// Checks settings that depend on each other.
    public func validate() throws(ParseError) {
        for addr in mpdListen where !addr.hasPrefix("/") {
            guard let (host, _) = try? ControlServer.split(addr) else {
                throw ParseError(file: "config", line: 0, message: "mpd-listen: expected a socket path or HOST:PORT, got '\(addr)'")
            }
            if !Self.isLoopback(host), (mpdPassword ?? "").isEmpty {
                throw ParseError(file: "config", line: 0, message: "mpd-listen \(addr) is not loopback: it needs mpd-password")
            }
        }
        for addr in httpListen {
            guard let (host, _) = try? ControlServer.split(addr) else {
                throw ParseError(file: "config", line: 0, message: "http-listen: expected HOST:PORT, got '\(addr)'")
            }
            if !Self.isLoopback(host), (httpPassword ?? "").isEmpty, (token ?? "").isEmpty {
                throw ParseError(file: "config", line: 0, message: "http-listen \(addr) is not loopback: it needs http-password (or token)")
            }
        }
        for (key, addresses) in listen.sorted(by: { $0.key < $1.key }) {
            for addr in addresses where !addr.hasPrefix("/") {
                guard let (host, _) = try? ControlServer.split(addr), Self.isLoopback(host) else {
                    throw ParseError(file: "config", line: 0, message: "listen-\(key): expected a socket path or a loopback HOST:PORT, got '\(addr)'")
                }
            }
        }
        if tcpListen != nil, (token ?? "").count < 16 {
            throw ParseError(file: "config", line: 0, message: "tcp needs a token of at least 16 characters")
        }
    }
}

extension Substring {
    func trimmingWhitespace() -> Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" || f == "\r" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" { s = s.dropLast() }
        return s
    }
}
