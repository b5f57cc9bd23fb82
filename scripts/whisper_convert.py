#!/usr/bin/env python3
"""Converts a Whisper model in CTranslate2 format (as PyPI packages ship it) into the ggml file
whisper.cpp loads. numpy only.

    whisper_convert.py --ct2 DIR [--model-bin PART ...] --out FILE [--type q8_0|f16]

DIR holds vocabulary.txt (and model.bin unless --model-bin, alias --ct2-part, names its parts,
which are joined in the order given). model.bin (CTranslate2 binary version 6, written by
CTranslate2's specs/model_spec.py) is: version, spec name, revision, the variables (name, rank,
dims, type id, byte count, data), then aliases (name -> variable). Weights may be float32, float16
or bfloat16, or int8/int16 with a "<name>_scale" (int8: one per output row) that divides them back.

The ggml file is what whisper.cpp's models/convert-pt-to-ggml.py writes from OpenAI's checkpoint:
  header   magic "ggml", 11 int32 hyper-parameters (the last is ftype: 1 = f16, 2007 = q8_0, i.e.
           GGML_QNT_VERSION 2 * 1000 + GGML_FTYPE_MOSTLY_Q8_0 7)
  filters  80 x 201 float32 mel filters (Slaney scale and area norm, as librosa/OpenAI compute them;
           CTranslate2 models do not carry them)
  vocab    the byte-level BPE tokens below <|endoftext|>, as raw bytes (whisper.cpp adds the
           special tokens itself)
  tensors  n_dims, name length, type, dims (innermost first), name, data
CTranslate2 fuses the attention projections: self-attention Q,K,V are one matrix (rows stacked),
cross-attention K,V another; they are split here, and the key projections (which have no bias in
Whisper; CTranslate2 stores zeros) lose their bias. Types follow whisper.cpp: 2-D weights in the
model type (f16 or Q8_0: blocks of 32 values, one fp16 scale max|x|/127 and 32 int8), convolution
kernels f16, everything else f32. Q8_0 output is byte-identical to whisper.cpp's quantize tool run
on the f16 output. whisper.cpp wants every 2-D weight in the model type, so a row length that is
not a multiple of 32 is an error, not an f16 fallback.
"""
import argparse
import hashlib
import os
import re
import struct
import sys

import numpy as np

# CTranslate2's type ids (specs/model_spec.py): float32, int8, int16, int32, float16, bfloat16
# (bfloat16 is read as uint16 and widened by hand).
CT2_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16, 5: np.uint16}
CT2_BF16 = 5
GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8
FTYPES = {"f16": 1, "q8_0": 2 * 1000 + 7}


class ConvertError(Exception):
    pass


