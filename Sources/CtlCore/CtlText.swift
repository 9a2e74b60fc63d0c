import BacklineWire

/// ctl's output for people: replies and events in words.
public enum CtlText {
    /// A path as a person named it: relative to the music directory when inside it.
    public static func shown(_ path: String, music: String) -> String {
        guard !music.isEmpty, path.hasPrefix(music + "/") else { return path }
        return String(path.dropFirst(music.count + 1))
    }

    /// One event in words.
    public static func eventLine(_ e: JSON, music: String = "") -> String {
        let (e, music) = (printable(e), printable(music))
        let kind = e["event"]?.string ?? "?"
        func str(_ k: String) -> String { e[k]?.string ?? "?" }
        func onOff(_ v: JSON?) -> String { v?.bool == true ? "on" : "off" }
        // Exhaustive over the one list of kinds: a new kind is written here or ctl does not compile.
        switch EventKind(rawValue: kind) {
        case .state?: return "state: \(str("state"))"
        case .buffering?: return e["buffering"]?.bool == true ? "buffering: waiting for the network" : "buffering: done, playing"
        case .current?:
            guard let i = e["item"], i != .null else { return "current: nothing (the end of the queue)" }
            return "current: \(itemLine(i)) [id \(i["id"]?.int ?? 0)]"
        case .queue?:
            let n = e["count"]?.int ?? 0
            return "queue: \(n) item\(n == 1 ? "" : "s") (version \(e["version"]?.int ?? 0))"
        case .modes?:
            return "modes: repeat \(str("repeat")) · shuffle \(onOff(e["shuffle"])) · single \(onOff(e["stopAfterCurrent"])) · consume \(str("consume"))"
        case .failed?: return "failed: \(shown(str("path"), music: music)): \(str("reason")) [id \(e["item"]?.int ?? 0)]"
        case .seeked?: return "seeked: \(clock(e["time"]?.number)) [id \(e["item"]?.int ?? 0)]"
        case .chapter?: return "\(chapterText(e)) [id \(e["item"]?.int ?? 0)]"
        case .position?: return "position: \(clock(e["elapsed"]?.number)) / \(clock(e["duration"]?.number)) [id \(e["item"]?.int ?? 0)]"
        case .volume?: return "volume: \(volumeText(e))"
        case .session?:
            switch str("kind") {
            case "interruptionBegan": return "session: paused for another player"
            case "interruptionEnded":
                return "session: the other player is done" + (e["shouldResume"]?.bool == true ? " (may resume)" : "")
            case "routeChanged":
                switch str("reason") {
                case "newDeviceAvailable": return "session: the output device is back"
                case "oldDeviceUnavailable": return "session: the output device is gone"
                case "categoryChange": return "session: how it shares the sound changed"
                default: return "session: the output changed"
                }
            case "mediaServicesWereReset": return "session: the sound server restarted"
            case "silencedChanged": return e["silenced"]?.bool == true ? "session: silenced (silent switch or screen lock)" : "session: no longer silenced"
            case "duckingChanged": return e["ducked"]?.bool == true ? "session: lowered while another player plays" : "session: back to full volume"
            default: return "session: \(str("kind"))"
            }
        case .lifecycle?:
            let words: [String: String] = [
                "willResignActive": "leaving the foreground", "didEnterBackground": "in the background",
                "willEnterForeground": "coming to the foreground", "didBecomeActive": "in the foreground",
                "didSuspend": "suspended while idle (the device is released)", "didResume": "woken up",
                "willTerminate": "stopping", "backgroundTaskExpiring": "background work running out of time",
                "backgroundTaskLeaked": "background work left unfinished",
            ]
            return "daemon: \(words[str("kind")] ?? str("kind"))"
        case .sleep?:
            switch str("kind") {
            case "set":
                if e["endOfItem"]?.bool == true { return "sleep: at the end of the item" }
                if e["endOfChapter"]?.bool == true { return "sleep: at the end of the chapter" }
                return "sleep: in \(clock((e["minutes"]?.number ?? 0) * 60, milliseconds: false))"
            case "cancelled": return "sleep: off"
            case "fired": return "sleep: paused"
            default: return "sleep: \(str("kind"))"
            }
        case .alarm?:
            switch str("kind") {
            case "set": return "alarm set: \(alarmLine(e["alarm"] ?? .null))"
            case "cancelled": return "alarm \(e["id"]?.int ?? 0) cancelled"
            case "fired": return "alarm rang: \(alarmLine(e["alarm"] ?? .null))"
            default: return "alarm: \(str("kind"))"
            }
        case .hook?:
            let status = e["status"]?.int.map { "exited \($0)" } ?? "could not run or timed out"
            return "hook: \(str("hook")) \(status)"
        case .playlists?: return "playlist changed: \(str("name"))"
        case .sticker?: return "sticker: \(str("path")) \(e["name"]?.string ?? "(all)")"
        case .update?: return updateLine(e)
        case .shutdown?: return "the daemon is stopping"
        case .partitions?: return "partitions or outputs changed"
        case .message?, nil:  // (a kind from a newer daemon: its fields as they come)
            guard case .object(let fields) = e else { return kind }
            return ([kind + ":"] + fields.filter { $0.0 != "event" && $0.0 != "seq" }.map { "\($0.0) \(short($0.1))" }).joined(separator: " ")
        }
    }

