#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5), given its ggml/src directory, so the encoder's tiled
flash attention (whisper-encoder-fa.py, ggml-fa-pack-once.py) runs its two matrix products 16
floats wide on CPUs with AVX-512, chosen at run time, and takes each score row's maximum 8 wide;
its softmax, and the decoder's, take 16 values at a time there.

Why the results stay the same, bit for bit: ggml's simd_gemm computes every output as one chain of
fused multiply-adds over k, in order, from the value in C; the vector width only decides how many
outputs one instruction advances, so the AVX-512 build of the same code (simd-gemm.h's 16-wide
path, compiled in voxpipe-fa-avx512.cpp) gives every output the same operations on the same values.
The row's maximum is the same whatever the order it is taken in (scores are never NaN). The
softmax is the baseline build's ggml_vec_soft_max_f32 (vec.h's 8-wide exp, operation for operation,
on 16 lanes; each 8 values' sum added to the double in the same order), not the AVX-512 build's,
whose exp is another formula. Upstream
took it one float at a time, a chain of dependent compares: a fifth of the attention's time.
VOXPIPE_WHISPER_KERNELS=baseline keeps the 8-wide products. Applied by scripts/setup-whisper.sh
after ggml-fa-pack-once.py; fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch, add_x86_cpu_source  # noqa: E402


# ggml_vec_soft_max_f32 of the x86-64-v3 build (vec.cpp's AVX2 path and vec.h's 8-wide ggml_v_expf),
# 16 values at a time: every value by the same operations (the AVX-512 build of vec.h would take
# another exp), the 8-value sums in the same order into the same double.
SOFT_MAX = r"""
#include <immintrin.h>
#include <math.h>
// vec.h's 8-wide ggml_v_expf, operation for operation, on 16 lanes (a lane's result does not
// depend on the others: the slow path gives the fast path's value where it is not needed).
static inline __m512 voxpipe_expf16(__m512 x) {
    const __m512 r = _mm512_set1_ps(0x1.8p23f);
    const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
    const __m512 n = _mm512_sub_ps(z, r);
    const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f),
                                      _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
    const __m512i e = _mm512_slli_epi32(_mm512_castps_si512(z), 23);
    const __m512 k = _mm512_castsi512_ps(_mm512_add_epi32(e, _mm512_castps_si512(_mm512_set1_ps(1))));
    const __m512 an = _mm512_castsi512_ps(_mm512_andnot_si512(_mm512_castps_si512(_mm512_set1_ps(-0.f)),
                                                               _mm512_castps_si512(n)));
    const __mmask16 c = _mm512_cmp_ps_mask(an, _mm512_set1_ps(126), _CMP_GT_OQ);
    const __m512 u = _mm512_mul_ps(b, b);
    const __m512 j = _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b,
                                                                     _mm512_set1_ps(0x1.573e2ep-5f)), u,
                                                     _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b,
                                                                     _mm512_set1_ps(0x1.fffdb6p-2f))),
                                     u, _mm512_mul_ps(_mm512_set1_ps(0x1.ffffecp-1f), b));
    if (c == 0) {
        return _mm512_fmadd_ps(j, k, k);
    }
    const __mmask16 le = _mm512_cmp_ps_mask(n, _mm512_setzero_ps(), _CMP_LE_OQ);
    const __m512i g = _mm512_maskz_mov_epi32(le, _mm512_set1_epi32(0x82000000u));
    const __m512 s1 = _mm512_castsi512_ps(_mm512_add_epi32(g, _mm512_set1_epi32(0x7f000000u)));
    const __m512 s2 = _mm512_castsi512_ps(_mm512_sub_epi32(e, g));
    const __mmask16 d = _mm512_cmp_ps_mask(an, _mm512_set1_ps(192), _CMP_GT_OQ);
    const __m512 big = _mm512_mask_blend_ps(c, _mm512_fmadd_ps(k, j, k), _mm512_mul_ps(_mm512_fmadd_ps(s2, j, s2), s1));
    return _mm512_mask_blend_ps(d, big, _mm512_mul_ps(s1, s1));
}
// vec.cpp's sum of 8 values: the halves, then two steps to one float
static inline float voxpipe_sum8(__m256 val) {
    __m128 val2 = _mm_add_ps(_mm256_extractf128_ps(val, 1), _mm256_castps256_ps128(val));
    val2 = _mm_add_ps(val2, _mm_movehl_ps(val2, val2));
    val2 = _mm_add_ss(val2, _mm_movehdup_ps(val2));
    return _mm_cvtss_f32(val2);
}
extern "C" double voxpipe_soft_max_f32_avx512(const int n, float * y, const float * x, float max) {
    int i = 0;
    double sum = 0;
    for (; i + 15 < n; i += 16) {
        const __m512 val = voxpipe_expf16(_mm512_sub_ps(_mm512_loadu_ps(x + i), _mm512_set1_ps(max)));
        _mm512_storeu_ps(y + i, val);
        sum += (double) voxpipe_sum8(_mm512_castps512_ps256(val));
        sum += (double) voxpipe_sum8(_mm512_extractf32x8_ps(val, 1));
    }
    if (i + 7 < n) {
        // 8 values: the same lanes of a 16-lane evaluation (the others are never stored)
        const __m512 val = voxpipe_expf16(_mm512_sub_ps(_mm512_castps256_ps512(_mm256_loadu_ps(x + i)),
                                                        _mm512_set1_ps(max)));
        const __m256 lo = _mm512_castps512_ps256(val);
        _mm256_storeu_ps(y + i, lo);
        sum += (double) voxpipe_sum8(lo);
        i += 8;
    }
    for (; i < n; ++i) {
        const float val = expf(x[i] - max);
        sum += (double) val;
        y[i] = val;
    }
    return sum;
}
"""

