#!/usr/bin/env bash
# make bench, live sessions (issue 39; also runs alone: bench/live.sh). `voxpipe serve` on the
# English tutor (Pipelines/lesson-tutor-en.json: whisper base, rules, Piper) on loopback, driven by
# the OpenAI Python SDK at real-time pace (bench/live.py): 12 utterances of 2-8 s (the 5 LibriVox
# lines of pocketsphinx-testdata, a real reader, and 7 sentences spoken by Piper from
# bench/pauses-text.txt), 1.5 s of silence after each. Printed: end of speech to the transcription
# (less the 500-ms silence window) in one transcription session, in 4 at once, and in 4 at once
# beside two CPU hogs; end of speech to the tutor's first audio in a conversation; the server's CPU
# after a client leaves mid-answer; the server's RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-$PWD/.build/release/voxpipe}
W=$PWD/bench/work/live
P=$PWD/bench/work/pauses
mkdir -p "$W"
[ -d "$P/tts/out" ] || BENCH_BIN=$BIN PAUSES_FIXTURE_ONLY=1 bench/pauses.sh
clips=(/usr/share/pocketsphinx/test/data/librivox/*.wav)
while read -r f; do clips+=("$f"); done < <(
  for f in "$P"/tts/out/p*/speech-*.wav; do
    d=$(soxi -D "$f"); awk "BEGIN{exit !($d >= 2 && $d <= 8)}" && echo "$f"
  done | sort | head -7)

"$BIN" serve Pipelines/lesson-tutor-en.json --host 127.0.0.1 --port 0 --timeout 600 2> "$W/serve.log" &
SERVER=$!
HOGS=()
trap 'kill $SERVER "${HOGS[@]}" 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do grep -q serving "$W/serve.log" && break; sleep 0.1; done
PORT=$(grep -o '127.0.0.1:[0-9]*' "$W/serve.log" | head -1 | cut -d: -f2)
[ -n "$PORT" ] || { cat "$W/serve.log" >&2; exit 1; }
BASE=http://127.0.0.1:$PORT/v1

echo
echo "== live sessions (/v1/realtime, OpenAI Python SDK), $(nproc) cores, ${#clips[@]} utterances of 2-8 s, release build"
echo "   goals: transcription p50 <= 0.6 s, p99 <= 1.2 s idle; first audio p50 <= 1.0 s"
python3 bench/live.py "$BASE" $SERVER "warm-up" 1 transcription "${clips[0]}" > /dev/null
python3 bench/live.py "$BASE" $SERVER "1 transcription session" 1 transcription "${clips[@]}"
python3 bench/live.py "$BASE" $SERVER "conversation (tutor's first audio)" 1 conversation "${clips[@]}"
python3 bench/live.py "$BASE" $SERVER "a client that leaves mid-answer" 1 leave "${clips[0]}"
python3 bench/live.py "$BASE" $SERVER "4 transcription sessions at once" 4 transcription "${clips[@]}"
for _ in 1 2; do (while :; do :; done) & HOGS+=($!); done
python3 bench/live.py "$BASE" $SERVER "4 at once beside 2 CPU hogs" 4 transcription "${clips[@]}"
kill "${HOGS[@]}"; HOGS=()
kill $SERVER; wait $SERVER 2>/dev/null || true

# The same served greedily (beamSize 1): what a spec can trade for latency and sessions at once.
python3 - "$W/greedy.json" "$PWD" <<'PY'
import json, sys
spec = json.load(open("Pipelines/lesson-tutor-en.json"))
for stage in spec["stages"]:
    if stage.get("kind") == "transcribe":
        stage["provider"].update({"beamSize": 1, "bestOf": 1})
    if stage.get("provider", {}).get("rules"):
        stage["provider"]["rules"] = sys.argv[2] + "/Pipelines/" + stage["provider"]["rules"]
spec["name"] = "lesson-tutor-en-greedy"
spec.pop("$schema", None)
json.dump(spec, open(sys.argv[1], "w"), indent=1)
PY
"$BIN" serve "$W/greedy.json" --host 127.0.0.1 --port 0 --timeout 600 2> "$W/serve-greedy.log" &
SERVER=$!
for _ in $(seq 1 600); do grep -q serving "$W/serve-greedy.log" && break; sleep 0.1; done
PORT=$(grep -o '127.0.0.1:[0-9]*' "$W/serve-greedy.log" | head -1 | cut -d: -f2)
[ -n "$PORT" ] || { cat "$W/serve-greedy.log" >&2; exit 1; }
BASE=http://127.0.0.1:$PORT/v1
python3 bench/live.py "$BASE" $SERVER "warm-up" 1 transcription "${clips[0]}" > /dev/null
python3 bench/live.py "$BASE" $SERVER "greedy: 1 transcription session" 1 transcription "${clips[@]}"
python3 bench/live.py "$BASE" $SERVER "greedy: 4 transcription sessions at once" 4 transcription "${clips[@]}"
for _ in 1 2; do (while :; do :; done) & HOGS+=($!); done
python3 bench/live.py "$BASE" $SERVER "greedy: 4 at once beside 2 CPU hogs" 4 transcription "${clips[@]}"
kill "${HOGS[@]}"; HOGS=()
