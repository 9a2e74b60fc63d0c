#ifndef BACKLINE_RENDER_KERNEL_H
#define BACKLINE_RENDER_KERNEL_H

#include <stddef.h>

/// `dst[i] = src[i] * gain` for `count` float32 samples: the render callback's steady-gain
/// copy (at gain 1 exactly a copy, bit for bit). Real-time safe: no locks, allocation or
/// system calls. Compiled optimised in every build (vectorised multiply, AVX2 where the CPU has
/// it, never a `memcpy` call), so a debug build's output thread renders as fast as a release build's.
void backline_scale_f32(const float *restrict src, float *restrict dst, size_t count, float gain);

#endif
