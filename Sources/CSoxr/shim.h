#ifndef BACKLINE_CSOXR_SHIM_H
#define BACKLINE_CSOXR_SHIM_H
#include <soxr.h>
#endif
