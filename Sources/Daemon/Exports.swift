// The JSON value, the blocking client and the socket directory rules live in BacklineWire (no
// dependencies, so the small `backline` front end links them without Foundation or SwiftNIO);
// whoever imports Daemon keeps seeing them here.
// `-DBACKLINE_NARROW_IMPORTS` (scripts/check's release build) builds without the re-export:
// a module of this package that uses them without importing BacklineWire then fails to build.
#if BACKLINE_NARROW_IMPORTS
import BacklineWire
#else
@_exported import BacklineWire
#endif
