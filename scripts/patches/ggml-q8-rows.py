#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5) so a q8_0 matrix product whose weight rows each keep one
scale (voxpipe's converted weights: scripts/whisper_convert.py gives every 32-value block of a row
the row's scale, as CTranslate2's int8 weights have one scale a row) is summed in integers.

- The activations (src1, float) are quantized a whole row at a time to 16-bit integers, one float
  scale a row (max|x|/qmax, qmax the most a row of n values allows without overflow: 32767 for
  rows of 512, 8191 for 2048), each row by one thread. ggml quantizes them to q8_0
  instead: 8 bits and an fp16 scale for every 32 values, the row split between the threads. 8 bits a
  row was tried and lost words the 8-bit blocks kept (Whisper base heard "maria@xample.com").
- Each output is then the integer dot product of a weight row and an activation row (madd:
  int8 x int16 pairs into 32-bit lanes; |sum| <= n * 128 * qmax < 2^31) times the two
  scales, once: C = float(sum) * (da * db). Before, every 32-value block's partial sum was converted
  to float and multiplied by its own scales: 7 vector operations a block and output instead of 4.
  Integer sums do not depend on their order, so the numbers are the same with any instruction set
  and any thread count; VOXPIPE_WHISPER_KERNEL=portable sums with plain loops instead of AVX2 (the
  same bytes out, which the tests check). Weight rows whose blocks have scales of their own
  (another model) are summed block by block in floats, in one fixed order.

Applied by scripts/setup-whisper.sh to ggml-cpu.c and to llamafile/sgemm.cpp (the kernel); fails
loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

path = sys.argv[1]
patch = SourcePatch("ggml-q8-rows", path)

if path.endswith("ggml-cpu.c"):
    patch.replace_once(
        "void ggml_compute_forward_mul_mat(\n",
        r"""// voxpipe (scripts/patches/ggml-q8-rows.py): a row of activations as 16-bit integers, after a
// 64-byte head whose first 4 bytes are the row's scale (float, max|x|/qmax). Rounding is
// to nearest, ties to even, and a NaN is passed over by the maximum: the same bytes with AVX2 and
// without.
static size_t voxpipe_i16_row_bytes(int64_t n) {
    return 64 + (size_t) ((2 * n + 63) / 64) * 64;
}

static void voxpipe_quantize_row_i16(const float * GGML_RESTRICT x, char * GGML_RESTRICT row, int64_t n) {
    int16_t * y = (int16_t *) (row + 64);
    float amax = 0.0f;
    int64_t i = 0;
#if defined(__AVX2__)
    __m256 vmax = _mm256_setzero_ps();
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (; i + 8 <= n; i += 8) {
        vmax = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)), vmax);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, vmax);
    for (int j = 0; j < 8; j++) {
        amax = lanes[j] > amax ? lanes[j] : amax;
    }
#endif
    for (; i < n; i++) {
        const float v = fabsf(x[i]);
        amax = v > amax ? v : amax;
    }
    // As many levels as the row's integer sum can hold: |sum| <= n * 128 * qmax < 2^31.
    const int64_t qmax = (int64_t) 2147483647 / (n * 128) < 32767 ? (int64_t) 2147483647 / (n * 128) : 32767;
    const float d = amax / (float) qmax;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    memcpy(row, &d, sizeof(d));
    i = 0;
#if defined(__AVX2__)
    const __m256 vid = _mm256_set1_ps(id);
    for (; i + 16 <= n; i += 16) {
        const __m256i q0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vid),
                                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        const __m256i q1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8), vid),
                                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        _mm256_storeu_si256((__m256i *) (y + i), _mm256_permute4x64_epi64(_mm256_packs_epi32(q0, q1), 0xD8));
    }
#endif
    for (; i < n; i++) {
        y[i] = (int16_t) nearbyintf(x[i] * id);
    }
}

void voxpipe_q8_i16_gemm(int ith, int nth, int64_t m, int64_t n, int64_t k, const void * A, int64_t lda,
                         const char * B, int64_t ldb, float * C, int64_t ldc);

"""
        "void ggml_compute_forward_mul_mat(\n",
    )
    patch.replace_once(
        "        assert(params->wsize >= ne13*nbw3);\n"
        "        GGML_ASSERT(src1->type == GGML_TYPE_F32);\n"
        "\n"
        "    #if 0\n",
        r"""        assert(params->wsize >= ne13*nbw3);
        GGML_ASSERT(src1->type == GGML_TYPE_F32);

    #if GGML_USE_LLAMAFILE
    if (src0->type == GGML_TYPE_Q8_0 && dst->type == GGML_TYPE_F32) {
        // voxpipe: each row of activations whole, by one thread; then integer sums (ggml-q8-rows.py)
        const size_t rb = voxpipe_i16_row_bytes(ne10);
        GGML_ASSERT(params->wsize >= (size_t) (ne11*ne12*ne13) * rb);
        for (int64_t i13 = 0; i13 < ne13; ++i13) {
            for (int64_t i12 = 0; i12 < ne12; ++i12) {
                for (int64_t i11 = ith; i11 < ne11; i11 += nth) {
                    voxpipe_quantize_row_i16((const float *)((char *) src1->data + i13*nb13 + i12*nb12 + i11*nb11),
                                             wdata + ((i13*ne12 + i12)*ne11 + i11)*rb, ne10);
                }
            }
        }
        ggml_barrier(params->threadpool);
        for (int64_t i13 = 0; i13 < ne13; ++i13) {
            for (int64_t i12 = 0; i12 < ne12; ++i12) {
                voxpipe_q8_i16_gemm(ith, nth, ne01, ne11, ne00/QK8_0,
                                    (const char *) src0->data + i12/(ne12/ne02)*nb02 + i13/(ne13/ne03)*nb03,
                                    nb01/ggml_type_size(src0->type),
                                    wdata + (i13*ne12 + i12)*ne11*rb, (int64_t) rb,
                                    (float *)((char *) dst->data + i12*nb2 + i13*nb3), nb1/sizeof(float));
            }
        }
        return;
    }
    #endif
    {
    #if 0
""",
    )
    patch.replace_once(  # closes the block opened above
        "    #endif\n    }\n\n    if (ith == 0) {\n", "    #endif\n    }\n    }\n\n    if (ith == 0) {\n")
    patch.replace_once(
        "                        if (node->src[1]->type != vec_dot_type) {\n"
        "                            cur = ggml_row_size(vec_dot_type, ggml_nelements(node->src[1]));\n"
        "                        }\n",
        "                        if (node->src[1]->type != vec_dot_type) {\n"
        "                            cur = ggml_row_size(vec_dot_type, ggml_nelements(node->src[1]));\n"
        "                        }\n"
        "                        if (node->src[0]->type == GGML_TYPE_Q8_0 && node->src[1]->type == GGML_TYPE_F32) {\n"
        "                            // voxpipe: 16-bit activations (ggml-q8-rows.py)\n"
        "                            const size_t i16 = (size_t) ggml_nrows(node->src[1]) * voxpipe_i16_row_bytes(node->src[1]->ne[0]);\n"
        "                            cur = cur > i16 ? cur : i16;\n"
        "                        }\n",
    )
