#ifndef BACKLINE_CPULSE_SHIM_H
#define BACKLINE_CPULSE_SHIM_H
#include <pulse/pulseaudio.h>
#endif
