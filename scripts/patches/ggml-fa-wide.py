#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5), given its ggml/src directory, so the encoder's tiled
flash attention (whisper-encoder-fa.py, ggml-fa-pack-once.py) runs its two matrix products 16
floats wide on CPUs with AVX-512, chosen at run time, and takes each score row's maximum 8 wide.

Why the results stay the same, bit for bit: ggml's simd_gemm computes every output as one chain of
fused multiply-adds over k, in order, from the value in C; the vector width only decides how many
outputs one instruction advances, so the AVX-512 build of the same code (simd-gemm.h's 16-wide
path, compiled in voxpipe-fa-avx512.cpp) gives every output the same operations on the same values.
The row's maximum is the same whatever the order it is taken in (scores are never NaN). Upstream
took it one float at a time, a chain of dependent compares: a fifth of the attention's time.
VOXPIPE_WHISPER_KERNELS=baseline keeps the 8-wide products. Applied by scripts/setup-whisper.sh
after ggml-fa-pack-once.py; fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch, add_x86_cpu_source  # noqa: E402

cpu = os.path.join(sys.argv[1], "ggml-cpu")
with open(os.path.join(cpu, "voxpipe-fa-avx512.cpp"), "w", encoding="utf-8") as f:
    f.write(
        "// voxpipe: ggml's simd_gemm built 16 floats wide for the tiled flash attention on AVX-512 CPUs\n"
        "// (scripts/patches/ggml-fa-wide.py): every output the same chain of fused multiply-adds.\n"
        '#include "simd-gemm.h"\n'
        'extern "C" void voxpipe_simd_gemm_avx512(float * C, const float * A, const float * B, int M, int K, int N) {\n'
        "    simd_gemm(C, A, B, M, K, N);\n"
        "}\n"
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
    "static void voxpipe_fa_gemm(float * C, const float * A, const float * B, int M, int K, int N) {\n"
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
    "    if (w == 1) {\n"
    "        voxpipe_simd_gemm_avx512(C, A, B, M, K, N);\n"
    "    } else {\n"
    "        simd_gemm(C, A, B, M, K, N);\n"
    "    }\n"
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
    "#else\n"
    "#define VOXPIPE_FA_GEMM simd_gemm\n"
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
ops.save()
