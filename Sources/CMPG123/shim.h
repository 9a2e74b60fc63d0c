#ifndef BACKLINE_CMPG123_SHIM_H
#define BACKLINE_CMPG123_SHIM_H
#include <sys/types.h>
#include <mpg123.h>
#endif
