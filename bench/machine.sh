#!/usr/bin/env bash
# make bench, its first lines (also runs alone: bench/machine.sh): the machine every figure after
# them was measured on, and how many threads a Whisper decode takes on it.
#  - The CPU model, the cores this process may use, and the flags that decide which kernels could
#    run (avx2, fma, f16c: the x86-64-v3 baseline's; avx512*, avx_vnni, amx*: beyond it).
#  - `voxpipe threads` (the decision a decode with "threads": 0 makes: cores from the affinity and
#    the cgroup's CPU quota, less one under sustained CPU pressure of its own cgroup) idle, beside
#    two CPU hogs (`yes > /dev/null` twice, 12 s after they start, so PSI's 10-s average has seen
#    them), and inside a cgroup limited to one CPU (cgroup v2 cpu.max "100000 100000", else v1
#    cpu.cfs_quota_us 100000 per 100000 µs) where one can be made here; else it says why not.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-$PWD/.build/release/voxpipe}

HOGS="" CG=""
cleanup() {
  for pid in $HOGS; do kill "$pid" 2>/dev/null || true; done
  for pid in $HOGS; do wait "$pid" 2>/dev/null || true; done
  HOGS=""
  if [ -n "$CG" ]; then rmdir "$CG" 2>/dev/null || true; CG=""; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

model=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
all=$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2- | tr ' ' '\n')
have=$(grep -E '^(avx2|fma|f16c|avx512.*|avx_vnni|amx.*)$' <<< "$all" | tr '\n' ' ' | sed 's/ $//' || true)
absent=""
for f in avx2 fma f16c 'avx512*' avx_vnni 'amx*'; do
  grep -qx "${f/\*/.*}" <<< "$all" || absent="$absent $f"
done
echo
echo "== machine: ${model:-unknown CPU} ($(uname -m)), $(nproc) of $(nproc --all) cores for this process"
echo "CPU flags: ${have:-none of avx2 fma f16c avx512* avx_vnni amx*}${absent:+ (absent:$absent)}"

# `voxpipe threads`, indented under a title.
threads() {
  local title=$1; shift
  echo "threads, $title:"
  "$@" | sed 's/^/  /'
}

threads "now, without hogs (idle unless other work runs)" "$BIN" threads

yes > /dev/null & HOGS="$!"
yes > /dev/null & HOGS="$HOGS $!"
sleep 12
threads "beside two CPU hogs (12 s after they started)" "$BIN" threads
cleanup

# A child cgroup limited to one CPU, with `voxpipe threads` moved into it before it starts. Prints
# why not when none can be made (not root, no cpu controller, a read-only cgroupfs).
one_cpu() {
  local v2 v1 why="" err
  v2=$(sed -n 's/^[^ ]* [^ ]* [^ ]* [^ ]* \([^ ]*\) .* - cgroup2 .*/\1/p' /proc/self/mountinfo | head -1)
  v1=$(sed -n 's/^[^ ]* [^ ]* [^ ]* [^ ]* \([^ ]*\) .* - cgroup [^ ]* \(.*,\)\{0,1\}cpu\(,.*\)\{0,1\}$/\1/p' \
    /proc/self/mountinfo | head -1)
  if [ -z "$v2" ]; then
    why="no cgroup v2 mounted"
  elif ! grep -qw cpu "$v2/cgroup.controllers" 2>/dev/null; then
    why="cgroup v2 at $v2 has no cpu controller (cgroup.controllers: $(cat "$v2/cgroup.controllers" 2>/dev/null))"
  elif ! { grep -qw cpu "$v2/cgroup.subtree_control" || echo +cpu 2>/dev/null > "$v2/cgroup.subtree_control"; }; then
    why="cannot enable cpu in $v2/cgroup.subtree_control"
  elif ! err=$(mkdir "$v2/voxpipe-bench-$$" 2>&1); then
    why="cannot make a cgroup under $v2: ${err##*: }"
  else
    CG=$v2/voxpipe-bench-$$
    if echo "100000 100000" 2>/dev/null > "$CG/cpu.max"; then
      threads "in a cgroup v2 limited to one CPU ($CG/cpu.max: $(cat "$CG/cpu.max"))" \
        sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" threads' sh "$CG" "$BIN"
      cleanup
      return
    fi
    why="cannot write $CG/cpu.max"
    cleanup
  fi
  if [ -z "$v1" ]; then
    echo "threads, in a cgroup limited to one CPU: none made here ($why; no cgroup v1 cpu hierarchy mounted)"
  elif ! err=$(mkdir "$v1/voxpipe-bench-$$" 2>&1); then
    echo "threads, in a cgroup limited to one CPU: none made here ($why; cannot make a cgroup under $v1: ${err##*: })"
  else
    CG=$v1/voxpipe-bench-$$
    if echo 100000 2>/dev/null > "$CG/cpu.cfs_period_us" && echo 100000 2>/dev/null > "$CG/cpu.cfs_quota_us"; then
      threads "in a cgroup v1 limited to one CPU ($why; $CG: cpu.cfs_quota_us $(cat "$CG/cpu.cfs_quota_us") per \
cpu.cfs_period_us $(cat "$CG/cpu.cfs_period_us"))" sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" threads' sh "$CG" "$BIN"
    else
      echo "threads, in a cgroup limited to one CPU: none made here ($why; cannot write $CG/cpu.cfs_quota_us)"
    fi
    cleanup
  fi
}
one_cpu
