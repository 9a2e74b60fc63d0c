// The media seam's types (StreamFormat, TrackMetadata, MediaError, the protocols) are part of
// the engine's API: an `import AudioEngine` sees them.
@_exported import MediaCore
