#!/usr/bin/env bash
# Makes the field-service sample sessions in Samples/field-service/ with espeak-ng and sox: the
# caller's side of a voice session, one sentence a turn with 1.2 s of silence between, 16 kHz mono
# FLAC. Run again after changing a script below; the files are committed.
set -euo pipefail
out="$(cd "$(dirname "$0")/.." && pwd)/Samples/field-service"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

session() { # NAME VOICE SENTENCE...
  local name="$1" voice="$2"
  shift 2
  local parts=() i=0
  sox -n -r 16000 -c 1 -b 16 "$work/gap.wav" trim 0 1.2
  for sentence in "$@"; do
    i=$((i + 1))
    espeak-ng -v "$voice" -s 120 -g 3 -w "$work/raw-$i.wav" "$sentence"
    sox "$work/raw-$i.wav" -r 16000 -c 1 -b 16 "$work/turn-$i.wav"
    parts+=("$work/gap.wav" "$work/turn-$i.wav")
  done
  sox "${parts[@]}" "$work/gap.wav" "$out/$name.flac"
}

session add-contact en-us \
  "I want to add a new contact." \
  "Her name is Maria Lopez." \
  "Her email is maria at example dot com."
session book-job en-us \
  "Hello, this is John Miller." \
  "The heating is broken at 42 Main Street." \
  "Can you send someone on Thursday at 9 AM?"
session estimate en-us \
  "I need an estimate for Sarah Johnson." \
  "Two filters at 50 dollars each." \
  "Three hours of labor at 80 dollars per hour." \
  "That is all, thank you."
session termin-de de \
  "Guten Tag, ich möchte einen Termin vereinbaren." \
  "Mein Name ist Jonas Weber." \
  "Der Termin ist am Dienstag um 14 Uhr."

# The agent's voice (the Piper voice the pipeline answers in, en_US-joe-medium), through the built
# voxpipe: what a session on a speakerphone hears of the agent, and the clip the pipeline enrolls
# to tell the agent from the customer (Pipelines/field-service/voices/agent.wav).
voxpipe="$(cd "$(dirname "$0")/.." && pwd)/.build/debug/voxpipe"
echo '{"rules": [], "fallback": ["{text}"]}' >"$work/echo.json"
cat >"$work/piper.json" <<'SPEC'
{"stages": [{"id": "text", "kind": "read-text"},
  {"id": "echo", "kind": "reply", "provider": {"name": "rules", "rules": "echo.json"}},
  {"id": "voice", "kind": "synthesize", "provider": {"name": "piper"}},
  {"id": "speech", "kind": "write-wav", "rate": 16000}]}
SPEC
piper() { # OUT.wav SENTENCE (16 kHz mono, 16-bit)
  printf '%s\n' "$2" >"$work/line.txt"
  rm -rf "$work/piper-out"
  "$voxpipe" run "$work/piper.json" "$work/line.txt" -o "$work/piper-out" >/dev/null 2>&1
  cp "$work/piper-out/line/speech-0001.wav" "$1"
}
piper "$out/../../Pipelines/field-service/voices/agent.wav" \
  "Hello, this is the service line. How can I help you today? I have saved the job, and someone will come on Thursday morning."

# book-job on a speakerphone: the caller's turns of book-job with the agent's answers heard
# between them, in the agent's voice.
i=0
parts=("$work/gap.wav")
for turn in "c:Hello, this is John Miller." "a:Hello, this is Bob at the service line. How can I help?" \
  "c:The heating is broken at 42 Main Street." "a:I am sorry to hear that. Is it urgent?" \
  "c:Can you send someone on Thursday at 9 AM?" "a:Yes. Someone will come on Thursday morning."; do
  i=$((i + 1))
  if [ "${turn%%:*}" = c ]; then
    espeak-ng -v en-us -s 120 -g 3 -w "$work/raw-$i.wav" "${turn#*:}"
    sox "$work/raw-$i.wav" -r 16000 -c 1 -b 16 "$work/turn-$i.wav"
  else
    piper "$work/turn-$i.wav" "${turn#*:}"
  fi
  parts+=("$work/turn-$i.wav" "$work/gap.wav")
done
sox "${parts[@]}" "$out/book-job-speakerphone.flac"
ls -l "$out"/*.flac
