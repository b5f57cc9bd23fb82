#!/usr/bin/env python3
"""The reference implementation for `make bench`: faster-whisper (CTranslate2) on the same
weights voxpipe's whisper provider converts, with the same beam size and threads.
faster_whisper_run.py CT2_DIR OUT_DIR LANGUAGE|auto BEAM THREADS FILE... — writes OUT_DIR/<name>.txt
per file and prints the seconds spent transcribing (model load excluded) on stdout."""
import os
import sys
import time

from faster_whisper import WhisperModel


def main():
    ct2, out, language, beam, threads, *files = sys.argv[1:]
    model = WhisperModel(ct2, device="cpu", compute_type="int8", cpu_threads=int(threads), num_workers=1)
    os.makedirs(out, exist_ok=True)
    start = time.perf_counter()
    for f in files:
        segments, _ = model.transcribe(f, language=None if language == "auto" else language, beam_size=int(beam),
                                       vad_filter=False, word_timestamps=False)
        text = " ".join(s.text.strip() for s in segments)
        name = os.path.splitext(os.path.basename(f))[0]
        with open(os.path.join(out, name + ".txt"), "w") as fh:
            fh.write(text + "\n")
    print(f"{time.perf_counter() - start:.2f}")


if __name__ == "__main__":
    main()
