#ifndef BACKLINE_CVORBISFILE_SHIM_H
#define BACKLINE_CVORBISFILE_SHIM_H
#define OV_EXCLUDE_STATIC_CALLBACKS
#include <vorbis/vorbisfile.h>
#endif
