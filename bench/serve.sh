#!/usr/bin/env bash
# make bench, `voxpipe serve` section (also runs alone: bench/serve.sh). Loopback only, bounded:
# the offline tutor (Pipelines/lesson-tutor.json: whisper base, rules, espeak-ng, mp3 answers).
# Requests/s and p50/p99 of /process-text and of /process-audio with an 8-s clip at concurrency
# 1, 4 and 16; resident memory over 2,000 requests; /healthz latency while the pipeline is saturated.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-$PWD/.build/release/voxpipe}
W=$PWD/bench/work/serve
mkdir -p "$W"
TEXT_N=${BENCH_SERVE_TEXT:-200}
AUDIO_N=${BENCH_SERVE_AUDIO:-16}
MEMORY_N=${BENCH_SERVE_MEMORY:-2000}
SATURATE_N=${BENCH_SERVE_SATURATE:-32}

# An 8-s clip: the German sample padded with silence, as a client's WAV.
sox Samples/speech-de-44k-stereo.flac -r 16000 -c 1 "$W/clip8.wav" pad 0 8 trim 0 8
python3 - "$W" <<'PY'
import base64, json, sys
w = sys.argv[1]
json.dump({"audio": base64.b64encode(open(f"{w}/clip8.wav", "rb").read()).decode(), "mimeType": "audio/wav"},
          open(f"{w}/audio.json", "w"))
json.dump({"text": "Hallo, wie geht es dir?"}, open(f"{w}/text.json", "w"))
PY

"$BIN" serve Pipelines/lesson-tutor.json --host 127.0.0.1 --port 0 --queue 256 --timeout 600 2> "$W/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do grep -q serving "$W/serve.log" && break; sleep 0.1; done
PORT=$(grep -o '127.0.0.1:[0-9]*' "$W/serve.log" | head -1 | cut -d: -f2)
[ -n "$PORT" ] || { cat "$W/serve.log" >&2; exit 1; }
LOAD="bench/serve_load.py --port $PORT"
API=/api/agora

echo
echo "== voxpipe serve, loopback, $(nproc) cores, $(grep -o '([0-9]* at once' "$W/serve.log" | tr -d '(') pipeline turns at once"
$LOAD --path $API/process-text --body "$W/text.json" -n 20 -c 4 --label warm-up > /dev/null
for c in 1 4 16; do $LOAD --path $API/process-text --body "$W/text.json" -n "$TEXT_N" -c $c --label "/process-text"; done
for c in 1 4 16; do $LOAD --path $API/process-audio --body "$W/audio.json" -n "$AUDIO_N" -c $c --label "/process-audio (8-s clip)"; done

echo
echo "== memory over $MEMORY_N /process-text requests (concurrency 4)"
$LOAD --path $API/process-text --body "$W/text.json" -n "$MEMORY_N" -c 4 --rss $SERVER --every 500 --label "/process-text"

echo
echo "== /healthz while 16 clients keep /process-audio saturated"
$LOAD --path $API/process-audio --body "$W/audio.json" -n "$SATURATE_N" -c 16 --label "/process-audio (load)" > "$W/saturate.txt" &
LOADER=$!
sleep 2
$LOAD --path /healthz -n 200 -c 1 --label "/healthz (saturated)"
wait $LOADER
cat "$W/saturate.txt"
