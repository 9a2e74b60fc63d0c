import Dispatch
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
        // Saving (fsync) and joining the engine's threads block: not on the cooperative pool.
        await blockingWork { core.shutdown() }
        await server.stop()
    }
}

/// Runs blocking `work` on a Dispatch thread and waits for it without holding a thread of
/// Swift's cooperative pool.
public func blockingWork<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { c in
        DispatchQueue.global().async { c.resume(returning: work()) }
    }
}
