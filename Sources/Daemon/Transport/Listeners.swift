import Logging

/// What a listener kind is given to make its endpoints: the configuration (its addresses and
/// credentials), the core its connections serve, the daemon's logger.
struct ListenerSetup: Sendable {
    let config: DaemonConfig
    let core: DaemonCore
    let logger: Logger
}

/// One kind of listener: a protocol and the addresses the configuration gives it (none: it
/// does not listen). A new protocol is its codec (a ``WireProtocol``), its kind in one file,
/// and one line in ``ListenerRegistry/all``.
struct ListenerKind: Sendable {
    /// How the help and the logs name it.
    let name: String
    /// Its endpoints under `setup`'s configuration, in the order they are bound.
    let endpoints: @Sendable (ListenerSetup) -> [Endpoint]
}

/// The one registry of listeners: every protocol the daemon serves beside its control socket
/// (which ``ControlServer`` binds last: its appearing says the daemon is ready).
enum ListenerRegistry {
    static let all: [ListenerKind] = [.jsonTCP, .mpd, .http]
}

extension ListenerKind {
    /// The JSON protocol on TCP (`tcp =`): every connection gives the token first.
    static let jsonTCP = ListenerKind(name: "JSON over TCP") { setup in
        guard let tcp = setup.config.tcpListen else { return [] }
        return [Endpoint(name: "TCP \(tcp)", address: tcp, admission: .credentials, codec: JSONLineProtocol(), logKey: "tcp")]
    }
}