    // MARK: Human output

    public static func short(_ v: JSON) -> String {
        switch v {
        case .string(let s): return s.contains(" ") ? "\"\(s)\"" : s
        case .null: return "-"
        default: return v.text
        }
    }

    public static func time(_ t: Double?) -> String {
        guard let t, t.isFinite else { return "--:--" }
        let ms = Int((t * 1000).rounded())
        let s = ms / 1000
        return s >= 3600 ? "\(s / 3600):\(pad(s / 60 % 60, 2)):\(pad(s % 60, 2)).\(pad(ms % 1000, 3))"
            : "\(s / 60):\(pad(s % 60, 2)).\(pad(ms % 1000, 3))"
    }

    /// M:SS (H:MM:SS), or with milliseconds.
    public static func clock(_ t: Double?, milliseconds: Bool = true) -> String {
        guard let t, t.isFinite else { return "--:--" }
        if milliseconds { return time(t) }
        let s = Int(t.rounded())
        return s >= 3600 ? "\(s / 3600):\(pad(s / 60 % 60, 2)):\(pad(s % 60, 2))" : "\(s / 60):\(pad(s % 60, 2))"
    }

    /// A chapter position (a status's `chapter`, a `chapter` event): `chapter 2/40: Title (from 12:30)`.
    static func chapterText(_ c: JSON) -> String {
        let count = c["count"]?.int ?? 0
        guard let i = c["chapter"]?.int else { return "chapter -/\(count) (before the first)" }
        let title = c["title"]?.string.map { ": " + printable($0) } ?? ""
        return "chapter \(i + 1)/\(count)\(title) (from \(clock(c["start"]?.number, milliseconds: false)))"
    }

    public static func itemLine(_ i: JSON) -> String {
        let title = i["title"]?.string ?? "?"
        let artist = i["artist"]?.string.map { " — \($0)" } ?? ""
        let d = i["duration"]?.number.map { " (\(time($0)))" } ?? ""
        let err = i["error"]?.string.map { "  [failed: \($0)]" } ?? ""
        return "\(title)\(artist)\(d)\(err)"
    }

    /// Stop-after-current as `on` (once), `each` or `off`.
    static func single(_ r: JSON) -> String {
        r["stopAfterEach"]?.bool == true ? "each" : r["stopAfterCurrent"]?.bool == true ? "on" : "off"
    }

    public static func volumeText(_ r: JSON) -> String {
        "\(r["volume"]?.int.map(String.init) ?? short(r["volume"] ?? .null))%" + (r["muted"]?.bool == true ? " (muted)" : "")
    }

    public static func alarmLine(_ a: JSON) -> String {
        var line = "\(a["id"]?.int ?? 0). \(a["time"]?.string ?? "?")\(a["daily"]?.bool == true ? " daily" : "")"
        if let f = a["fade"]?.number, f > 0 { line += ", fading in over \(Int(f)) s" }
        if let i = a["item"]?.int { line += ", plays item \(i)" }
        if let p = a["playlist"]?.string { line += ", loads \(p)" }
        return line + " (next \(a["next"]?.string ?? "?"))"
    }

    /// Ids as ranges: `1–300`, `4, 7–9`.
    public static func ranges(_ ids: [Int]) -> String {
        var parts: [String] = []
        var i = 0
        while i < ids.count {
            var j = i
            while j + 1 < ids.count, ids[j + 1] == ids[j] + 1 { j += 1 }
            parts.append(j == i ? "\(ids[i])" : j == i + 1 ? "\(ids[i]), \(ids[j])" : "\(ids[i])–\(ids[j])")
            i = j + 1
        }
        return parts.joined(separator: ", ")
    }

