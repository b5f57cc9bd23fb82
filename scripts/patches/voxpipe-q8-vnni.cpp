// voxpipe: q8_0 x q8_0 matrix products with AVX-512 VNNI (scripts/patches/ggml-q8-blocks.py), compiled
// with -mavx512f -mavx512vl -mavx512bw -mavx512dq -mavx512vnni and called only where the CPU has them
// and no AMX (Intel Xeons since Cascade Lake, AMD since Zen 4). The same block sums as the baseline's
// kernel (voxpipe-q8.inc), so the same bits: VPDPBUSD multiplies unsigned by signed bytes and adds
// each lane's four products to a 32-bit sum, with no saturation. A weight row's bytes are taken as
// a + 128 (0 to 255), so each block's integer dot product is sum((a + 128) b) - 128 sum(b), exact;
// the sum starts from -128 sum(b) (the column's, worked out when the columns are packed) and eight
// VPDPBUSD add the 32 products of the block, sixteen columns a register. Then the same product of
// the scales and the same fused multiply-add a block, block after block. Products of fewer than 16
// columns (a decoder step, bound by reading the weights) stay the baseline's, compiled here.
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "voxpipe-q8.inc"

namespace voxpipe_q8 {
namespace vnni {
static const int64_t SLAB = 384;  // columns packed at a time (24 groups of 16)
static const int64_t CHUNK = 96;  // rows packed at a time
// columns [j0, j1) of B as groups of 16 (the last padded with zeros): b8[((g * k + l) * 8 + q) * 16 + c]
// holds column c's bytes 4q to 4q + 3 of block l; s0 the sum's start, -128 x the block's bytes; db the scale
static void pack_b(const blk * B, int64_t ldb, int64_t k, int64_t j0, int64_t j1, int32_t * b8, int32_t * s0, float * db) {
    const int64_t groups = (j1 - j0 + 15) / 16;
    for (int64_t g = 0; g < groups; ++g) {
        for (int c = 0; c < 16; ++c) {
            const int64_t j = j0 + 16 * g + c;
            for (int64_t l = 0; l < k; ++l) {
                int32_t * dst = b8 + (g * k + l) * 128 + c;
                const int64_t at = (g * k + l) * 16 + c;
                if (j >= j1) {
                    for (int q = 0; q < 8; ++q) dst[16 * q] = 0;
                    s0[at] = 0;
                    db[at] = 0.0f;
                    continue;
                }
                const blk * b = B + ldb * j + l;
                int32_t words[8], sum = 0;
                memcpy(words, b->qs, 32);
                for (int q = 0; q < 8; ++q) dst[16 * q] = words[q];
                for (int q = 0; q < 32; ++q) sum += b->qs[q];
                s0[at] = -128 * sum;
                db[at] = h2f(b->d);
            }
        }
    }
}
// rows [i0, i1) of A, their bytes plus 128 (as unsigned bytes): a8[(r * k + l) * 8 + q], da[r * k + l]
static void pack_a(const blk * A, int64_t lda, int64_t k, int64_t i0, int64_t i1, int32_t * a8, float * da) {
    const __m256i flip = _mm256_set1_epi8((char) 0x80);
    for (int64_t i = i0; i < i1; ++i) {
        for (int64_t l = 0; l < k; ++l) {
            const blk * a = A + lda * i + l;
            da[(i - i0) * k + l] = h2f(a->d);
            _mm256_storeu_si256((__m256i *) (a8 + ((i - i0) * k + l) * 8), _mm256_xor_si256(ld(a), flip));
        }
    }
}
// R rows x G groups of 16 columns: out[(r * G + g) * 16 + c]
template <int R, int G>
static inline void tile(const int32_t * a8, const float * da, int64_t k, const int32_t * b8, const int32_t * s0, const float * db, float * out) {
    __m512 acc[R][G];
    for (int r = 0; r < R; ++r)
        for (int g = 0; g < G; ++g) acc[r][g] = _mm512_setzero_ps();
    for (int64_t l = 0; l < k; ++l) {
        const int32_t * ar[R];
        const int32_t * bg[G];
        for (int r = 0; r < R; ++r) ar[r] = a8 + (r * k + l) * 8;
        for (int g = 0; g < G; ++g) bg[g] = b8 + (g * k + l) * 128;
        __m512i s[R][G];
        for (int g = 0; g < G; ++g) {
            const __m512i start = _mm512_loadu_si512(s0 + (g * k + l) * 16);
            for (int r = 0; r < R; ++r) s[r][g] = start;
        }
#pragma GCC unroll 8
        for (int q = 0; q < 8; ++q) {
            __m512i bv[G];
            for (int g = 0; g < G; ++g) bv[g] = _mm512_loadu_si512(bg[g] + q * 16);
            for (int r = 0; r < R; ++r) {
                const __m512i av = _mm512_set1_epi32(ar[r][q]);
                for (int g = 0; g < G; ++g) s[r][g] = _mm512_dpbusd_epi32(s[r][g], av, bv[g]);
            }
        }
        for (int g = 0; g < G; ++g) {
            const __m512 dbv = _mm512_loadu_ps(db + (g * k + l) * 16);
            for (int r = 0; r < R; ++r)
                acc[r][g] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(da[r * k + l]), dbv), _mm512_cvtepi32_ps(s[r][g]), acc[r][g]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int g = 0; g < G; ++g) _mm512_storeu_ps(out + (r * G + g) * 16, acc[r][g]);
}
template <int R, int G>
static inline void tile_store(const int32_t * a8, const float * da, int64_t k, const int32_t * b8, const int32_t * s0, const float * db,
                              float * C, int64_t ldc, int64_t i, int64_t j, int64_t j1) {
    alignas(64) float out[R * G * 16];
    tile<R, G>(a8, da, k, b8, s0, db, out);
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < G * 16 && j + c < j1; ++c) C[ldc * (j + c) + i + r] = out[(r * G + c / 16) * 16 + c % 16];
}
// per-thread buffers (plain malloc: no C++ library code is instantiated in this AVX-512 object, where
// the baseline's objects could pick it up); false when memory ran out
static bool reserve(void ** p, size_t * held, size_t bytes) {
    if (bytes <= *held) return true;
    free(*p);
    *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    *held = *p != NULL ? bytes : 0;
    return *p != NULL;
}
// rows [i0, i1) of C, every column; false (nothing written) if the buffers cannot be had
static bool rows(const blk * A, int64_t lda, const blk * B, int64_t ldb, float * C, int64_t ldc, int64_t k, int64_t n, int64_t i0, int64_t i1) {
    static thread_local void * bufs[5] = {NULL, NULL, NULL, NULL, NULL};
    static thread_local size_t held[5] = {0, 0, 0, 0, 0};
    const int64_t slab = n < SLAB ? (n + 15) / 16 * 16 : SLAB;
    const size_t want[5] = {(size_t) (slab * k * 8) * 4, (size_t) (slab * k) * 4, (size_t) (slab * k) * 4,
                            (size_t) (CHUNK * k * 8) * 4, (size_t) (CHUNK * k) * 4};
    for (int b = 0; b < 5; ++b)
        if (!reserve(&bufs[b], &held[b], want[b])) return false;
    int32_t * b8 = (int32_t *) bufs[0];
    int32_t * s0 = (int32_t *) bufs[1];
    float * db = (float *) bufs[2];
    int32_t * a8 = (int32_t *) bufs[3];
    float * da = (float *) bufs[4];
    for (int64_t j0 = 0; j0 < n; j0 += SLAB) {
        const int64_t j1 = j0 + SLAB < n ? j0 + SLAB : n;
        pack_b(B, ldb, k, j0, j1, b8, s0, db);
        const int64_t groups = (j1 - j0 + 15) / 16;
        for (int64_t c0 = i0; c0 < i1; c0 += CHUNK) {
            const int64_t c1 = c0 + CHUNK < i1 ? c0 + CHUNK : i1;
            pack_a(A, lda, k, c0, c1, a8, da);
            for (int64_t g = 0; g < groups; g += 2) {
                const int32_t * bg = b8 + g * k * 128;
                const int32_t * sg = s0 + g * k * 16;
                const float * dg = db + g * k * 16;
                const int64_t j = j0 + 16 * g;
                int64_t i = c0;
                for (; i + 4 <= c1; i += 4) {
                    const int32_t * ai = a8 + (i - c0) * k * 8;
                    const float * di = da + (i - c0) * k;
                    if (g + 2 <= groups) tile_store<4, 2>(ai, di, k, bg, sg, dg, C, ldc, i, j, j1);
                    else tile_store<4, 1>(ai, di, k, bg, sg, dg, C, ldc, i, j, j1);
                }
                for (; i < c1; ++i) {
                    const int32_t * ai = a8 + (i - c0) * k * 8;
                    const float * di = da + (i - c0) * k;
                    if (g + 2 <= groups) tile_store<1, 2>(ai, di, k, bg, sg, dg, C, ldc, i, j, j1);
                    else tile_store<1, 1>(ai, di, k, bg, sg, dg, C, ldc, i, j, j1);
                }
            }
        }
    }
    return true;
}
}  // namespace vnni
// thread ith of nth: the baseline's share of the rows; 16 columns or more through VNNI
static void gemm_vnni(const blk * A, int64_t lda, const blk * B, int64_t ldb, float * C, int64_t ldc, int64_t m, int64_t n, int64_t k, int ith, int nth) {
    const int64_t blocks = m / 4;
    const int64_t b0 = blocks * ith / nth, b1 = blocks * (ith + 1) / nth;
    const int64_t i0 = 4 * b0, i1 = ith == nth - 1 ? m : 4 * b1;
    if (i0 >= i1) return;
    if (n >= 16 && vnni::rows(A, lda, B, ldb, C, ldc, k, n, i0, i1)) return;
    gemm(A, lda, B, ldb, C, ldc, m, n, k, ith, nth);
}
}  // namespace voxpipe_q8

extern "C" void voxpipe_q8_gemm_vnni(const void * A, int64_t lda, const void * B, int64_t ldb, float * C, int64_t ldc,
                                     int64_t m, int64_t n, int64_t k, int ith, int nth) {
    voxpipe_q8::gemm_vnni((const voxpipe_q8::blk *) A, lda, (const voxpipe_q8::blk *) B, ldb, C, ldc, m, n, k, ith, nth);
}
