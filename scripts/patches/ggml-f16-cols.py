#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5) ggml/src/ggml-cpu/ggml-cpu.c so an F16 matrix product
that tinyBLAS turns down reads each row once for up to three columns. The decoder's cross-attention
multiplies its weights by V, 64 rows of 1,500 values a head, and 1,500 is no multiple of 8, so
every one of the 5 beams' 15,360 dot products a step went to ggml_vec_dot_f16 on its own: the row
converted from F16 again for every column, 28 of its values summed one at a time in double, and a
function call each (15% of the CPU on the 10-minute recording of bench/pauses.sh).

Here each output is still ggml_vec_dot_f16's, operation for operation: four 8-lane fused
multiply-add chains over 32-value steps, the same reduction (lanes 0+2, 1+3, then the halves and
two horizontal adds), the leftovers multiplied in float and added in double in index order, the
result rounded to float; only several outputs are computed side by side. Outputs do not depend
on the thread count (each is summed whole by one thread).

Rows of up to 2,048 values take up to six columns at a time, converted to F32 once for all the rows
(F16 to F32 is exact, so they are the values ggml_vec_dot_f16 converts on every load), in two
reads of the row: chains 0 and 1 of every column, then chains 2 and 3 from L1. The 5 beams' V
product then reads V once a step, not twice (3 + 2 columns), and loads no column in F16 again.
Applied by scripts/setup-whisper.sh; fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

