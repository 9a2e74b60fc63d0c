import Logging

/// The web remote's listeners (`http-listen =`): its pages, `/status`, `/schema`, cover art and
/// the WebSocket; open without credentials only on loopback without `http-password`.
extension ListenerKind {
    static let http = ListenerKind(name: "HTTP") { setup in
        let config = setup.config
        guard !config.httpListen.isEmpty else { return [] }
        let root = WebSite.findRoot(configured: config.webRoot)
        if root == nil { setup.logger.warning("the web remote's files were not found (set web-root): its pages answer 404") }
        let site = WebSite(root: root, password: config.httpPassword, token: config.token)
        return config.httpListen.map { addr in
            let host = (try? ControlServer.split(addr).0) ?? ""
            let loopback = DaemonConfig.isLoopback(host)
            let open = loopback && config.httpPassword == nil
            return Endpoint(name: "HTTP \(addr)", address: addr, admission: open ? .open : .credentials,
                            codec: HTTPProtocol(site: site, loopback: loopback), announcement: "listening (web remote)")
        }
    }
}
