// The media seam's types (StreamFormat, TrackMetadata, MediaError, PlaybackClip, the
// protocols) are part of the engine's API: an `import AudioEngine` sees them.
// `-DBACKLINE_NARROW_IMPORTS` (scripts/check's release build) builds without the re-export:
// a module of this package that uses them without importing MediaCore then fails to build.
#if BACKLINE_NARROW_IMPORTS
import MediaCore
#else
@_exported import MediaCore
#endif
