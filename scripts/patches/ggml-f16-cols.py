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
on the thread count (each is summed whole by one thread). Applied by scripts/setup-whisper.sh;
fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

KERNEL = r"""
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
// voxpipe: F16 products, one row for up to three columns (scripts/patches/ggml-f16-cols.py)
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
        const __m256 a = _mm256_add_ps(_mm256_add_ps(acc[c][0], acc[c][2]), _mm256_add_ps(acc[c][1], acc[c][3]));
        const __m128 t0 = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        const __m128 t1 = _mm_hadd_ps(t0, t0);
        sumf[c] = (ggml_float) _mm_cvtss_f32(_mm_hadd_ps(t1, t1));
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

    for (int64_t ir1 = ir1_start; ir1 < ir1_end; ) {
        const ggml_fp16_t * y[3];
        float * d[3];
        const char * src0_mat = NULL;
        int64_t mat = -1;
        int nc = 0;
        while (nc < 3 && ir1 < ir1_end) {
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
