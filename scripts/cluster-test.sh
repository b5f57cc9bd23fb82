#!/usr/bin/env bash
# The Slurm path, proved on a real scheduler: starts a one-node Slurm cluster on this machine
# (munged, slurmctld, slurmd; config, key, state and logs in a temporary folder, no system file
# changed), submits Pipelines/deploy/slurm-array.sh as docs/scale-out.md says over generated WAV
# files as an array of 4 tasks (at most 2 running), and checks:
#   clean run  every item done once (a manifest each; the tasks' reports disjoint, together all
#              items); at most 2 tasks ran at once; `voxpipe report` merges 4 reports to all items
#   faults     one task scancel'ed mid-run, then `scontrol requeue`d: it redoes its own unfinished
#              items and nothing else; another task's voxpipe killed with kill -9; the whole array
#              resubmitted: only the killed task's unfinished items are redone, the outputs are
#              byte-identical to the clean run's and no temporary file is left
# Stops everything it started (by process id) at the end and on failure. Needs root and the
# Debian packages slurm-wlm and munge (`make setup`).
#
#   scripts/cluster-test.sh                 fails when it cannot run
#   scripts/cluster-test.sh --if-possible   says why and exits 0 when it cannot run (make test)
# VOXPIPE=path/to/voxpipe (default .build/debug/voxpipe), CLUSTER_ITEMS=N (default 200),
# KEEP=1 keeps the temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VOXPIPE=$(realpath "${VOXPIPE:-.build/debug/voxpipe}" 2>/dev/null || true)
ITEMS=${CLUSTER_ITEMS:-200}
TASKS=4
PARALLEL=2
STARTED=$(date +%s)

say() { echo "cluster-test: $*" >&2; }
die() {
  say "FAIL: $*"
  exit 1
}

