import AudioEngine
import Control
import Daemon
import Testing

/// The config file's numbers: plain decimal only, anything else a config error naming the
/// key and the line.
@Suite("the config file's numbers")
struct ConfigFileTests {
    /// The error `text` gives, or nil when it is taken.
    static func error(_ text: String) -> DaemonConfig.ParseError? {
        var config = DaemonConfig.defaults(environment: ["HOME": "/nonexistent"])
        do throws(DaemonConfig.ParseError) {
            try config.apply(configText: text, file: "daemon.conf")
            return nil
        } catch {
            return error
        }
    }

    @Test("`crossfade = 0x10`, `1e1`, `inf`, `nan`, `.5`, `5.`, `0x1p4` and Arabic-Indic digits are refused naming the key and line; `3`, `2.5`, `-1.5`, `+2` are taken")
    func plainDecimal() throws {
        for bad in ["0x10", "1e1", "inf", "nan", ".5", "5.", "0x1p4", "1_0", "٣"] {
            let e = Self.error("# numbers\ncrossfade = \(bad)\n")
            #expect(e?.line == 2 && e?.message.hasPrefix("crossfade: expected a decimal number from 0 to 3600, got '\(bad)'") == true,
                    "\(bad): \(e.map(String.init(describing:)) ?? "taken")")
        }
        #expect(Self.error("replay-gain-preamp = -0x1\n")?.message.hasPrefix("replay-gain-preamp:") == true)
        for good in ["crossfade = 3", "crossfade = 2.5", "replay-gain-preamp = -1.5", "crossfade = +2", "buffer-ms = 200"] {
            #expect(Self.error(good) == nil, "\(good)")
        }
        var config = DaemonConfig.defaults(environment: ["HOME": "/nonexistent"])
        try config.apply(configText: "crossfade = 2.5\n", file: "daemon.conf")
        #expect(config.crossfade == 2.5)
    }

    @Test("skip intervals: 30 s forward and 15 s back unless set; `skip-forward = 20` and `skip-backward = 10` are taken, and 1 and 3600; 0 and 3601 refused naming the key")
    func skipIntervals() throws {
        var config = DaemonConfig.defaults(environment: ["HOME": "/nonexistent"])
        #expect(config.skipForward == 30 && config.skipBackward == 15)
        try config.apply(configText: "skip-forward = 20\nskip-backward = 10\n", file: "daemon.conf")
        #expect(config.skipForward == 20 && config.skipBackward == 10)
        for edge in ["skip-forward = 1", "skip-forward = 3600", "skip-backward = 1", "skip-backward = 3600"] {
            #expect(Self.error(edge) == nil, "\(edge): the ends of the range are taken")
        }
        #expect(Self.error("skip-forward = 0\n")?.message.hasPrefix("skip-forward: expected a decimal number from 1 to 3600") == true)
        #expect(Self.error("skip-backward = 3601\n")?.message.hasPrefix("skip-backward: expected a decimal number from 1 to 3600") == true)
    }

    @Test("trim-silence: off unless set; off, spoken and all taken; another word refused naming the key and the words")
    func trimSilence() throws {
        var config = DaemonConfig.defaults(environment: ["HOME": "/nonexistent"])
        #expect(config.trimSilence == .off)
        for (word, mode) in [("spoken", SilenceTrimMode.spoken), ("all", .all), ("off", .off)] {
            try config.apply(configText: "trim-silence = \(word)\n", file: "daemon.conf")
            #expect(config.trimSilence == mode)
        }
        #expect(Self.error("trim-silence = yes\n")?.message.hasPrefix("trim-silence: expected off, spoken or all, got 'yes'") == true)
    }

    @Test("resume: `resume-after` 0 turns it off, 1440 (a day) is taken, -1 and 1441 refused; `resume-rewind` 0 and 60 taken, -0.1 and 60.1 refused, each naming the key")
    func resumeSettings() throws {
        var config = DaemonConfig.defaults(environment: ["HOME": "/nonexistent"])
        #expect(config.resume.enabled && config.resume.minimumLength == 600 && config.resume.rewind == 5)
        try config.apply(configText: "resume-after = 0\nresume-rewind = 0\n", file: "daemon.conf")
        #expect(!config.resume.enabled && config.resume.rewind == 0)
        try config.apply(configText: "resume-after = 1440\nresume-rewind = 60\n", file: "daemon.conf")
        #expect(config.resume.enabled && config.resume.minimumLength == 86_400 && config.resume.rewind == 60)
        for bad in ["resume-after = -1", "resume-after = 1441"] {
            #expect(Self.error(bad)?.message.hasPrefix("resume-after: expected a decimal number from 0 to 1440") == true, "\(bad)")
        }
        for bad in ["resume-rewind = -0.1", "resume-rewind = 60.1"] {
            #expect(Self.error(bad)?.message.hasPrefix("resume-rewind: expected a decimal number from 0 to 60") == true, "\(bad)")
        }
    }
}
