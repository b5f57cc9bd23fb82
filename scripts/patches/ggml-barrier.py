#!/usr/bin/env python3
"""Patches ggml 0.13.1 (whisper.cpp 1.8.5) ggml/src/ggml-cpu/ggml-cpu.c so a thread waiting at
ggml_barrier spins only briefly (about 20 us) and then sleeps on a futex until the last thread
arrives and wakes it. Upstream spins without end: when the machine's cores are busy elsewhere, a
waiting worker burns the time slice the late worker needs, and a two-thread decode ran up to 10x
slower than a one-thread one. The last thread makes the wake call only when a thread sleeps (a
decoder step passes some 300 barriers, and a call that finds nobody cost each about a
microsecond on the critical path). Results are unchanged: the barrier still lets no thread pass before
all have arrived; only how a thread waits changes. Applied by scripts/setup-whisper.sh; fails
loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

patch = SourcePatch("ggml-barrier", sys.argv[1])

patch.replace_once(
    "    atomic_int GGML_CACHE_ALIGN n_barrier_passed;\n",
    "    atomic_int GGML_CACHE_ALIGN n_barrier_passed;\n"
    "    atomic_int GGML_CACHE_ALIGN voxpipe_sleepers; // voxpipe: threads asleep at the barrier\n",
)
patch.replace_once(
    "        threadpool->n_barrier_passed = 0;\n",
    "        threadpool->n_barrier_passed = 0;\n"
    "        threadpool->voxpipe_sleepers = 0;\n",
)
patch.replace_once(
    "void ggml_barrier(struct ggml_threadpool * tp) {",
    "#if defined(__linux__) && !defined(GGML_USE_OPENMP)\n"
    "#include <linux/futex.h>\n"
    "#include <sys/syscall.h>\n"
    "#include <limits.h>\n"
    "// voxpipe: spins at a barrier before a waiting thread sleeps (each a pause instruction).\n"
    "#define VOXPIPE_BARRIER_SPINS 2048\n"
    "#endif\n\n"
    "void ggml_barrier(struct ggml_threadpool * tp) {",
)
patch.replace_once(
    "        // exit barrier (full seq-cst fence)\n"
    "        atomic_fetch_add_explicit(&tp->n_barrier_passed, 1, memory_order_seq_cst);\n"
    "        return;\n",
    "        // exit barrier (full seq-cst fence)\n"
    "        atomic_fetch_add_explicit(&tp->n_barrier_passed, 1, memory_order_seq_cst);\n"
    "#if defined(__linux__) && !defined(GGML_USE_OPENMP)\n"
    "        // a sleeper counted itself before it slept, and the kernel checks n_barrier_passed\n"
    "        // before it sleeps: either this load sees it or its wait returns at once\n"
    "        if (atomic_load_explicit(&tp->voxpipe_sleepers, memory_order_seq_cst) > 0) {\n"
    "            syscall(SYS_futex, (int *) &tp->n_barrier_passed, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);\n"
    "        }\n"
    "#endif\n"
    "        return;\n",
)
patch.replace_once(
    "    // wait for other threads\n"
    "    while (atomic_load_explicit(&tp->n_barrier_passed, memory_order_relaxed) == n_passed) {\n"
    "        ggml_thread_cpu_relax();\n"
    "    }\n",
    "    // wait for other threads: spin a little, then sleep until the last thread's wake\n"
    "#if defined(__linux__) && !defined(GGML_USE_OPENMP)\n"
    "    int spins = 0;\n"
    "    while (atomic_load_explicit(&tp->n_barrier_passed, memory_order_relaxed) == n_passed) {\n"
    "        if (spins < VOXPIPE_BARRIER_SPINS) {\n"
    "            spins++;\n"
    "            ggml_thread_cpu_relax();\n"
    "        } else {\n"
    "            atomic_fetch_add_explicit(&tp->voxpipe_sleepers, 1, memory_order_seq_cst);\n"
    "            syscall(SYS_futex, (int *) &tp->n_barrier_passed, FUTEX_WAIT_PRIVATE, n_passed, NULL, NULL, 0);\n"
    "            atomic_fetch_sub_explicit(&tp->voxpipe_sleepers, 1, memory_order_seq_cst);\n"
    "        }\n"
    "    }\n"
    "#else\n"
    "    while (atomic_load_explicit(&tp->n_barrier_passed, memory_order_relaxed) == n_passed) {\n"
    "        ggml_thread_cpu_relax();\n"
    "    }\n"
    "#endif\n",
)
patch.save()
