#include "render_kernel.h"

// One definition compiled twice, AVX2 and baseline SSE2; the dynamic loader picks by CPU
// (an ifunc) once, at start-up. Same arithmetic either way: one IEEE multiply per sample, no
// fused operations, so the output is identical bit for bit.
//
// Under a sanitizer (scripts/sanitize) there is one plain definition: the ifunc's resolver runs
// in the dynamic loader before the sanitizer's runtime is set up, and instrumented it crashed
// there.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define BACKLINE_SANITIZED 1
#endif
#endif
#ifndef BACKLINE_SANITIZED
__attribute__((target_clones("avx2", "default")))
#endif
void backline_scale_f32(const float *restrict src, float *restrict dst, size_t count, float gain) {
    // A multiply, not a copy: compilers turn a copying loop back into a `memcpy` call, and
    // glibc's large `memcpy` is `rep movsb`, which valgrind counts a byte at a time. This loop
    // vectorises (8 samples per AVX2 multiply, 4 per SSE2), unrolled four times; x * 1.0f == x
    // for every sample value.
#pragma clang loop unroll_count(4)
    for (size_t i = 0; i < count; i++) dst[i] = src[i] * gain;
}
