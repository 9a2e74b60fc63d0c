#ifndef BACKLINE_CFFMPEG_SHIM_H
#define BACKLINE_CFFMPEG_SHIM_H
// FFmpeg's headers (Debian's multiarch include path), and its libraries opened with dlopen the
// first time an item needs them: nothing links them, so `play` of an MP3 or a FLAC pays none
// of libavcodec's sixty-odd dependencies in start-up time or memory.
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <dlfcn.h>

/// The FFmpeg functions Backline calls, resolved by `bl_ffmpeg_load`.
typedef struct {
    __typeof__(&avformat_alloc_context) avformat_alloc_context;
    __typeof__(&avformat_open_input) avformat_open_input;
    __typeof__(&avformat_find_stream_info) avformat_find_stream_info;
    __typeof__(&av_find_best_stream) av_find_best_stream;
    __typeof__(&av_read_frame) av_read_frame;
    __typeof__(&av_seek_frame) av_seek_frame;
    __typeof__(&avformat_close_input) avformat_close_input;
    __typeof__(&avio_alloc_context) avio_alloc_context;
    __typeof__(&avio_context_free) avio_context_free;
    __typeof__(&avcodec_alloc_context3) avcodec_alloc_context3;
    __typeof__(&avcodec_parameters_to_context) avcodec_parameters_to_context;
    __typeof__(&avcodec_open2) avcodec_open2;
    __typeof__(&avcodec_send_packet) avcodec_send_packet;
    __typeof__(&avcodec_receive_frame) avcodec_receive_frame;
    __typeof__(&avcodec_flush_buffers) avcodec_flush_buffers;
    __typeof__(&avcodec_free_context) avcodec_free_context;
    __typeof__(&avcodec_get_name) avcodec_get_name;
    __typeof__(&av_packet_alloc) av_packet_alloc;
    __typeof__(&av_packet_free) av_packet_free;
    __typeof__(&av_packet_unref) av_packet_unref;
    __typeof__(&av_frame_alloc) av_frame_alloc;
    __typeof__(&av_frame_free) av_frame_free;
    __typeof__(&av_frame_unref) av_frame_unref;
    __typeof__(&av_malloc) av_malloc;
    __typeof__(&av_freep) av_freep;
    __typeof__(&av_dict_get) av_dict_get;
    __typeof__(&av_strerror) av_strerror;
    __typeof__(&av_log_set_level) av_log_set_level;
} bl_ffmpeg_api;

/// Opens libavutil, libavcodec and libavformat (the major versions these headers describe) and
/// fills `api`; returns NULL, or what failed (a library that is not installed, a missing symbol).
static inline const char *bl_ffmpeg_load(bl_ffmpeg_api *api) {
    void *util = dlopen("libavutil.so." AV_STRINGIFY(LIBAVUTIL_VERSION_MAJOR), RTLD_LAZY | RTLD_LOCAL);
    if (!util) return dlerror();
    void *codec = dlopen("libavcodec.so." AV_STRINGIFY(LIBAVCODEC_VERSION_MAJOR), RTLD_LAZY | RTLD_LOCAL);
    if (!codec) return dlerror();
    void *format = dlopen("libavformat.so." AV_STRINGIFY(LIBAVFORMAT_VERSION_MAJOR), RTLD_LAZY | RTLD_LOCAL);
    if (!format) return dlerror();
#define BL_SYM(lib, name) if (!(api->name = (__typeof__(api->name))dlsym(lib, #name))) return "missing " #name;
    BL_SYM(format, avformat_alloc_context)
    BL_SYM(format, avformat_open_input)
    BL_SYM(format, avformat_find_stream_info)
    BL_SYM(format, av_find_best_stream)
    BL_SYM(format, av_read_frame)
    BL_SYM(format, av_seek_frame)
    BL_SYM(format, avformat_close_input)
    BL_SYM(format, avio_alloc_context)
    BL_SYM(format, avio_context_free)
    BL_SYM(codec, avcodec_alloc_context3)
    BL_SYM(codec, avcodec_parameters_to_context)
    BL_SYM(codec, avcodec_open2)
    BL_SYM(codec, avcodec_send_packet)
    BL_SYM(codec, avcodec_receive_frame)
    BL_SYM(codec, avcodec_flush_buffers)
    BL_SYM(codec, avcodec_free_context)
    BL_SYM(codec, avcodec_get_name)
    BL_SYM(codec, av_packet_alloc)
    BL_SYM(codec, av_packet_free)
    BL_SYM(codec, av_packet_unref)
    BL_SYM(util, av_frame_alloc)
    BL_SYM(util, av_frame_free)
    BL_SYM(util, av_frame_unref)
    BL_SYM(util, av_malloc)
    BL_SYM(util, av_freep)
    BL_SYM(util, av_dict_get)
    BL_SYM(util, av_strerror)
    BL_SYM(util, av_log_set_level)
#undef BL_SYM
    return NULL;
}

/// FFmpeg's error codes that are macros Swift cannot import.
static inline int bl_averror_eof(void) { return AVERROR_EOF; }
static inline int bl_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int bl_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int bl_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int64_t bl_av_nopts_value(void) { return AV_NOPTS_VALUE; }

#endif
