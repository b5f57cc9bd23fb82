#!/usr/bin/env python3
"""Patches whisper.cpp 1.8.5's src/whisper.cpp so the signal energy behind word times (token_timestamps:
for every sample, the mean of the absolute values of the 65 samples around it) takes 32 samples at a
time. Upstream sums each sample's window on its own with a bounds test per value, on one thread
while the others wait, for every chunk a decode is given: 0.8 s of the 10-minute recording of
bench/pauses.sh.

Here every output is still upstream's float sum in upstream's order (from the window's first
sample to its last, starting from 0, then divided by 65 in float): each SIMD lane is one output, so
the additions are the same ones in the same order and the result is the same bits. Samples within
32 of either end, or a CPU without AVX2, take upstream's code. Applied by scripts/setup-whisper.sh;
fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

KERNEL = r"""
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
// voxpipe: the signal energy 32 outputs at a time, the same sums (scripts/patches/whisper-energy.py)
// result[i] for from <= i < to, every window inside the signal: lane by lane upstream's additions.
__attribute__((target("avx2"))) static int voxpipe_signal_energy_avx2(
        const float * signal, int from, int to, int hw, float * result) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 width = _mm256_set1_ps((float) (2*hw + 1));
    int i = from;
    for (; i + 32 <= to; i += 32) {
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
        for (int j = -hw; j <= hw; j++) {
            const float * x = signal + i + j;
            s0 = _mm256_add_ps(s0, _mm256_and_ps(abs_mask, _mm256_loadu_ps(x)));
            s1 = _mm256_add_ps(s1, _mm256_and_ps(abs_mask, _mm256_loadu_ps(x + 8)));
            s2 = _mm256_add_ps(s2, _mm256_and_ps(abs_mask, _mm256_loadu_ps(x + 16)));
            s3 = _mm256_add_ps(s3, _mm256_and_ps(abs_mask, _mm256_loadu_ps(x + 24)));
        }
        _mm256_storeu_ps(result + i, _mm256_div_ps(s0, width));
        _mm256_storeu_ps(result + i + 8, _mm256_div_ps(s1, width));
        _mm256_storeu_ps(result + i + 16, _mm256_div_ps(s2, width));
        _mm256_storeu_ps(result + i + 24, _mm256_div_ps(s3, width));
    }
    return i;
}
#endif

static std::vector<float> get_signal_energy(const float * signal, int n_samples, int n_samples_per_half_window) {
"""

patch = SourcePatch("whisper-energy", sys.argv[1])
patch.replace_once(
    "static std::vector<float> get_signal_energy(const float * signal, int n_samples, int n_samples_per_half_window) {\n"
    "    const int hw = n_samples_per_half_window;\n",
    KERNEL.lstrip("\n") + "    const int hw = n_samples_per_half_window;\n",
)
patch.replace_once(
    "    std::vector<float> result(n_samples);\n"
    "\n"
    "    for (int i = 0; i < n_samples; i++) {\n"
    "        float sum = 0;\n",
    "    std::vector<float> result(n_samples);\n"
    "\n"
    "    // voxpipe: the outputs whose window lies inside the signal, 32 at a time (whisper-energy.py)\n"
    "    int voxpipe_from = n_samples, voxpipe_to = n_samples;\n"
    "#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))\n"
    '    if (hw >= 0 && n_samples - hw > hw && __builtin_cpu_supports("avx2")) {\n'
    "        voxpipe_from = hw;\n"
    "        voxpipe_to = voxpipe_signal_energy_avx2(signal, hw, n_samples - hw, hw, result.data());\n"
    "    }\n"
    "#endif\n"
    "\n"
    "    for (int i = 0; i < n_samples; i++) {\n"
    "        if (i == voxpipe_from && voxpipe_to > voxpipe_from) {\n"
    "            i = voxpipe_to - 1;\n"
    "            continue;\n"
    "        }\n"
    "        float sum = 0;\n",
)
patch.save()
