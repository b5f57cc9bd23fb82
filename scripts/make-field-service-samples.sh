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
ls -l "$out"/*.flac
