#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5) ggml/src/ggml-cpu/vec.h so that ggml_vec_max_f32, the
row maximum of every softmax, takes 8 values at a time where the order cannot matter. Upstream's
loop (max = max > x[i] ? max : x[i]) is one dependent comparison a value: 4 cycles each, 2.2 us
of the 5.6 us a decoder step's cross-attention softmax spends on a row of 1,500 (the 10-minute
recording of bench/pauses.sh: 40 rows a layer, 6 layers, 2,057 steps).

The loop's result depends on the order only through NaN (a NaN is taken, and the next value
replaces it) and zeros of both signs (the later one is taken). So the 8-lane maximum is used only
when no value is NaN and the maximum is not zero; it is then the one largest value, whose bits
are unique. Otherwise upstream's loop runs as before. Applied by scripts/setup-whisper.sh; fails
loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

KERNEL = r"""
#if defined(__AVX2__)
// voxpipe: the maximum of x[0..n) 8 values at a time; false where NaN or a zero maximum makes
// upstream's order matter (scripts/patches/ggml-vec-max.py)
static inline bool voxpipe_vec_max_f32(const int n, float * s, const float * x) {
    __m256 m = _mm256_set1_ps(-INFINITY), unordered = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        m = _mm256_max_ps(m, v);
        unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    float r = _mm_cvtss_f32(h);
    bool nan = _mm256_movemask_ps(unordered) != 0;
    for (; i < n; ++i) {
        nan = nan || x[i] != x[i];
        r = r > x[i] ? r : x[i];
    }
    if (nan || r == 0.0f) {
        return false;
    }
    *s = r;
    return true;
}
#endif
"""

patch = SourcePatch("ggml-vec-max", sys.argv[1])
patch.replace_once(
    "inline static void ggml_vec_max_f32(const int n, float * s, const float * x) {\n"
    "#ifndef GGML_USE_ACCELERATE\n"
    "    float max = -INFINITY;\n",
    KERNEL.lstrip("\n") + "\n"
    "inline static void ggml_vec_max_f32(const int n, float * s, const float * x) {\n"
    "#ifndef GGML_USE_ACCELERATE\n"
    "#if defined(__AVX2__)\n"
    "    if (n >= 16 && voxpipe_vec_max_f32(n, s, x)) {\n"
    "        return;\n"
    "    }\n"
    "#endif\n"
    "    float max = -INFINITY;\n",
)
patch.save()
