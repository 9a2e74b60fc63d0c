#ifndef BACKLINE_RENDER_KERNEL_H
#define BACKLINE_RENDER_KERNEL_H

#include <stddef.h>

/// `dst[i] = src[i] * gain` for `count` float32 samples: the render callback's steady-gain
/// copy (at gain 1 exactly a copy, bit for bit). Real-time safe: no locks, allocation or
/// system calls. In a release build a vectorised multiply (AVX2 where the CPU has it), never a
/// `memcpy` call; a debug build compiles it unoptimised (a package others depend on may set no
/// optimisation flags of its own), still far faster than real time.
void backline_scale_f32(const float *restrict src, float *restrict dst, size_t count, float gain);

#endif
