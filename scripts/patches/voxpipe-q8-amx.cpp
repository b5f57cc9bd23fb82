// voxpipe: q8_0 x q8_0 matrix products on AMX-INT8 (scripts/patches/ggml-q8-blocks.py), compiled with
// -mamx-tile -mamx-int8 and AVX-512 and called only where the CPU has AMX and Linux granted it. The
// same block sums as the baseline's kernel (voxpipe-q8.inc), so the same bits: a tile is 16 weight
// rows by 16 columns, one TDPBSSD per block of 32 gives its 256 exact integer dot products (signed
// bytes; the columns packed as TDPBSSD's B tile, 4 bytes a column a row), then per row the same
// product of scales and the same fused multiply-add, block after block. Edges (rows past a multiple
// of 16) go through the baseline's code, compiled here.
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "voxpipe-q8.inc"

namespace voxpipe_q8 {
struct tilecfg { uint8_t palette; uint8_t start_row; uint8_t reserved[14]; uint16_t colsb[16]; uint8_t rows[16]; };
// `narrow`: B and C tiles of 8 columns (32 bytes a row), for products of up to 8 columns
static inline void amx_config(bool narrow) {
    tilecfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    const uint16_t w = narrow ? 32 : 64;
    for (int t = 0; t < 8; t += 2) {  // even tiles: A or C (16 rows); odd: B (8 rows of 4 bytes x 16 or 8 columns)
        c.rows[t] = 16; c.colsb[t] = w;
        c.rows[t + 1] = 8; c.colsb[t + 1] = w;
    }
    c.colsb[0] = 32; c.colsb[2] = 32;  // tiles 0 and 2: A, 16 rows of one block
    _tile_loadconfig(&c);
}
// columns [j0, j0 + 16) of B (fewer at the end: zeros) as TDPBSSD's B tiles, block by block, and their scales
static void pack(const blk * B, int64_t ldb, int64_t k, int64_t n, int64_t j0, int32_t * out, float * dbv) {
    const int64_t cols = n - j0 < 16 ? n - j0 : 16;
    for (int64_t l = 0; l < k; ++l) {
        int32_t * o = out + 128 * l;
        float * d = dbv + 16 * l;
        for (int64_t c = 0; c < 16; ++c) {
            if (c < cols) {
                const blk * b = B + ldb * (j0 + c) + l;
                int32_t q[8];
                memcpy(q, b->qs, 32);
                for (int r = 0; r < 8; ++r) o[16 * r + c] = q[r];
                d[c] = h2f(b->d);
            } else {
                for (int r = 0; r < 8; ++r) o[16 * r + c] = 0;
                d[c] = 0.0f;
            }
        }
    }
}
// 16 rows from i, the packed columns from j0 (cols of them valid); `ahead` rows after them are
// prefetched meanwhile, spread over the blocks (a decoder step streams its weights from memory:
// the vocabulary's 28 MB took a third less time so on an Intel Xeon; results are not touched).
// Narrow (up to 8 columns, the tiles configured so): a block's sums come out as 16 rows of 8, two
// rows a vector, so half the conversions and multiply-adds (a beam search's decoder step: a
// quarter less time for the vocabulary on an Intel Xeon); each output's steps are the same.
template <bool narrow>
static void tile16(const blk * A, int64_t lda, const int32_t * bp, const float * dbv, float * C, int64_t ldc, int64_t k, int64_t i, int64_t j0, int64_t cols, int64_t ahead) {
    constexpr int vecs = narrow ? 8 : 16, width = narrow ? 8 : 16;
    __m512 acc[vecs];
    for (int r = 0; r < vecs; ++r) acc[r] = _mm512_setzero_ps();
    alignas(64) int32_t cb[2][16 * width];
    alignas(64) float da[16];
    const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32((int) (lda * sizeof(blk))));
    const char * next = (const char *) (A + lda * (i + 16));
    const int64_t next_bytes = ahead * lda * (int64_t) sizeof(blk);
    const int64_t per_step = (next_bytes + 64 * ((k + 1) / 2) - 1) / (64 * ((k + 1) / 2)) * 64;
    for (int64_t l = 0; l < k; l += 2) {
        const bool two = l + 1 < k;
        for (int64_t o = l / 2 * per_step; o < (l / 2 + 1) * per_step && o < next_bytes; o += 64) {
            _mm_prefetch(next + o, _MM_HINT_T0);
        }
        _tile_zero(4);
        _tile_loadd(0, A[lda * i + l].qs, lda * sizeof(blk));
        _tile_loadd(1, bp + 128 * l, 64);
        _tile_dpbssd(4, 0, 1);
        if (two) {
            _tile_zero(6);
            _tile_loadd(2, A[lda * i + l + 1].qs, lda * sizeof(blk));
            _tile_loadd(3, bp + 128 * (l + 1), 64);
            _tile_dpbssd(6, 2, 3);
        }
        _tile_stored(4, cb[0], 4 * width);
        if (two) _tile_stored(6, cb[1], 4 * width);
        for (int q = 0; q < (two ? 2 : 1); ++q) {
            // the 16 rows' scales in one gather (4 bytes from each d, the low 2 kept), converted exactly
            const __m512i d32 = _mm512_i32gather_epi32(rows, (const void *) &A[lda * i + l + q].d, 1);
            const __m512 dav = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d32));
            if constexpr (narrow) {
                // lanes 0-7: row 2h's 8 columns, lanes 8-15: row 2h + 1's
                const __m512 db = _mm512_broadcast_f32x8(_mm256_loadu_ps(dbv + 16 * (l + q)));
                for (int h = 0; h < 8; ++h) {
                    const __m512i pair = _mm512_set_epi32(2 * h + 1, 2 * h + 1, 2 * h + 1, 2 * h + 1, 2 * h + 1, 2 * h + 1,
                                                          2 * h + 1, 2 * h + 1, 2 * h, 2 * h, 2 * h, 2 * h, 2 * h, 2 * h, 2 * h, 2 * h);
                    acc[h] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_permutexvar_ps(pair, dav), db),
                                             _mm512_cvtepi32_ps(_mm512_load_si512(cb[q] + 16 * h)), acc[h]);
                }
            } else {
                _mm512_store_ps(da, dav);
                const __m512 db = _mm512_loadu_ps(dbv + 16 * (l + q));
                for (int r = 0; r < 16; ++r)
                    acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(da[r]), db), _mm512_cvtepi32_ps(_mm512_load_si512(cb[q] + 16 * r)), acc[r]);
            }
        }
    }
    alignas(64) float t[16][width];
    for (int r = 0; r < vecs; ++r) _mm512_store_ps(t[narrow ? 2 * r : r], acc[r]);
    for (int64_t c = 0; c < cols; ++c)
        for (int r = 0; r < 16; ++r) C[ldc * (j0 + c) + i + r] = t[r][c];
}
static void gemm_amx(const blk * A, int64_t lda, const blk * B, int64_t ldb, float * C, int64_t ldc, int64_t m, int64_t n, int64_t k, int ith, int nth) {
    const int64_t m16 = m / 16 * 16, groups = (n + 15) / 16;
    // the packed columns of one group (many columns) or of every group (few), and their scales
    static thread_local buffer packed, scales;
    const bool many = groups >= 2 * nth;
    const int64_t blocks = many ? k : k * groups;
    int32_t * bp = (int32_t *) packed.get(sizeof(int32_t) * 128 * blocks);
    float * dbv = (float *) scales.get(sizeof(float) * 16 * blocks);
    if (bp == NULL || dbv == NULL) {  // out of memory: the baseline's kernel (the same bits)
        gemm(A, lda, B, ldb, C, ldc, m, n, k, ith, nth);
        return;
    }
    const bool narrow = !many && n <= 8;
    amx_config(narrow);
    if (many) {  // many columns (an encoder pass): each thread its share of the columns
        const int64_t g0 = groups * ith / nth, g1 = groups * (ith + 1) / nth;
        for (int64_t g = g0; g < g1; ++g) {
            const int64_t cols = n - 16 * g < 16 ? n - 16 * g : 16;
            pack(B, ldb, k, n, 16 * g, bp, dbv);
            for (int64_t i = 0; i < m16; i += 16) tile16<false>(A, lda, bp, dbv, C, ldc, k, i, 16 * g, cols, 0);
            for (int64_t i = m16; i < m; ++i)
                for (int64_t j = 16 * g; j < 16 * g + cols; ++j) one(A, lda, B, ldb, C, ldc, k, i, j);
        }
    } else {  // few columns (a decoder step): each thread its share of the rows
        for (int64_t g = 0; g < groups; ++g) pack(B, ldb, k, n, 16 * g, bp + 128 * k * g, dbv + 16 * k * g);
        const int64_t tiles = m16 / 16;
        const int64_t t0 = tiles * ith / nth, t1 = tiles * (ith + 1) / nth;
        for (int64_t t = t0; t < t1; ++t)
            for (int64_t g = 0; g < groups; ++g)
                (narrow ? tile16<true> : tile16<false>)(A, lda, bp + 128 * k * g, dbv + 16 * k * g, C, ldc, k, 16 * t, 16 * g, n - 16 * g < 16 ? n - 16 * g : 16,
                       g + 1 == groups && t + 1 < t1 ? 16 : 0);
        if (ith == nth - 1)
            for (int64_t i = m16; i < m; ++i)
                for (int64_t j = 0; j < n; ++j) one(A, lda, B, ldb, C, ldc, k, i, j);
    }
    _tile_release();  // the tiles' state need not be saved when the thread is switched out
}
}  // namespace voxpipe_q8

extern "C" void voxpipe_q8_gemm_amx(const void * A, int64_t lda, const void * B, int64_t ldb, float * C, int64_t ldc,
                                    int64_t m, int64_t n, int64_t k, int ith, int nth) {
    voxpipe_q8::gemm_amx((const voxpipe_q8::blk *) A, lda, (const voxpipe_q8::blk *) B, ldb, C, ldc, m, n, k, ith, nth);
}
