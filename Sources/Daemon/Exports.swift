// The JSON value, the blocking client and the socket directory rules live in BacklineWire (no
// dependencies, so the small `backline` front end links them without Foundation or SwiftNIO);
// whoever imports Daemon keeps seeing them here.
@_exported import BacklineWire
