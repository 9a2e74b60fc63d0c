// swift-tools-version:6.1
import PackageDescription

/// The release build of Backline's own programs (`scripts/build` sets
/// `BACKLINE_PROGRAM_BUILD=1`): each function of this package's modules in its own section, so
/// the link can lay `backline-player`'s start-up and playback code out together (see
/// `playerLayout`). Passed for every module instead (`-Xswiftc`), the dependencies' code
/// split too, and a 60 s `play` kept 150 KiB more of the binary's code resident.
///
/// A package that depends on Backline never sets the variable, so it sees no `unsafeFlags` in
/// any target (SwiftPM refuses a package depended on by version whose products carry them).
let programTuning: [SwiftSetting] = Context.environment["BACKLINE_PROGRAM_BUILD"] == "1"
    ? [.unsafeFlags(["-Xfrontend", "-function-sections"], .when(configuration: .release))]
    : []

/// Settings every Swift target shares: Swift 6 language mode is the package default;
/// these add the upcoming-feature checks the model Swift server packages use.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
] + programTuning

/// How the release `backline-player` is linked (its resident memory was mostly its own code
/// pages, spread over the binary). lld, with: the functions `scripts/order-file` saw
/// `play` and the daemon run, in that order, first (`Resources/backline-player.order`; the
/// kernel maps code in 64 KiB runs, so scattered code costs memory as well as cache); relative
/// relocations packed (DT_RELR: 10 KiB instead of 1.2 MiB read at every start); and only the
/// symbols shared libraries need exported (the Swift driver exports all 13,000, whose table
/// the dynamic loader searched at every start); and libstdc++ (the Swift runtime's) from its
/// static archive when `scripts/build` has linked it into `.build/static-cxx`: the pages used,
/// not the shared library's 1 MiB.
let playerLayout: [LinkerSetting] = [
    .unsafeFlags([
        "-use-ld=lld",
        "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
        "-Xlinker", "--no-export-dynamic",
        "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Resources/backline-player.order",
        "-Xlinker", "--no-warn-symbol-ordering",
        "-L\(Context.packageDirectory)/.build/static-cxx",
    ], .when(configuration: .release)),
]

/// How the release `backline` is linked: fully static, and with lld laying out first the
/// functions `scripts/order-file` saw `--version`, `help` and `ctl` run
/// (`Resources/backline.order`), so what a `ctl` call touches shares pages.
let frontEndLayout: [LinkerSetting] = [
    .unsafeFlags(["-static-executable"]),
    .unsafeFlags([
        "-use-ld=lld",
        "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Resources/backline.order",
        "-Xlinker", "--no-warn-symbol-ordering",
    ], .when(configuration: .release)),
]

