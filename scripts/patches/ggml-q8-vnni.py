#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5), given its ggml/src directory, so that q8_0 matrix
products use VNNI's one-instruction integer dot product (vpdpbusd) on CPUs that have it, chosen
at run time, while the rest of the runtime stays built for the x86-64-v3 baseline.

Why the results stay the same, bit for bit: tinyBLAS multiplies two q8_0 blocks of 32 values as
eight integer sums of four byte products (|a| times b with a's sign; at most 2 x 128 x 127 per
pair, so the baseline's vpmaddubsw never saturates), converts those eight sums to float and adds
them, scaled, to eight float accumulators, block after block, then sums the eight. vpdpbusd
computes the same eight integer sums in one instruction. Integer sums are exact, and every float
operation (the scales' product, the multiply-add, the final sum) is the same instruction on the
same values in the same order. The tiles' shapes may differ with AVX-512's 32 registers, but
each output is still summed by one tile, block by block, in the same order.

How: sgemm.cpp is compiled twice more, as sgemm-avxvnni.cpp (-mavxvnni: the VEX-encoded AVX-VNNI
of Alder Lake, Sapphire Rapids, Zen 5) and sgemm-avx512vnni.cpp (-mavx512f -mavx512vl
-mavx512vnni: Cascade Lake, Ice Lake, Zen 4), each with its entry point renamed; the baseline's
llamafile_sgemm hands a q8_0 x q8_0 product to the best one the CPU has. Only q8_0 products are
handed over: those copies' other kernels (F32, F16) would sum in another order.
VOXPIPE_WHISPER_KERNELS=baseline keeps the baseline's kernels (to show the results match);
=avxvnni or =avx512vnni picks one where the CPU has it. Applied by scripts/setup-whisper.sh; fails
loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

ggml_src = sys.argv[1]
llamafile = os.path.join(ggml_src, "ggml-cpu", "llamafile")

VARIANTS = {"avxvnni": (1, "-mavxvnni"), "avx512vnni": (2, "-mavx512f;-mavx512vl;-mavx512vnni")}
for name, (number, _) in VARIANTS.items():
    with open(os.path.join(llamafile, f"sgemm-{name}.cpp"), "w", encoding="utf-8") as f:
        f.write(
            f"// voxpipe: tinyBLAS compiled for {name}; only its q8_0 products are used "
            "(scripts/patches/ggml-q8-vnni.py)\n"
            f"#define VOXPIPE_SGEMM_VARIANT {number}\n"
            f"#define llamafile_sgemm llamafile_sgemm_{name}\n"
            '#include "sgemm.cpp"\n'
        )

cmake = SourcePatch("ggml-q8-vnni", os.path.join(ggml_src, "ggml-cpu", "CMakeLists.txt"))
extra = (
    '        if (CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64" AND NOT MSVC)\n'
    "            # voxpipe: q8_0 products with VNNI, chosen at run time (scripts/patches/ggml-q8-vnni.py)\n"
)
for name, (_, flags) in VARIANTS.items():
    extra += (
        f"            list(APPEND GGML_CPU_SOURCES ggml-cpu/llamafile/sgemm-{name}.cpp)\n"
        f"            set_source_files_properties(ggml-cpu/llamafile/sgemm-{name}.cpp PROPERTIES COMPILE_OPTIONS \"{flags}\")\n"
    )
extra += "        endif()\n"
cmake.replace_once(
    "        list(APPEND GGML_CPU_SOURCES\n"
    "                    ggml-cpu/llamafile/sgemm.cpp\n"
    "                    ggml-cpu/llamafile/sgemm.h)\n",
    "        list(APPEND GGML_CPU_SOURCES\n"
    "                    ggml-cpu/llamafile/sgemm.cpp\n"
    "                    ggml-cpu/llamafile/sgemm.h)\n" + extra,
)
cmake.save()

sgemm = SourcePatch("ggml-q8-vnni", os.path.join(llamafile, "sgemm.cpp"))
signature = (
    "(const struct ggml_compute_params * params, int64_t m, int64_t n, int64_t k,\n"
    "                     const void *A, int64_t lda, const void *B, int64_t ldb, void *C,\n"
    "                     int64_t ldc, int Atype, int Btype, int Ctype)"
)
sgemm.replace_once(
    "bool llamafile_sgemm" + signature + " {\n",
    "#if defined(__x86_64__) && !defined(VOXPIPE_SGEMM_VARIANT)\n"
    "// voxpipe: the q8_0 kernels this CPU runs (scripts/patches/ggml-q8-vnni.py): 0 the baseline's,\n"
    "// 1 AVX-VNNI, 2 AVX-512 VNNI; VOXPIPE_WHISPER_KERNELS=baseline|avxvnni|avx512vnni chooses.\n"
    'extern "C" bool llamafile_sgemm_avxvnni' + signature + ";\n"
    'extern "C" bool llamafile_sgemm_avx512vnni' + signature + ";\n"
    "static int voxpipe_q8_kernels(void) {\n"
    "    static int chosen = -1;\n"
    "    int c = __atomic_load_n(&chosen, __ATOMIC_RELAXED);\n"
    "    if (c >= 0) {\n"
    "        return c;\n"
    "    }\n"
    "    __builtin_cpu_init();\n"
    "    const bool avxvnni = __builtin_cpu_supports(\"avxvnni\");\n"
    "    const bool avx512vnni = __builtin_cpu_supports(\"avx512vnni\") && __builtin_cpu_supports(\"avx512vl\");\n"
    "    const char * want = getenv(\"VOXPIPE_WHISPER_KERNELS\");\n"
    "    if (want != NULL && strcmp(want, \"baseline\") == 0) {\n"
    "        c = 0;\n"
    "    } else if (want != NULL && strcmp(want, \"avxvnni\") == 0) {\n"
    "        c = avxvnni ? 1 : 0;\n"
    "    } else {\n"
    "        c = avx512vnni ? 2 : avxvnni ? 1 : 0;\n"
    "    }\n"
    "    __atomic_store_n(&chosen, c, __ATOMIC_RELAXED);\n"
    "    return c;\n"
    "}\n"
    "#endif\n"
    "\n"
    "bool llamafile_sgemm" + signature + " {\n",
)
sgemm.replace_once(
    "    case GGML_TYPE_Q8_0: {\n"
    "        if (Btype != GGML_TYPE_Q8_0)\n"
    "           return false;\n",
    "    case GGML_TYPE_Q8_0: {\n"
    "        if (Btype != GGML_TYPE_Q8_0)\n"
    "           return false;\n"
    "#if defined(__x86_64__) && !defined(VOXPIPE_SGEMM_VARIANT)\n"
    "        switch (voxpipe_q8_kernels()) {\n"
    "        case 1: return llamafile_sgemm_avxvnni(params, m, n, k, A, lda, B, ldb, C, ldc, Atype, Btype, Ctype);\n"
    "        case 2: return llamafile_sgemm_avx512vnni(params, m, n, k, A, lda, B, ldb, C, ldc, Atype, Btype, Ctype);\n"
    "        default: break;\n"
    "        }\n"
    "#endif\n",
)
# The 4-row tile (tile4xN, from ggml-tinyblas-rows.py: every 4xN product and a decoder step's rows)
# in the VNNI copies: A's bytes offset to unsigned once per block (a + 128, a flipped sign bit) in
# place of two sign instructions per product, and each lane's 128 x (sum of four b) taken off by
# starting the dot product from its negation: sum((a + 128) b) - 128 sum(b) = sum(a b), the same
# integer the baseline's vpsignb/vpmaddubsw/vpmaddwd give (vpdpbusd does not saturate).
body = (
    "                __m256i avec0 = load(A + lda * (ii + 0) + l);\n"
    "                __m256i avec1 = load(A + lda * (ii + 1) + l);\n"
    "                __m256i avec2 = load(A + lda * (ii + 2) + l);\n"
    "                __m256i avec3 = load(A + lda * (ii + 3) + l);\n"
    "                for (int64_t j = 0; j < RN; ++j) {\n"
    "                        __m128 db = _mm_set1_ps(unhalf(B[ldb * (jj + j) + l].d));\n"
    "                        // Computation of product of delta values for four blocks and replicate it across 256 bit lane\n"
    "                        __m256 dvec =  _mm256_castps128_ps256(_mm_mul_ps(da, db));\n"
    "                        dvec = _mm256_permute2f128_ps(dvec ,dvec, 0);\n"
)
rest = (
    "                        // Computation of dot product and multiplication with appropriate delta value products\n"
    "                        Cv[j][0] = madd(_mm256_shuffle_ps(dvec, dvec, 0),\n"
    "                                    updot(_mm256_sign_epi8(avec0, avec0),\n"
    "                                          _mm256_sign_epi8(load(B + ldb * (jj + j) + l), avec0)),\n"
    "                                    Cv[j][0]);\n"
)
assert sgemm.src.count(body + rest) == 1, "tile4xN not found (apply ggml-tinyblas-rows.py first)"
vnni = (
    "#if defined(VOXPIPE_SGEMM_VARIANT)\n"
    "                // voxpipe: A as unsigned bytes (a + 128), one vpdpbusd per product (ggml-q8-vnni.py)\n"
    "                const __m256i voxpipe_bias = _mm256_set1_epi8((char) 0x80);\n"
    "                __m256i avec0 = _mm256_xor_si256(load(A + lda * (ii + 0) + l), voxpipe_bias);\n"
    "                __m256i avec1 = _mm256_xor_si256(load(A + lda * (ii + 1) + l), voxpipe_bias);\n"
    "                __m256i avec2 = _mm256_xor_si256(load(A + lda * (ii + 2) + l), voxpipe_bias);\n"
    "                __m256i avec3 = _mm256_xor_si256(load(A + lda * (ii + 3) + l), voxpipe_bias);\n"
    "                for (int64_t j = 0; j < RN; ++j) {\n"
    "                        __m128 db = _mm_set1_ps(unhalf(B[ldb * (jj + j) + l].d));\n"
    "                        __m256 dvec =  _mm256_castps128_ps256(_mm_mul_ps(da, db));\n"
    "                        dvec = _mm256_permute2f128_ps(dvec ,dvec, 0);\n"
    "                        const __m256i bvec = load(B + ldb * (jj + j) + l);\n"
    "                        const __m256i comp = _mm256_sub_epi32(_mm256_setzero_si256(),\n"
    "                                VOXPIPE_DPBUSD(_mm256_setzero_si256(), voxpipe_bias, bvec));\n"
    "                        Cv[j][0] = madd(_mm256_shuffle_ps(dvec, dvec, 0), _mm256_cvtepi32_ps(VOXPIPE_DPBUSD(comp, avec0, bvec)), Cv[j][0]);\n"
    "                        Cv[j][1] = madd(_mm256_shuffle_ps(dvec, dvec, 85), _mm256_cvtepi32_ps(VOXPIPE_DPBUSD(comp, avec1, bvec)), Cv[j][1]);\n"
    "                        Cv[j][2] = madd(_mm256_shuffle_ps(dvec, dvec, 170), _mm256_cvtepi32_ps(VOXPIPE_DPBUSD(comp, avec2, bvec)), Cv[j][2]);\n"
    "                        Cv[j][3] = madd(_mm256_shuffle_ps(dvec, dvec, 255), _mm256_cvtepi32_ps(VOXPIPE_DPBUSD(comp, avec3, bvec)), Cv[j][3]);\n"
    "                }\n"
    "#else\n"
)
end_old = (
    "                                    Cv[j][3]);\n"
    "                }\n"
    "            }\n"
    "\n"
    "            for (int64_t j = 0; j < RN; ++j)\n"
    "                for (int64_t i = 0; i < 4; ++i)\n"
    "                    C[ldc * (jj + j) + (ii + i)] = hsum(Cv[j][i]);\n"
    "        }\n"
    "    }\n"
)
sgemm.replace_once(body + rest, vnni + body + rest)
assert sgemm.src.count(end_old) >= 1
# close the #if after the first tile body's j-loop (the one inside tile4xN, which now follows the #else)
i = sgemm.src.index("#else\n" + body + rest)
j = sgemm.src.index(end_old, i)
cut = j + len("                                    Cv[j][3]);\n                }\n")
sgemm.src = sgemm.src[:cut] + "#endif\n" + sgemm.src[cut:]
sgemm.replace_once(
    "#include \"sgemm.h\"\n",
    "#include \"sgemm.h\"\n"
    "#if VOXPIPE_SGEMM_VARIANT == 1\n"
    "#define VOXPIPE_DPBUSD _mm256_dpbusd_avx_epi32\n"
    "#elif VOXPIPE_SGEMM_VARIANT == 2\n"
    "#define VOXPIPE_DPBUSD _mm256_dpbusd_epi32\n"
    "#endif\n",
)
sgemm.save()
