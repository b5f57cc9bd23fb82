#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5) ggml/src/ggml-cpu/ops.cpp so the tiled flash attention
(the encoder's attention, scripts/patches/whisper-encoder-fa.py) converts each head's keys and
values from F16 to F32 once per call, not once per tile of 64 queries. A 30-s window has 1,500
queries a head, so every key and value was converted 24 times: on 2 threads that conversion was
a tenth of a LibriVox line's whole decode (perf: the K transpose in the tile loop and
ggml_fp16_to_fp32_row). The converted tiles are laid out exactly as the tile loop packed them
(K transposed per 64-key tile, V row by row, the last tile zero-padded) and go into the same
simd_gemm calls in the same order, so results are bit-identical; the conversion itself is exact.
Each thread keeps its buffers (thread_local, 2 x 384 KB for Whisper base) for the next call.
Applied by scripts/setup-whisper.sh; fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

patch = SourcePatch("ggml-fa-pack-once", sys.argv[1])

patch.replace_once(
    "#include <algorithm>\n",
    "#include <algorithm>\n#include <vector>\n",
)

# Buffers and which head they hold, before the loop over query tiles.
patch.replace_once(
    "    static constexpr int Q_TILE_SZ  = ggml_fa_tile_config::Q;\n"
    "    static constexpr int KV_TILE_SZ = ggml_fa_tile_config::KV;\n"
    "\n"
    "    int ir = ir0;\n",
    "    static constexpr int Q_TILE_SZ  = ggml_fa_tile_config::Q;\n"
    "    static constexpr int KV_TILE_SZ = ggml_fa_tile_config::KV;\n"
    "\n"
    "    // voxpipe (scripts/patches/ggml-fa-pack-once.py): one head's K and V in F32, tile by tile as\n"
    "    // the loop below packs them, converted when the head changes.\n"
    "    static thread_local std::vector<float> vx_k, vx_v;\n"
    "    const int64_t vx_tiles = (nek1 + KV_TILE_SZ - 1) / KV_TILE_SZ;\n"
    "    int64_t vx_held[4] = {-1, -1, -1, -1};\n"
    "\n"
    "    int ir = ir0;\n",
)

patch.replace_once(
    "        const int iv3 = iq3 / rv3;\n"
    "        const int iv2 = iq2 / rv2;\n"
    "\n"
    "        {\n"
    "            float * Q_f32 = (float *)Q_q;\n",
    "        const int iv3 = iq3 / rv3;\n"
    "        const int iv2 = iq2 / rv2;\n"
    "\n"
    "        if (vx_held[0] != ik2 || vx_held[1] != ik3 || vx_held[2] != iv2 || vx_held[3] != iv3) {\n"
    "            vx_k.assign((size_t) (vx_tiles * DK * KV_TILE_SZ), 0.0f);\n"
    "            vx_v.assign((size_t) (vx_tiles * KV_TILE_SZ * DV), 0.0f);\n"
    "            for (int64_t ic = 0; ic < nek1; ic += KV_TILE_SZ) {\n"
    "                const int kv_tile = (int)std::min((int64_t)KV_TILE_SZ, nek1 - ic);\n"
    "                float * kt = vx_k.data() + (ic / KV_TILE_SZ) * DK * KV_TILE_SZ;\n"
    "                float * vt = vx_v.data() + (ic / KV_TILE_SZ) * KV_TILE_SZ * DV;\n"
    "                for (int tk = 0; tk < kv_tile; tk++) {\n"
    "                    const char * k_data = (const char *)k->data + (ic + tk)*nbk1 + ik2*nbk2 + ik3*nbk3;\n"
    "                    if (kv_type == GGML_TYPE_F16) {\n"
    "                        const ggml_fp16_t * k_f16 = (const ggml_fp16_t *)k_data;\n"
    "                        for (int64_t dk = 0; dk < DK; dk++) {\n"
    "                            kt[dk * KV_TILE_SZ + tk] = GGML_CPU_FP16_TO_FP32(k_f16[dk]);\n"
    "                        }\n"
    "                    } else {\n"
    "                        const float * k_f32_src = (const float *)k_data;\n"
    "                        for (int64_t dk = 0; dk < DK; dk++) {\n"
    "                            kt[dk * KV_TILE_SZ + tk] = k_f32_src[dk];\n"
    "                        }\n"
    "                    }\n"
    "                    const char * v_data = (const char *)v->data + (ic + tk)*nbv1 + iv2*nbv2 + iv3*nbv3;\n"
    "                    if (kv_type == GGML_TYPE_F16) {\n"
    "                        ggml_fp16_to_fp32_row((const ggml_fp16_t *)v_data, vt + tk * DV, DV);\n"
    "                    } else {\n"
    "                        memcpy(vt + tk * DV, v_data, DV * sizeof(float));\n"
    "                    }\n"
    "                }\n"
    "            }\n"
    "            vx_held[0] = ik2; vx_held[1] = ik3; vx_held[2] = iv2; vx_held[3] = iv3;\n"
    "        }\n"
    "\n"
    "        {\n"
    "            float * Q_f32 = (float *)Q_q;\n",
)