# --- Can it run here? ---
missing=()
for tool in munged munge unmunge slurmctld slurmd sbatch squeue scontrol scancel sox python3; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
why=""
if [ ${#missing[@]} -gt 0 ]; then
  why="missing ${missing[*]} (make setup installs slurm-wlm, munge and sox)"
elif [ "$(id -u)" -ne 0 ]; then
  why="slurmd must run as root to start jobs, and this runs as $(id -un)"
elif [ ! -x "$VOXPIPE" ]; then
  why="no voxpipe binary at ${VOXPIPE:-.build/debug/voxpipe} (swift build first, or set VOXPIPE)"
fi
if [ -n "$why" ]; then
  if [ "${1:-}" = "--if-possible" ]; then
    say "skipped: $why"
    exit 0
  fi
  die "cannot run: $why"
fi

T=$(mktemp -d /tmp/voxpipe-cluster.XXXXXX)
# munged insists that everyone may traverse the folders above its socket; the key stays 0400.
chmod 711 "$T"
mkdir -m 700 "$T/state" "$T/spool" "$T/log" "$T/work" "$T/work/logs" "$T/attempts"
mkdir -m 755 "$T/munge"
export SLURM_CONF=$T/slurm.conf

# --- Cleanup: every process this started, by the pids it recorded ---
# Daemons by their pid files; jobs' processes (slurmstepd, batch shells, voxpipe) are the ones
# whose environment names this run's SLURM_CONF, a path unique to this temporary folder.
job_pids() {
  local env pid daemons
  daemons=" $(cat "$T/slurmd.pid" "$T/slurmctld.pid" "$T/munge/munged.pid" 2>/dev/null | tr '\n' ' ') "
  for env in /proc/[0-9]*/environ; do
    pid=${env#/proc/}
    pid=${pid%/environ}
    [[ $daemons == *" $pid "* ]] && continue
    tr '\0' '\n' 2>/dev/null <"$env" | grep -qxF "SLURM_CONF=$SLURM_CONF" && echo "$pid"
  done
  return 0
}
stop_pid() { # pid name: TERM, up to 10 s, then KILL
  local pid=$1 i
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  say "$2 ($pid) ignored SIGTERM; SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  local status=$? pid i
  set +e
  trap - EXIT INT TERM
  if [ -f "$T/slurmctld.pid" ]; then
    scancel --full --quiet --user=root 2>/dev/null
    scontrol shutdown 2>/dev/null # slurmctld and slurmd save their state and stop
    for pid in $(cat "$T/slurmd.pid" "$T/slurmctld.pid" 2>/dev/null); do
      for i in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
    done
  fi
  for pid in $(job_pids); do kill -KILL "$pid" 2>/dev/null; done
  [ -f "$T/slurmd.pid" ] && stop_pid "$(cat "$T/slurmd.pid")" slurmd
  [ -f "$T/slurmctld.pid" ] && stop_pid "$(cat "$T/slurmctld.pid")" slurmctld
  [ -f "$T/munge/munged.pid" ] && stop_pid "$(cat "$T/munge/munged.pid")" munged
  for pid in $(job_pids); do kill -KILL "$pid" 2>/dev/null; done
  if [ "$status" -ne 0 ] || [ "${KEEP:-}" = 1 ]; then
    say "kept $T (logs in $T/log and $T/work/logs)"
  else
    rm -rf "$T"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- munge, slurmctld, slurmd ---
head -c 1024 /dev/urandom >"$T/munge/munge.key"
chmod 400 "$T/munge/munge.key"
munged --socket="$T/munge/munge.socket" --key-file="$T/munge/munge.key" --pid-file="$T/munge/munged.pid" \
  --log-file="$T/log/munged.log" --seed-file="$T/munge/munged.seed" ||
  die "munged did not start: $(tail -n 3 "$T/log/munged.log" 2>/dev/null)"
munge -n -S "$T/munge/munge.socket" | unmunge -S "$T/munge/munge.socket" >/dev/null ||
  die "munge cannot encode and decode a credential"

read -r CTLD_PORT SLURMD_PORT < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
NODE=$(hostname -s)
cat >"$T/slurm.conf" <<EOF
# A one-node cluster for scripts/cluster-test.sh: everything under $T.
ClusterName=voxpipe-test
SlurmctldHost=$NODE
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/munge.socket
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
# No cgroups (a container may not offer them): processes are tracked by parentage.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=3600
NodeName=$NODE CPUs=$(nproc) RealMemory=2048 State=UNKNOWN
PartitionName=test Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$T/cgroup.conf" <<EOF
# Read by slurmd; with proctrack/linuxproc and task/none no cgroup is created.
CgroupPlugin=autodetect
EOF
slurmctld -f "$T/slurm.conf" -i || die "slurmctld did not start: $(tail -n 5 "$T/log/slurmctld.log")"
slurmd -f "$T/slurm.conf" || die "slurmd did not start: $(tail -n 5 "$T/log/slurmd.log")"
for i in $(seq 300); do
  state=$(sinfo -h -n "$NODE" -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  [ "$i" -eq 300 ] && die "the node did not become idle in 30 s (state: ${state:-none}); see $T/log"
  sleep 0.1
done
say "cluster up: slurmctld $(cat "$T/slurmctld.pid"), slurmd $(cat "$T/slurmd.pid"), munged" \
  "$(cat "$T/munge/munged.pid") on ports $CTLD_PORT/$SLURMD_PORT ($T)"

# --- Input: ITEMS tiny WAV files (2 s, 44.1 kHz stereo), some in subfolders ---
mkdir -p "$T/in"
for i in $(seq 0 $((ITEMS - 1))); do
  dir="$T/in/group-$((i % 5))"
  mkdir -p "$dir"
  sox -R -n -r 44100 -c 2 -b 16 "$dir/lesson-$(printf %03d "$i").wav" synth 2 sine $((200 + i * 3)) vol 0.5
done
# Resampling with libsamplerate's best sinc takes long enough per item (a tenth of a second or
# so) that a task can be caught mid-run; the outputs are as deterministic as with soxr.
cat >"$T/spec.json" <<'EOF'
{
  "name": "cluster-test",
  "stages": [
    { "id": "decode", "kind": "decode" },
    { "id": "mono16k", "kind": "resample", "rate": 16000, "channels": 1, "engine": "libsamplerate", "quality": "best" },
    { "id": "audio", "kind": "write-wav", "encoding": "pcm16" }
  ]
}
EOF

# --- Helpers ---
# submit OUTPUT: docs/scale-out.md's submission, from the work folder (its logs/ exists), with this
# test's array size and one CPU a task (the node has $(nproc)). Prints the array's job id.
submit() {
  (cd "$T/work" && PATH="$(dirname "$VOXPIPE"):$PATH" SPEC="$T/spec.json" INPUT="$T/in" OUTPUT="$1" \
    sbatch --parsable --array=0-$((TASKS - 1))%$PARALLEL --cpus-per-task=1 "$ROOT/Pipelines/deploy/slurm-array.sh")
}
# The Slurm job id of array task K (for listpids).
task_job_id() { scontrol show job "$1_$2" | grep -o 'JobId=[0-9]*' | head -n 1 | cut -d= -f2; }
task_state() { scontrol show job "$1_$2" | grep -o 'JobState=[A-Z_]*' | head -n 1 | cut -d= -f2; }
task_exit() { scontrol show job "$1_$2" | grep -o ' ExitCode=[0-9:]*' | head -n 1 | cut -d= -f2; }
MAX_RUNNING=0
# Waits until nothing of the array is pending or running; notes the most tasks seen running.
wait_array() {
  local job=$1 i running left
  for i in $(seq 3000); do
    running=$(squeue -h -j "$job" -t R -o %i | wc -l)
    [ "$running" -gt "$MAX_RUNNING" ] && MAX_RUNNING=$running
    left=$(squeue -h -j "$job" -t PD,R,CG,CF -o %i | wc -l)
    [ "$left" -eq 0 ] && return 0
    sleep 0.1
  done
  die "array $job did not finish in 300 s: $(squeue -h -j "$job")"
}
# Outputs (item folders) in a task's report with a given status, one a line, sorted.
report_items() { # report.jsonl status|all
  python3 -c '
import json, sys
status = sys.argv[2]
for line in open(sys.argv[1]):
    r = json.loads(line)
    if status in ("all", r["status"]): print(r["output"])' "$1" "$2" | sort
}
# Items of OUTPUT that have a manifest, one a line, sorted.
manifested() {
  [ -d "$1" ] || return 0
  (cd "$1" && find . -name voxpipe.manifest.json -printf '%h\n' | sed 's|^\./||' | sort)
}
# Waits until array task K has finished at least N of its items (per the manifests).
wait_items() { # output job task shard-items-file n
  local i state
  for i in $(seq 1200); do
    [ "$(comm -12 <(manifested "$1") "$4" | wc -l)" -ge "$5" ] && return 0
    state=$(task_state "$2" "$3")
    case $state in
      PENDING | CONFIGURING | RUNNING | "") ;;
      *) die "task $3 ended ($state) before it could be caught mid-run" ;;
    esac
    sleep 0.05
  done
  die "task $3 did not get to $5 items in 60 s"
}
temporaries() { find "$1" \( -name '*.voxpipe-tmp-*' -o -name '.voxpipe-atomic-*' \) | wc -l; }
hashes() { (cd "$1" && find . -type f ! -name voxpipe.manifest.json ! -name '*.lock' ! -path './reports/*' \
  -print0 | sort -z | xargs -0 sha256sum); }

# --- 1. A clean run ---
CLEAN=$T/clean
t0=$(date +%s.%N)
JOB=$(submit "$CLEAN")
wait_array "$JOB"
clean_seconds=$(python3 -c "import time; print(round(time.time() - $t0, 1))")
for k in $(seq 0 $((TASKS - 1))); do
  [ "$(task_state "$JOB" "$k")" = COMPLETED ] && [ "$(task_exit "$JOB" "$k")" = 0:0 ] ||
    die "clean run: task $k ended $(task_state "$JOB" "$k") $(task_exit "$JOB" "$k"); see $T/work/logs"
  report_items "$CLEAN/reports/task-$k.jsonl" all >"$T/shard-$k.items"
  [ "$(report_items "$CLEAN/reports/task-$k.jsonl" done | wc -l)" -eq "$(wc -l <"$T/shard-$k.items")" ] ||
    die "clean run: task $k did not do every item of its report"
  [ -s "$T/shard-$k.items" ] || die "clean run: task $k had no items (shards are by a hash of the path)"
done
[ "$MAX_RUNNING" -le "$PARALLEL" ] || die "clean run: $MAX_RUNNING tasks ran at once, more than $PARALLEL"
[ "$(nproc)" -lt 2 ] || [ "$MAX_RUNNING" -ge 2 ] || die "clean run: tasks never ran side by side"
all_reported=$(cat "$T"/shard-*.items | wc -l)
distinct=$(cat "$T"/shard-*.items | sort -u | wc -l)
[ "$all_reported" -eq "$distinct" ] || die "clean run: $((all_reported - distinct)) items were done by two tasks"
[ "$distinct" -eq "$ITEMS" ] || die "clean run: the tasks' reports list $distinct items, not $ITEMS"
[ "$(manifested "$CLEAN" | wc -l)" -eq "$ITEMS" ] || die "clean run: $(manifested "$CLEAN" | wc -l) manifests"
cmp -s <(manifested "$CLEAN") <(cat "$T"/shard-*.items | sort) || die "clean run: manifests and reports differ"
"$VOXPIPE" report "$CLEAN" --json --report "$T/merged.jsonl" >"$T/merged.json" ||
  die "clean run: voxpipe report exited $?"
merged=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["items"], s["done"], len(s["reports"]))' \
  "$T/merged.json")
[ "$merged" = "$ITEMS $ITEMS $TASKS" ] || die "clean run: merged report says items, done, reports = $merged"
[ "$(wc -l <"$T/merged.jsonl")" -eq "$ITEMS" ] || die "clean run: the merged report has not $ITEMS lines"
say "clean run: $ITEMS items in ${clean_seconds} s, each done once by one of $TASKS tasks" \
  "($(for k in $(seq 0 $((TASKS - 1))); do printf '%s ' "$(wc -l <"$T/shard-$k.items")"; done | sed 's/ $//')" \
  "items), at most $MAX_RUNNING running; voxpipe report: $ITEMS items, $TASKS reports"

# --- 2. Faults: scancel + requeue one task, kill -9 another's voxpipe, rerun the array ---
FAULT=$T/faulted
JOB=$(submit "$FAULT")
quarter=$(($(wc -l <"$T/shard-0.items") / 4))
wait_items "$FAULT" "$JOB" 0 "$T/shard-0.items" "$((quarter > 0 ? quarter : 1))"
scancel "$JOB"_0
for i in $(seq 300); do
  [ "$(task_state "$JOB" 0)" = CANCELLED ] && break
  [ "$i" -eq 300 ] && die "task 0 not cancelled in 30 s"
  sleep 0.1
done
# Slurm shows CANCELLED as it sends SIGTERM; voxpipe may still be writing its report (whole, by a
# rename, as it exits).
for _ in $(seq 300); do
  [ -s "$FAULT/reports/task-0.jsonl" ] && break
  sleep 0.1
done
comm -12 <(manifested "$FAULT") "$T/shard-0.items" >"$T/cancelled-0.done"
cp "$FAULT/reports/task-0.jsonl" "$T/attempts/task-0.cancelled.jsonl" 2>/dev/null ||
  die "the cancelled task wrote no report in 30 s (voxpipe stops cleanly on SIGTERM and writes it)"
cmp -s <(report_items "$T/attempts/task-0.cancelled.jsonl" done) "$T/cancelled-0.done" ||
  die "the cancelled task's report and its manifests disagree on what it finished"
[ "$(wc -l <"$T/cancelled-0.done")" -lt "$(wc -l <"$T/shard-0.items")" ] ||
  die "task 0 finished before it was cancelled"
scontrol requeue "$JOB"_0
# A requeued job waits two minutes before it may start again; this test does not.
scontrol update JobId="$JOB"_0 StartTime=now
say "faults: task 0 cancelled after $(wc -l <"$T/cancelled-0.done") of $(wc -l <"$T/shard-0.items") items," \
  "requeued"

# kill -9 the voxpipe of task 1 (the job step's process under slurmstepd) once it is a third in.
third=$(($(wc -l <"$T/shard-1.items") / 3))
wait_items "$FAULT" "$JOB" 1 "$T/shard-1.items" "$((third > 0 ? third : 1))"
victim=""
for pid in $(scontrol listpids "$(task_job_id "$JOB" 1)" 2>/dev/null | awk 'NR > 1 {print $1}'); do
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = voxpipe ] && victim=$pid
done
[ -n "$victim" ] || die "found no voxpipe process in task 1's job step"
kill -KILL "$victim"
for i in $(seq 300); do
  state=$(task_state "$JOB" 1)
  [ "$state" != RUNNING ] && [ "$state" != COMPLETING ] && break
  sleep 0.1
done
[ "$(task_state "$JOB" 1)" = FAILED ] && [ "$(task_exit "$JOB" 1)" = 137:0 ] ||
  die "task 1 after kill -9: $(task_state "$JOB" 1) $(task_exit "$JOB" 1), not FAILED 137:0"
comm -12 <(manifested "$FAULT") "$T/shard-1.items" >"$T/killed-1.done"
say "faults: task 1's voxpipe ($victim) killed with SIGKILL after $(wc -l <"$T/killed-1.done") of" \
  "$(wc -l <"$T/shard-1.items") items; the task failed with exit 137"
wait_array "$JOB"
[ "$(task_state "$JOB" 0)" = COMPLETED ] || die "requeued task 0 ended $(task_state "$JOB" 0)"
restarts=$(scontrol show job "$JOB"_0 | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
[ "$restarts" = 1 ] || die "task 0 restarted $restarts times, not once"
for k in $(seq 2 $((TASKS - 1))); do
  [ "$(task_state "$JOB" "$k")" = COMPLETED ] || die "task $k ended $(task_state "$JOB" "$k")"
done
# The requeued task redid exactly its own unfinished items and skipped its finished ones.
cmp -s <(report_items "$FAULT/reports/task-0.jsonl" all) "$T/shard-0.items" ||
  die "the requeued task 0 did not take exactly its shard's items"
cmp -s <(report_items "$FAULT/reports/task-0.jsonl" skipped) "$T/cancelled-0.done" ||
  die "the requeued task 0 did not skip exactly the items it had finished before it was cancelled"
redone0=$(report_items "$FAULT/reports/task-0.jsonl" done | wc -l)
[ "$redone0" -gt 0 ] || die "the requeued task 0 redid nothing"
left=$(temporaries "$FAULT")
say "faults: requeued task 0 did its $redone0 unfinished items and skipped its" \
  "$(wc -l <"$T/cancelled-0.done") finished ones; kill -9 left $left temporary files"

# Rerun the whole array: only task 1's unfinished items are done again.
for k in $(seq 0 $((TASKS - 1))); do cp "$FAULT/reports/task-$k.jsonl" "$T/attempts/task-$k.before-rerun.jsonl" \
  2>/dev/null || true; done
JOB=$(submit "$FAULT")
wait_array "$JOB"
for k in $(seq 0 $((TASKS - 1))); do
  [ "$(task_state "$JOB" "$k")" = COMPLETED ] && [ "$(task_exit "$JOB" "$k")" = 0:0 ] ||
    die "rerun: task $k ended $(task_state "$JOB" "$k") $(task_exit "$JOB" "$k")"
  cmp -s <(report_items "$FAULT/reports/task-$k.jsonl" all) "$T/shard-$k.items" ||
    die "rerun: task $k did not take exactly its shard's items"
done
for k in 0 $(seq 2 $((TASKS - 1))); do
  [ "$(report_items "$FAULT/reports/task-$k.jsonl" done | wc -l)" -eq 0 ] ||
    die "rerun: task $k redid items that were finished"
done
cmp -s <(report_items "$FAULT/reports/task-1.jsonl" skipped) "$T/killed-1.done" ||
  die "rerun: task 1 did not skip exactly what it had finished before kill -9"
redone1=$(report_items "$FAULT/reports/task-1.jsonl" done | wc -l)
[ "$redone1" -eq $(($(wc -l <"$T/shard-1.items") - $(wc -l <"$T/killed-1.done"))) ] && [ "$redone1" -gt 0 ] ||
  die "rerun: task 1 redid $redone1 items"
[ "$(temporaries "$FAULT")" -eq 0 ] || die "rerun: $(temporaries "$FAULT") temporary files left"
hashes "$CLEAN" >"$T/clean.sha256"
hashes "$FAULT" >"$T/faulted.sha256"
cmp -s "$T/clean.sha256" "$T/faulted.sha256" ||
  die "outputs differ from the clean run's: $(diff "$T/clean.sha256" "$T/faulted.sha256" | head -n 5)"
"$VOXPIPE" report "$FAULT" --json >"$T/merged-faulted.json" || die "faulted run: voxpipe report exited $?"
merged=$(python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
print(s["items"], s["failed"], len(s["duplicates"]))' "$T/merged-faulted.json")
[ "$merged" = "$ITEMS 0 0" ] || die "faulted run: merged report says items, failed, duplicates = $merged"
say "faults: rerun redid task 1's $redone1 unfinished items and nothing else; $(wc -l <"$T/clean.sha256")" \
  "outputs byte-identical to the clean run's; no temporaries; voxpipe report: $ITEMS items, none failed"
say "PASS in $(($(date +%s) - STARTED)) s"
