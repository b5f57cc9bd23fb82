#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5) ggml/src/ggml-cpu/llamafile/sgemm.cpp so a q8_0 matrix
product with a few columns, odd in number (the 5 tokens of a beam-5 decoder step, or 3), reads the
weights once instead of twice. On 16 vector registers (AVX2) tinyBLAS tiles such a product as 4x2
tiles for the first columns and then, in a second pass over all the weights, 4x1 tiles for the
last one; a decoder step is bound by reading the weights, so that pass cost nearly as much as the
first (22% of a turn's decoding). Here each block of 4 weight rows is read once and multiplied by
all the columns while it is in the cache: the same 4x2 and 4x1 tiles, in a new order. Results are
bit-identical: every output is still summed by one tile, block by block, in the same order, and
the tiles only change which thread computes which output. Applied by scripts/setup-whisper.sh;
fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

patch = SourcePatch("ggml-tinyblas-rows", sys.argv[1])

# The tile's body becomes a function of its own (tile4xN), so that gemm4xN and the new row-wise
# pass share it.
patch.replace_once(
    "        for (int64_t job = start; job < end; ++job) {\n"
    "            int64_t ii = m0 + job / xtiles * 4;\n"
    "            int64_t jj = n0 + job % xtiles * RN;\n"
    "            __m256 Cv[RN][4] = {};\n",
    "        for (int64_t job = start; job < end; ++job)\n"
    "            tile4xN<RN>(m0 + job / xtiles * 4, n0 + job % xtiles * RN);\n"
    "    }\n"
    "\n"
    "    // voxpipe: columns n0..<n, few and odd in number, for rows m0..<m (a multiple of 4): each\n"
    "    // thread takes whole blocks of 4 rows and multiplies each by every column while it is cached\n"
    "    // (scripts/patches/ggml-tinyblas-rows.py).\n"
    "    NOINLINE void gemm4xRow(int64_t m0, int64_t m, int64_t n0, int64_t n) {\n"
    "        int64_t ytiles = (m - m0) / 4;\n"
    "        int64_t duty = (ytiles + nth - 1) / nth;\n"
    "        int64_t start = duty * ith;\n"
    "        int64_t end = start + duty;\n"
    "        if (end > ytiles)\n"
    "            end = ytiles;\n"
    "        for (int64_t job = start; job < end; ++job) {\n"
    "            int64_t ii = m0 + job * 4;\n"
    "            int64_t jj = n0;\n"
    "            for (; jj + 2 <= n; jj += 2)\n"
    "                tile4xN<2>(ii, jj);\n"
    "            if (jj < n)\n"
    "                tile4xN<1>(ii, jj);\n"
    "        }\n"
    "    }\n"
    "\n"
    "    template <int RN>\n"
    "    inline void tile4xN(int64_t ii, int64_t jj) {\n"
    "        {\n"
    "            __m256 Cv[RN][4] = {};\n",
)

# mnpack sends such products to the row-wise pass; the rows left over (fewer than 4) go on as before.
head = "    void mnpack(int64_t m0, int64_t m, int64_t n0, int64_t n) {\n        int64_t mc, nc, mp, np;\n"
tail = "        switch ((MIN(m - m0, 4) << 4) | MIN(n - n0, 4)) {\n#if VECTOR_REGISTERS == 32\n"
patch.replace_once(
    head + tail,
    head
    + "#if VECTOR_REGISTERS == 16 && defined(__AVX2__) && defined(__F16C__)\n"
    "        // voxpipe: a few columns, odd in number: the weights are read once (gemm4xRow).\n"
    "        if (m - m0 >= 4 && n - n0 >= 3 && n - n0 <= 7 && (n - n0) % 2 == 1) {\n"
    "            mp = m0 + (m - m0) / 4 * 4;\n"
    "            gemm4xRow(m0, mp, n0, n);\n"
    "            mnpack(mp, m, n0, n);\n"
    "            return;\n"
    "        }\n"
    "#endif\n"
    + tail,
)
patch.save()