def read_ct2(blob):
    """The variables of a CTranslate2 model.bin (binary version 6) as numpy arrays, by name,
    aliases resolved."""
    pos = 0

    def take(fmt):
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(blob):
            raise ConvertError("model.bin is truncated (missing or misordered part?)")
        values = struct.unpack_from(fmt, blob, pos)
        pos += size
        return values

    def string():
        nonlocal pos
        (n,) = take("<H")
        if n == 0 or pos + n > len(blob) or blob[pos + n - 1] != 0:
            raise ConvertError("model.bin is malformed (bad string)")
        s = blob[pos:pos + n - 1].decode("utf-8")
        pos += n
        return s

    (version,) = take("<I")
    if version != 6:
        raise ConvertError(f"model.bin binary version {version}, expected 6 (not a CTranslate2 model, or parts out of order?)")
    spec = string()
    if spec != "WhisperSpec":
        raise ConvertError(f"model.bin holds a {spec}, not a WhisperSpec")
    take("<I")  # revision
    (count,) = take("<I")
    variables = {}
    for _ in range(count):
        name = string()
        (rank,) = take("<B")
        dims = take("<" + "I" * rank)
        (dtype,) = take("<B")
        (nbytes,) = take("<I")
        if dtype not in CT2_DTYPES:
            raise ConvertError(f"{name}: unknown CTranslate2 type id {dtype}")
        itemsize = np.dtype(CT2_DTYPES[dtype]).itemsize
        if nbytes != itemsize * int(np.prod(dims, dtype=np.int64)) or pos + nbytes > len(blob):
            raise ConvertError(f"{name}: size does not match its shape, or model.bin is truncated")
        a = np.frombuffer(blob, dtype=CT2_DTYPES[dtype], count=nbytes // itemsize, offset=pos).reshape(dims)
        if dtype == CT2_BF16:
            a = (a.astype(np.uint32) << 16).view(np.float32)
        variables[name] = a
        pos += nbytes
    (n_aliases,) = take("<I")
    for _ in range(n_aliases):
        alias, target = string(), string()
        if target not in variables:
            raise ConvertError(f"alias {alias} names a missing variable {target}")
        variables[alias] = variables[target]
    if pos != len(blob):
        raise ConvertError(f"model.bin has {len(blob) - pos} bytes past its end (wrong or extra part?)")
    return variables


def mel_filters(sr=16000, n_fft=400, n_mels=80):
    """librosa.filters.mel(sr, n_fft, n_mels) with its defaults (Slaney mel scale and norm);
    bit-identical to OpenAI's assets/mel_filters.npz for 80 bands."""
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0

    def hz_to_mel(f):
        f = np.asarray(f, dtype=np.float64)
        return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, f / f_sp)

    def mel_to_hz(m):
        return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)

    fft_freqs = np.linspace(0, sr / 2, 1 + n_fft // 2)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fft_freqs)
    weights = np.zeros((n_mels, 1 + n_fft // 2), dtype=np.float32)
    for i in range(n_mels):
        weights[i] = np.maximum(0, np.minimum(-ramps[i] / fdiff[i], ramps[i + 2] / fdiff[i + 1]))
    weights *= (2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels]))[:, None]
    return weights


def byte_decoder():
    """GPT-2's byte-to-unicode table, inverted: token characters back to bytes."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def quantize_q8_0(x):
    """ggml's Q8_0 blocks (quantize_row_q8_0_ref) for a float32 matrix whose rows are a multiple of 32 long."""
    blocks = x.astype(np.float32).reshape(-1, 32)
    d = np.abs(blocks).max(axis=1) / np.float32(127)
    inv = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0)
    v = blocks * inv[:, None]
    t = np.trunc(v)
    q = np.where(np.abs(v - t) == 0.5, t + np.sign(v), np.rint(v)).astype(np.int8)  # roundf: ties away from zero
    out = np.empty(len(blocks), dtype=[("d", "<f2"), ("qs", "i1", 32)])
    out["d"] = d.astype(np.float16)
    out["qs"] = q
    return out.tobytes()


