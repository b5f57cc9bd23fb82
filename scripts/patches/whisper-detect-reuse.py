#!/usr/bin/env python3
"""Patches whisper.cpp 1.8.5's src/whisper.cpp so a decode with language "auto" encodes its first
window once, not twice. Upstream's whisper_full detects the language by encoding the window at
offset 0 and decoding one token, then its main loop encodes the same window again. When the
detection's encoder context is the one the decode uses (the full window, or a shrunk context used
for both), the encoder output and cross-attention keys the detection left in the state are those
the second pass would compute again, bit for bit (the same mel frames, context and thread count;
the detection's one-token decode touches only the decoder's own cache), so the main loop's first
window uses them. On Whisper base (one thread, 5 LibriVox lines) a line with its language
detected paid two 30-s encoder passes. Applied by scripts/setup-whisper.sh; fails loudly if the
source moved."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

patch = SourcePatch("whisper-detect-reuse", sys.argv[1])

patch.replace_once(
    "    // auto-detect language if not specified\n"
    "    if (params.language == nullptr",
    "    // voxpipe: the encoder context the language was detected with (its encoding of the window at\n"
    "    // offset 0 stays in the state), or -1 (scripts/patches/whisper-detect-reuse.py)\n"
    "    int voxpipe_detected_ctx = -1;\n"
    "\n"
    "    // auto-detect language if not specified\n"
    "    if (params.language == nullptr",
)
patch.replace_once(
    "        state->lang_id = lang_id;\n"
    "        params.language = whisper_lang_str(lang_id);\n",
    "        state->lang_id = lang_id;\n"
    "        params.language = whisper_lang_str(lang_id);\n"
    "        voxpipe_detected_ctx = state->exp_n_audio_ctx;\n",
)
patch.replace_once(
    "        // encode audio features starting at offset seek\n"
    "        if (!whisper_encode_internal(*ctx, *state, seek, params.n_threads, params.abort_callback, "
    "params.abort_callback_user_data)) {\n",
    "        // encode audio features starting at offset seek (voxpipe: unless the language detection\n"
    "        // just encoded this window in this context)\n"
    "        const bool voxpipe_encoded = seek == 0 && voxpipe_detected_ctx >= 0 && voxpipe_detected_ctx == state->exp_n_audio_ctx;\n"
    "        voxpipe_detected_ctx = -1;\n"
    "        if (!voxpipe_encoded && !whisper_encode_internal(*ctx, *state, seek, params.n_threads, params.abort_callback, "
    "params.abort_callback_user_data)) {\n",
)
patch.save()