KERNEL = r"""
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
// voxpipe: F16 products, one row for up to three columns in F16 or six in F32 (scripts/patches/ggml-f16-cols.py)
// ggml_vec_dot_f16's sum of its four 8-lane chains: lanes 0+2, 1+3, then the halves and two horizontal adds.
static inline __attribute__((always_inline)) ggml_float voxpipe_f16_chains_sum(const __m256 * acc) {
    const __m256 a = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
    const __m128 t0 = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    const __m128 t1 = _mm_hadd_ps(t0, t0);
    return (ggml_float) _mm_cvtss_f32(_mm_hadd_ps(t1, t1));
}

// s[c] = ggml_vec_dot_f16(n, x, y[c]) for c < NC, each by the same operations in the same order.
static inline __attribute__((always_inline)) void voxpipe_vec_dot_f16_cols(
        const int NC, const int n, const ggml_fp16_t * GGML_RESTRICT x, const ggml_fp16_t * const * y, float * out) {
    const int np = n & ~31;
    __m256 acc[3][4];
    for (int c = 0; c < NC; ++c) {
        for (int j = 0; j < 4; ++j) {
            acc[c][j] = _mm256_setzero_ps();
        }
    }
    for (int i = 0; i < np; i += 32) {
        for (int j = 0; j < 4; ++j) {
            const __m256 ax = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (x + i + 8*j)));
            for (int c = 0; c < NC; ++c) {
                const __m256 ay = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (y[c] + i + 8*j)));
                acc[c][j] = _mm256_fmadd_ps(ax, ay, acc[c][j]);
            }
        }
    }
    ggml_float sumf[3];
    for (int c = 0; c < NC; ++c) {
        sumf[c] = voxpipe_f16_chains_sum(acc[c]);
    }
    for (int i = np; i < n; ++i) {
        const float xi = GGML_CPU_FP16_TO_FP32(x[i]);
        for (int c = 0; c < NC; ++c) {
            sumf[c] += (ggml_float) (xi*GGML_CPU_FP16_TO_FP32(y[c][i]));
        }
    }
    for (int c = 0; c < NC; ++c) {
        out[c] = sumf[c];
    }
}

// Chains h and h + 1 of NC <= 6 columns over a row (see below), left in lo[c] and hi[c].
static inline __attribute__((always_inline)) void voxpipe_f16_f32cols_pass(
        const int NC, const int h, const int np, const ggml_fp16_t * GGML_RESTRICT x, const float * GGML_RESTRICT yf,
        const int ldy, const char * ahead, __m256 * lo, __m256 * hi) {
    __m256 a[6], b[6];
    for (int c = 0; c < NC; ++c) {
        a[c] = _mm256_setzero_ps();
        b[c] = _mm256_setzero_ps();
    }
    for (int i = 0; i < np; i += 32) {
        if (ahead != NULL) {
            _mm_prefetch(ahead + 2 * i, _MM_HINT_T0);
        }
        const __m256 a0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (x + i + 8*h)));
        const __m256 a1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (x + i + 8*h + 8)));
        for (int c = 0; c < NC; ++c) {
            a[c] = _mm256_fmadd_ps(a0, _mm256_loadu_ps(yf + c * ldy + i + 8*h), a[c]);
            b[c] = _mm256_fmadd_ps(a1, _mm256_loadu_ps(yf + c * ldy + i + 8*h + 8), b[c]);
        }
    }
    for (int c = 0; c < NC; ++c) {
        lo[c] = a[c];
        hi[c] = b[c];
    }
}

// s[c] = ggml_vec_dot_f16(n, x, y[c]) for c < NC <= 6, the columns given in F32 (yf + c * ldy), each
// by the same operations in the same order: chains 0 and 1 of every column over the row, then chains 2
// and 3 (the row's second read comes from L1). `ahead`: a row to prefetch (a line a 32-value step), or NULL.
static inline __attribute__((always_inline)) void voxpipe_vec_dot_f16_f32cols(
        const int NC, const int n, const ggml_fp16_t * GGML_RESTRICT x, const float * GGML_RESTRICT yf,
        const int ldy, const char * ahead, float * out) {
    const int np = n & ~31;
    __m256 acc[6][4];
    {
        __m256 lo[6], hi[6];
        voxpipe_f16_f32cols_pass(NC, 0, np, x, yf, ldy, ahead, lo, hi);
        for (int c = 0; c < NC; ++c) {
            acc[c][0] = lo[c];
            acc[c][1] = hi[c];
        }
        voxpipe_f16_f32cols_pass(NC, 2, np, x, yf, ldy, NULL, lo, hi);
        for (int c = 0; c < NC; ++c) {
            acc[c][2] = lo[c];
            acc[c][3] = hi[c];
        }
    }
    ggml_float sumf[6];
    for (int c = 0; c < NC; ++c) {
        sumf[c] = voxpipe_f16_chains_sum(acc[c]);
    }
    for (int i = np; i < n; ++i) {
        const float xi = GGML_CPU_FP16_TO_FP32(x[i]);
        for (int c = 0; c < NC; ++c) {
            sumf[c] += (ggml_float) (xi*yf[c * ldy + i]);
        }
    }
    for (int c = 0; c < NC; ++c) {
        out[c] = sumf[c];
    }
}

// The rows ir0_start..ir0_end of the columns ir1_start..ir1_end of an F16 x F16 product, as
// ggml_compute_forward_mul_mat_one_chunk would give them with ggml_vec_dot_f16: consecutive
// columns of one matrix (the same i12, i13) go through the kernel above together.
static void voxpipe_mul_mat_f16_chunk(
        const struct ggml_compute_params * params, struct ggml_tensor * dst,
        const int64_t ir0_start, const int64_t ir0_end, const int64_t ir1_start, const int64_t ir1_end) {
    const struct ggml_tensor * src0 = dst->src[0];
    const struct ggml_tensor * src1 = dst->src[1];

    GGML_TENSOR_BINARY_OP_LOCALS

    const bool src1_cont = ggml_is_contiguous(src1);
    const int64_t r2 = ne12 / ne02;
    const int64_t r3 = ne13 / ne03;
    const void * wdata = (src1->type == GGML_TYPE_F16) ? src1->data : params->wdata;
    const size_t row_size = ggml_row_size(GGML_TYPE_F16, ne10);

    // Up to six columns at a time in F32 for rows of up to 2,048 values (48 KB here), else three in F16.
    enum { F32_COLS = 6, F32_ROW_MAX = 2048 };
    const int as_f32 = ne00 <= F32_ROW_MAX;
    float yf[F32_COLS * F32_ROW_MAX];
    for (int64_t ir1 = ir1_start; ir1 < ir1_end; ) {
        const ggml_fp16_t * y[F32_COLS];
        float * d[F32_COLS];
        const char * src0_mat = NULL;
        int64_t mat = -1;
        int nc = 0;
        while (nc < (as_f32 ? F32_COLS : 3) && ir1 < ir1_end) {
            const int64_t i13 = (ir1 / (ne12 * ne1));
            const int64_t i12 = (ir1 - i13 * ne12 * ne1) / ne1;
            const int64_t i11 = (ir1 - i13 * ne12 * ne1 - i12 * ne1);
            if (nc > 0 && i12 + i13 * ne12 != mat) {
                break;
            }
            mat = i12 + i13 * ne12;
            src0_mat = (const char *) src0->data + ((i12 / r2) * nb02 + (i13 / r3) * nb03);
            y[nc] = (const ggml_fp16_t *) ((const char *) wdata +
                (src1_cont || src1->type != GGML_TYPE_F16
                    ? (i11 + i12 * ne11 + i13 * ne12 * ne11) * row_size
                    : (i11 * nb11 + i12 * nb12 + i13 * nb13)));
            d[nc] = (float *) ((char *) dst->data + (i11 * nb1 + i12 * nb2 + i13 * nb3));
            ++nc;
            ++ir1;
        }
        if (as_f32) {
            for (int c = 0; c < nc; ++c) {
                int64_t l = 0;
                for (; l + 8 <= ne00; l += 8) {
                    _mm256_storeu_ps(yf + c * ne00 + l, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) (y[c] + l))));
                }
                for (; l < ne00; ++l) {
                    yf[c * ne00 + l] = GGML_CPU_FP16_TO_FP32(y[c][l]);
                }
            }
            for (int64_t ir0 = ir0_start; ir0 < ir0_end; ++ir0) {
                const ggml_fp16_t * x = (const ggml_fp16_t *) (src0_mat + ir0 * nb01);
                // the row after the next: rows are contiguous, a head's V 192 KB that comes from L3
                const char * ahead = ir0 + 2 < ir0_end ? src0_mat + (ir0 + 2) * nb01 : NULL;
                float out[F32_COLS];
                switch (nc) {
                    case 6: voxpipe_vec_dot_f16_f32cols(6, (int) ne00, x, yf, (int) ne00, ahead, out); break;
                    case 5: voxpipe_vec_dot_f16_f32cols(5, (int) ne00, x, yf, (int) ne00, ahead, out); break;
                    case 4: voxpipe_vec_dot_f16_f32cols(4, (int) ne00, x, yf, (int) ne00, ahead, out); break;
                    case 3: voxpipe_vec_dot_f16_f32cols(3, (int) ne00, x, yf, (int) ne00, ahead, out); break;
                    case 2: voxpipe_vec_dot_f16_f32cols(2, (int) ne00, x, yf, (int) ne00, ahead, out); break;
                    default: voxpipe_vec_dot_f16_f32cols(1, (int) ne00, x, yf, (int) ne00, ahead, out); break;
                }
                for (int c = 0; c < nc; ++c) {
                    d[c][ir0] = out[c];
                }
            }
            continue;
        }
        for (int64_t ir0 = ir0_start; ir0 < ir0_end; ++ir0) {
            const ggml_fp16_t * x = (const ggml_fp16_t *) (src0_mat + ir0 * nb01);
            float out[3];
            switch (nc) {
                case 3: voxpipe_vec_dot_f16_cols(3, (int) ne00, x, y, out); break;
                case 2: voxpipe_vec_dot_f16_cols(2, (int) ne00, x, y, out); break;
                default: voxpipe_vec_dot_f16_cols(1, (int) ne00, x, y, out); break;
            }
            for (int c = 0; c < nc; ++c) {
                d[c][ir0] = out[c];
            }
        }
    }
}
#endif

static void ggml_compute_forward_mul_mat_one_chunk(
"""