    /// How the audio session shares the sound, in a music player's words.
    public static func sharing(_ session: JSON?) -> String {
        let category = session?["category"]?.string ?? "?"
        let options = session?["options"]?.array?.compactMap(\.string) ?? []
        var words = [category == "playback" ? "keeps playing in the background" : "stops in the background"]
        if options.contains("duckOthers") {
            words.append("lowers other players")
        } else if options.contains("interruptSpokenAudioAndMixWithOthers") {
            words.append("pauses spoken audio, plays along with music")
        } else if category == "ambient" || options.contains("mixWithOthers") {
            words.append("plays along with other players")
        } else {
            words.append("pauses for other players")
        }
        if category != "playback" { words.append("the silent switch mutes it") }
        return words.joined(separator: " · ")
    }

    /// Where the daemon is (the app state), in words.
    public static func whereItIs(_ app: String?) -> String {
        switch app {
        case "active": "in the foreground"
        case "inactive": "in the foreground (inactive)"
        case "background": "in the background"
        case "suspended": "suspended while idle"
        default: app ?? "?"
        }
    }

    /// The `--format` line: %title% %artist% %album% %elapsed% %duration% %state% %id% %file%
    /// %position%; what is missing is empty.
    public static func formatted(_ format: String, _ r: JSON) -> String {
        let r = printable(r)
        let c = r["current"].flatMap { $0 == .null ? nil : $0 }
        let music = r["musicDirectory"]?.string ?? ""
        let values: [String: String] = [
            "title": c?["title"]?.string ?? "",
            "artist": c?["artist"]?.string ?? "",
            "album": c?["album"]?.string ?? "",
            "elapsed": c == nil ? "" : clock(r["elapsed"]?.number, milliseconds: false),
            "duration": r["duration"]?.number.map { clock($0, milliseconds: false) } ?? "",
            "state": r["state"]?.string ?? "",
            "buffering": r["buffering"]?.bool == true ? "buffering" : "",
            "id": c?["id"]?.int.map(String.init) ?? "",
            "file": c?["path"]?.string.map { shown($0, music: music) } ?? "",
            "position": r["index"]?.int.map { String($0 + 1) } ?? "",
        ]
        var out = ""
        var rest = format[...]
        while let open = rest.firstIndex(of: "%") {
            out += rest[..<open]
            let after = rest[rest.index(after: open)...]
            if let close = after.firstIndex(of: "%"), let v = values[String(after[..<close])] {
                out += v
                rest = after[after.index(after: close)...]
            } else {
                out += "%"
                rest = after
            }
        }
        return out + rest
    }

    /// A library scan's event in words.
    public static func updateLine(_ e: JSON) -> String {
        let e = printable(e)
        let job = e["job"]?.int ?? 0
        let path = e["path"]?.string ?? ""
        let what = path.isEmpty ? "" : " of \(path)"
        if let error = e["error"]?.string { return "update \(job)\(what) failed: \(error)" }
        guard e["done"]?.bool == true else { return "update \(job)\(what): \(e["scanned"]?.int ?? 0) files scanned" }
        var parts: [String] = []
        for (k, word) in [("added", "added"), ("updated", "updated"), ("moved", "moved"), ("removed", "removed"), ("failed", "unreadable")] {
            if let n = e[k]?.int, n > 0 { parts.append("\(n) \(word)") }
        }
        return "update \(job)\(what) done: \(e["scanned"]?.int ?? 0) files; " + (parts.isEmpty ? "nothing changed" : parts.joined(separator: ", "))
    }

    /// A scan in progress as a bar: files scanned of those the last scan saw.
    public static func updateBar(_ e: JSON) -> String {
        let e = printable(e)
        let n = e["scanned"]?.int ?? 0
        guard let total = e["expected"]?.int, total > 0 else { return "updating: \(n) files" }
        let width = 30
        let filled = min(width, n * width / total)
        return "updating [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] \(n)/\(total) files"
    }

    /// The reply in words; `sent` is the command as sent (what a count or a position refers to).
    public static func human(_ name: String, _ r: JSON, sent: JSON? = nil, verbose: Bool = false) -> String {
        let (r, sent) = (printable(r), sent.map(printable))
        if let words = replyWords(name) { return words.render(r, sent, verbose) }
        return fields(r)
    }

    /// A reply in words, from the reply (its control characters escaped), the command as sent,
    /// and `--verbose`.
    public struct ReplyWords: Sendable {
        public let render: @Sendable (_ reply: JSON, _ sent: JSON?, _ verbose: Bool) -> String
        public init(_ render: @escaping @Sendable (_ reply: JSON, _ sent: JSON?, _ verbose: Bool) -> String) { self.render = render }
    }

