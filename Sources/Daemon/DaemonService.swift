import Logging
import ServiceLifecycle

/// The daemon as a swift-service-lifecycle `Service`: serves until graceful shutdown
/// (SIGTERM/SIGINT through the `ServiceGroup`), then stops accepting, saves the state and
/// closes the device.
public struct DaemonService: Service {
    public let core: DaemonCore
    public let server: ControlServer

    public init(core: DaemonCore, server: ControlServer) {
        self.core = core
        self.server = server
    }

    public func run() async throws {
        try await server.start(core: core)
        core.logger.info("ready", metadata: ["socket": "\(core.config.socketPath)", "music": "\(core.config.musicDirectory)"])
        try? await gracefulShutdown()
        core.logger.info("shutting down")
        core.shutdown()
        await server.stop()
    }
}
