#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5) ggml/src/ggml-cpu/ops.cpp so GELU (the encoder's MLP:
1,500 x 2,048 values a layer) looks up 8 values at a time. Upstream rounds each value to F16 and
reads GELU of it from a 65,536-entry table, one value at a time: about 5% of a LibriVox line's CPU.
Here the same rounding (vcvtps2ph, round to nearest even, as GGML_CPU_FP32_TO_FP16), the same table
(a copy two entries longer, so an 8-lane gather of 4 bytes never reads past it) and the same limits
(0 at or below -10, x at or above 10), so every output is bit-identical. Applied by
scripts/setup-whisper.sh; fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

ops = SourcePatch("ggml-gelu-gather", sys.argv[1])
ops.replace_once(
    '#include "vec.h"\n',
    '#include "vec.h"\n'
    "#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__)\n"
    "// voxpipe: GELU 8 values at a time from ggml's F16 table (scripts/patches/ggml-gelu-gather.py)\n"
    "static const uint16_t * voxpipe_gelu_table(void) {\n"
    "    static const uint16_t * table = [] {\n"
    "        uint16_t * t = (uint16_t *) calloc((1 << 16) + 2, sizeof(uint16_t));\n"
    "        GGML_ASSERT(t != NULL);\n"
    "        memcpy(t, ggml_table_gelu_f16, sizeof(uint16_t) << 16);\n"
    "        return (const uint16_t *) t;\n"
    "    }();\n"
    "    return table;\n"
    "}\n"
    "static void voxpipe_vec_gelu_f32(const int n, float * y, const float * x) {\n"
    "    const uint16_t * table = voxpipe_gelu_table();\n"
    "    const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);\n"
    "    const __m256i low16 = _mm256_set1_epi32(0xffff);\n"
    "    int i = 0;\n"
    "    for (; i + 8 <= n; i += 8) {\n"
    "        const __m256 v = _mm256_loadu_ps(x + i);\n"
    "        const __m256i h = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(v, 0));\n"
    "        const __m256i g = _mm256_and_si256(_mm256_i32gather_epi32((const int *) table, h, 2), low16);\n"
    "        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(g, g), 0x08);\n"
    "        __m256 r = _mm256_cvtph_ps(_mm256_castsi256_si128(packed));\n"
    "        r = _mm256_blendv_ps(r, _mm256_setzero_ps(), _mm256_cmp_ps(v, lo, _CMP_LE_OQ));\n"
    "        r = _mm256_blendv_ps(r, v, _mm256_cmp_ps(v, hi, _CMP_GE_OQ));\n"
    "        _mm256_storeu_ps(y + i, r);\n"
    "    }\n"
    "    if (i < n) {\n"
    "        ggml_vec_gelu_f32(n - i, y + i, x + i);\n"
    "    }\n"
    "}\n"
    "#define VOXPIPE_VEC_GELU voxpipe_vec_gelu_f32\n"
    "#else\n"
    "#define VOXPIPE_VEC_GELU ggml_vec_gelu_f32\n"
    "#endif\n",
)
ops.replace_once(
    "        ggml_vec_gelu_f32(nc,\n"
    "                (float *) ((char *) dst->data  + i3*nb3  + i2*nb2  + i1*nb1),\n",
    "        VOXPIPE_VEC_GELU(nc,\n"
    "                (float *) ((char *) dst->data  + i3*nb3  + i2*nb2  + i1*nb1),\n",
)
ops.save()