    /// Each command's reply in words, by the command's name (the schema's): a command missing
    /// here shows its reply's fields (``fields(_:)``), or `ok` when it has none. A switch, not a
    /// dictionary: building a table of every command's words (its entries hashed, its closures
    /// reabstracted through thunks the runtime resolves by mangled name) for the one reply
    /// printed was a sixth of a `ctl status`'s instructions.
    public static func replyWords(_ name: String) -> ReplyWords? {
        switch name {
        case "status": ReplyWords { r, sent, verbose in
            let state = r["state"]?.string ?? "?"
            let symbol = state == "playing" ? "▶" : state == "paused" ? "⏸" : "■"
            var out = "\(symbol) \(state)"
            if r["buffering"]?.bool == true { out += " (buffering)" }
            if let c = r["current"], c != .null {
                let idx = (r["index"]?.int).map { "\($0 + 1)/\(r["count"]?.int ?? 0)" } ?? "-"
                out += "  \(itemLine(c))  [\(idx), id \(c["id"]?.int ?? 0)]\n"
                let e = r["elapsed"]?.number ?? 0
                let d = r["duration"]?.number
                let width = 30
                let filled = d.map { $0 > 0 ? Int(Double(width) * min(1, e / $0)) : 0 } ?? 0
                out += "  [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
                out += "\(time(e)) / \(time(d))\n"
                if let ch = r["chapter"], ch != .null { out += "  \(chapterText(ch))\n" }
            } else {
                out += "  (nothing current; \(r["count"]?.int ?? 0) in the queue)\n"
            }
            let session = r["session"]
            out += "  volume \(volumeText(r)) · repeat \(short(r["repeat"] ?? .null)) · shuffle \(r["shuffle"]?.bool == true ? "on" : "off")"
            out += " · single \(single(r))"
            if let consume = r["consume"]?.string, consume != "off" { out += " · consume \(consume)" }
            if let x = r["crossfade"]?.number, x > 0 { out += " · crossfade \(seconds(x))" }
            if let x = r["speed"]?.number, x != 1 { out += " · speed \(rateText(x))" }
            out += "\n  \(sharing(session))\n"
            var notes: [String] = []
            if session?["interrupted"]?.bool == true { notes.append("paused for another player") }
            if session?["silenced"]?.bool == true { notes.append("silenced (silent switch or screen lock)") }
            if session?["ducked"]?.bool == true { notes.append("lowered while another player plays") }
            if !notes.isEmpty { out += "  " + notes.joined(separator: " · ") + "\n" }
            out += "  daemon \(whereItIs(r["app"]?.string)) · device \(short(r["device"] ?? .null)) · underruns \(short(r["underruns"] ?? .null))"
            out += " · sleep \(sleepText(r["sleep"]))"
            out += "\n"
            if verbose {
                out += "  audio \(r["audio"]?["description"]?.string ?? "(nothing heard)")\n"
                let db = r["replayGainDecibels"]?.number
                out += "  replay gain \(replayGainText(r["replayGain"]))\(db.map { "; this item \(tenths($0)) dB" } ?? "")\n"
                out += "  output \(r["output"]?.string ?? "(device closed)")\n"
            }
            return out
        }
        case "list": ReplyWords { r, sent, verbose in
            guard r["tags"] != nil else {
                guard let items = r["items"]?.array, !items.isEmpty else { return "(the queue is empty)\n" }
                let width = String(items.count).count
                return items.enumerated().map { n, i in
                    let mark = i["current"]?.bool == true ? ">" : " "
                    let num = String(n + 1).leftPad(width)
                    return "\(mark)\(num). [id \(i["id"]?.int ?? 0)] \(itemLine(i))\n"
                }.joined()
            }
            // A tag's values: each group's value once, what is under it indented.
            let names = r["tags"]?.array?.compactMap(\.string) ?? []
            var out = ""
            var previous: [String] = []
            for row in r["values"]?.array ?? [] {
                let v = row.array?.compactMap(\.string) ?? []
                let same = zip(previous, v).prefix(max(0, v.count - 1)).prefix { $0.0 == $0.1 }.count
                for level in same..<v.count {
                    let value = v[level].isEmpty ? "(no \(names.indices.contains(level) ? names[level] : "value"))" : v[level]
                    out += String(repeating: "  ", count: level) + value + "\n"
                }
                previous = v
            }
            return out.isEmpty ? "(nothing)\n" : out
        }
        case "channels": ReplyWords { r, _, _ in
            let all = r["channels"]?.array?.compactMap(\.string) ?? []
            return all.isEmpty ? "(nobody listens on a channel)\n" : all.map { "\($0)\n" }.joined()
        }
        case "now-playing": ReplyWords { r, sent, verbose in
            guard let info = r["info"], case .object = info else { return "(nothing is playing)\n" }
            var out = ""
            func line(_ k: String, _ v: String?) { if let v { out += "\(k): \(v)\n" } }
            func count(_ n: JSON?, of total: JSON?) -> String? {
                n?.int.map { n in total?.int.map { "\(n) of \($0)" } ?? "\(n)" }
            }
            line("title", info["title"]?.string)
            line("artist", info["artist"]?.string)
            line("album", info["albumTitle"]?.string)
            line("album artist", info["albumArtist"]?.string)
            line("track", count(info["albumTrackNumber"], of: info["albumTrackCount"]))
            line("disc", count(info["discNumber"], of: info["discCount"]))
            let genres = info["tags"]?["genre"]?.array?.compactMap(\.string) ?? []
            line("genre", genres.isEmpty ? info["genre"]?.string : genres.joined(separator: ", "))
            line("date", info["tags"]?["date"]?.array?.first?.string)
            line("composer", info["tags"]?["composer"]?.array.map { $0.compactMap(\.string).joined(separator: ", ") })
            line("elapsed", info["elapsedPlaybackTime"]?.number.map { time($0) })
            line("duration", info["playbackDuration"]?.number.map { time($0) })
            line("state", info["playbackRate"]?.number.map { $0 == 0 ? "paused" : "playing" })
            let index = info["playbackQueueIndex"]?.int.map { JSON.int($0 + 1) }
            line("position", count(index, of: info["playbackQueueCount"]))
            line("id", r["item"]?.int.map(String.init))
            if let a = info["artwork"] { line("cover", "\(a["mimeType"]?.string ?? "?"), \(a["bytes"]?.int ?? 0) bytes") }
            return out
        }
        case "list-partitions": ReplyWords(partitionWords)
        case "new-partition": ReplyWords(partitionWords)
        case "delete-partition": ReplyWords(partitionWords)
        case "partition": ReplyWords(partitionWords)
        case "outputs": ReplyWords(outputWords)
        case "move-output": ReplyWords(outputWords)
        case "playlists": ReplyWords { r, sent, verbose in
            let all = r["playlists"]?.array ?? []
            return all.isEmpty ? "(no stored playlists)\n" : all.map { "\($0["name"]?.string ?? "")\n" }.joined()
        }
        case "playlist": ReplyWords { r, sent, verbose in
            let items = r["items"]?.array ?? []
            guard !items.isEmpty else { return "(the playlist is empty)\n" }
            let width = String(items.count).count
            return items.enumerated().map { "\(String($0 + 1).leftPad(width)). \($1.string ?? "")\n" }.joined()
        }
        case "update": ReplyWords { r, sent, verbose in
            return "updating the library (job \(r["job"]?.int ?? 0))\n"
        }
        case "find": ReplyWords(songWords)
        case "search": ReplyWords(songWords)
        case "count": ReplyWords { r, sent, verbose in
            if let counts = r["counts"]?.array {
                return counts.map { c in
                    let v = c["value"]?.string ?? ""
                    return "\(v.isEmpty ? "(none)" : v): \(c["songs"]?.int ?? 0) songs, \(time(c["playtime"]?.number))\n"
                }.joined()
            }
            return "\(r["songs"]?.int ?? 0) songs, \(time(r["playtime"]?.number))\n"
        }
        case "ls": ReplyWords { r, sent, verbose in
            return (r["entries"]?.array ?? []).map { e in
                let path = e["path"]?.string ?? ""
                switch e["kind"]?.string {
                case "directory": return "\(path)/\n"
                case "playlist": return "\(path)\n"
                default: return "\(path)  \(itemLine(e))\n"
                }
            }.joined()
        }
        case "stats": ReplyWords { r, sent, verbose in
            var out = "\(r["songs"]?.int ?? 0) songs, \(r["artists"]?.int ?? 0) artists, \(r["albums"]?.int ?? 0) albums, \(time(r["playtime"]?.number))\n"
            out += "updated \(r["updated"]?.string ?? "never")"
            if let n = r["unreadable"]?.int, n > 0 { out += "; \(n) files unreadable" }
            if let u = r["updating"], u != .null { out += "; updating now (job \(u["job"]?.int ?? 0))" }
            return out + "\n"
        }
        case "browse": ReplyWords { r, sent, verbose in
            return (r["entries"]?.array ?? []).map { e in
                let path = e["path"]?.string ?? ""
                guard e["kind"] == "audio", e["title"] != nil else { return e["kind"] == "directory" ? "\(path)/\n" : "\(path)\n" }
                return "\(path)  \(itemLine(e))\n"
            }.joined()
        }
        case "add": ReplyWords(addedWords)
        case "insert": ReplyWords(addedWords)
        case "load": ReplyWords(addedWords)
        case "find-add": ReplyWords(addedWords)
        case "remove": ReplyWords { r, sent, verbose in
            let n = sent?["items"]?.array.map { Set($0.compactMap(\.int)).count }
            let left = r["count"]?.int ?? 0
            return "removed \(n.map(String.init) ?? "?"), \(left) left\n"
        }
        case "move": ReplyWords { r, sent, verbose in
            let id = sent?["item"]?.int
            return "moved id \(id.map(String.init) ?? "?") to position \((r["index"]?.int ?? 0) + 1)\n"
        }
        case "playlist-move": ReplyWords { r, sent, verbose in
            return "moved to position \((r["index"]?.int ?? 0) + 1)\n"
        }
        case "playlist-add": ReplyWords(playlistCountWords)
        case "playlist-delete": ReplyWords(playlistCountWords)
        case "save": ReplyWords { r, sent, verbose in
            let n = r["count"]?.int ?? 0
            return "saved \(n) item\(n == 1 ? "" : "s")\n"
        }
        case "alarm": ReplyWords { r, sent, verbose in
            let all = r["alarms"]?.array ?? []
            guard !all.isEmpty else { return "(no alarms)\n" }
            return all.map { alarmLine($0) + "\n" }.joined()
        }
        case "play": ReplyWords(stateWords)
        case "pause": ReplyWords(stateWords)
        case "toggle": ReplyWords(stateWords)
        case "stop": ReplyWords(stateWords)
        case "next": ReplyWords(currentWords)
        case "previous": ReplyWords(currentWords)
        case "seek": ReplyWords(positionWords)
        case "skip": ReplyWords(positionWords)
        case "bookmarks": ReplyWords { r, sent, verbose in
            if let n = r["forgotten"]?.int { return "forgot \(n) bookmark\(n == 1 ? "" : "s")\n" }
            let list = r["bookmarks"]?.array ?? []
            guard !list.isEmpty else { return "no bookmarks\n" }
            return list.map { b in
                "\(clock(b["position"]?.number, milliseconds: false)) / \(clock(b["duration"]?.number, milliseconds: false))  \(printable(b["path"]?.string ?? "?"))\n"
            }.joined()
        }
        case "sticker": ReplyWords { r, sent, verbose in
            if let names = r["names"]?.array { return names.isEmpty ? "(no stickers)\n" : names.map { printable($0.string ?? "") + "\n" }.joined() }
            let list = r["stickers"]?.array ?? []
            switch sent?["action"]?.string ?? "names" {
            case "delete": return "deleted\n"
            case "find":
                return list.isEmpty ? "(none)\n" : list.map { "\(printable($0["value"]?.string ?? ""))  \(printable($0["path"]?.string ?? ""))\n" }.joined()
            default:
                return list.isEmpty ? "(no stickers)\n" : list.map { "\(printable($0["name"]?.string ?? ""))=\(printable($0["value"]?.string ?? ""))\n" }.joined()
            }
        }
        case "chapter": ReplyWords { r, sent, verbose in
            let list = r["chapters"]?.array ?? []
            let current = r["chapter"]?.int
            if let position = r["position"]?.number {
                let title = current.flatMap { list.indices.contains($0) ? list[$0]["title"]?.string : nil }
                return "chapter \((current ?? 0) + 1)/\(list.count)\(title.map { ": " + printable($0) } ?? "") (from \(clock(position, milliseconds: false)))\n"
            }
            guard !list.isEmpty else { return "no chapters\n" }
            var out = ""
            for (i, c) in list.enumerated() {
                out += "\(i == current ? "▶" : " ") \(pad(i + 1, String(list.count).count)). \(clock(c["start"]?.number, milliseconds: false))  \(printable(c["title"]?.string ?? "(untitled)"))\n"
            }
            return out
        }
        case "repeat": ReplyWords { r, sent, verbose in
            return "repeat: \(r["repeat"]?.string ?? "?")\n"
        }
        case "consume": ReplyWords { r, sent, verbose in
            return "consume: \(r["consume"]?.string ?? "?")\n"
        }
        case "replay-gain": ReplyWords { r, sent, verbose in
            return "replay gain: \(replayGainText(r["replayGain"]))\n"
        }
        case "crossfade": ReplyWords { r, sent, verbose in
            return "crossfade: \((r["crossfade"]?.number).map { $0 > 0 ? seconds($0) : "off" } ?? "?")\n"
        }
        case "speed": ReplyWords { r, sent, verbose in
            return "speed: \((r["speed"]?.number).map(rateText) ?? "?")\n"
        }
        case "shuffle": ReplyWords { r, sent, verbose in
            return "shuffle: \(r["shuffle"]?.bool == true ? "on" : "off")\n"
        }
        case "single": ReplyWords { r, sent, verbose in
            return "single: \(single(r))\n"
        }
        case "rate": ReplyWords { r, sent, verbose in
            return "rate: \(short(r["rate"] ?? .null))\n"
        }
        case "volume": ReplyWords(volumeWords)
        case "mute": ReplyWords(volumeWords)
        case "sleep": ReplyWords { r, sent, verbose in
            return "sleep: \(sleepText(r["sleep"]))\n"
        }
        case "lifecycle": ReplyWords { r, sent, verbose in
            return "daemon: \(whereItIs(r["app"]?.string))\n"
        }
        case "session": ReplyWords { r, sent, verbose in
            let category = r["category"]?.string ?? "?"
            let options = r["options"]?.array?.compactMap(\.string) ?? []
            var out = "\(category)\(options.isEmpty ? "" : " (" + options.joined(separator: ", ") + ")"): \(sharing(r))\n"
            out += "silent switch \(r["silentSwitch"]?.bool == true ? "on" : "off") · screen lock \(r["screenLocked"]?.bool == true ? "on" : "off")"
            out += " · media keys control \(r["nowPlayingApp"]?.bool == true ? "it" : "another player")\n"
            var notes: [String] = []
            if r["interrupted"]?.bool == true { notes.append("paused for another player") }
            if r["silenced"]?.bool == true { notes.append("silenced (silent switch or screen lock)") }
            if r["ducked"]?.bool == true { notes.append("lowered while another player plays") }
            if !notes.isEmpty { out += notes.joined(separator: " · ") + "\n" }
            return out
        }
        case "ping": ReplyWords { r, sent, verbose in
            return "pong\n"
        }
        case "version": ReplyWords { r, sent, verbose in
            return "backline \(r["version"]?.string ?? "?") (protocol \(short(r["protocol"] ?? .null)))\n"
        }
        default: nil
        }
    }

