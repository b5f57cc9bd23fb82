#!/usr/bin/env python3
"""Patches whisper.cpp 1.8.5's src/whisper.cpp so the log-mel spectrogram's FFT (400 samples a
frame, split in halves down to 16 DFTs of 25 points) runs 8 frames at a time, one frame per SIMD
lane. Upstream transforms one frame after another in scalar code (a modulo and two table loads
for every multiply-add): 2.6 CPU-seconds of the 10-minute recording of bench/pauses.sh, before
every encoder pass.

Here each lane does upstream's operations on its frame in upstream's order: the same recursion,
the same table values, every product and sum rounded as upstream's scalar code rounds it (the
runtime builds whisper.cpp for the x86-64 baseline, so its scalar code contracts nothing into
fused multiply-adds, and neither does this). The Hann window, the power spectrum and the mel
filters stay upstream's code, frame by frame. Frames of another size, the last frames of a
thread's share (fewer than 8 left) and CPUs without AVX2 take upstream's code. Applied by
scripts/setup-whisper.sh; fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

KERNEL = r"""
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
// voxpipe: the FFT of 8 frames at a time, one frame a lane (scripts/patches/whisper-mel-fft.py)
// dft() on 8 frames: out[2k], out[2k + 1] as upstream sums them
__attribute__((target("avx2"))) static void voxpipe_dft8(const __m256 * in, int N, __m256 * out) {
    const int sin_cos_step = SIN_COS_N_COUNT / N;
    for (int k = 0; k < N; k++) {
        __m256 re = _mm256_setzero_ps();
        __m256 im = _mm256_setzero_ps();
        for (int n = 0; n < N; n++) {
            const int idx = (k * n * sin_cos_step) % (SIN_COS_N_COUNT);
            re = _mm256_add_ps(re, _mm256_mul_ps(in[n], _mm256_set1_ps(global_cache.cos_vals[idx])));
            im = _mm256_sub_ps(im, _mm256_mul_ps(in[n], _mm256_set1_ps(global_cache.sin_vals[idx])));
        }
        out[k*2 + 0] = re;
        out[k*2 + 1] = im;
    }
}

// fft() on 8 frames: the same recursion and scratch layout, in units of 8 lanes
__attribute__((target("avx2"))) static void voxpipe_fft8(__m256 * in, int N, __m256 * out) {
    if (N == 1) {
        out[0] = in[0];
        out[1] = _mm256_setzero_ps();
        return;
    }
    const int half_N = N / 2;
    if (N - half_N*2 == 1) {
        voxpipe_dft8(in, N, out);
        return;
    }
    __m256 * even = in + N;
    for (int i = 0; i < half_N; ++i) {
        even[i] = in[2*i];
    }
    __m256 * even_fft = out + 2 * N;
    voxpipe_fft8(even, half_N, even_fft);
    __m256 * odd = even;
    for (int i = 0; i < half_N; ++i) {
        odd[i] = in[2*i + 1];
    }
    __m256 * odd_fft = even_fft + N;
    voxpipe_fft8(odd, half_N, odd_fft);
    const int sin_cos_step = SIN_COS_N_COUNT / N;
    for (int k = 0; k < half_N; k++) {
        const int idx = k * sin_cos_step;
        const __m256 re = _mm256_set1_ps(global_cache.cos_vals[idx]);
        const __m256 im = _mm256_set1_ps(-global_cache.sin_vals[idx]);
        const __m256 re_odd = odd_fft[2*k + 0];
        const __m256 im_odd = odd_fft[2*k + 1];
        // upstream: even + re*re_odd - im*im_odd, and so on, left to right
        out[2*k + 0] = _mm256_sub_ps(_mm256_add_ps(even_fft[2*k + 0], _mm256_mul_ps(re, re_odd)), _mm256_mul_ps(im, im_odd));
        out[2*k + 1] = _mm256_add_ps(_mm256_add_ps(even_fft[2*k + 1], _mm256_mul_ps(re, im_odd)), _mm256_mul_ps(im, re_odd));
        out[2*(k + half_N) + 0] = _mm256_add_ps(_mm256_sub_ps(even_fft[2*k + 0], _mm256_mul_ps(re, re_odd)), _mm256_mul_ps(im, im_odd));
        out[2*(k + half_N) + 1] = _mm256_sub_ps(_mm256_sub_ps(even_fft[2*k + 1], _mm256_mul_ps(re, im_odd)), _mm256_mul_ps(im, re_odd));
    }
}