def whisper_tensors(v, n_layers_enc, n_layers_dec):
    """(name, float32 array) in whisper's PyTorch naming and order, from CTranslate2's variables."""
    def f(name):
        if name not in v:
            raise ConvertError(f"model.bin has no variable {name}")
        a = v[name].astype(np.float32)
        scale = v.get(name + "_scale")
        if scale is not None:  # int8 (per output row) or int16 (one scalar): w = q / scale
            a = a / scale.astype(np.float32).reshape(scale.shape + (1,) * (a.ndim - scale.ndim))
        elif v[name].dtype.kind == "i":
            raise ConvertError(f"{name} is an integer weight without {name}_scale")
        return a

    def ln(src, dst):
        return [(f"{dst}.weight", f(f"{src}/gamma")), (f"{dst}.bias", f(f"{src}/beta"))]

    def linear(src, dst):
        return [(f"{dst}.weight", f(f"{src}/weight")), (f"{dst}.bias", f(f"{src}/bias"))]

    def split(src, dsts):
        w, b = f(f"{src}/weight"), f(f"{src}/bias")
        if w.shape[0] % len(dsts) or b.shape != (w.shape[0],):
            raise ConvertError(f"{src}: fused projection of shape {w.shape} cannot be split in {len(dsts)}")
        n = w.shape[0] // len(dsts)
        out = []
        for k, dst in enumerate(dsts):
            out.append((f"{dst}.weight", w[k * n:(k + 1) * n]))
            if dst.endswith(".key"):
                if np.any(b[k * n:(k + 1) * n] != 0):
                    raise ConvertError(f"{src}: the key projection has a bias; Whisper's has none")
            else:
                out.append((f"{dst}.bias", b[k * n:(k + 1) * n]))
        return out

    t = [("encoder.positional_embedding", f("encoder/position_encodings/encodings")),
         ("encoder.conv1.weight", f("encoder/conv1/weight")), ("encoder.conv1.bias", f("encoder/conv1/bias")[:, None]),
         ("encoder.conv2.weight", f("encoder/conv2/weight")), ("encoder.conv2.bias", f("encoder/conv2/bias")[:, None])]
    for i in range(n_layers_enc):
        s, d = f"encoder/layer_{i}", f"encoder.blocks.{i}"
        t += split(f"{s}/self_attention/linear_0", [f"{d}.attn.query", f"{d}.attn.key", f"{d}.attn.value"])
        t += linear(f"{s}/self_attention/linear_1", f"{d}.attn.out") + ln(f"{s}/self_attention/layer_norm", f"{d}.attn_ln")
        t += linear(f"{s}/ffn/linear_0", f"{d}.mlp.0") + linear(f"{s}/ffn/linear_1", f"{d}.mlp.2") + ln(f"{s}/ffn/layer_norm", f"{d}.mlp_ln")
    t += ln("encoder/layer_norm", "encoder.ln_post")
    t += [("decoder.positional_embedding", f("decoder/position_encodings/encodings")),
          ("decoder.token_embedding.weight", f("decoder/embeddings/weight"))]
    for i in range(n_layers_dec):
        s, d = f"decoder/layer_{i}", f"decoder.blocks.{i}"
        t += split(f"{s}/self_attention/linear_0", [f"{d}.attn.query", f"{d}.attn.key", f"{d}.attn.value"])
        t += linear(f"{s}/self_attention/linear_1", f"{d}.attn.out") + ln(f"{s}/self_attention/layer_norm", f"{d}.attn_ln")
        t += linear(f"{s}/attention/linear_0", f"{d}.cross_attn.query")
        t += split(f"{s}/attention/linear_1", [f"{d}.cross_attn.key", f"{d}.cross_attn.value"])
        t += linear(f"{s}/attention/linear_2", f"{d}.cross_attn.out") + ln(f"{s}/attention/layer_norm", f"{d}.cross_attn_ln")
        t += linear(f"{s}/ffn/linear_0", f"{d}.mlp.0") + linear(f"{s}/ffn/linear_1", f"{d}.mlp.2") + ln(f"{s}/ffn/layer_norm", f"{d}.mlp_ln")
    t += ln("decoder/layer_norm", "decoder.ln")
    return t


def tensor_type(name, data, kind):
    """whisper.cpp's types: conv kernels f16, 1-D tensors, conv biases and position tables f32,
    the other 2-D weights in the model type (the same rule as its quantize tool)."""
    if name.endswith((".conv1.weight", ".conv2.weight")):
        return GGML_F16
    if data.ndim < 2 or name.endswith(("positional_embedding", ".conv1.bias", ".conv2.bias")):
        return GGML_F32
    if kind == "q8_0":
        if data.shape[-1] % 32:
            raise ConvertError(f"{name}: rows of {data.shape[-1]} values are not a multiple of 32, cannot be Q8_0")
        return GGML_Q8_0
    return GGML_F16