    /// The words of `list-partitions`, `new-partition`, `delete-partition`, `partition`.
    private static func partitionWords(_ r: JSON, _ sent: JSON?, _ verbose: Bool) -> String {
        let current = r["current"]?.string
        return (r["partitions"]?.array ?? []).map { p in
            let name = p["name"]?.string ?? ""
            let output = p["output"]?.string.map { "output \($0)" } ?? "no output"
            return "\(name == current ? ">" : " ") \(name): \(p["state"]?.string ?? ""), \(p["count"]?.int ?? 0) items, \(output)\n"
        }.joined()
    }

    /// The words of `outputs`, `move-output`.
    private static func outputWords(_ r: JSON, _ sent: JSON?, _ verbose: Bool) -> String {
        return (r["outputs"]?.array ?? []).map { o in
            let partition = o["partition"]?.string.map { "in \($0)" } ?? "free"
            return "\(o["id"]?.int ?? 0). \(o["name"]?.string ?? "") (\(o["device"]?.string ?? "")): \(partition)\n"
        }.joined()
    }

    /// The words of `find`, `search`.
    private static func songWords(_ r: JSON, _ sent: JSON?, _ verbose: Bool) -> String {
        let songs = r["songs"]?.array ?? []
        return songs.isEmpty ? "(nothing found)\n" : songs.map { "\($0["path"]?.string ?? "")  \(itemLine($0))\n" }.joined()
    }

