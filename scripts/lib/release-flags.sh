# The flags every release build of Backline's programs passes to `swift build` (sourced by
# scripts/build, scripts/bench and scripts/order-file: modules built with other flags would be
# rebuilt by the next of them). They are passed here, not in Package.swift, because SwiftPM
# refuses a package with `unsafeFlags` in its library products when others depend on it by version.
#   BACKLINE_PROGRAM_BUILD=1: Package.swift then compiles this package's own modules with a
#     section per function (`programTuning`), so the link can place the functions
#     Resources/backline-player.order lists together; a package that depends on Backline never
#     sets it, and sees no unsafe flags.
#   -disable-llvm-merge-functions-pass: LLVM's function merging folds identical helpers (value
#     witnesses, outlined copies) across modules into one `…Tm` function whose name changes from
#     build to build, so the order file could not place them and each sat in a window of code
#     that never runs. Measured on a 60 s `play` into PulseAudio: peak RSS 14.7 MiB (median)
#     instead of 15.3; the binary is 0.25 MB larger.
release_flags=(
  -c release --static-swift-stdlib
  -Xswiftc -Xfrontend -Xswiftc -disable-llvm-merge-functions-pass
)
export BACKLINE_PROGRAM_BUILD=1
