import ArgumentParser
import Control
import Daemon
import FoundationEssentials
import Logging
import Platform

#if canImport(Glibc)
import Glibc
#endif

/// `backline daemon`: a long-running player controlled over a socket.
struct DaemonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run the player as a daemon, controlled over a socket (see `backline ctl`).",
        discussion: """
            Listens on a Unix socket (newline-delimited JSON; docs/PROTOCOL.md), plays a queue, \
            saves it (queue, current item, position, volume, modes) and restores it paused on the \
            next start. SIGTERM or SIGINT: stop accepting, save, close the device, exit 0.

            Settings come from the config file (`key = value` lines), then these options. \
            Exit status: 0 after a graceful stop; 1 when it cannot start (another daemon owns \
            the socket, a bad config file or option).
            """)

    @Option(name: .long, help: "Control socket (default: $XDG_RUNTIME_DIR/backline/control.sock).")
    var socket: String?

    @Option(name: .customLong("music-dir"), help: "Music directory: `add` resolves paths inside it (default: $XDG_MUSIC_DIR or ~/Music).")
    var musicDir: String?

    @Option(name: .customLong("state-file"), help: "Saved state (default: $XDG_STATE_HOME/backline/state.json).")
    var stateFile: String?

    @Option(name: .long, help: "The music library's database, or off (default: $XDG_STATE_HOME/backline/library.sqlite).")
    var library: String?

    @Option(name: .long, help: "Config file (default: $XDG_CONFIG_HOME/backline/daemon.conf, if it exists).")
    var config: String?

    @Option(name: .long, help: ArgumentHelp(HelpText.deviceOption))
    var device: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String?

    @Option(name: .customLong("mpd-listen"), help: "Also speak the MPD protocol on this Unix socket path or HOST:PORT (repeatable; for mpc, ncmpcpp and other MPD clients).")
    var mpdListen: [String] = []

    @Option(name: .customLong("http-listen"), help: "Serve the web remote (a page, its WebSocket, cover art, GET /status) on HOST:PORT (repeatable; loopback unless a host is named, which needs http-password).")
    var httpListen: [String] = []

    @Option(name: .customLong("output"), help: "A named output partitions can play through, NAME=DEVICE (repeatable): a partition takes the one named like it (pipe:/run/snapfifo-kitchen for a snapserver stream per room).")
    var outputs: [String] = []

    @Flag(name: .long, help: "Post a desktop notification when the current item changes (replacing the previous one).")
    var notify = false

    @Flag(name: .customLong("no-mpris"), help: "Do not publish the player on the session bus (MPRIS2: desktop media controls, media keys, playerctl).")
    var noMPRIS = false

    /// Runs the daemon on this thread until SIGTERM or SIGINT, with no Swift concurrency and no
    /// global (non-overcommit) Dispatch queue: on Linux the first worker thread of such a queue
    /// starts libdispatch's pool monitor, a timer that wakes the process every second for the
    /// rest of its life (measured: a paused daemon woke 1.05 times a second for it alone).
    ///
    /// A refused start (a bad config or option, another daemon on the socket, a state file or
    /// library it will not touch) unwinds to here before exiting 1: the server's threads are
    /// stopped and every value is released first, so the process ends with nothing left behind
    /// (what AddressSanitizer's leak check verifies in `scripts/sanitize address`).
    func run() throws {
        do {
            try serve()
        } catch let refusal as Refusal {
            let line = Array("backline daemon: \(refusal.message)\n".utf8)
            _ = line.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
            throw ExitCode(1)
        }
    }

    /// Why the daemon will not start.
    private struct Refusal: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    private func serve() throws {
        // SIGTERM and SIGINT are taken by `sigwait` below: blocked before any thread starts,
        // so every thread inherits the mask and the signal reaches only that wait.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGTERM)
        sigaddset(&stopSignals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)

        var settings = DaemonConfig.defaults()
        let configFile = config ?? DaemonConfig.defaultConfigFile()
        // A regular file of at most 1 MiB (a FIFO or a link to /dev/zero in its place is refused,
        // never read); `/dev/null` means no settings.
        switch configFile == "/dev/null" ? .success(Data()) : readRegularFile(configFile, limit: 1 << 20) {
        case .success(let data):
            guard let text = String(data: data, encoding: .utf8) else { throw Refusal("\(configFile): not UTF-8 text") }
            do { try settings.apply(configText: text, file: configFile) } catch { throw Refusal("\(error)") }
        case .failure(let error) where error.code == ENOENT && config == nil:
            break  // no config file at the default place: defaults
        case .failure(let error):
            throw Refusal("cannot read the config file \(error)")
        }
        if let socket { settings.socketPath = socket }
        if let musicDir { settings.musicDirectory = musicDir }
        if let stateFile { settings.stateFile = stateFile }
        if let device { settings.device = device }
        if let library {
            do { try settings.set("library", library) } catch { throw Refusal("--library: \(error.message)") }
        }
        for m in mpdListen {
            do { try settings.set("mpd-listen", m) } catch { throw Refusal("--mpd-listen: \(error.message)") }
        }
        settings.httpListen += httpListen
        for o in outputs {
            do { try settings.set("output", o) } catch { throw Refusal("--output: \(error.message)") }
        }
        if noMPRIS { settings.mpris = false }
        if notify { settings.notify = true }
        if let logLevel {
            do { try settings.set("log-level", logLevel) } catch { throw Refusal("--log-level: unknown level '\(logLevel)'") }
        }
        do { try settings.validate() } catch { throw Refusal(error.message) }

        let level = Logger.Level(rawValue: settings.logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
        let logger = Logger(label: "backline.daemon")

        let server = ControlServer(config: settings, logger: logger)
        do { try server.claim() } catch {
            server.stop()
            throw Refusal("\(error)")
        }
        let core: DaemonCore
        do { core = try DaemonCore(config: settings, logger: logger, version: Backline.version) } catch {
            server.stop()
            throw Refusal("\(error)")
        }
        if settings.mpris { core.publishMPRIS() }
        if settings.notify { core.enableNotifications() }
        do {
            try server.start(core: core)
        } catch {
            logger.error("daemon failed", metadata: ["error": "\(error)"])
            core.shutdown()
            server.stop()
            throw ExitCode(1)
        }
        logger.info("ready", metadata: ["socket": "\(settings.socketPath)", "music": "\(settings.musicDirectory)"])
        var signal: Int32 = 0
        while sigwait(&stopSignals, &signal) != 0 {}
        // Graceful: stop accepting, save the state, close the device, then the connections.
        logger.info("shutting down")
        core.shutdown()
        server.stop()
    }
}