patch = SourcePatch("ggml-f16-cols", sys.argv[1])
patch.replace_once("static void ggml_compute_forward_mul_mat_one_chunk(\n", KERNEL.lstrip("\n"))
patch.replace_once(
    "    const void * wdata = (src1->type == vec_dot_type) ? src1->data : params->wdata;\n"
    "    const size_t row_size = ggml_row_size(vec_dot_type, ne10);\n"
    "\n"
    "    assert(ne12 % ne02 == 0);\n",
    "#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)\n"
    "    // voxpipe: ggml_vec_dot_f16's outputs, a row read once for up to three columns (ggml-f16-cols.py)\n"
    "    if (type == GGML_TYPE_F16 && vec_dot_type == GGML_TYPE_F16 && num_rows_per_vec_dot == 1 &&\n"
    "        vec_dot == (ggml_vec_dot_t) ggml_vec_dot_f16) {\n"
    "        voxpipe_mul_mat_f16_chunk(params, dst, ir0_start, ir0_end, ir1_start, ir1_end);\n"
    "        return;\n"
    "    }\n"
    "#endif\n"
    "\n"
    "    const void * wdata = (src1->type == vec_dot_type) ? src1->data : params->wdata;\n"
    "    const size_t row_size = ggml_row_size(vec_dot_type, ne10);\n"
    "\n"
    "    assert(ne12 % ne02 == 0);\n",
)
patch.save()
