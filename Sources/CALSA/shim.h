#ifndef BACKLINE_CALSA_SHIM_H
#define BACKLINE_CALSA_SHIM_H
#include <alsa/asoundlib.h>

/* ALSA prints its own diagnostics (`ALSA lib pcm.c:2666:(snd_pcm_open_noupdate) Unknown PCM …`)
   to stderr unless an error handler is set. Backline reports every failure itself, as an
   `ALSAError` carrying the C code and `snd_strerror`'s message, so these lines are dropped.
   The handler is variadic, which Swift cannot define: it lives here. */
static void backline_alsa_drop_error(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

/// Stops ALSA from printing its own error lines (process-wide).
static inline void backline_alsa_silence_errors(void) {
    snd_lib_error_set_handler(backline_alsa_drop_error);
}
#endif