// The Hann-windowed frames first, first + step, ... (8 of them) of samples, zero past n_samples
// as upstream fills them, transformed: out (frame_size * 2 complex values a lane, upstream's
// fft_out of each frame in lane f). in and out are scratch of 2 and 8 times frame_size vectors.
__attribute__((target("avx2"))) static void voxpipe_fft8_frames(
        const float * hann, const float * samples, int n_samples, int frame_size, int first, int step,
        __m256 * in, __m256 * out) {
    alignas(32) float lanes[8];
    for (int j = 0; j < frame_size; j++) {
        for (int f = 0; f < 8; f++) {
            const int offset = first + f * step;
            lanes[f] = j < n_samples - offset ? hann[j] * samples[offset + j] : 0.0f;
        }
        in[j] = _mm256_load_ps(lanes);
    }
    voxpipe_fft8(in, frame_size, out);
}
#endif

static void log_mel_spectrogram_worker_thread(int ith, const float * hann, const std::vector<float> & samples,
"""

patch = SourcePatch("whisper-mel-fft", sys.argv[1])
patch.replace_once(
    "static void log_mel_spectrogram_worker_thread(int ith, const float * hann, const std::vector<float> & samples,\n",
    KERNEL.lstrip("\n"),
)
prologue = (
    "    // calculate FFT only when fft_in are not all zero\n"
    "    for (; i < std::min(n_samples / frame_step + 1, mel.n_len); i += n_threads) {\n"
    "        const int offset = i * frame_step;\n"
    "\n"
)
patch.replace_once(
    prologue,
    "    // voxpipe: 8 of this thread's frames transformed at a time (whisper-mel-fft.py); lane is the\n"
    "    // next of them to use, 8 when none is left\n"
    "    const int voxpipe_end = std::min(n_samples / frame_step + 1, mel.n_len);\n"
    "    int voxpipe_lane = 8;\n"
    "#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))\n"
    '    const bool voxpipe_wide = frame_size == WHISPER_N_FFT && __builtin_cpu_supports("avx2");\n'
    "    // 8 lanes of 2 x frame_size values in, 8 x frame_size out, 32-byte aligned\n"
    "    std::vector<float> voxpipe_buf(voxpipe_wide ? 8 * frame_size * 10 + 8 : 0);\n"
    "    __m256 * voxpipe_in = (__m256 *) (((uintptr_t) voxpipe_buf.data() + 31) & ~(uintptr_t) 31);\n"
    "    __m256 * voxpipe_out = voxpipe_in + 2 * frame_size;\n"
    "#endif\n"
    "\n" + prologue +
    "#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))\n"
    "        if (voxpipe_lane == 8 && voxpipe_wide && i + 7 * n_threads < voxpipe_end) {\n"
    "            voxpipe_fft8_frames(hann, samples.data(), n_samples, frame_size, offset, frame_step * n_threads,\n"
    "                                voxpipe_in, voxpipe_out);\n"
    "            voxpipe_lane = 0;\n"
    "        }\n"
    "        if (voxpipe_lane < 8) {\n"
    "            for (int j = 0; j < 2 * n_fft; j++) {\n"
    "                fft_out[j] = ((const float *) voxpipe_out)[j * 8 + voxpipe_lane];\n"
    "            }\n"
    "            voxpipe_lane++;\n"
    "        } else\n"
    "#endif\n"
    "        {  // upstream's window and FFT of one frame\n",
)
patch.replace_once(
    "        fft(fft_in.data(), frame_size, fft_out.data());\n",
    "        fft(fft_in.data(), frame_size, fft_out.data());\n        }\n",
)
patch.save()
