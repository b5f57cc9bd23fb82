#!/usr/bin/env bash
# make interop: voxpipe's `openai` transcribe provider against real third-party OpenAI-compatible
# servers started here on 127.0.0.1 (never beyond the machine), on the LibriVox lines of Debian's
# pocketsphinx-testdata:
#   faster-whisper-server 0.0.3 (PyPI) over the CTranslate2 base weights,
#   whisper.cpp 1.8.5's whisper-server with --inference-path /v1/audio/transcriptions,
# each required to give the same words as the in-process `whisper` provider (WER within 1 point
# of it) with segment times. Each server's answers are recorded (--http-record) into
# Tests/Fixtures/interop/<server>/, which InteropReplayTests replay where the servers are absent.
# --if-possible: skip (exit 0, saying why) when a server or its weights are not installed.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${VOXPIPE:-$PWD/.build/debug/voxpipe}
INTEROP=${VOXPIPE_PREFIX:-/usr/local}/share/voxpipe/interop
LIBRIVOX=/usr/share/pocketsphinx/test/data/librivox
if_possible=0
[ "${1:-}" = --if-possible ] && if_possible=1
skip() {
  echo "interop: skipped: $*"
  [ "$if_possible" = 1 ] && exit 0
  exit 1
}
[ -x "$BIN" ] || skip "no voxpipe binary at $BIN (swift build first)"
[ -d "$LIBRIVOX" ] || skip "needs Debian's pocketsphinx-testdata"
W=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$W/in"
cp "$LIBRIVOX"/*.wav "$W/in/"
: >"$W/refs.tsv"
for f in "$W"/in/*.wav; do
  name=$(basename "$f" .wav)
  printf '%s\t%s\n' "$name" "$(grep "($name)" "$LIBRIVOX/transcription" | sed 's/<\/\?s>//g; s/ *(.*)$//')" >>"$W/refs.tsv"
done
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Waits until URL answers (any HTTP status) or the server process PID has died.
wait_http() {
  for _ in $(seq 6000); do
    curl -s -o /dev/null "$1" && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
spec() { # baseURL → a transcribe spec like Pipelines/transcribe.json with the openai provider
  cat <<JSON
{ "name": "interop", "stages": [
  { "id": "decode", "kind": "decode" }, { "id": "mono16k", "kind": "resample", "rate": 16000, "channels": 1 },
  { "id": "turns", "kind": "chunk", "mode": "voice", "maxSeconds": 30, "padding": 0.1 },
  { "id": "asr", "kind": "transcribe", "provider": { "name": "openai", "baseURL": "$1", "language": "en",
    "apiKeyEnv": "VOXPIPE_INTEROP_KEY", "timeout": 600, "lowSpeedSeconds": 600, "maxRetries": 1 } },
  { "id": "transcript", "kind": "write-transcript", "formats": ["txt", "json"] } ] }
JSON
}
# WER of the transcript.txt files under an output folder against the references, in percent.
wer() {
  python3 - "$W/refs.tsv" "$1" <<'PY'
import os, sys
sys.path.insert(0, "bench")
from wer import edits, words  # the WER make bench uses
refs = [l.rstrip("\n").split("\t", 1) for l in open(sys.argv[1]) if l.strip()]
e = n = 0
for name, ref in refs:
    hyp = open(os.path.join(sys.argv[2], name, "transcript.txt")).read()
    e += edits(words(ref), words(hyp)); n += len(words(ref))
print(f"{100 * e / n:.1f}")
PY
}
# Every transcript.json has segments with times.
segments_ok() {
  python3 - "$1" <<'PY'
import glob, json, os, sys
files = glob.glob(os.path.join(sys.argv[1], "*", "transcript.json"))
ok = files and all(json.load(open(f))["segments"] and all("start" in s and "end" in s for s in json.load(open(f))["segments"]) for f in files)
sys.exit(0 if ok else 1)
PY
}

"$BIN" run Pipelines/transcribe.json "$W/in" -o "$W/inproc" >/dev/null 2>"$W/inproc.err" || { cat "$W/inproc.err"; exit 1; }
base=$(wer "$W/inproc")
echo "interop: in-process whisper (base): WER $base% on the LibriVox lines"
failed=0 ran=0
check() { # name baseURL → runs the openai provider against the server, records, compares
  local name=$1 url=$2 out="$W/$1" rec="$W/$1-rec"
  mkdir -p "$rec"
  spec "$url" >"$W/$name.json"
  if ! VOXPIPE_INTEROP_KEY=interop "$BIN" run "$W/$name.json" "$W/in" -o "$out" --jobs 1 --http-record "$rec" >/dev/null 2>"$W/$name.err"; then
    echo "interop: FAIL $name: voxpipe run failed:"; cat "$W/$name.err"; failed=1; return
  fi
  local got; got=$(wer "$out")
  local diff; diff=$(awk "BEGIN{d = $got - $base; print (d < 0 ? -d : d)}")
  if awk "BEGIN{exit !($diff <= 1.0)}" && segments_ok "$out"; then
    echo "interop: PASS $name: WER $got% (in-process $base%), segment times present"
  else
    echo "interop: FAIL $name: WER $got% vs in-process $base% (or segments missing)"; failed=1
  fi
  ran=$((ran + 1))
  if [ "${VOXPIPE_INTEROP_UPDATE:-0}" = 1 ]; then
    rm -rf "Tests/Fixtures/interop/$name" && mkdir -p "Tests/Fixtures/interop/$name"
    cp "$rec"/*.json "Tests/Fixtures/interop/$name/"
    for f in "$W"/in/*.wav; do n=$(basename "$f" .wav); cp "$out/$n/transcript.txt" "Tests/Fixtures/interop/$name/$n.txt"; done
    echo "interop: recorded $name into Tests/Fixtures/interop/$name"
  fi
}

if python3 -c "import faster_whisper_server" 2>/dev/null && [ -f "$INTEROP/ct2-base/model.bin" ]; then
  port=$(free_port)
  python3 -m faster_whisper_server "$INTEROP/ct2-base" --host 127.0.0.1 --port "$port" >"$W/fws.log" 2>&1 &
  pids+=($!)
  if wait_http "http://127.0.0.1:$port/health" "${pids[-1]}"; then
    check faster-whisper-server "http://127.0.0.1:$port/v1"
  else
    echo "interop: FAIL faster-whisper-server did not start:"; tail -5 "$W/fws.log"; failed=1
  fi
else
  echo "interop: faster-whisper-server or $INTEROP/ct2-base not installed (make setup installs them); not tried"
fi

if [ -x "$INTEROP/bin/whisper-server" ]; then
  port=$(free_port)
  "$INTEROP/bin/whisper-server" -m /usr/local/share/voxpipe/models/base/ggml-model.bin --host 127.0.0.1 --port "$port" \
    --inference-path /v1/audio/transcriptions -t 2 >"$W/wcs.log" 2>&1 &
  pids+=($!)
  if wait_http "http://127.0.0.1:$port/" "${pids[-1]}"; then
    check whisper.cpp-server "http://127.0.0.1:$port/v1"
  else
    echo "interop: FAIL whisper-server did not start:"; tail -5 "$W/wcs.log"; failed=1
  fi
else
  echo "interop: $INTEROP/bin/whisper-server not built (make setup builds it); not tried"
fi

[ "$ran" -gt 0 ] || skip "no third-party server installed"
exit $failed
