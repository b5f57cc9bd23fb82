#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5) ggml/src/ggml-cpu/llamafile/sgemm.cpp so tinyBLAS's
threads claim its jobs a batch at a time. A job is RM x BM rows of one block of columns; for the
decoder's cross-attention scores (1,500 keys a head, not a multiple of 8: 4-row jobs) that is 375
jobs of about 1,300 multiply-adds each, per head and layer, and every job was claimed by an atomic
add on a counter both cores write: on the 10-minute recording of bench/pauses.sh those adds took
5.8 CPU-seconds of the beam steps' 66 (the cache line bouncing between the cores). Here a thread
claims about an eighth of its share at once (at least one job): 16 claims instead of 375.

Results are bit-identical: every output is still computed by the same tile over the same rows and
columns in the same order; batches only change which thread computes which tile, and when.
Applied by scripts/setup-whisper.sh; fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

patch = SourcePatch("ggml-tinyblas-batches", sys.argv[1])

LOOP_HEAD = (
    "        int64_t job = params->ith;\n"
    "        while (job < nb_job) {\n"
)
LOOP_TAIL = (
    "            job = ggml_threadpool_chunk_add(params->threadpool, 1);\n"
    "        }\n"
)
# Only the x86/ARM tinyBLAS (class tinyBLAS); the RISC-V class after it has the same loop.
head, sep, tail = patch.src.partition("class tinyBLAS_RVV {")
if not sep or head.count(LOOP_HEAD) != 1 or head.count(LOOP_TAIL) != 1:
    sys.exit(f"ggml-tinyblas-batches patch: expected one job loop in class tinyBLAS of {patch.path}")
head = head.replace(
    LOOP_HEAD,
    "        // voxpipe: jobs claimed a batch at a time (scripts/patches/ggml-tinyblas-batches.py)\n"
    "        const int64_t voxpipe_batch = std::max<int64_t>(1, nb_job / (8 * params->nth));\n"
    "        for (int64_t voxpipe_b = params->ith; voxpipe_b * voxpipe_batch < nb_job;\n"
    "             voxpipe_b = ggml_threadpool_chunk_add(params->threadpool, 1)) {\n"
    "        const int64_t voxpipe_end = std::min(nb_job, (voxpipe_b + 1) * voxpipe_batch);\n"
    "        for (int64_t job = voxpipe_b * voxpipe_batch; job < voxpipe_end; ++job) {\n",
)
head = head.replace(
    LOOP_TAIL,
    "        }\n"
    "        }\n",
)
patch.src = head + sep + tail
patch.save()