else:
    patch.src += r"""
// voxpipe: q8_0 weights whose rows keep one scale times 16-bit activation rows, summed in integers
// (scripts/patches/ggml-q8-rows.py).
namespace {

class voxpipe_Q8_I16 {
  public:
    voxpipe_Q8_I16(int64_t k, const block_q8_0 *A, int64_t lda, const char *B, int64_t ldb, float *C,
                   int64_t ldc, int ith, int nth)
        : A(A), B(B), C(C), k(k), lda(lda), ldb(ldb), ldc(ldc), ith(ith), nth(nth) {}

    // Weight rows in panels of 64 (136 KB for rows of 2048: they stay in the L2 cache), activation
    // rows in threes (12 KB: they stay in L1 while the panel's rows pass in pairs). Each thread
    // takes a run of (panel, three) jobs and sums each output whole.
    void matmul(int64_t m, int64_t n) {
        const int64_t MP = 64;
        const int64_t rpanels = (m + MP - 1) / MP;
        const int64_t ctiles = (n + 2) / 3;
        const int64_t jobs = rpanels * ctiles;
        const int64_t duty = (jobs + nth - 1) / nth;
        const int64_t start = duty * ith;
        const int64_t end = start + duty < jobs ? start + duty : jobs;
        int64_t checked = -1;
        bool shared = false;
        for (int64_t job = start; job < end; ++job) {
            const int64_t rp = job / ctiles;
            const int64_t i0 = rp * MP;
            const int64_t i1 = i0 + MP < m ? i0 + MP : m;
            const int64_t jj = job % ctiles * 3;
            const int64_t rn = n - jj < 3 ? n - jj : 3;
            if (rp != checked) {
                shared = rows_shared(i0, i1);
                checked = rp;
            }
            for (int64_t ii = i0; ii < i1; ii += 2) {
                const int64_t rm = i1 - ii < 2 ? i1 - ii : 2;
#if defined(__AVX2__)
                if (shared && !portable()) {
                    switch ((rm == 2 ? 3 : 0) + rn) {
                    case 1: tile<1, 1>(ii, jj); break;
                    case 2: tile<1, 2>(ii, jj); break;
                    case 3: tile<1, 3>(ii, jj); break;
                    case 4: tile<2, 1>(ii, jj); break;
                    case 5: tile<2, 2>(ii, jj); break;
                    default: tile<2, 3>(ii, jj); break;
                    }
                    continue;
                }
#endif
                loops(ii, rm, jj, rn, shared);
            }
        }
    }

  private:
    const int16_t *brow(int64_t j) const { return (const int16_t *)(B + ldb * j + 64); }
    float bscale(int64_t j) const {
        float d;
        memcpy(&d, B + ldb * j, sizeof(d));
        return d;
    }

    // VOXPIPE_WHISPER_KERNEL=portable: plain loops instead of AVX2 (the same integers).
    static bool portable() {
        static const bool on = [] {
            const char *v = getenv("VOXPIPE_WHISPER_KERNEL");
            return v != nullptr && strcmp(v, "portable") == 0;
        }();
        return on;
    }

    // Whether weight rows r0..<r1 each keep one scale in all their blocks.
    bool rows_shared(int64_t r0, int64_t r1) const {
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t l = 1; l < k; ++l)
                if (A[lda * r + l].d != A[lda * r].d)
                    return false;
        return true;
    }

    // Plain loops. Rows that keep one scale: the row's integer sum times the two scales, as the
    // AVX2 tiles compute it. Otherwise each block's sum times its weight scale, added up block by
    // block, times the activation row's scale.
    NOINLINE void loops(int64_t ii, int64_t rm, int64_t jj, int64_t rn, bool shared) {
        for (int64_t j = 0; j < rn; ++j)
            for (int64_t i = 0; i < rm; ++i) {
                const int16_t *y = brow(jj + j);
                int32_t s = 0;
                float c = 0.0f;
                for (int64_t l = 0; l < k; ++l) {
                    const block_q8_0 *x = A + lda * (ii + i) + l;
                    int32_t b = 0;
                    for (int q = 0; q < QK8_0; ++q)
                        b += (int32_t)x->qs[q] * (int32_t)y[l * QK8_0 + q];
                    if (shared)
                        s += b;
                    else
                        c += unhalf(x->d) * (float)b;
                }
                C[ldc * (jj + j) + (ii + i)] = shared ? (float)s * (unhalf(A[lda * (ii + i)].d) * bscale(jj + j))
                                                      : c * bscale(jj + j);
            }
    }

#if defined(__AVX2__)
    static inline int32_t hsum_i32(__m256i x) {
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
        return _mm_cvtsi128_si32(s);
    }

    // A tile of RM weight rows by RN activation rows: per 32 values, each weight row widened to
    // 16 bits once, then two madd (pairs into 32-bit lanes) and two adds an output.
    template <int RM, int RN>
    NOINLINE void tile(int64_t ii, int64_t jj) {
        __m256i acc[RN][RM];
        for (int j = 0; j < RN; ++j)
            for (int i = 0; i < RM; ++i)
                acc[j][i] = _mm256_setzero_si256();
        const int16_t *y[RN];
        for (int j = 0; j < RN; ++j)
            y[j] = brow(jj + j);
        for (int64_t l = 0; l < k; ++l) {
            __m256i lo[RM], hi[RM];
            for (int i = 0; i < RM; ++i) {
                const int8_t *q = A[lda * (ii + i) + l].qs;
                lo[i] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)q));
                hi[i] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(q + 16)));
            }
            for (int j = 0; j < RN; ++j) {
                const __m256i b0 = _mm256_loadu_si256((const __m256i *)(y[j] + l * QK8_0));
                const __m256i b1 = _mm256_loadu_si256((const __m256i *)(y[j] + l * QK8_0 + 16));
                for (int i = 0; i < RM; ++i)
                    acc[j][i] = _mm256_add_epi32(_mm256_add_epi32(acc[j][i], _mm256_madd_epi16(lo[i], b0)),
                                                 _mm256_madd_epi16(hi[i], b1));
            }
        }
        for (int j = 0; j < RN; ++j)
            for (int i = 0; i < RM; ++i)
                C[ldc * (jj + j) + (ii + i)] =
                    (float)hsum_i32(acc[j][i]) * (unhalf(A[lda * (ii + i)].d) * bscale(jj + j));
    }
#endif

    const block_q8_0 *const A;
    const char *const B;
    float *const C;
    const int64_t k;
    const int64_t lda;
    const int64_t ldb;
    const int64_t ldc;
    const int ith;
    const int nth;
};

} // namespace

// m weight rows (q8_0, k blocks each, lda blocks apart) times n activation rows (16-bit, ldb bytes
// apart): C[ldc * j + i], every output summed whole by one of the nth threads.
extern "C" void voxpipe_q8_i16_gemm(int ith, int nth, int64_t m, int64_t n, int64_t k, const void *A, int64_t lda,
                                    const char *B, int64_t ldb, float *C, int64_t ldc) {
    voxpipe_Q8_I16 tb{k, (const block_q8_0 *)A, lda, B, ldb, C, ldc, ith, nth};
    tb.matmul(m, n);
}
"""
patch.save()
