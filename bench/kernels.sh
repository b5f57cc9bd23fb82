#!/usr/bin/env bash
# make bench (issue 38, part 2): the Whisper runtime's q8_0 matrix products run on AMX-INT8 where
# the CPU has it, else on AVX-512 VNNI where it has that (scripts/patches/ggml-q8-blocks.py), and
# the encoder attention's products 16 wide where it has AVX-512 (ggml-fa-wide.py), chosen at run
# time; every other kernel is the x86-64-v3 baseline's. This runs every shipped Whisper pipeline
# over Samples/ (and transcribe.json over the LibriVox lines) with VOXPIPE_WHISPER_KERNELS=baseline
# and with the kernels this CPU gets (and, where it has AMX and VNNI both, once more with
# VOXPIPE_WHISPER_KERNELS=vnni), and compares every output byte for byte (manifests and locks
# aside: they hold times). Prints "identical" or the files that differ (then exits 1), and the wall
# seconds of each. Also runnable alone: bench/kernels.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-$PWD/.build/release/voxpipe}
K=$PWD/bench/work/kernels
rm -rf "$K"; mkdir -p "$K/samples" "$K/librivox"
flags=$(grep -m1 '^flags' /proc/cpuinfo)
best=baseline
kernel_runs="baseline best"
case " $flags " in *" avx512f "*) best=avx512 ;; esac
case " $flags " in *" avx512_vnni "*) [ "$best" = avx512 ] && best="avx512+vnni" ;; esac
case " $flags " in *" amx_int8 "*) case " $flags " in *" amx_tile "*)
  [ "$best" = "avx512+vnni" ] && kernel_runs="baseline best vnni"
  best="avx512+amx" ;; esac ;; esac
echo "q8_0 kernels on this CPU: $best (VOXPIPE_WHISPER_KERNELS=baseline forces the x86-64-v3 ones$([ "$kernel_runs" != "baseline best" ] && echo ", =vnni the AVX-512 VNNI ones"))"
[ "$best" = baseline ] && echo "(no AVX-512 or AMX here: both runs use the same kernels, so this compares a run with itself)"
for f in Samples/*.*; do case "$f" in *.md) ;; *) cp "$f" "$K/samples/" ;; esac; done
cp /usr/share/pocketsphinx/test/data/librivox/*.wav "$K/librivox/"

runs=(
  "transcribe.json samples" "transcribe.json librivox" "lesson-tutor.json samples" "lesson-tutor-en.json samples"
  "moderation-evidence-transcribed.json samples" "field-service-agents.json $PWD/Samples/field-service"
  "lesson-speakers.json $PWD/Samples/speakers"
)
status=0
for kernels in $kernel_runs; do
  mkdir -p "$K/$kernels"
  start=$(date +%s.%N)
  for r in "${runs[@]}"; do
    read -r spec input <<<"$r"
    case "$input" in /*) ;; *) input=$K/$input ;; esac
    out="$K/$kernels/${spec%.json}-$(basename "$input")"
    if [ "$kernels" != best ]; then
      VOXPIPE_WHISPER_KERNELS=$kernels "$BIN" run "Pipelines/$spec" "$input" -o "$out" > /dev/null 2> "$out.log" || true
    else
      env -u VOXPIPE_WHISPER_KERNELS "$BIN" run "Pipelines/$spec" "$input" -o "$out" > /dev/null 2> "$out.log" || true
    fi
  done
  eval "t_$kernels=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $start}")"
done
files=$(cd "$K/baseline" && find . -type f ! -name voxpipe.manifest.json ! -name .voxpipe.lock ! -name '*.log' | sort)
count=$(echo "$files" | wc -l)
for kernels in $kernel_runs; do
  [ "$kernels" = baseline ] && continue
  name=$([ "$kernels" = best ] && echo "$best" || echo "avx512+$kernels")
  differ=""
  while read -r f; do
    cmp -s "$K/baseline/$f" "$K/$kernels/$f" || differ="$differ $f"
  done <<<"$files"
  if [ -z "$differ" ]; then
    echo "7 pipeline runs, $count output files: identical with baseline and $name kernels (baseline ${t_baseline}s, $name $(eval echo "\$t_$kernels")s)"
  else
    echo "DIFFERENT between baseline and $name kernels:$differ"
    status=1
  fi
done
exit $status
