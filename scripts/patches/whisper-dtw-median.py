#!/usr/bin/env python3
"""Patches whisper.cpp 1.8.5's src/whisper.cpp so the median filter of DTW word times (7 values
wide over the audio frames of every token and alignment head) takes 8 medians at a time. Upstream
reads each of the 7 values through its strides, pushes it into a vector and sorts the vector, for
every output, on one thread while the others wait: 1.3 s of the 10-minute recording of
bench/pauses.sh.

Here each (token, head) line is read once; 8 consecutive outputs come from a 16-comparator sorting
network (AVX2 minimum and maximum) wherever none of the 7 values is NaN or zero: then the 7 values
sort to one sequence of bit patterns whatever the method, and its middle is std::sort's. An
output near either end (upstream's "reflect" padding), or whose values hold a NaN or a zero (+0 and
-0 compare equal, so their order would be the sort's to choose), goes through std::sort exactly as
upstream's. Another filter width, or a CPU without AVX2, takes upstream's code. Applied by
scripts/setup-whisper.sh; fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

KERNELS = r"""
// voxpipe: DTW's median filter 8 outputs at a time, the same values (scripts/patches/whisper-dtw-median.py)
// std::sort's middle of the 7 values around k of a line of n, with upstream's "reflect" padding
static float voxpipe_median7_sorted(const float * line, int64_t n, int64_t k) {
    float f[7];
    for (int64_t off = -3; off <= 3; ++off) {
        int64_t idx = k + off;
        if (idx < 0) {
            idx = -idx;
        } else if (idx >= n) {
            idx = 2*(n - 1) - idx;
        }
        f[off + 3] = line[idx];
    }
    std::sort(f, f + 7);
    return f[3];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
// out[k] = voxpipe_median7_sorted(line, n, k) for every k < n
__attribute__((target("avx2"))) static void voxpipe_median7_avx2(const float * line, int64_t n, float * out) {
    static const int net[16][2] = {
        {0, 6}, {2, 3}, {4, 5}, {0, 2}, {1, 4}, {3, 6}, {0, 1}, {2, 5},
        {3, 4}, {1, 2}, {4, 6}, {2, 3}, {4, 5}, {1, 2}, {3, 4}, {5, 6},
    };
    int64_t k = 0;
    for (; k < 3 && k < n; ++k) {
        out[k] = voxpipe_median7_sorted(line, n, k);
    }
    for (; k + 8 <= n - 3; k += 8) {
        __m256 v[7];
        __m256 odd = _mm256_setzero_ps();
        for (int o = 0; o < 7; ++o) {
            v[o] = _mm256_loadu_ps(line + k - 3 + o);
            odd = _mm256_or_ps(odd, _mm256_cmp_ps(v[o], v[o], _CMP_UNORD_Q));
            odd = _mm256_or_ps(odd, _mm256_cmp_ps(v[o], _mm256_setzero_ps(), _CMP_EQ_OQ));
        }
        for (const auto & c : net) {
            const __m256 lo = _mm256_min_ps(v[c[0]], v[c[1]]);
            v[c[1]] = _mm256_max_ps(v[c[0]], v[c[1]]);
            v[c[0]] = lo;
        }
        _mm256_storeu_ps(out + k, v[3]);
        const int m = _mm256_movemask_ps(odd);
        for (int j = 0; m != 0 && j < 8; ++j) {
            if (m >> j & 1) {
                out[k + j] = voxpipe_median7_sorted(line, n, k + j);
            }
        }
    }
    for (; k < n; ++k) {
        out[k] = voxpipe_median7_sorted(line, n, k);
    }
}
#endif

static void median_filter(struct ggml_tensor * dst , const struct ggml_tensor * a, int ith, int /*nth*/, void * userdata) {
"""

patch = SourcePatch("whisper-dtw-median", sys.argv[1])
patch.replace_once(
    "static void median_filter(struct ggml_tensor * dst , const struct ggml_tensor * a, int ith, int /*nth*/, void * userdata) {\n",
    KERNELS.lstrip("\n"),
)
patch.replace_once(
    "    std::vector<float> filter;\n"
    "    filter.reserve(filter_width);\n",
    "#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))\n"
    "    // voxpipe: each line read once, 8 medians at a time (whisper-dtw-median.py)\n"
    '    if (filter_width == 7 && __builtin_cpu_supports("avx2")) {\n'
    "        const int64_t n = a->ne[2];\n"
    "        std::vector<float> line(n), out(n);\n"
    "        for (int64_t i = 0; i < a->ne[0]; ++i) {\n"
    "            for (int64_t j = 0; j < a->ne[1]; ++j) {\n"
    "                for (int64_t k = 0; k < n; ++k) {\n"
    "                    line[k] = whisper_get_f32_nd(a, i, j, k, 0);\n"
    "                }\n"
    "                voxpipe_median7_avx2(line.data(), n, out.data());\n"
    "                for (int64_t k = 0; k < n; ++k) {\n"
    "                    whisper_set_f32_nd(dst, i, j, k, 0, out[k]);\n"
    "                }\n"
    "            }\n"
    "        }\n"
    "        return;\n"
    "    }\n"
    "#endif\n"
    "\n"
    "    std::vector<float> filter;\n"
    "    filter.reserve(filter_width);\n",
)
patch.save()