    /// The words of `add`, `insert`, `load`, `find-add`.
    private static func addedWords(_ r: JSON, _ sent: JSON?, _ verbose: Bool) -> String {
        let ids = (r["items"]?.array ?? []).compactMap(\.int)
        var out = ids.count == 1 ? "added 1 item (id \(ids[0]))\n"
            : "added \(ids.count) items" + (ids.isEmpty ? "" : " (ids \(ranges(ids)))") + "\n"
        let skipped = r["skipped"]?.array ?? []
        let shownSkips = 10
        for s in skipped.prefix(shownSkips) { out += "skipped \(s["path"]?.string ?? ""): \(s["reason"]?.string ?? "")\n" }
        if skipped.count > shownSkips { out += "… and \(skipped.count - shownSkips) more skipped (--json lists them all)\n" }
        return out
    }

    /// The words of `playlist-add`, `playlist-delete`.
    private static func playlistCountWords(_ r: JSON, _ sent: JSON?, _ verbose: Bool) -> String {
        let n = r["count"]?.int ?? 0
        return "\(n) entr\(n == 1 ? "y" : "ies") in the playlist\n"
    }

    /// The words of `play`, `pause`, `toggle`, `stop`.
    private static func stateWords(_ r: JSON, _ sent: JSON?, _ verbose: Bool) -> String {
        return "state: \(r["state"]?.string ?? "?")\n"
    }