let package = Package(
    name: "Backline",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "backline", targets: ["backline"]),
        .executable(name: "backline-player", targets: ["backline-player"]),
        .executable(name: "backline-bench", targets: ["backline-bench"]),
        // The README's AVQueuePlayer-style example, and a second "app" for trying sessions across processes.
        .executable(name: "queue-example", targets: ["queue-example"]),
        .executable(name: "session-probe", targets: ["session-probe"]),
        .executable(name: "backline-fuzz", targets: ["backline-fuzz"]),
        // The libraries others depend on (README's Swift section); their API changes only as
        // CHANGELOG.md says (scripts/api-check). HTTPInput plays http and https URLs once
        // registered; BacklineWire is the client of a running daemon's JSON protocol.
        .library(name: "Player", targets: ["Player"]),
        .library(name: "Session", targets: ["Session"]),
        .library(name: "NowPlaying", targets: ["NowPlaying"]),
        .library(name: "Lifecycle", targets: ["Lifecycle"]),
        .library(name: "AudioEngine", targets: ["AudioEngine"]),
        .library(name: "MediaCore", targets: ["MediaCore"]),
        .library(name: "Media", targets: ["Media"]),
        .library(name: "HTTPInput", targets: ["HTTPInput"]),
        .library(name: "BacklineWire", targets: ["BacklineWire"]),
        // The programs' own modules, products since 0.1.0: they build as dependencies too, but
        // their API may change in any version.
        .library(name: "RingBuffer", targets: ["RingBuffer"]),
        .library(name: "PlayQueue", targets: ["PlayQueue"]),
        .library(name: "Control", targets: ["Control"]),
        .library(name: "MPRIS", targets: ["MPRIS"]),
        .library(name: "Daemon", targets: ["Daemon"]),
        .library(name: "Library", targets: ["Library"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        // `swift package generate-documentation` (DocC) for the library modules.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        // C libraries, through pkg-config; apt names the packages that provide them.
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CMPG123", pkgConfig: "libmpg123", providers: [.apt(["libmpg123-dev"])]),
        .systemLibrary(name: "CFLAC", pkgConfig: "flac", providers: [.apt(["libflac-dev"])]),
        // libvorbisfile's header only: it is opened with dlopen when the first Ogg Vorbis item plays.
        .systemLibrary(name: "CVorbisFile", providers: [.apt(["libvorbis-dev"])]),
        // libopusfile's header (apt libopusfile-dev), opened with dlopen when the first Opus item
        // plays: a C target, whose public directory finds the header's <opus_multistream.h>
        // (pkg-config's -I/usr/include/opus would link the library too).
        .target(name: "COpusFile"),
        // FFmpeg's headers only: its libraries are opened with dlopen when an item needs them.
        .systemLibrary(name: "CFFmpeg", providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev"])]),
        // libcurl's headers only: it is opened with dlopen when the first HTTP item plays.
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // libpulse: its pkg-config file adds `-D_REENTRANT -pthread`, flags SwiftPM refuses (with
        // a warning on every build), so the module map links it by name; the headers are in the
        // default include path (`/usr/include/pulse`).
        .systemLibrary(name: "CPulse", providers: [.apt(["libpulse-dev"])]),
        // glibc's malloc controls (`malloc_trim`, `mallopt`), which the Glibc module leaves out.
        .systemLibrary(name: "CMalloc"),
        // termios for `backline play`'s keys, with the crash handler that restores them (C storage only).
        .systemLibrary(name: "CTerminal"),
        // libsoxr: the pipe output's resampler (items at other rates than the pipe's); its header
        // only, the library opened with dlopen when the pipe first resamples (see CSoxr).
        .systemLibrary(name: "CSoxr", providers: [.apt(["libsoxr-dev"])]),
        // libsonic and Rubber Band: the time-stretchers for playback at other rates (the
        // time-domain and spectral algorithms); headers only, each library opened with dlopen
        // by the first item that needs it (see CSonic, CRubberBand).
        .systemLibrary(name: "CSonic", providers: [.apt(["libsonic-dev"])]),
        .systemLibrary(name: "CRubberBand", providers: [.apt(["librubberband-dev"])]),
        // SQLite: the music library's database (headers only: the library opened with dlopen, see CSQLite).
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        // sd-bus (libsystemd): the session bus, for MPRIS.
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),

        // The JSON protocol's client side: the JSON value, the blocking `ControlClient`, the socket
        // directory's rules, the event kinds. No dependencies (not even Foundation): the small
        // `backline` links it; Daemon re-exports it.
        .target(name: "BacklineWire", swiftSettings: strictSettings),
        // The control protocol as data: every command's name, aliases, arguments, permission and
        // text, every event kind. No dependencies: the daemon, `ctl` and the tests read it.
        .target(name: "BacklineSchema", swiftSettings: strictSettings),
        // `backline ctl`: its syntax, help, output for people and the run itself.
        .target(name: "CtlCore", dependencies: ["BacklineWire", "BacklineSchema"], swiftSettings: strictSettings),

        // Thin POSIX helpers in place of Foundation's: threads, path strings, trimming, printf
        // formatting, a spawned child process. No dependencies: the player and daemon link no
        // Foundation beyond FoundationEssentials.
        .target(name: "Platform", swiftSettings: strictSettings),
        // The mutex every module uses: the standard library's, or under ThreadSanitizer a twin it
        // can see (scripts/sanitize).
        .target(name: "Locking", swiftSettings: strictSettings),

        // The render callback's steady-gain loop, in C (see its header).
        .target(name: "RenderKernel"),

        // Lock-free single-producer/single-consumer byte ring: no dependencies at all.
        .target(name: "RingBuffer", swiftSettings: strictSettings),

        // The media seam, with no C imports: formats, metadata, the one error type, and the
        // ByteSource / AudioDecoder protocols and DecoderPlugin descriptors.
        .target(name: "MediaCore", swiftSettings: strictSettings),
        // Their implementations: the file source, the decoder registry (by content), and one
        // file per format over its reference library (libmpg123, libFLAC, libvorbisfile,
        // libopusfile; WAV and AIFF read directly).
        .target(
            name: "Media",
            dependencies: ["Locking", "MediaCore", "Platform", "CMPG123", "CFLAC", "CVorbisFile", "COpusFile", "CFFmpeg"],
            swiftSettings: strictSettings
        ),

        // The HTTP input (libcurl on its own thread per stream): registered by the programs
        // that play streams; the engine does not depend on it.
        .target(
            name: "HTTPInput",
            dependencies: ["Locking", "MediaCore", "Media", "Platform", "CCurl"],
            swiftSettings: strictSettings
        ),

        // The music library: scans of the music directory into SQLite (a thin typed wrapper),
        // MPD's filters and queries over it. No networking.
        .target(
            name: "Library",
            dependencies: ["Locking", "BacklineWire", "MediaCore", "Media", "Platform", "CSQLite"],
            swiftSettings: strictSettings
        ),

        // Decoder thread, output thread, control plane. No networking here.
        .target(
            name: "AudioEngine",
            dependencies: [
                "Locking", "MediaCore", "Media", "CALSA", "CPulse", "CSoxr", "CSonic", "CRubberBand", "RingBuffer", "Platform", "RenderKernel",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),

        // Benchmarks that `backline bench` runs and prints side by side with their references.
        // Event fan-out to observers on their queues and to AsyncStreams (no dependencies).
        .target(name: "Broadcast", dependencies: ["Locking"], swiftSettings: strictSettings),
        // AVAudioSession semantics across processes (a registry of sessions in XDG_RUNTIME_DIR).
        .target(name: "Session", dependencies: ["Locking", "Broadcast"], swiftSettings: strictSettings),
        // UIApplication semantics: states, background tasks, suspension.
        .target(name: "Lifecycle", dependencies: ["Locking", "Broadcast"], swiftSettings: strictSettings),
        // AVQueuePlayer semantics over the engine: items, queue, rate, observers, events.
        .target(name: "Player", dependencies: ["Locking", "Platform", "AudioEngine", "Media", "MediaCore", "Session", "Lifecycle", "Broadcast"], swiftSettings: strictSettings),
        // MPNowPlayingInfoCenter / MPRemoteCommandCenter semantics, and their QueuePlayer bindings.
        .target(name: "NowPlaying", dependencies: ["Locking", "Platform", "Player", "AudioEngine", "Session", "Broadcast"], swiftSettings: strictSettings),
        // A music player's play queue (ids, repeat, shuffle, history) feeding a QueuePlayer. No networking.
        .target(name: "PlayQueue", dependencies: ["Locking", "MediaCore", "Player", "Broadcast"], swiftSettings: strictSettings),
        // A thin typed wrapper over sd-bus: a connection with its own thread, messages, values.
        .target(name: "DBus", dependencies: ["Locking", "CSystemd"], swiftSettings: strictSettings),
        // MPRIS2: the now-playing info center and the remote command center on the session bus.
        .target(name: "MPRIS", dependencies: ["Locking", "Platform", "DBus", "NowPlaying", "AudioEngine"], swiftSettings: strictSettings),
        // The protocol-neutral command layer: typed commands (one descriptor table), typed replies,
        // errors and events, and the playback façade they act on. No networking.
        .target(
            name: "Control",
            dependencies: ["Locking", "BacklineWire", "BacklineSchema", "Platform", "PlayQueue", "Player", "NowPlaying", "Session", "Lifecycle", "AudioEngine", "Media", "Broadcast", "Library"],
            swiftSettings: strictSettings
        ),
        // `backline daemon`: one transport for every protocol (SwiftNIO), the JSON, MPD and HTTP/WebSocket
        // codecs on it, persistence, hooks.
        .target(
            name: "Daemon",
            dependencies: [
                "Locking", "BacklineWire", "BacklineSchema", "Control", "PlayQueue", "Player", "NowPlaying", "Session", "Lifecycle", "AudioEngine", "Media", "CMalloc", "MPRIS", "Platform", "Library",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // A second "app" for the cross-process audio-session tests.
        .executableTarget(name: "session-probe", dependencies: ["Platform", "Player", "AudioEngine", "Session", "NowPlaying"], swiftSettings: strictSettings),
        // The README's AVQueuePlayer-style example.
        .executableTarget(name: "queue-example", dependencies: ["Player", "AudioEngine"], swiftSettings: strictSettings),
        .target(name: "BacklineBench", dependencies: ["Locking", "RingBuffer", "AudioEngine", "Daemon", "Platform"], swiftSettings: strictSettings),
        // `backline bench` (the front end hands it over): the benchmarks run and time other
        // programs with Foundation's `Process`, which the player and the daemon do not link.
        .executableTarget(
            name: "backline-bench",
            dependencies: ["BacklineBench", "Platform", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strictSettings
        ),

        // `backline`, the small front end: `--version` and `ctl` (the commands CtlCore builds by
        // itself) with no Foundation, SwiftNIO or audio library, linked fully statically (the Swift
        // runtime and glibc: the dynamic loader's relocations were most of a dynamic build's
        // start-up); every other command line it `execv`s, unchanged, to `backline-player` beside it.
        .executableTarget(
            name: "backline",
            dependencies: ["BacklineWire", "CtlCore"],
            swiftSettings: strictSettings,
            linkerSettings: frontEndLayout
        ),
        // The full command line: play, daemon, ctl (every command) (swift-argument-parser); no
        // Foundation beyond FoundationEssentials; `bench` it hands to `backline-bench`.
        .executableTarget(
            name: "backline-player",
            dependencies: [
                "Locking", "AudioEngine", "CMalloc", "CtlCore", "Platform", "Player", "Session", "Lifecycle", "Daemon", "Control", "MPRIS", "NowPlaying", "CTerminal", "PlayQueue",
                "HTTPInput",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings,
            linkerSettings: playerLayout
        ),

        // The fuzz targets: every parser of untrusted bytes as a function with its invariants
        // (`scripts/fuzz` drives them with libFuzzer; FuzzTests replays the committed corpora).
        .target(
            name: "FuzzTargets",
            dependencies: ["BacklineWire", "Control", "Daemon", "HTTPInput", "Library", "Media", "MediaCore",
                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        // `backline-fuzz`: libFuzzer's driver when `scripts/fuzz` builds it, a replayer otherwise.
        .executableTarget(name: "backline-fuzz", dependencies: ["FuzzTargets"], swiftSettings: strictSettings),

        // Test harness: private PulseAudio null sink, ALSA file capture, reference decodes, fixtures.
        // Optimised even in debug builds: the recording analysis (cross-correlation over minutes
        // of audio) takes seconds instead of minutes.
        .target(name: "BacklineTestSupport", dependencies: ["AudioEngine", "Locking", "MediaCore", "Platform"], swiftSettings: strictSettings + [.unsafeFlags(["-O"])]),

        .testTarget(name: "PlatformTests", dependencies: ["Platform"], swiftSettings: strictSettings),
        .testTarget(name: "RingBufferTests", dependencies: ["RingBuffer"], swiftSettings: strictSettings),
        .testTarget(name: "LibraryTests", dependencies: ["Library", "Locking", "Media", "BacklineTestSupport"], swiftSettings: strictSettings),
        .testTarget(name: "HarnessTests", dependencies: ["BacklineTestSupport"], swiftSettings: strictSettings),
        // ctl's syntax, requests, help and words, without a daemon.
        .testTarget(name: "CtlCoreTests", dependencies: ["CtlCore", "BacklineSchema", "BacklineWire"], swiftSettings: strictSettings),
        // The schema against everything that names commands and events: the handlers, the
        // JSON codec, `ctl`, the MPD table, the web remote and docs/PROTOCOL.md.
        .testTarget(
            name: "SchemaTests",
            dependencies: ["BacklineSchema", "BacklineWire", "Control", "CtlCore", "Daemon", "backline-player", "BacklineTestSupport"],
            swiftSettings: strictSettings
        ),
        // Every committed fuzz input (seeds and findings, `Tests/FuzzCorpus`) through its target.
        .testTarget(name: "FuzzTests", dependencies: ["FuzzTargets", "MediaCore"], exclude: ["FuzzCorpus"], swiftSettings: strictSettings),
        .testTarget(
            name: "BacklineCLITests",
            // The tests run both executables (`backline` execs `backline-player`), which `swift build`
            // and `swift test` build; `backline` is not a dependency here: its `-static-executable`
            // would be linked into the test bundle too.
            dependencies: ["backline-player", "BacklineTestSupport", "AudioEngine", "Media", "HTTPInput"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SessionTests",
            dependencies: ["Locking", "Session", "Lifecycle", "Player", "NowPlaying", "AudioEngine", "BacklineTestSupport", "session-probe"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "NowPlayingTests",
            dependencies: ["Locking", "NowPlaying", "Player", "Session", "AudioEngine", "BacklineTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PlayerTests",
            dependencies: ["Locking", "Player", "AudioEngine", "Session", "Lifecycle", "HTTPInput", "BacklineTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ControlTests",
            dependencies: ["Locking", "AudioEngine", "BacklineSchema", "Control", "PlayQueue", "Player", "Session", "Lifecycle", "NowPlaying", "BacklineTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "DaemonTests",
            dependencies: ["Locking", "Daemon", "Control", "PlayQueue", "MPRIS", "backline-player", "BacklineTestSupport"],  // (as above)
            swiftSettings: strictSettings
        ),
        // The protocols' codecs on their own: the transport's pipelines driven in memory
        // (SwiftNIO's EmbeddedChannel) over a daemon core in the test process. (A target of its
        // own: SwiftNIO's C modules re-declare the socket structs that DaemonTests' raw clients use.)
        .testTarget(
            name: "CodecTests",
            dependencies: [
                "Daemon", "Control", "BacklineTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // README's snippets, compiled as written, and an iOS-style client (main actor, async API), run.
        .testTarget(
            name: "SnippetTests",
            dependencies: ["AudioEngine", "Control", "Daemon", "Player", "Session", "Lifecycle", "NowPlaying", "BacklineTestSupport"],
            swiftSettings: strictSettings
        ),
        // The HTTP input's byte source on its own, against servers the tests start on loopback.
        // mpd's queue alone (no player, no thread).
        .testTarget(name: "PlayQueueTests", dependencies: ["PlayQueue"], swiftSettings: strictSettings),
        // The decoders, sources and tag readers alone (no engine, no device).
        .testTarget(name: "MediaTests", dependencies: ["Media", "MediaCore", "BacklineTestSupport"], swiftSettings: strictSettings),
        .testTarget(name: "HTTPInputTests", dependencies: ["HTTPInput", "MediaCore", "BacklineTestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "AudioEngineTests",
            dependencies: ["Locking", "AudioEngine", "Media", "HTTPInput", "BacklineTestSupport"],
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
