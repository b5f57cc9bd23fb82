#!/usr/bin/env bash
# make bench, speech output (issue 26): the Piper voice (sherpa-onnx in-process) against espeak-ng
# on 20 held-out English sentences of the kind the field-service agents say (numbers, dates, names,
# addresses; none of them in the tests). Per voice: x real time (seconds of speech per second of
# wall time, best of BENCH_REPS), startup with the model load (a one-word run), peak RSS, and the
# round-trip WER: the speech heard back by Whisper base through `voxpipe check`'s intelligibility
# expectation (pooled over the 20 sentences; Whisper's number style counts as errors for both).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-$PWD/.build/release/voxpipe}
T=$PWD/bench/work/tts
REPS=${BENCH_REPS:-3}
rm -rf "$T" && mkdir -p "$T/in" "$T/one"
sentences=(
  "Hi Karen, your technician Luis will arrive on Friday between eight and ten."
  "I booked the boiler service for March fourteenth at two thirty."
  "The estimate for Tom Becker comes to four hundred and twenty dollars."
  "Please confirm the address: 118 Oak Lane, apartment 3B."
  "Your appointment on Monday the ninth is moved to Wednesday."
  "I saved Priya Natarajan with the phone number 555 0147."
  "The replacement thermostat costs eighty nine dollars plus labor."
  "A plumber will call you fifteen minutes before he arrives."
  "We have an opening tomorrow at eleven or on Thursday at four."
  "The job for Michael O'Brien at 7 Harbor Road is now closed."
  "Two hours of labor at ninety dollars an hour make one hundred and eighty dollars."
  "Is the leak under the kitchen sink or in the basement?"
  "I scheduled the inspection for the first of April at nine in the morning."
  "Your invoice number is 20417 and it is due in thirty days."
  "The air filter should be changed every three months."
  "Emily Zhang is booked for next Tuesday at one fifteen."
  "Sorry, I did not catch the street name. Could you spell it?"
  "The technician needs access to the garage and the attic."
  "Your warranty covers parts until December of next year."
  "Thank you for calling, and have a good evening."
)

for i in "${!sentences[@]}"; do echo "s$i" >"$T/in/s$i.txt"; done
python3 - "$T/rules.json" "${sentences[@]}" <<'PY'
import json, sys
rules = [{"name": f"s{i}", "pattern": f"^s{i}$", "replies": [s]} for i, s in enumerate(sys.argv[2:])]
json.dump({"rules": rules, "fallback": ["Okay."]}, open(sys.argv[1], "w"), indent=1)
PY
echo "s0" >"$T/one/s0.txt"
printf '{"rules": [{"name": "one", "pattern": "s0", "replies": ["Yes."]}], "fallback": ["Yes."]}\n' >"$T/one.json"

spec() { # voice-block rules-file
  cat <<JSON
{"stages": [{"id": "read", "kind": "read-text", "language": "en"},
  {"id": "agent", "kind": "reply", "provider": {"name": "rules", "rules": "$2"}},
  {"id": "voice", "kind": "synthesize", "provider": $1},
  {"id": "speech", "kind": "write-wav", "from": "voice"},
  {"id": "replies", "kind": "write-replies", "from": "voice", "audioFrom": "speech"}]}
JSON
}
best() { # wall seconds (best of REPS) and the peak RSS of that run, for a command
  local b="" m=""
  for _ in $(seq "$REPS"); do
    /usr/bin/time -o "$T/time.txt" -f "%e %M" "$@" >/dev/null 2>"$T/err.txt" || { cat "$T/err.txt" >&2; exit 1; }
    read -r s k <"$T/time.txt"
    if [ -z "$b" ] || awk "BEGIN{exit !($s < $b)}"; then b=$s m=$k; fi
  done
  echo "$b $m"
}
echo
echo "## Speech output: Piper (en_US-joe-medium) vs espeak-ng (en-us, 160 wpm), 20 agent sentences"
printf '%-10s %10s %10s %12s %12s %10s\n' voice "x real" "speech s" "startup s" "peak RSS" "WER"
for voice in piper espeak-ng; do
  case $voice in
    piper) block='{"name": "piper"}' ;;
    espeak-ng) block='{"name": "espeak-ng", "voice": "en-us", "rate": 160}' ;;
  esac
  spec "$block" "$T/rules.json" >"$T/$voice.json"
  spec "$block" "$T/one.json" >"$T/$voice-one.json"
  read -r wall rss < <(best "$BIN" run "$T/$voice.json" "$T/in" -o "$T/out-$voice" --force --jobs 2)
  read -r startup _ < <(best "$BIN" run "$T/$voice-one.json" "$T/one" -o "$T/one-$voice" --force)
  speech=$(python3 - "$T/out-$voice" <<'PY'
import glob, sys, wave
total = 0.0
for f in glob.glob(sys.argv[1] + "/*/speech-*.wav"):
    with wave.open(f) as w:
        total += w.getnframes() / w.getframerate()
print(f"{total:.1f}")
PY
)
  printf '{"spec": "%s", "inputs": ["%s"], "expect": [{"item": "*", "output": "replies.json", "intelligible": 1}]}\n' \
    "$T/$voice.json" "$T/in" >"$T/$voice.check.json"
  "$BIN" check "$T/$voice.check.json" --json "$T/$voice.check-result.json" >/dev/null 2>"$T/err.txt" ||
    { cat "$T/err.txt" >&2; exit 1; }
  wer=$(python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))['results']
print(next('%.1f%%' % (x['metrics']['wer'] * 100) for x in r if x['name'].endswith('pooled')))" "$T/$voice.check-result.json")
  printf '%-10s %10s %10s %12s %9s MB %10s\n' "$voice" "$(awk "BEGIN{printf \"%.1fx\", $speech / $wall}")" "$speech" \
    "$startup" "$((rss / 1024))" "$wer"
done
