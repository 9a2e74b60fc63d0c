# The flags every release build of Backline's programs passes to `swift build` (sourced by
# scripts/build, scripts/bench and scripts/order-file: modules built with other flags would be
# rebuilt by the next of them). They are passed here, not in Package.swift, because SwiftPM
# refuses a package with `unsafeFlags` in its library products when others depend on it by version.
#   -function-sections: each function in its own section, so the link can place the functions
#     Resources/backline-player.order lists together (Package.swift, `playerLayout`): the code
#     `play` and the daemon run shares 64 KiB fault-around windows instead of touching windows
#     all over the binary.
#   -disable-llvm-merge-functions-pass: LLVM's function merging folds identical helpers (value
#     witnesses, outlined copies) across modules into one `…Tm` function whose name changes from
#     build to build, so the order file could not place them and each sat in a window of code
#     that never runs. Measured on a 60 s `play` into PulseAudio: peak RSS 14.7 MiB (median)
#     instead of 15.3; the binary is 0.25 MB larger.
release_flags=(
  -c release --static-swift-stdlib
  -Xswiftc -Xfrontend -Xswiftc -function-sections
  -Xswiftc -Xfrontend -Xswiftc -disable-llvm-merge-functions-pass
)
