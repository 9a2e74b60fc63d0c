# The test suites by where they run; sourced by scripts/test and scripts/check.
#
# quiet: the suites that time what the listener hears against a recording of the sink (and the
# daemon's periodic save, ±2 s) run one at a time, on an otherwise quiet machine; run in parallel
# with the rest of the suite on 2 cores their clocks measure the test runner's own load (event
# deliveries late by 0.1–0.5 s), not Backline. IOSStyleClientTests holds the shared sink across
# `await`s: beside tests that wait for the sink on the 2 cooperative threads it would starve its
# own continuations, so it runs here, alone. QueueTests and DispatcherTests drive a player into
# ALSA's file and null devices, which play far faster than real time, and read its state right
# after a command: under the parallel pass's load the output can finish an item between the
# command and the read (seen 1–2 times in 3 runs of the two targets together, never alone), so
# they run here too. PlayTerminalTests follows a status line second by second through tmux: a
# loaded parallel pass let its screen go unread for 9 s. SnapcastTests: snapclient keeps its
# rooms in sync by dropping or repeating a sample when it falls behind, and snapserver's pipe
# reader by filling a late chunk with silence: on a loaded machine either would break the
# sample-for-sample comparison; here they do not. PipeOutputTests likewise: a pipe is played in
# real time; its exact comparison failed once in three runs beside two busy loops while the
# driver still said `prepared` when its queue ran dry. BackgroundAudioTests records the sink's
# monitor while a 1.5 s tone plays and the app is suspended after it: in the parallel pass the
# recording once held 1.12 s of it (the monitor's reader or the player starved on 2 busy cores).
quiet_suites='JumpTests|RealtimeTests|StreamRealtimeTests|RealtimePlayerTests|PersistenceTests|LoadTests|SilenceTests|DeviceReturnTests|IOSStyleClientTests|PlayerTests.QueueTests|DispatcherTests|PlayTerminalTests|SnapcastTests|PipeOutputTests|BackgroundAudioTests'

# long: endurance runs and a package build, which scripts/check (CI) runs after the suite, one
# at a time: SoakTests (two minutes of traffic, then memory given back), ChaosTests (three
# minutes of 50 clients and random faults, through its own PulseAudio server),
# ConsumerPackageTests (a package of its own that depends on Backline, built with both cores).
long_suites='SoakTests|ChaosTests|ConsumerPackageTests'
