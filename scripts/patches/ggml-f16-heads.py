#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5) ggml/src/ggml-cpu/ggml-cpu.c so that an F16 matrix
product of 2 to 6 columns over a batch of matrices (the decoder's attention scores: 8 heads, 64
values a key, the 5 beams' queries) is computed in one pass over all the heads, two rows at a time
for every column. tinyBLAS took each head as a product of its own, 8 a layer, with two barriers
each and 4 x 3 plus 4 x 2 tiles, so each key row was read twice; the 1,500 cross-attention keys
a head are 128-byte rows 1 KB apart, and a beam-5 step spent 2.1 ms on them (the 10-minute
recording of bench/pauses.sh, 2 threads). Products of 8 columns or more (a prompt pass: 227
tokens; DTW's pass over a window's tokens) go six columns at a time, head by head: tinyBLAS's 4 x 3
tiles gave 12 ms a layer for the prompt's 227 (2 threads), six columns at a time 7.5 ms. Seven
columns, which no Whisper graph has, stay tinyBLAS's: bench/exact-kernels.sh compares the kernel
against it with seven.

Each output is tinyBLAS's, operation for operation: one 8-lane fused multiply-add chain over the
8-value steps of the row, in order, then tinyBLAS's horizontal sum (the halves, then movehl, then
movehdup). Only products tinyBLAS would have taken are taken (its F16 kernel on AVX2: k a multiple
of 8, m of 4, at least 2 columns, F32 results). Outputs do not depend on the thread count (each is
summed whole by one thread). Applied by scripts/setup-whisper.sh; fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

KERNEL = r"""
#if GGML_USE_LLAMAFILE && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && !defined(__AVX512F__)
// voxpipe: tinyBLAS's F16 outputs for 2 to 6 or 8 and more columns, every matrix of a batch in one pass
// (scripts/patches/ggml-f16-heads.py)
static inline float voxpipe_tinyblas_hsum(__m256 x) {
    __m128 v = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    v = _mm_add_ss(v, _mm_movehdup_ps(v));
    return _mm_cvtss_f32(v);
}

// rows a0 and a1 times the columns y[0..nc) (converted to F32: y[c][l] is column c's value l):
// o0[c * ldc], o1[c * ldc]
static inline __attribute__((always_inline)) void voxpipe_f16_rows2(
        const int nc, const int64_t k, const ggml_fp16_t * a0, const ggml_fp16_t * a1,
        const float * y, float * o0, float * o1, const int64_t ldc) {
    __m256 c0[6], c1[6];
    for (int c = 0; c < nc; ++c) {
        c0[c] = _mm256_setzero_ps();
        c1[c] = _mm256_setzero_ps();
    }
    for (int64_t l = 0; l < k; l += 8) {
        const __m256 x0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (a0 + l)));
        const __m256 x1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (a1 + l)));
        for (int c = 0; c < nc; ++c) {
            const __m256 b = _mm256_loadu_ps(y + c * k + l);
            c0[c] = _mm256_fmadd_ps(x0, b, c0[c]);
            c1[c] = _mm256_fmadd_ps(x1, b, c1[c]);
        }
    }
    for (int c = 0; c < nc; ++c) {
        o0[c * ldc] = voxpipe_tinyblas_hsum(c0[c]);
        o1[c * ldc] = voxpipe_tinyblas_hsum(c1[c]);
    }
}

// the nc columns (rows of row_size bytes in wdata) from column first on, k values each, in F32: y[c * k + l]
static inline void voxpipe_f16_cols_f32(const void * wdata, const size_t row_size, const int64_t first, const int nc,
                                        const int64_t k, float * y) {
    for (int c = 0; c < nc; ++c) {
        const ggml_fp16_t * col = (const ggml_fp16_t *) ((const char *) wdata + (first + c) * row_size);
        for (int64_t l = 0; l < k; l += 8) {
            _mm256_storeu_ps(y + c * k + l, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (col + l))));
        }
    }
}

// dst = src0 x the F16 copy of src1 in wdata (rows of row_size bytes), for every i12, i13; this
// thread's share of the row pairs of all the matrices. When every matrix's columns fit in 48 KB
// (the attention's 8 heads), the pairs go frame by frame across the heads: a frame's keys of all
// the heads are one contiguous 1-KB stretch, read in order, where going head by head read 128
// bytes of every KB (one core, 6 layers' cross-attention keys out of cache: 3.4 -> 2.2 ms).
static void voxpipe_mul_mat_f16_heads(const struct ggml_compute_params * params, struct ggml_tensor * dst,
                                      const void * wdata, const size_t row_size) {
    const struct ggml_tensor * src0 = dst->src[0];
    const struct ggml_tensor * src1 = dst->src[1];

    GGML_TENSOR_BINARY_OP_LOCALS

    const int64_t r2 = ne12 / ne02;
    const int64_t r3 = ne13 / ne03;
    const int nc = (int) ne11;
    const int groups = (nc + 5) / 6;  // the columns 6 at a time
    const int64_t pairs = ne01 / 2;
    const int64_t mats = ne12 * ne13;
    const int64_t total = pairs * mats * groups;
    const int64_t p0 = total * params->ith / params->nth, p1 = total * (params->ith + 1) / params->nth;
    const int64_t ldc = nb1 / sizeof(float);
    enum { Y_MAX = 8 * 6 * 256 };
    float y[Y_MAX];  // the columns in F32: every matrix's (frames first), else this group's (k <= 256)
    const int frames_first = groups == 1 && mats * nc * ne00 <= Y_MAX;
    int64_t mat_y = -1, group_y = -1;
    for (int64_t mat = 0; frames_first && mat < mats; ++mat) {
        voxpipe_f16_cols_f32(wdata, row_size, mat % ne12 * ne11 + mat / ne12 * ne12 * ne11, nc, ne00, y + mat * nc * ne00);
    }
    for (int64_t p = p0; p < p1; ++p) {
        const int64_t mat = frames_first ? p % mats : p / (pairs * groups);
        const int64_t group = frames_first ? 0 : p / pairs % groups;
        const int64_t i = (frames_first ? p / mats : p % pairs) * 2;
        const int64_t i12 = mat % ne12, i13 = mat / ne12;
        const int c0 = (int) group * 6, gn = nc - c0 < 6 ? nc - c0 : 6;
        if (!frames_first && (mat != mat_y || group != group_y)) {
            voxpipe_f16_cols_f32(wdata, row_size, i12 * ne11 + i13 * ne12 * ne11 + c0, gn, ne00, y);
            mat_y = mat;
            group_y = group;
        }
        const float * ym = frames_first ? y + mat * nc * ne00 : y;
        const char * a = (const char *) src0->data + (i12 / r2) * nb02 + (i13 / r3) * nb03 + i * nb01;
        if (p + 2 < p1) {
            // this matrix's rows after the next pair (keys are rows 1 KB apart: nothing else fetches them early)
            const char * ahead = a + 4 * nb01;
            for (int64_t b = 0; b < ne00 * 2; b += 64) {
                _mm_prefetch(ahead + b, _MM_HINT_T0);
                _mm_prefetch(ahead + nb01 + b, _MM_HINT_T0);
            }
        }
        float * o = (float *) ((char *) dst->data + i12 * nb2 + i13 * nb3) + i + c0 * ldc;
        const ggml_fp16_t * a0 = (const ggml_fp16_t *) a, * a1 = (const ggml_fp16_t *) (a + nb01);
        switch (gn) {
            case 1: voxpipe_f16_rows2(1, ne00, a0, a1, ym, o, o + 1, ldc); break;
            case 2: voxpipe_f16_rows2(2, ne00, a0, a1, ym, o, o + 1, ldc); break;
            case 3: voxpipe_f16_rows2(3, ne00, a0, a1, ym, o, o + 1, ldc); break;
            case 4: voxpipe_f16_rows2(4, ne00, a0, a1, ym, o, o + 1, ldc); break;
            case 5: voxpipe_f16_rows2(5, ne00, a0, a1, ym, o, o + 1, ldc); break;
            default: voxpipe_f16_rows2(6, ne00, a0, a1, ym, o, o + 1, ldc); break;
        }
    }
}
#endif

void ggml_compute_forward_mul_mat(
"""