    /// The words of `next`, `previous`.
    private static func currentWords(_ r: JSON, _ sent: JSON?, _ verbose: Bool) -> String {
        guard let c = r["current"], c != .null else { return "current: nothing (the end of the queue)\n" }
        return "current: \(itemLine(c)) [id \(c["id"]?.int ?? 0)]\n"
    }

    /// The words of `seek`, `skip`.
    private static func positionWords(_ r: JSON, _ sent: JSON?, _ verbose: Bool) -> String {
        return "position: \(short(r["position"] ?? .null))\n"
    }

    /// The words of `volume`, `mute`.
    private static func volumeWords(_ r: JSON, _ sent: JSON?, _ verbose: Bool) -> String {
        return "volume: \(volumeText(r))\n"
    }

    /// A reply's fields, one a line (`ok` when there are none).
    static func fields(_ r: JSON) -> String {
        guard case .object(let fields) = r else { return "" }
        let rest = fields.filter { !["id", "ok"].contains($0.0) }
        if rest.isEmpty { return "ok\n" }
        return rest.map { k, v in
            if case .object = v, k == "current" { return "current: \(itemLine(v))\n" }
            if case .object(let inner) = v { return inner.map { "\($0.0): \(short($0.1))\n" }.joined() }
            return "\(k): \(short(v))\n"
        }.joined()
    }

