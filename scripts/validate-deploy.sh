#!/usr/bin/env bash
# Validates the Kubernetes example (Pipelines/deploy/kubernetes-indexed-job.yaml) against the
# Kubernetes API's JSON schemas, strictly (an unknown field fails): PyPI's kubernetes-validate,
# which bundles the schemas and needs no cluster or network. `make setup` installs it.
# Checked against the newest bundled release and 1.30, the oldest here whose Job has
# backoffLimitPerIndex and podFailurePolicy on by default.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v kubernetes-validate >/dev/null; then
  echo "validate-deploy: kubernetes-validate missing (make setup installs it)" >&2
  exit 1
fi
for version in 1.37.0 1.30.0; do
  kubernetes-validate --strict --quiet -k "$version" Pipelines/deploy/kubernetes-indexed-job.yaml
done
echo "validate-deploy: Pipelines/deploy/kubernetes-indexed-job.yaml is a valid batch/v1 Job (Kubernetes 1.30, 1.37)" >&2
