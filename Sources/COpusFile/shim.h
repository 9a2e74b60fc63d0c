#ifndef BACKLINE_COPUSFILE_SHIM_H
#define BACKLINE_COPUSFILE_SHIM_H
#include <opus/opusfile.h>
#endif
