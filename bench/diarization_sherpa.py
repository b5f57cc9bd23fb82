"""make bench, diarization (issue 40): the reference on the same files, sherpa-onnx's own Python
offline speaker diarization on the converted models (PyPI sherpa-onnx), the speaker count given.

Usage: diarization_sherpa.py MODELS_DIR OUT_DIR SPEAKERS WAV...; writes OUT_DIR/NAME.rttm.
"""
import os
import sys
import time
import wave

import numpy as np
import sherpa_onnx

models, out_dir, speakers = sys.argv[1], sys.argv[2], int(sys.argv[3])
config = sherpa_onnx.OfflineSpeakerDiarizationConfig(
    segmentation=sherpa_onnx.OfflineSpeakerSegmentationModelConfig(
        pyannote=sherpa_onnx.OfflineSpeakerSegmentationPyannoteModelConfig(
            model=os.path.join(models, "pyannote-segmentation-3.0.onnx")),
        num_threads=2),
    embedding=sherpa_onnx.SpeakerEmbeddingExtractorConfig(
        model=os.path.join(models, "3dspeaker-campplus-zh-en-advanced.onnx"), num_threads=2),
    clustering=sherpa_onnx.FastClusteringConfig(num_clusters=speakers),
    min_duration_on=0.3, min_duration_off=0.5)
assert config.validate(), "sherpa-onnx refused the configuration"
sd = sherpa_onnx.OfflineSpeakerDiarization(config)
os.makedirs(out_dir, exist_ok=True)
for path in sys.argv[4:]:
    name = os.path.splitext(os.path.basename(path))[0]
    with wave.open(path) as w:
        samples = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768
    started = time.monotonic()
    segments = sd.process(samples).sort_by_start_time()
    took = time.monotonic() - started
    with open(os.path.join(out_dir, name + ".rttm"), "w") as f:
        for s in segments:
            f.write(f"SPEAKER {name} 1 {s.start:.3f} {s.end - s.start:.3f} <NA> <NA> spk{s.speaker} <NA> <NA>\n")
    print(f"sherpa-onnx: {name} {len(samples) / 16000 / took:.1f}x real time", file=sys.stderr)
