#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5) ggml/src/ggml-cpu/ops.cpp so a copy from F32 into a
contiguous F16 tensor converts 8 values at a time. Upstream converts one value per call
(_cvtss_sh) in its generic loops: the encoder's cross-attention K (1,500 x 512 a layer, rows as
they are) and V (transposed: each of its 512 rows gathers one value from every one of 1,500
frames, 2 KB apart), and the encoder's flash-attention copies: 1.2 s of the 10-minute recording of
bench/pauses.sh inside the graphs.

Here rows as they are go through _mm256_cvtps_ph, and a transposed matrix (its rows along memory's
second axis) through 8 x 8 blocks transposed in registers and then converted. The conversion is
_cvtss_sh's own instruction with the same rounding (to nearest even), lane by lane, and the
values land where upstream's loops put them, so the copy is the same bits. Other copies, and
CPUs without AVX2 and F16C, take upstream's code. Applied by scripts/setup-whisper.sh; fails
loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

KERNEL = r"""
#if defined(__AVX2__) && defined(__F16C__)
// voxpipe: F32 into a contiguous F16 tensor 8 values at a time (scripts/patches/ggml-cpy-f16.py)
// The rows ir0..ir1 of src0 into dst in upstream's element order; false for a layout it leaves
// to upstream.
static bool voxpipe_cpy_f32_f16(const ggml_tensor * src0, ggml_tensor * dst, const int64_t ir0, const int64_t ir1) {
    GGML_TENSOR_UNARY_OP_LOCALS
    ggml_fp16_t * d = (ggml_fp16_t *) dst->data;
    if (nb00 == sizeof(float)) {
        // rows as they are
        size_t id = 0;
        for (int64_t i03 = 0; i03 < ne03; i03++) {
            for (int64_t i02 = 0; i02 < ne02; i02++) {
                id += ne00 * ir0;
                for (int64_t i01 = ir0; i01 < ir1; i01++) {
                    const float * s = (const float *) ((const char *) src0->data + i01*nb01 + i02*nb02 + i03*nb03);
                    int64_t i00 = 0;
                    for (; i00 + 8 <= ne00; i00 += 8) {
                        _mm_storeu_si128((__m128i *) (d + id + i00), _mm256_cvtps_ph(_mm256_loadu_ps(s + i00), 0));
                    }
                    for (; i00 < ne00; i00++) {
                        d[id + i00] = _cvtss_sh(s[i00], 0);
                    }
                    id += ne00;
                }
                id += ne00 * (ne01 - ir1);
            }
        }
        return true;
    }
    if (nb01 != sizeof(float) || ne02 != 1 || ne03 != 1) {
        return false;
    }
    // a transposed matrix: value (i00, i01) at i00*nb00 + i01*4, stored at i01*ne00 + i00
    const char * s = (const char *) src0->data;
    int64_t i01 = ir0;
    for (; i01 + 8 <= ir1; i01 += 8) {
        int64_t i00 = 0;
        for (; i00 + 8 <= ne00; i00 += 8) {
            __m256 r[8];
            for (int j = 0; j < 8; j++) {
                r[j] = _mm256_loadu_ps((const float *) (s + (i00 + j)*nb00 + i01*nb01));
            }
            // r[j] = values i01..i01+7 of i00 + j  ->  t[j] = values i00..i00+7 of i01 + j
            const __m256 u0 = _mm256_unpacklo_ps(r[0], r[1]), u1 = _mm256_unpackhi_ps(r[0], r[1]);
            const __m256 u2 = _mm256_unpacklo_ps(r[2], r[3]), u3 = _mm256_unpackhi_ps(r[2], r[3]);
            const __m256 u4 = _mm256_unpacklo_ps(r[4], r[5]), u5 = _mm256_unpackhi_ps(r[4], r[5]);
            const __m256 u6 = _mm256_unpacklo_ps(r[6], r[7]), u7 = _mm256_unpackhi_ps(r[6], r[7]);
            const __m256 v0 = _mm256_shuffle_ps(u0, u2, 0x44), v1 = _mm256_shuffle_ps(u0, u2, 0xEE);
            const __m256 v2 = _mm256_shuffle_ps(u1, u3, 0x44), v3 = _mm256_shuffle_ps(u1, u3, 0xEE);
            const __m256 v4 = _mm256_shuffle_ps(u4, u6, 0x44), v5 = _mm256_shuffle_ps(u4, u6, 0xEE);
            const __m256 v6 = _mm256_shuffle_ps(u5, u7, 0x44), v7 = _mm256_shuffle_ps(u5, u7, 0xEE);
            const __m256 t[8] = {
                _mm256_permute2f128_ps(v0, v4, 0x20), _mm256_permute2f128_ps(v1, v5, 0x20),
                _mm256_permute2f128_ps(v2, v6, 0x20), _mm256_permute2f128_ps(v3, v7, 0x20),
                _mm256_permute2f128_ps(v0, v4, 0x31), _mm256_permute2f128_ps(v1, v5, 0x31),
                _mm256_permute2f128_ps(v2, v6, 0x31), _mm256_permute2f128_ps(v3, v7, 0x31),
            };
            for (int j = 0; j < 8; j++) {
                _mm_storeu_si128((__m128i *) (d + (i01 + j)*ne00 + i00), _mm256_cvtps_ph(t[j], 0));
            }
        }
        for (; i00 < ne00; i00++) {
            for (int j = 0; j < 8; j++) {
                d[(i01 + j)*ne00 + i00] = _cvtss_sh(*(const float *) (s + i00*nb00 + (i01 + j)*nb01), 0);
            }
        }
    }
    for (; i01 < ir1; i01++) {
        for (int64_t i00 = 0; i00 < ne00; i00++) {
            d[i01*ne00 + i00] = _cvtss_sh(*(const float *) (s + i00*nb00 + i01*nb01), 0);
        }
    }
    return true;
}
#endif

template<typename src_t, typename dst_t>
static void ggml_compute_forward_dup_flt(
"""

patch = SourcePatch("ggml-cpy-f16", sys.argv[1])
patch.replace_once("template<typename src_t, typename dst_t>\nstatic void ggml_compute_forward_dup_flt(\n", KERNEL.lstrip("\n"))
patch.replace_once(
    "    // case: dst tensor is contiguous\n"
    "    if (ggml_is_contiguous(dst)) {\n"
    "        if (nb00 == sizeof(src_t)) {\n",
    "#if defined(__AVX2__) && defined(__F16C__)\n"
    "    // voxpipe: F32 into contiguous F16, 8 values at a time, the same bits (ggml-cpy-f16.py)\n"
    "    if constexpr (std::is_same_v<src_t, float> && std::is_same_v<dst_t, ggml_fp16_t>) {\n"
    "        if (ggml_is_contiguous(dst) && voxpipe_cpy_f32_f16(src0, dst, ir0, ir1)) {\n"
    "            return;\n"
    "        }\n"
    "    }\n"
    "#endif\n"
    "\n"
    "    // case: dst tensor is contiguous\n"
    "    if (ggml_is_contiguous(dst)) {\n"
    "        if (nb00 == sizeof(src_t)) {\n",
)
patch.save()
