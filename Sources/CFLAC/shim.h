#ifndef BACKLINE_CFLAC_SHIM_H
#define BACKLINE_CFLAC_SHIM_H
#include <FLAC/stream_decoder.h>
#include <FLAC/metadata.h>
#endif
