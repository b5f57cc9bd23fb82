#!/usr/bin/env bash
# voxpipe as a Slurm job array. From a folder with a logs/ folder in it (Slurm does not create it):
#   mkdir -p logs
#   SPEC=/etc/voxpipe/transcribe.json INPUT=/shared/lessons OUTPUT=/shared/voxpipe-out \
#     sbatch --array=0-15%8 Pipelines/deploy/slurm-array.sh
#   voxpipe report /shared/voxpipe-out        # after the array: one summary, exit 0/1 as for run
# Each array task takes shard SLURM_ARRAY_TASK_ID (offset by SLURM_ARRAY_TASK_MIN) of
# SLURM_ARRAY_TASK_COUNT; voxpipe reads them itself, so the array must be one range (0-15, not
# 0,3,7). sbatch passes SPEC, INPUT and OUTPUT on (it exports the environment). Resubmitting the
# array, or requeueing a task, redoes only what is not done. scripts/cluster-test.sh runs this on a
# one-node cluster.
#SBATCH --job-name=voxpipe
#SBATCH --array=0-15
#SBATCH --cpus-per-task=2
#SBATCH --mem=1G
#SBATCH --time=02:00:00
#SBATCH --output=logs/voxpipe-%A_%a.log
set -euo pipefail

SPEC=${SPEC:-Pipelines/transcribe.json}
INPUT=${INPUT:-/shared/lessons}
OUTPUT=${OUTPUT:-/shared/voxpipe-out}
mkdir -p "$OUTPUT/reports"

status=0
voxpipe run "$SPEC" "$INPUT" --output "$OUTPUT" --jobs "${SLURM_CPUS_PER_TASK:-2}" \
  --report "$OUTPUT/reports/task-${SLURM_ARRAY_TASK_ID}.jsonl" \
  --metrics "$OUTPUT/reports/task-${SLURM_ARRAY_TASK_ID}.prom" || status=$?
case $status in
  0) ;;                                      # every item done
  1) echo "some items failed: see the report" >&2; exit 1 ;;
  75) echo "another attempt holds this shard; requeueing" >&2; scontrol requeue "$SLURM_JOB_ID" ;;
  *) exit "$status" ;;
esac
