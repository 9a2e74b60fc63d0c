import Locking
import Logging
import Synchronization

/// What a listener kind is given to make its endpoints: the configuration (its addresses and
/// credentials), the core its connections serve, the daemon's logger.
struct ListenerSetup: Sendable {
    let config: DaemonConfig
    let core: DaemonCore
    let logger: Logger
}

/// One kind of listener: a protocol and the addresses the configuration gives it (none: it
/// does not listen). The daemon's own kinds are each in its protocol's file; a package adds one
/// with ``init(name:configKey:protocol:)`` and ``ListenerRegistry/register(_:)``.
public struct ListenerKind: Sendable {
    /// How the help and the logs name it.
    public let name: String
    /// Its endpoints under `setup`'s configuration, in the order they are bound.
    let endpoints: @Sendable (ListenerSetup) -> [Endpoint]

    init(name: String, endpoints: @escaping @Sendable (ListenerSetup) -> [Endpoint]) {
        (self.name, self.endpoints) = (name, endpoints)
    }

    /// A kind that serves `protocol` on each address of the configuration's
    /// `listen-CONFIGKEY = ADDRESS` lines (``DaemonConfig/listen``): a Unix socket path (the
    /// daemon's user only) or a loopback `HOST:PORT`.
    public init(name: String, configKey: String, protocol lines: any LineProtocol) {
        let codec = LineProtocolCodec(lines: lines)
        self.init(name: name) { setup in
            (setup.config.listen[configKey] ?? []).map { address in
                Endpoint(name: "\(name) \(address)", address: address, admission: address.hasPrefix("/") ? .owner : .open,
                         codec: codec, checkDirectory: true, announcement: "listening (\(name))")
            }
        }
    }
}

/// The one registry of listeners: every protocol the daemon serves beside its control socket
/// (which ``ControlServer`` binds last: its appearing says the daemon is ready). The daemon's
/// own are JSON over TCP, MPD and HTTP; ``shared`` is the one ``ControlServer`` uses unless
/// given another.
public final class ListenerRegistry: Sendable {
    /// The registry ``ControlServer/init(config:logger:)`` uses.
    public static let shared = ListenerRegistry()
    private let registered = Lock<[ListenerKind]>([])

    /// A registry of the daemon's own kinds.
    public init() {}

    /// Adds `kind`: its endpoints are bound after the daemon's own, in registration order.
    public func register(_ kind: ListenerKind) {
        registered.withLock { $0.append(kind) }
    }

    /// Every kind: the daemon's own, then those registered.
    public var kinds: [ListenerKind] { [.jsonTCP, .mpd, .http] + registered.withLock { $0 } }
}

extension ListenerKind {
    /// The JSON protocol on TCP (`tcp =`): every connection gives the token first.
    static let jsonTCP = ListenerKind(name: "JSON over TCP") { setup in
        guard let tcp = setup.config.tcpListen else { return [] }
        return [Endpoint(name: "TCP \(tcp)", address: tcp, admission: .credentials, codec: JSONLineProtocol(), logKey: "tcp")]
    }
}
