#ifndef BACKLINE_CALSA_SHIM_H
#define BACKLINE_CALSA_SHIM_H
#include <alsa/asoundlib.h>
#endif