    /// The sleep timer in words: `off`, `in 29:59`, `at the end of the item`.
    public static func sleepText(_ s: JSON?) -> String {
        guard let s, s != .null else { return "off" }
        if s["endOfItem"]?.bool == true { return "at the end of the item" }
        if s["endOfChapter"]?.bool == true { return "at the end of the chapter" }
        var out = "in \(clock(s["remaining"]?.number, milliseconds: false))"
        if let f = s["fade"]?.number, f > 0 { out += ", fading out over \(Int(f)) s" }
        return out
    }

    /// `off`, or `track, preamp +2.0 dB, missing −3.0 dB, limited`.
    static func replayGainText(_ j: JSON?) -> String {
        guard let j, let mode = j["mode"]?.string else { return "?" }
        guard mode != "off" else { return "off" }
        var out = mode
        if let p = j["preamp"]?.number, p != 0 { out += ", preamp \(tenths(p)) dB" }
        if let m = j["missingPreamp"]?.number, m != 0 { out += ", missing \(tenths(m)) dB" }
        out += j["limit"]?.bool == false ? ", not limited" : ", limited"
        return out
    }

    /// `3 s`, `2.5 s`: seconds as a person writes them.
    public static func seconds(_ x: Double) -> String {
        let t = Int((x * 10).rounded())
        return t % 10 == 0 ? "\(t / 10) s" : "\(t / 10).\(t % 10) s"
    }

    /// `1.5×`, `1×`, `0.75×`: a rate as a person writes it (two decimals at most).
    public static func rateText(_ x: Double) -> String {
        let t = Int((x * 100).rounded())
        let cents = t % 100
        return cents == 0 ? "\(t / 100)×" : cents % 10 == 0 ? "\(t / 100).\(cents / 10)×" : "\(t / 100).\(cents / 10)\(cents % 10)×"
    }

    /// `x` with one decimal and its sign: `+2.0`, `-6.0`, `0.0`.
    static func tenths(_ x: Double) -> String {
        let t = Int((x * 10).rounded())
        let sign = t > 0 ? "+" : t < 0 ? "-" : ""
        return "\(sign)\(t.magnitude / 10).\(t.magnitude % 10)"
    }

    /// `n` as printf's `%0Nd` writes it: zero-padded to `width` characters, the sign included.
    static func pad(_ n: Int, _ width: Int) -> String {
        let digits = String(n.magnitude)
        let sign = n < 0 ? "-" : ""
        return sign + String(repeating: "0", count: max(0, width - sign.count - digits.count)) + digits
    }
}

extension String {
    public func leftPad(_ n: Int) -> String { String(repeating: " ", count: max(0, n - count)) + self }
}