cpu = os.path.join(sys.argv[1], "ggml-cpu")
with open(os.path.join(cpu, "voxpipe-fa-avx512.cpp"), "w", encoding="utf-8") as f:
    f.write(
        "// voxpipe: ggml's simd_gemm built 16 floats wide for the tiled flash attention on AVX-512 CPUs\n"
        "// (scripts/patches/ggml-fa-wide.py): every output the same chain of fused multiply-adds.\n"
        '#include "simd-gemm.h"\n'
        'extern "C" void voxpipe_simd_gemm_avx512(float * C, const float * A, const float * B, int M, int K, int N) {\n'
        "    simd_gemm(C, A, B, M, K, N);\n"
        "}\n"
        + SOFT_MAX
    )

add_x86_cpu_source(
    "ggml-fa-wide", sys.argv[1], "ggml-cpu/voxpipe-fa-avx512.cpp", "-mavx512f;-mavx512vl;-mavx512bw;-mavx512dq",
    "the flash attention's products 16 wide on AVX-512",
)

ops = SourcePatch("ggml-fa-wide", os.path.join(cpu, "ops.cpp"))
ops.replace_once(
    '#include "simd-gemm.h"\n',
    '#include "simd-gemm.h"\n'
    "#if defined(__x86_64__) && defined(__AVX2__)\n"
    "// voxpipe: the tiled flash attention's products 16 wide where the CPU has AVX-512, its row maxima\n"
    "// 8 wide (scripts/patches/ggml-fa-wide.py); VOXPIPE_WHISPER_KERNELS=baseline keeps the 8-wide products.\n"
    'extern "C" void voxpipe_simd_gemm_avx512(float * C, const float * A, const float * B, int M, int K, int N);\n'
    '#include "vec.h"  // ggml_vec_soft_max_f32\n'
    'extern "C" double voxpipe_soft_max_f32_avx512(const int n, float * y, const float * x, float max);\n'
    "// 1 where the CPU has AVX-512 (F, VL, BW, DQ) and VOXPIPE_WHISPER_KERNELS is not baseline\n"
    "static int voxpipe_avx512_wide(void) {\n"
    "    static int wide = -1;\n"
    "    int w = __atomic_load_n(&wide, __ATOMIC_ACQUIRE);\n"
    "    if (w < 0) {\n"
    "        __builtin_cpu_init();\n"
    '        const char * want = getenv("VOXPIPE_WHISPER_KERNELS");\n'
    '        w = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&\n'
    '            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&\n'
    '            !(want != NULL && strcmp(want, "baseline") == 0) ? 1 : 0;\n'
    "        __atomic_store_n(&wide, w, __ATOMIC_RELEASE);\n"
    "    }\n"
    "    return w;\n"
    "}\n"
    "static void voxpipe_fa_gemm(float * C, const float * A, const float * B, int M, int K, int N) {\n"
    "    if (voxpipe_avx512_wide()) {\n"
    "        voxpipe_simd_gemm_avx512(C, A, B, M, K, N);\n"
    "    } else {\n"
    "        simd_gemm(C, A, B, M, K, N);\n"
    "    }\n"
    "}\n"
    "// ggml_vec_soft_max_f32's bits, 16 values at a time where the CPU has AVX-512\n"
    "static ggml_float voxpipe_soft_max_f32(const int n, float * y, const float * x, float max) {\n"
    "    return voxpipe_avx512_wide() ? voxpipe_soft_max_f32_avx512(n, y, x, max) : ggml_vec_soft_max_f32(n, y, x, max);\n"
    "}\n"
    "static inline float voxpipe_row_max(const float * x, int n) {\n"
    "    __m256 m = _mm256_set1_ps(-INFINITY);\n"
    "    int i = 0;\n"
    "    for (; i + 8 <= n; i += 8) {\n"
    "        m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));\n"
    "    }\n"
    "    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));\n"
    "    h = _mm_max_ps(h, _mm_movehl_ps(h, h));\n"
    "    h = _mm_max_ss(h, _mm_movehdup_ps(h));\n"
    "    float r = _mm_cvtss_f32(h);\n"
    "    for (; i < n; ++i) {\n"
    "        r = x[i] > r ? x[i] : r;\n"
    "    }\n"
    "    return r;\n"
    "}\n"
    "#define VOXPIPE_FA_GEMM voxpipe_fa_gemm\n"
    "#define VOXPIPE_SOFT_MAX voxpipe_soft_max_f32\n"
    "#else\n"
    "#define VOXPIPE_FA_GEMM simd_gemm\n"
    "#define VOXPIPE_SOFT_MAX ggml_vec_soft_max_f32\n"
    "#endif\n",
)
ops.replace_once(
    "            simd_gemm(KQ, (const float *)Q_q, vx_k.data() + (ic / KV_TILE_SZ) * DK * KV_TILE_SZ, Q_TILE_SZ, DK,\n"
    "                      KV_TILE_SZ);\n",
    "            VOXPIPE_FA_GEMM(KQ, (const float *)Q_q, vx_k.data() + (ic / KV_TILE_SZ) * DK * KV_TILE_SZ, Q_TILE_SZ, DK,\n"
    "                      KV_TILE_SZ);\n",
)
ops.replace_once(
    "            simd_gemm(VKQ32, KQ, vx_v.data() + (ic / KV_TILE_SZ) * KV_TILE_SZ * DV, Q_TILE_SZ, KV_TILE_SZ, DV);\n",
    "            VOXPIPE_FA_GEMM(VKQ32, KQ, vx_v.data() + (ic / KV_TILE_SZ) * KV_TILE_SZ * DV, Q_TILE_SZ, KV_TILE_SZ, DV);\n",
)
ops.replace_once(
    "                ggml_vec_max_f32(KV_TILE_SZ, &tile_max, kq_row);\n",
    "#if defined(__x86_64__) && defined(__AVX2__)\n"
    "                tile_max = voxpipe_row_max(kq_row, KV_TILE_SZ);\n"
    "#else\n"
    "                ggml_vec_max_f32(KV_TILE_SZ, &tile_max, kq_row);\n"
    "#endif\n",
)
ops.replace_once(
    "                S[tq] += ggml_vec_soft_max_f32(KV_TILE_SZ, kq_row, kq_row, Mnew);\n",
    "                S[tq] += VOXPIPE_SOFT_MAX(KV_TILE_SZ, kq_row, kq_row, Mnew);\n",
)
ops.replace_once(
    "                ggml_float sum = ggml_vec_soft_max_f32(ne00, dp, wp, max);\n",
    "                ggml_float sum = VOXPIPE_SOFT_MAX(ne00, dp, wp, max);\n",
)
ops.save()
