// voxpipe: q8_0 x q8_0 matrix products with AVX-512 VNNI (scripts/patches/ggml-q8-blocks.py), compiled
// with -mavx512f -mavx512vl -mavx512bw -mavx512dq -mavx512vnni and called only where the CPU has them
// and no AMX (Intel Xeons since Cascade Lake, AMD since Zen 4). The same block sums as the baseline's
// kernel (voxpipe-q8.inc), so the same bits: VPDPBUSD multiplies unsigned by signed bytes and adds
// each lane's four products to a 32-bit sum, with no saturation. A weight row's bytes are taken as
// a + 128 (0 to 255), so each block's integer dot product is sum((a + 128) b) - 128 sum(b), exact;
// the sum starts from -128 sum(b) (the column's, worked out when the columns are packed) and eight
// VPDPBUSD add the 32 products of the block, sixteen columns a register. Then the same product of
// the scales and the same fused multiply-add a block, block after block. Products of fewer than 16
// columns (a decoder step) take 16 rows at a time (see below).
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
// rows [i0, i1) of C, every column; false (nothing written) if the buffers cannot be had
static bool rows(const blk * A, int64_t lda, const blk * B, int64_t ldb, float * C, int64_t ldc, int64_t k, int64_t n, int64_t i0, int64_t i1) {
    static thread_local buffer bufs[5];
    const int64_t slab = n < SLAB ? (n + 15) / 16 * 16 : SLAB;
    const size_t want[5] = {(size_t) (slab * k * 8) * 4, (size_t) (slab * k) * 4, (size_t) (slab * k) * 4,
                            (size_t) (CHUNK * k * 8) * 4, (size_t) (CHUNK * k) * 4};
    void * got[5];
    for (int b = 0; b < 5; ++b)
        if ((got[b] = bufs[b].get(want[b])) == NULL) return false;
    int32_t * b8 = (int32_t *) got[0];
    int32_t * s0 = (int32_t *) got[1];
    float * db = (float *) got[2];
    int32_t * a8 = (int32_t *) got[3];
    float * da = (float *) got[4];
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
// Products of 2 to 15 columns (a decoder step: one column a beam), 16 rows at a time: two rows'
// blocks to a register, each column's block broadcast to both halves, eight VPDPBUSD a column, and
// the 16 rows' lanes summed by a tree of shuffles into one register (row order 0 2 4 6 1 3 5 7, then
// 8 to 15 alike; the rows' scales are gathered in that order and the outputs put back in order).
static const int ORDER[16] = {0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15};
// lanes of the 8 registers d[p] (rows 2p and 2p + 1, eight lanes each) summed: one sum a row, in ORDER
static inline __m512i sum16(const __m512i * d) {
    __m512i e[4], f[2];
    for (int p = 0; p < 4; ++p)
        e[p] = _mm512_add_epi32(_mm512_unpacklo_epi32(d[2 * p], d[2 * p + 1]), _mm512_unpackhi_epi32(d[2 * p], d[2 * p + 1]));
    for (int h = 0; h < 2; ++h)
        f[h] = _mm512_add_epi32(_mm512_unpacklo_epi64(e[2 * h], e[2 * h + 1]), _mm512_unpackhi_epi64(e[2 * h], e[2 * h + 1]));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(f[0], f[1], _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_i32x4(f[0], f[1], _MM_SHUFFLE(3, 1, 3, 1)));
}
template <int NJ>
static void tile16(const blk * A, int64_t lda, const blk * B, int64_t ldb, float * C, int64_t ldc, int64_t k, const float * db, const int32_t * s0,
                   int64_t n, int64_t i, int64_t j0, const char * next, int64_t next_bytes) {
    const __m512i flip = _mm512_set1_epi8((char) 0x80);
    __m512i at = _mm512_loadu_si512(ORDER);
    at = _mm512_mullo_epi32(at, _mm512_set1_epi32((int) (lda * sizeof(blk))));
    __m512 acc[NJ];
    for (int j = 0; j < NJ; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t l = 0; l < k; ++l) {
        if (j0 == 0) prefetch_part(next, next_bytes, l, k);
        const blk * a = A + lda * i + l;
        __m512i rows[8];
        for (int p = 0; p < 8; ++p)
            rows[p] = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(ld(a + lda * 2 * p)), ld(a + lda * (2 * p + 1)), 1), flip);
        // the 16 rows' scales in ORDER (4 bytes from each d, the low 2 kept), converted exactly
        const __m512 da = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(at, (const void *) &a->d, 1)));
        for (int j = 0; j < NJ; ++j) {
            const __m512i bv = _mm512_broadcast_i64x4(ld(B + ldb * (j0 + j) + l));
            __m512i d[8];
            for (int p = 0; p < 8; ++p) d[p] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), rows[p], bv);
            const __m512i sum = _mm512_add_epi32(sum16(d), _mm512_set1_epi32(s0[l * n + j0 + j]));
            acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(da, _mm512_set1_ps(db[l * n + j0 + j])), _mm512_cvtepi32_ps(sum), acc[j]);
        }
    }
    const __m512i back = _mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);  // ORDER's inverse
    for (int j = 0; j < NJ; ++j) _mm512_storeu_ps(C + ldc * (j0 + j) + i, _mm512_permutexvar_ps(back, acc[j]));
}
// rows [i0, i1) of C, every column (2 <= n < 16): 16-row tiles, the rest by the baseline's 8-row tiles
static void narrow_rows(const blk * A, int64_t lda, const blk * B, int64_t ldb, float * C, int64_t ldc, int64_t k, int64_t n, int64_t i0,
                        int64_t i1, float * db, int32_t * s0) {
    for (int64_t l = 0; l < k; ++l)
        for (int64_t j = 0; j < n; ++j) {
            const blk * b = B + ldb * j + l;
            int32_t sum = 0;
            for (int q = 0; q < 32; ++q) sum += b->qs[q];
            db[l * n + j] = h2f(b->d);
            s0[l * n + j] = -128 * sum;
        }
    int64_t i = i0;
    for (; i + 16 <= i1; i += 16) {
        const char * next = (const char *) (A + lda * (i + 16));
        const int64_t next_bytes = i + 32 <= i1 ? 16 * lda * (int64_t) sizeof(blk) : 0;
        for (int64_t j0 = 0; j0 < n; j0 += 6) {
            switch (n - j0 < 6 ? n - j0 : 6) {
                case 1: tile16<1>(A, lda, B, ldb, C, ldc, k, db, s0, n, i, j0, next, next_bytes); break;
                case 2: tile16<2>(A, lda, B, ldb, C, ldc, k, db, s0, n, i, j0, next, next_bytes); break;
                case 3: tile16<3>(A, lda, B, ldb, C, ldc, k, db, s0, n, i, j0, next, next_bytes); break;
                case 4: tile16<4>(A, lda, B, ldb, C, ldc, k, db, s0, n, i, j0, next, next_bytes); break;
                case 5: tile16<5>(A, lda, B, ldb, C, ldc, k, db, s0, n, i, j0, next, next_bytes); break;
                default: tile16<6>(A, lda, B, ldb, C, ldc, k, db, s0, n, i, j0, next, next_bytes); break;
            }
        }
    }
    if (i < i1) narrow::rows(A, lda, B, ldb, C, ldc, k, n, i, i1, db);
}
}  // namespace vnni
// thread ith of nth: the baseline's share of the rows; 16 columns or more through VNNI
static void gemm_vnni(const blk * A, int64_t lda, const blk * B, int64_t ldb, float * C, int64_t ldc, int64_t m, int64_t n, int64_t k, int ith, int nth) {
    const int64_t blocks = m / 4;
    const int64_t b0 = blocks * ith / nth, b1 = blocks * (ith + 1) / nth;
    const int64_t i0 = 4 * b0, i1 = ith == nth - 1 ? m : 4 * b1;
    if (i0 >= i1) return;
    if (n >= 16 && vnni::rows(A, lda, B, ldb, C, ldc, k, n, i0, i1)) return;
    if (n >= 2 && n < 16 && k * n <= 4096) {
        float db[4096];
        int32_t s0[4096];
        vnni::narrow_rows(A, lda, B, ldb, C, ldc, k, n, i0, i1, db, s0);
        return;
    }
    gemm(A, lda, B, ldb, C, ldc, m, n, k, ith, nth);
}
}  // namespace voxpipe_q8

extern "C" void voxpipe_q8_gemm_vnni(const void * A, int64_t lda, const void * B, int64_t ldb, float * C, int64_t ldc,
                                     int64_t m, int64_t n, int64_t k, int ith, int nth) {
    voxpipe_q8::gemm_vnni((const voxpipe_q8::blk *) A, lda, (const voxpipe_q8::blk *) B, ldb, C, ldc, m, n, k, ith, nth);
}
