#include "render_kernel.h"

void backline_scale_f32(const float *restrict src, float *restrict dst, size_t count, float gain) {
    // A multiply, not a copy: compilers turn a copying loop back into a `memcpy` call, and
    // glibc's large `memcpy` is `rep movsb`, which valgrind counts a byte at a time. This loop
    // vectorises to four samples per SSE multiply; x * 1.0f == x for every sample value.
    for (size_t i = 0; i < count; i++) dst[i] = src[i] * gain;
}