def convert(ct2_dir, parts, out_path, kind):
    blob = b"".join(open(p, "rb").read() for p in (parts or [os.path.join(ct2_dir, "model.bin")]))
    v = read_ct2(blob)
    vocab = open(os.path.join(ct2_dir, "vocabulary.txt"), encoding="utf-8").read().split("\n")
    if vocab and vocab[-1] == "":
        vocab.pop()
    if "decoder/embeddings/weight" not in v or v["decoder/embeddings/weight"].ndim != 2:
        raise ConvertError("model.bin has no 2-D decoder/embeddings/weight")
    n_vocab, n_text_state = v["decoder/embeddings/weight"].shape
    multilingual = n_vocab >= 51865  # whisper.cpp's test, too
    if len(vocab) != n_vocab:
        raise ConvertError(f"vocabulary.txt has {len(vocab)} tokens, the model {n_vocab} (another model's folder?)")
    # whisper.cpp hard-codes <|endoftext|> at 50256 (English-only) or 50257 (multilingual).
    eot = 50256 + multilingual
    if len(vocab) <= eot or vocab[eot] != "<|endoftext|>":
        raise ConvertError(f"vocabulary.txt does not have <|endoftext|> at {eot}")
    decoder = byte_decoder()
    # The official English-only files also list <|endoftext|> itself (their vocabulary came from
    # GPT-2's vocab.json); keeping it gives the official file size. Same ids either way.
    try:
        tokens = [bytes(decoder[c] for c in token) for token in vocab[:eot + (0 if multilingual else 1)]]
    except KeyError as e:
        raise ConvertError(f"vocabulary.txt has a token with {e} that is not byte-level BPE") from None

    def layers(side):
        return len({k.split("/")[1] for k in v if re.match(side + r"/layer_\d+/", k)})

    n_enc, n_dec = layers("encoder"), layers("decoder")
    conv1 = v["encoder/conv1/weight"]
    hparams = [n_vocab, v["encoder/position_encodings/encodings"].shape[0], conv1.shape[0], int(v["encoder/num_heads"]),
               n_enc, v["decoder/position_encodings/encodings"].shape[0], n_text_state, int(v["decoder/num_heads"]),
               n_dec, conv1.shape[1], FTYPES[kind]]
    if conv1.shape[0] != n_text_state or conv1.ndim != 3 or not n_enc or not n_dec:
        raise ConvertError("model.bin does not have Whisper's shape (encoder width != decoder width, or no layers)")
    filters = mel_filters(n_mels=conv1.shape[1])
    tensors = whisper_tensors(v, n_enc, n_dec)
    types = [tensor_type(name, data, kind) for name, data in tensors]  # fail before writing

    tmp = f"{out_path}.tmp{os.getpid()}"
    digest = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            def write(b):
                out.write(b)
                digest.update(b)

            write(struct.pack("<i", 0x67676D6C) + struct.pack("<11i", *hparams))
            write(struct.pack("<ii", *filters.shape) + filters.astype("<f4").tobytes())
            write(struct.pack("<i", len(tokens)))
            for token in tokens:
                write(struct.pack("<i", len(token)) + token)
            for (name, data), ttype in zip(tensors, types):
                raw = name.encode()
                write(struct.pack("<iii", data.ndim, len(raw), ttype) + struct.pack(f"<{data.ndim}i", *reversed(data.shape)) + raw)
                if ttype == GGML_Q8_0:
                    rows = data.reshape(-1, data.shape[-1])
                    step = max(1, (1 << 20) // rows.shape[1])  # bounded temporaries
                    for r in range(0, len(rows), step):
                        write(quantize_q8_0(rows[r:r + step]))
                else:
                    write(np.ascontiguousarray(data, dtype="<f2" if ttype == GGML_F16 else "<f4").tobytes())
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, out_path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    size = os.path.getsize(out_path)
    print(f"whisper_convert: {out_path}: {len(tensors)} tensors, {size} bytes, {kind}, sha256 {digest.hexdigest()}")


def main():
    parser = argparse.ArgumentParser(description="CTranslate2 Whisper model → whisper.cpp ggml file")
    parser.add_argument("--ct2", required=True, help="folder with vocabulary.txt (and model.bin)")
    parser.add_argument("--model-bin", "--ct2-part", dest="model_bin", nargs="+", default=None, metavar="PART",
                        help="model.bin, or its parts joined in the order given (default: DIR/model.bin)")
    parser.add_argument("--out", required=True, help="ggml file to write (atomically)")
    parser.add_argument("--type", choices=sorted(FTYPES), default="q8_0", help="type of the 2-D weights (default q8_0)")
    args = parser.parse_args()
    try:
        convert(args.ct2, args.model_bin, args.out, args.type)
    except KeyError as e:
        print(f"whisper_convert: {args.ct2}: model.bin has no variable {e}", file=sys.stderr)
        sys.exit(1)
    except (ConvertError, OSError, ValueError, struct.error) as e:
        print(f"whisper_convert: {args.ct2}: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