patch = SourcePatch("ggml-f16-heads", sys.argv[1])
patch.replace_once("void ggml_compute_forward_mul_mat(\n", KERNEL.lstrip("\n"))
patch.replace_once(
    "#if GGML_USE_LLAMAFILE\n"
    "    if (src1->type != vec_dot_type) {\n"
    "        const void* wdata = (src1->type == vec_dot_type) ? src1->data : params->wdata;\n"
    "        const size_t row_size = ggml_row_size(vec_dot_type, ne10);\n",
    "#if GGML_USE_LLAMAFILE\n"
    "    if (src1->type != vec_dot_type) {\n"
    "        const void* wdata = (src1->type == vec_dot_type) ? src1->data : params->wdata;\n"
    "        const size_t row_size = ggml_row_size(vec_dot_type, ne10);\n"
    "#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && !defined(__AVX512F__)\n"
    "        // voxpipe: the products tinyBLAS's F16 kernel would take with 2 to 6 or 8 and more columns,\n"
    "        // every matrix in one pass (scripts/patches/ggml-f16-heads.py)\n"
    "        if (src0->type == GGML_TYPE_F16 && vec_dot_type == GGML_TYPE_F16 && dst->type == GGML_TYPE_F32 &&\n"
    "            ne11 >= 2 && ne11 != 7 && ne00 % 8 == 0 && ne00 <= 256 && ne01 % 4 == 0 && nb00 == sizeof(ggml_fp16_t)) {\n"
    "            voxpipe_mul_mat_f16_heads(params, dst, wdata, row_size);\n"
    "            return;\n"
    "        }\n"
    "#endif\n",
)
patch.save()
