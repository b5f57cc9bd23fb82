#!/usr/bin/env python3
"""Patches whisper.cpp 1.8.5's src/whisper.cpp so a decoder pass over many tokens projects onto
the vocabulary only the tokens whose logits are read. Upstream's decoder graph multiplies every
token's output by the 51,865 x 512 token embedding, then copies out only the rows the batch flags:
for a window's prompt (the previous window's text, up to 224 tokens, then the start-of-transcript
tokens; once more for each temperature fallback) and for the pass that gives DTW its
cross-attention, only the last. That projection was most of a prompt's cost.

Here, when every flagged token is among the last two, the graph projects those two (a product of
two columns stays in tinyBLAS's tiled kernel, where one column would go to ggml's row-by-row dot
products, which sum in another order), and the copy reads them from the narrowed result. Every
logit that is read is the same, bit for bit: each output of tinyBLAS's q8_0 product is summed by one
tile, block by block, in the same order whatever the number of columns, and each column's
activations are quantized by themselves. Rows the batch does not flag are left as they were, as
upstream leaves them. The worst-case graph that sizes the buffers at load time is not narrowed.
Applied by scripts/setup-whisper.sh; fails loudly if the source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

patch = SourcePatch("whisper-last-logits", sys.argv[1])

patch.replace_once(
    "    //cur = ggml_view_2d(ctx0, cur, cur->ne[0], 1, cur->nb[1], (cur->ne[1] - 1)*cur->nb[1]);\n"
    "\n"
    "    struct ggml_tensor * logits = ggml_mul_mat(ctx0, model.d_te, cur);\n",
    "    //cur = ggml_view_2d(ctx0, cur, cur->ne[0], 1, cur->nb[1], (cur->ne[1] - 1)*cur->nb[1]);\n"
    "\n"
    "    // voxpipe: only the last two tokens when no other token's logits are read\n"
    "    // (scripts/patches/whisper-last-logits.py)\n"
    "    {\n"
    "        bool voxpipe_tail = !worst_case && batch.n_tokens > 2;\n"
    "        for (int i = 0; voxpipe_tail && i < batch.n_tokens - 2; ++i) {\n"
    "            voxpipe_tail = batch.logits[i] == 0;\n"
    "        }\n"
    "        if (voxpipe_tail) {\n"
    "            cur = ggml_view_2d(ctx0, cur, cur->ne[0], 2, cur->nb[1], (cur->ne[1] - 2)*cur->nb[1]);\n"
    "        }\n"
    "    }\n"
    "\n"
    "    struct ggml_tensor * logits = ggml_mul_mat(ctx0, model.d_te, cur);\n",
)
patch.replace_once(
    "        ggml_backend_tensor_get(logits, logits_out.data() + (n_vocab*i), sizeof(float)*(n_vocab*i), "
    "sizeof(float)*n_vocab);\n",
    "        // voxpipe: the graph may have projected only the last tokens (whisper-last-logits.py)\n"
    "        const int voxpipe_col = i - (n_tokens - (int) logits->ne[1]);\n"
    "        ggml_backend_tensor_get(logits, logits_out.data() + (n_vocab*i), sizeof(float)*(n_vocab*voxpipe_col), "
    "sizeof(float)*n_vocab);\n",
)
patch.save()
