#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5), given its ggml/src directory, so that q8_0 x q8_0 matrix
products are summed block by block (voxpipe-q8.inc), and on CPUs with AMX-INT8 computed by the
AMX tile unit (voxpipe-q8-amx.cpp), on CPUs with AVX-512 VNNI by VPDPBUSD (voxpipe-q8-vnni.cpp), with
the same bits, chosen at run time.

Why a new order: tinyBLAS sums each product as eight partial sums a block, each converted to
float, scaled and accumulated on its own: eight multiply-adds per 32 values and output, which no
integer unit can take over (session 47: VNNI and AMX kept to that order gained 5-15%). Here each
block's 32 byte products are summed as one exact integer, and the float steps are one product of
the scales and one fused multiply-add per block, in block order. Integer sums are the same however
they are computed, so the AVX2 kernel and the AMX kernel (TDPBSSD: a 16 x 16 tile of one block's
integer dot products per instruction) give the same bits, and one thread or two give the same bits
(each output is summed whole by one thread). The new order is not tinyBLAS's: transcripts may differ
in the last bits of a probability from the runtime before this patch (the suite's goldens and the
WER figures were checked once, issue 38).

On CPUs with AVX-512 VNNI and no AMX (Intel Xeon since Cascade Lake, AMD since Zen 4) a third
kernel (voxpipe-q8-vnni.cpp) takes products of 2 columns or more (encoder passes, 16 columns a
register; decoder steps, 16 weight rows at a time) with VPDPBUSD, the same block sums again.

VOXPIPE_WHISPER_KERNELS=baseline keeps the AVX2 kernel where the CPU has AMX or VNNI (to show the
results match), VOXPIPE_WHISPER_KERNELS=vnni the VNNI kernel where the CPU has AMX too; anything else
(or nothing) uses AMX where the CPU has it and Linux grants it (arch_prctl ARCH_REQ_XCOMP_PERM), else
VNNI where the CPU has it. Products of one column (n < 2) stay ggml's, as before. Applied by
scripts/setup-whisper.sh; fails loudly if the source moved."""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch, add_x86_cpu_source  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
ggml_src = sys.argv[1]
llamafile = os.path.join(ggml_src, "ggml-cpu", "llamafile")
for name in ("voxpipe-q8.inc", "voxpipe-q8-amx.cpp", "voxpipe-q8-vnni.cpp"):
    shutil.copyfile(os.path.join(here, name), os.path.join(llamafile, name))

add_x86_cpu_source(
    "ggml-q8-blocks", ggml_src, "ggml-cpu/llamafile/voxpipe-q8-amx.cpp",
    "-mavx512f;-mavx512vl;-mavx512bw;-mavx512dq;-mamx-tile;-mamx-int8", "q8_0 products on AMX, chosen at run time",
)
add_x86_cpu_source(
    "ggml-q8-blocks", ggml_src, "ggml-cpu/llamafile/voxpipe-q8-vnni.cpp",
    "-mavx512f;-mavx512vl;-mavx512bw;-mavx512dq;-mavx512vnni", "q8_0 products with AVX-512 VNNI, chosen at run time",
)

sgemm = SourcePatch("ggml-q8-blocks", os.path.join(llamafile, "sgemm.cpp"))
signature = (
    "(const struct ggml_compute_params * params, int64_t m, int64_t n, int64_t k,\n"
    "                     const void *A, int64_t lda, const void *B, int64_t ldb, void *C,\n"
    "                     int64_t ldc, int Atype, int Btype, int Ctype)"
)
sgemm.replace_once(
    "bool llamafile_sgemm" + signature + " {\n",
    "#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)\n"
    "// voxpipe: q8_0 products as block sums, on AMX or AVX-512 VNNI where the CPU has it (scripts/patches/ggml-q8-blocks.py)\n"
    '#include "voxpipe-q8.inc"\n'
    "#include <cpuid.h>\n"
    "#include <sys/syscall.h>\n"
    "#include <unistd.h>\n"
    'extern "C" void voxpipe_q8_gemm_amx(const void * A, int64_t lda, const void * B, int64_t ldb, float * C, int64_t ldc,\n'
    "                                    int64_t m, int64_t n, int64_t k, int ith, int nth);\n"
    'extern "C" void voxpipe_q8_gemm_vnni(const void * A, int64_t lda, const void * B, int64_t ldb, float * C, int64_t ldc,\n'
    "                                     int64_t m, int64_t n, int64_t k, int ith, int nth);\n"
    "// 0 the baseline's AVX2 kernel, 1 AMX, 2 AVX-512 VNNI; VOXPIPE_WHISPER_KERNELS=baseline keeps the baseline's,\n"
    "// VOXPIPE_WHISPER_KERNELS=vnni VNNI where the CPU has AMX too\n"
    "static int voxpipe_q8_kernels(void) {\n"
    "    static int chosen = -1;\n"
    "    int c = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);\n"
    "    if (c >= 0) {\n"
    "        return c;\n"
    "    }\n"
    "    unsigned a = 0, b = 0, cx = 0, d = 0;\n"
    "    __builtin_cpu_init();\n"
    "    // AMX-TILE and AMX-INT8 (CPUID 7.0 EDX bits 24, 25), and the AVX-512 the kernel's float steps use\n"
    "    const bool amx = __get_cpuid_count(7, 0, &a, &b, &cx, &d) && (d & (1u << 24)) && (d & (1u << 25)) &&\n"
    '        __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&\n'
    '        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");\n'
    "    // AVX-512 VNNI and the AVX-512 the kernel's float steps use\n"
    '    const bool vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&\n'
    '        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&\n'
    '        __builtin_cpu_supports("avx512vnni");\n'
    '    const char * want = getenv("VOXPIPE_WHISPER_KERNELS");\n'
    '    const bool baseline = want != NULL && strcmp(want, "baseline") == 0;\n'
    '    c = 0;\n'
    '    if (amx && !baseline && !(want != NULL && strcmp(want, "vnni") == 0)) {\n'
    "        // ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA: Linux lets a process use the tiles once asked\n"
    "        c = syscall(SYS_arch_prctl, 0x1023, 18) == 0 ? 1 : 0;\n"
    "    }\n"
    "    if (c == 0 && vnni && !baseline) {\n"
    "        c = 2;\n"
    "    }\n"
    "    __atomic_store_n(&chosen, c, __ATOMIC_RELEASE);\n"
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
    "#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)\n"
    "        static_assert(sizeof(block_q8_0) == sizeof(voxpipe_q8::blk), \"q8_0 block layout\");\n"
    "        const int kernels = voxpipe_q8_kernels();\n"
    "        if (kernels == 1) {\n"
    "            voxpipe_q8_gemm_amx(A, lda, B, ldb, (float *) C, ldc, m, n, k, params->ith, params->nth);\n"
    "        } else if (kernels == 2) {\n"
    "            voxpipe_q8_gemm_vnni(A, lda, B, ldb, (float *) C, ldc, m, n, k, params->ith, params->nth);\n"
    "        } else {\n"
    "            voxpipe_q8::gemm((const voxpipe_q8::blk *) A, lda, (const voxpipe_q8::blk *) B, ldb, (float *) C, ldc,\n"
    "                             m, n, k, params->ith, params->nth);\n"
    "        }\n"
    "        return true;\n"
    "#endif\n",
)
sgemm.save()