# The K tile: the converted one.
patch.replace_once(
    "            // Pack K tile transposed: K_f32[dk][kv] so KV_TILE is contiguous (SIMD dim)\n"
    "            // Zero-pad the last tile so the GEMM always operates on KV_TILE_SZ columns\n"
    "            for (int tk = 0; tk < kv_tile; tk++) {\n"
    "                const char * k_data = (const char *)k->data + (ic + tk)*nbk1 + ik2*nbk2 + ik3*nbk3;\n"
    "                if (kv_type == GGML_TYPE_F16) {\n"
    "                    const ggml_fp16_t * k_f16 = (const ggml_fp16_t *)k_data;\n"
    "                    for (int64_t dk = 0; dk < DK; dk++) {\n"
    "                        K_f32[dk * KV_TILE_SZ + tk] = GGML_CPU_FP16_TO_FP32(k_f16[dk]);\n"
    "                    }\n"
    "                } else {\n"
    "                    const float * k_f32_src = (const float *)k_data;\n"
    "                    for (int64_t dk = 0; dk < DK; dk++) {\n"
    "                        K_f32[dk * KV_TILE_SZ + tk] = k_f32_src[dk];\n"
    "                    }\n"
    "                }\n"
    "            }\n"
    "            memset(KQ, 0, Q_TILE_SZ * KV_TILE_SZ * sizeof(float));\n"
    "            simd_gemm(KQ, (const float *)Q_q, K_f32, Q_TILE_SZ, DK, KV_TILE_SZ);\n",
    "            // voxpipe: the K tile converted above, transposed and zero-padded as it was packed here.\n"
    "            (void) K_f32;\n"
    "            memset(KQ, 0, Q_TILE_SZ * KV_TILE_SZ * sizeof(float));\n"
    "            simd_gemm(KQ, (const float *)Q_q, vx_k.data() + (ic / KV_TILE_SZ) * DK * KV_TILE_SZ, Q_TILE_SZ, DK,\n"
    "                      KV_TILE_SZ);\n",
)

# The V tile: the converted one.
patch.replace_once(
    "            for (int tk = 0; tk < kv_tile; tk++) {\n"
    "                const char * v_data = (const char *)v->data + (ic + tk)*nbv1 + iv2*nbv2 + iv3*nbv3;\n"
    "                if (kv_type == GGML_TYPE_F16) {\n"
    "                    ggml_fp16_to_fp32_row((const ggml_fp16_t *)v_data, V32 + tk * DV, DV);\n"
    "                } else {\n"
    "                    memcpy(V32 + tk * DV, v_data, DV * sizeof(float));\n"
    "                }\n"
    "            }\n",
    "            (void) V32;\n",
)
patch.replace_once(
    "            simd_gemm(VKQ32, KQ, V32, Q_TILE_SZ, KV_TILE_SZ, DV);\n",
    "            simd_gemm(VKQ32, KQ, vx_v.data() + (ic / KV_TILE_SZ) * KV_TILE_SZ * DV, Q_TILE_SZ, KV_TILE_SZ, DV);\n",
)
patch.save()
