#!/usr/bin/env bash
# The Swift tests (swift-testing; arguments go to it: --filter, --skip, …) with their output line
# by line (a pipe would hold up to 4 KB of it back) and a watchdog: a run still going after
# VOXPIPE_TEST_LIMIT seconds (default 1800; a normal run takes about 8 minutes on 2 idle cores,
# more when busy) is a hang, not a slow machine. Then it prints the tests
# that started and never ended, every thread's stack in the test processes (gdb), and their
# children, stops the run and fails, well inside CI's own time limit. A test process that printed
# its verdict but does not exit within 120 s is stopped the same way (stacks printed) and the
# verdict stands: the tests ran; only the process's exit hung.
set -uo pipefail
SWIFT="${SWIFT:-swift}"
limit="${VOXPIPE_TEST_LIMIT:-1800}"
# Built first (what `swift test` would do), with Swift's hashing seeded the same in every run:
# SwiftPM writes a package's trait flags (Hummingbird's -DConfigurationSupport -DFullFoundation)
# in the order of a Set, so with a random seed every other run rebuilt Hummingbird and all above
# it, some 40 s on 2 cores. Then the test binary runs itself, as `swift test` runs it but without
# SwiftPM loading every manifest again (the run's TMPDIR below, new each run, missed its cache:
# 15-20 s). The tests run with the random seed that voxpipe runs with.
export SWIFT_DETERMINISTIC_HASHING=1
"$SWIFT" build --build-tests || exit $?
tests="$("$SWIFT" build --show-bin-path)/voxpipePackageTests.xctest"
unset SWIFT_DETERMINISTIC_HASHING
log="$(mktemp)"
# The tests' folders (temporaryDirectory(), up to 370 MB each) go in one folder of this run's,
# removed when it ends: left in /tmp, runs on one machine filled its disk (15,000 folders, 66 GB).
scratch="$(mktemp -d -t voxpipe-tests.XXXXXX)"
chmod 1777 "$scratch" # as /tmp: the permission tests run voxpipe as another user
export TMPDIR="$scratch"
trap 'rm -f "$log"; rm -rf "$scratch"' EXIT

setsid stdbuf -oL -eL "$tests" --testing-library swift-testing "$@" >"$log" 2>&1 &
pid=$!
tail -n +1 -f --pid="$pid" "$log" &
tailer=$!

in_flight() { # the tests that started and have not ended, from the log
  python3 - "$log" <<'PY'
import re, sys
started, ended = [], set()
for line in open(sys.argv[1], errors="replace"):
    if m := re.search(r"◇ Test (?!case )(\S+?\()", line):
        started.append(m.group(1))
    elif m := re.search(r"[✔✘] Test (?!case )(\S+?\()", line):
        ended.add(m.group(1))
for name in started:
    if name not in ended:
        print(f"  {name})")
PY
}

stop() { # why; prints what the run is doing (the tests in flight last: CI shows a log's tail), then ends it
  {
    echo
    for p in $(pgrep -s "$pid" -f 'PackageTests|voxpipe'); do
      echo "swift-test: threads of $p ($(tr '\0' ' ' </proc/"$p"/cmdline | cut -c1-120)):"
      timeout 120 gdb -p "$p" -batch -ex 'thread apply all bt 10' 2>/dev/null | grep -E '^(Thread|#)' | cut -c1-160
    done
    echo "swift-test: processes of the run:"
    ps -s "$pid" -o pid,ppid,etime,time,stat,cmd | cut -c1-200
    echo "swift-test: $1. Tests that started and never ended:"
    in_flight
  } >&2
  kill -TERM -- -"$pid" 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -KILL -- -"$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  wait "$tailer" 2>/dev/null
}

start=$SECONDS
verdict_at=""
while kill -0 "$pid" 2>/dev/null; do
  if [ -z "$verdict_at" ] && grep -qE 'Test run with [0-9]+ tests? .*(passed|failed) after' "$log"; then
    verdict_at=$SECONDS
  fi
  if [ -n "$verdict_at" ] && [ $((SECONDS - verdict_at)) -ge 120 ]; then
    stop "the test process printed its verdict 120 s ago and has not exited"
    grep -qE '^✔ Test run with [0-9]+ tests? .*passed' "$log" && exit 0
    exit 1
  fi
  if [ $((SECONDS - start)) -ge "$limit" ]; then
    stop "still running after ${limit} s: a hang"
    exit 1
  fi
  sleep 5
done
wait "$pid"
rc=$?
wait "$tailer" 2>/dev/null
exit "$rc"
