import Control
import Daemon
import MediaCore
import Glibc

/// What the daemon reads back from disk: its state file and its config file.
enum StoreTargets {
    /// A state file: one that loads saves, loads again and re-saves byte for byte the same; one
    /// that does not is moved aside with a reason, never half-read.
    static let state = FuzzTarget("state", "StateStore.load; a loaded state saves, loads again and re-saves identically; a refused one is moved aside") { input throws(InvariantFailure) in
        let path = FuzzScratch.path("state.json"), again = FuzzScratch.path("again.json")
        FuzzScratch.write(input, to: path)
        defer { unlink(path); unlink(again) }
        switch StateStore(path: path).load() {
        case .state(let s):
            let first: [UInt8]
            do throws(StateFileError) { try StateStore(path: again).save(s) } catch {
                throw InvariantFailure("state", "a loaded state cannot be saved: \(error)")
            }
            first = FuzzScratch.read(again) ?? []
            guard case .state(let reloaded) = StateStore(path: again).load() else {
                throw InvariantFailure("state", "a saved state does not load: \(shown(String(decoding: first, as: UTF8.self)))")
            }
            try check(reloaded == s, "state", "a saved state loads as another state")
            do throws(StateFileError) { try StateStore(path: again).save(reloaded) } catch {
                throw InvariantFailure("state", "a reloaded state cannot be saved: \(error)")
            }
            let second = FuzzScratch.read(again) ?? []
            try check(first == second, "state", "re-saved differently: \(shown(String(decoding: first, as: UTF8.self)))")
        case .movedAside(let reason, let movedTo):
            try check(!reason.isEmpty, "state", "moved aside with no reason")
            try check(FuzzScratch.read(movedTo) == input, "state", "the refused file was not kept as it was")
            unlink(movedTo)
        case .none:
            throw InvariantFailure("state", "a file that is there loads as none")
        case .unreadable(let e):
            throw InvariantFailure("state", "a regular file is unreadable: \(e)")
        }
    }

    /// A config file: an error names a line of the file; settings that apply stay within their
    /// documented ranges.
    static let config = FuzzTarget("config", "DaemonConfig.apply and validate; errors name a line of the file; applied values stay in range") { input throws(InvariantFailure) in
        let text = String(decoding: input, as: UTF8.self)
        var c = DaemonConfig.defaults(environment: ["HOME": "/home/fuzz", "XDG_RUNTIME_DIR": "/run/user/1000"])
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
        do throws(DaemonConfig.ParseError) {
            try c.apply(configText: text, file: "fuzz.conf")
        } catch {
            try check((1...lines).contains(error.line), "config", "error at line \(error.line) of \(lines)")
            try check(!error.message.contains("\n"), "config", "error message spans lines")
            return
        }
        try? c.validate()
        try check((20...5000).contains(c.bufferMilliseconds), "config", "buffer-ms \(c.bufferMilliseconds)")
        try check((2...8).contains(c.maxChannels), "config", "channels \(c.maxChannels)")
        try check(c.crossfade >= 0 && c.crossfade <= 3600, "config", "crossfade \(c.crossfade)")
        try check(c.replayGain.preamp.isFinite && abs(c.replayGain.preamp) <= 60, "config", "preamp \(c.replayGain.preamp)")
        try check(c.maxRequestBytes >= 256 && c.maxOutputBytes >= 4096 && c.maxConnections >= 1, "config", "limits")
        try check(c.requestTimeout >= 0.5 && c.authTimeout >= 0.5 && c.saveInterval >= 0.2 && c.positionInterval >= 0.05, "config", "intervals")
        for o in c.outputs { try check(!o.device.isEmpty && !o.name.isEmpty, "config", "an output without a name or device") }
        try check(Set(c.outputs.map(\.name)).count == c.outputs.count, "config", "an output named twice")
    }
}
