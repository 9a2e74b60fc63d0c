import Foundation

/// The kinds of HTTP server a file can come from, as users meet them: each a path of
/// ``HTTPTestServer`` over one directory, or nginx itself (``NginxServer``).
public enum HTTPServerKind: String, CaseIterable, Sendable, CustomStringConvertible {
    /// `Accept-Ranges: bytes`, `206` for a range.
    case ranges = "files"
    /// The same, the body sent 1,460 bytes a millisecond (what has arrived when the reader
    /// jumps is neither all nor nothing).
    case rangesPaced = "paced"
    /// Claims ranges, answers every request with the whole body.
    case ignoresRange = "norange"
    /// No `Accept-Ranges`, every request answered with the whole body.
    case noRanges = "plain"
    /// Debian's nginx.
    case nginx

    public var description: String {
        switch self {
        case .ranges: "a server with ranges"
        case .rangesPaced: "a server with ranges, sending 1,460 bytes a millisecond"
        case .ignoresRange: "a server that claims ranges and sends the whole body"
        case .noRanges: "a server without ranges"
        case .nginx: "nginx"
        }
    }

    /// The kinds this machine can start (nginx only where it is installed).
    public static var available: [HTTPServerKind] { allCases.filter { $0 != .nginx || NginxServer.isInstalled } }
}

/// A directory served by the test server and, when asked, by nginx: the URL of a file in it
/// from each kind of server.
public final class HTTPServers: Sendable {
    public let test: HTTPTestServer
    public let nginx: NginxServer?

    /// Starts the test server over `directory`, and nginx too when `nginx` is true.
    public init(directory: URL, nginx: Bool) throws {
        test = try HTTPTestServer(directory: directory)
        self.nginx = nginx ? try NginxServer(directory: directory) : nil
    }

    /// `name`'s URL from `kind` (nginx: started in ``init(directory:nginx:)``).
    public func url(_ kind: HTTPServerKind, _ name: String) -> String {
        switch kind {
        case .nginx: nginx!.url(name)
        case .rangesPaced: test.url("paced/\(name)?chunk=1460&ms=1")
        default: test.url("\(kind.rawValue)/\(name)")
        }
    }
}
