#!/usr/bin/env bash
# voxpipe as a Slurm job array: `sbatch Pipelines/deploy/slurm-array.sh`. Each array task takes
# shard SLURM_ARRAY_TASK_ID (offset by SLURM_ARRAY_TASK_MIN) of SLURM_ARRAY_TASK_COUNT; voxpipe
# reads them itself. Resubmitting the array redoes only what is not done.
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
  1) echo "some items failed: see the report" >&2 ;;
  75) echo "another attempt holds this shard; requeueing" >&2; scontrol requeue "$SLURM_JOB_ID" ;;
  *) exit "$status" ;;
esac
