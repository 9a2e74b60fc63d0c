/// The MPD protocol's listeners (`mpd-listen =`, each a Unix socket or `HOST:PORT`, optionally
/// with the partition its clients start in); one codec, and so one password and MixRamp state,
/// for all of them.
extension ListenerKind {
    static let mpd = ListenerKind(name: "MPD") { setup in
        let config = setup.config
        guard !config.mpdListen.isEmpty else { return [] }
        let mpd = MPDLineProtocol(shared: MPDShared(password: config.mpdPassword, bigAnswer: { [trimmer = setup.core.trimmer] in trimmer.noteActivity() }))
        return config.mpdListen.map { addr in
            let admission: Admission = addr.hasPrefix("/") ? .owner : config.mpdPassword == nil ? .open : .credentials  // (open: loopback only, validated)
            return Endpoint(name: "MPD \(addr)", address: addr, admission: admission, codec: mpd, checkDirectory: true,
                            announcement: "listening (MPD protocol)", partition: config.mpdListenPartition[addr])
        }
    }
}
