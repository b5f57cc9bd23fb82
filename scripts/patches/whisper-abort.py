#!/usr/bin/env python3
"""Patches whisper.cpp 1.8.5's src/whisper.cpp so whisper_full's abort callback reaches every
graph it computes. Upstream hands it to the CPU backend only for the non-scheduled helper and
checks it between graphs otherwise, so a cancelled decode ran on to the end of an encoder pass
(seconds, two passes with language detection). Results are unchanged: the patch only lets a
computation stop early. The word times' pass (DTW) took a failed decode for a broken runtime and
aborted the process; stopped by the callback, it now leaves the window without word times (the
decode is being abandoned) and whisper_full stops at its next check: SIGTERM during that pass
crashed `voxpipe run` about once in 30 tries on a busy machine. Applied by scripts/setup-whisper.sh;
fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

patch = SourcePatch("whisper-abort", sys.argv[1])

patch.replace_once(
    "static bool ggml_graph_compute_helper(\n      ggml_backend_sched_t   sched,",
    "// voxpipe: the abort callback of the whisper_full call running on this thread.\n"
    "static thread_local ggml_abort_callback voxpipe_abort_callback = nullptr;\n"
    "static thread_local void * voxpipe_abort_callback_data = nullptr;\n\n"
    "static bool ggml_graph_compute_helper(\n      ggml_backend_sched_t   sched,",
)
patch.replace_once(
    "        if (fn_set_n_threads) {\n            fn_set_n_threads(backend, n_threads);\n        }\n    }\n\n"
    "    const bool t = (ggml_backend_sched_graph_compute(sched, graph) == GGML_STATUS_SUCCESS);",
    "        if (fn_set_n_threads) {\n            fn_set_n_threads(backend, n_threads);\n        }\n"
    "        auto * fn_set_abort = (ggml_backend_set_abort_callback_t) ggml_backend_reg_get_proc_address(reg, "
    "\"ggml_backend_set_abort_callback\");\n"
    "        if (fn_set_abort) {\n"
    "            fn_set_abort(backend, voxpipe_abort_callback, voxpipe_abort_callback_data);\n"
    "        }\n    }\n\n"
    "    const bool t = (ggml_backend_sched_graph_compute(sched, graph) == GGML_STATUS_SUCCESS);",
)
patch.replace_once(
    "                   const float * samples,\n                           int   n_samples) {\n"
    "    // clear old results\n",
    "                   const float * samples,\n                           int   n_samples) {\n"
    "    struct voxpipe_abort_scope {\n"
    "        voxpipe_abort_scope(ggml_abort_callback cb, void * data) { voxpipe_abort_callback = cb; "
    "voxpipe_abort_callback_data = data; }\n"
    "        ~voxpipe_abort_scope() { voxpipe_abort_callback = nullptr; voxpipe_abort_callback_data = nullptr; }\n"
    "    } voxpipe_abort_scope_(params.abort_callback, params.abort_callback_user_data);\n"
    "    // clear old results\n",
)
patch.replace_once(
    "    if (!whisper_decode_internal(*ctx, *state, state->batch, n_threads, true, nullptr, nullptr)) {\n"
    "        WHISPER_LOG_INFO(\"DECODER FAILED\\n\");\n",
    "    if (!whisper_decode_internal(*ctx, *state, state->batch, n_threads, true, nullptr, nullptr)) {\n"
    "        // voxpipe: stopped by whisper_full's abort callback (it reaches this graph too): no word times\n"
    "        if (voxpipe_abort_callback != nullptr && voxpipe_abort_callback(voxpipe_abort_callback_data)) {\n"
    "            return;\n"
    "        }\n"
    "        WHISPER_LOG_INFO(\"DECODER FAILED\\n\");\n",
)
patch.save()
