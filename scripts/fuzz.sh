#!/usr/bin/env bash
# `make fuzz`: builds the fuzzer (Fuzz/, libFuzzer + AddressSanitizer, release) and runs each
# target over its seeds (Tests/Fuzz/Seeds/<target>/; upload uses decode's) for a fixed number
# of inputs, so the count is the same on any machine: 0 crashes, 0 inputs over 10 s, at most
# 2 GB resident. One summary line per target. Findings (crash-*, timeout-*, oom-* inputs), logs and the grown corpora go
# to $FUZZ_OUT; a finding becomes a fixture under Tests/Fixtures/fuzz-regressions/<target>/.
#
#   scripts/fuzz.sh [TARGET...]        default: every target
#   FUZZ_RUNS=100000 scripts/fuzz.sh http   more inputs (default 12000 a target)
#
# Environment: FUZZ_RUNS, FUZZ_SEED (libFuzzer's -seed, default 1: a rerun fuzzes the same
# inputs), FUZZ_JOBS (build jobs, default 1), FUZZ_SCRATCH (build folder, default .build-fuzz),
# FUZZ_OUT (default $FUZZ_SCRATCH/fuzz-out).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
all=(decode upload sidecar spec rules bagit chunks http ledger join verify multipart mp4 wav metrics)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
runs=${FUZZ_RUNS:-12000}
seed=${FUZZ_SEED:-1}
scratch=${FUZZ_SCRATCH:-.build-fuzz}
out=${FUZZ_OUT:-$scratch/fuzz-out}

# SwiftPM passes each --sanitize as its own -sanitize= flag and swiftc keeps only the last, so
# the combined flag goes last, where it wins: coverage for libFuzzer and ASan's checks together.
swift build --package-path Fuzz -c release -j "${FUZZ_JOBS:-1}" --scratch-path "$root/$scratch" \
  --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address 2>&1 \
  | grep -v "warning: Cannot export local symbol" || { echo "fuzz: build failed" >&2; exit 1; }
bin=$root/$scratch/release/voxfuzz

mkdir -p "$out"
# The spec target's dictionary: the text targets' own plus every string of the spec schema.
{ cat Tests/Fuzz/fuzz.dict; grep -o '"[A-Za-z0-9_$ .:/-]*"' Pipelines/schema.json | sort -u; } > "$out/spec.dict"

# No leak checks (after each input they are slow, and at exit they list what the Swift runtime,
# Foundation and the targets' fixtures keep for the process's life): memory is judged by the
# resident size instead, halfway through and at the end, which must stay flat.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
# Swift's own crash handler would read other threads' memory under ASan; libFuzzer reports.
export SWIFT_BACKTRACE=enable=no
failed=0
for target in "${targets[@]}"; do
  dir=$out/$target
  rm -rf "$dir"
  mkdir -p "$dir/corpus"
  seeds=Tests/Fuzz/Seeds/$target
  [ "$target" != upload ] || seeds=Tests/Fuzz/Seeds/decode
  dict=()
  case $target in
    decode | upload) ;;
    spec) dict=(-dict="$out/spec.dict") ;;
    multipart) dict=(-dict=Tests/Fuzz/multipart.dict) ;;
    mp4) dict=(-dict=Tests/Fuzz/mp4.dict) ;;
    wav) dict=(-dict=Tests/Fuzz/wav.dict) ;;
    metrics) dict=(-dict=Tests/Fuzz/metrics.dict) ;;
    *) dict=(-dict=Tests/Fuzz/fuzz.dict) ;;
  esac
  start=$(date +%s)
  status=0
  VOXFUZZ_TARGET=$target VOXFUZZ_ROOT=$root "$bin" -runs="$runs" -seed="$seed" -timeout=10 -rss_limit_mb=2048 \
    -detect_leaks=0 -print_final_stats=1 -artifact_prefix="$dir/" "${dict[@]}" "$dir/corpus" "$seeds" \
    > "$dir/log" 2>&1 || status=$?
  seconds=$(( $(date +%s) - start ))
  executed=$(grep -m1 '^stat::number_of_executed_units' "$dir/log" | awk '{print $2}')
  rss=$(grep -m1 '^stat::peak_rss_mb' "$dir/log" | awk '{print $2}')
  # The resident size on libFuzzer's last status line of the first half of the inputs.
  half=$(awk -v half=$((runs / 2)) '/^#[0-9]+\t/ { n = substr($1, 2) + 0; if (n <= half) for (i = 1; i <= NF; i++) if ($i == "rss:") r = $(i + 1) } END { sub("Mb", "", r); print r }' "$dir/log")
  crashes=$(find "$dir" -maxdepth 1 \( -name 'crash-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
  hangs=$(find "$dir" -maxdepth 1 -name 'timeout-*' | wc -l)
  printf 'fuzz %-8s %6s runs  %4ss  RSS %5s MB at half, peak %5s MB  crashes %s  hangs %s\n' "$target" "${executed:-?}" "$seconds" "${half:-?}" "${rss:-?}" "$crashes" "$hangs"
  if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ] || [ "$hangs" -ne 0 ]; then
    failed=1
    echo "fuzz: $target failed (exit $status); the input and the log are in $dir:" >&2
    grep -v '^Note\|libmpg123' "$dir/log" | grep -m1 -A25 -E 'ERROR|Fatal error|deadly signal|timeout|out-of-memory' >&2 || tail -n 25 "$dir/log" >&2
  fi
done
exit $failed
