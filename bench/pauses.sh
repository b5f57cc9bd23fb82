#!/usr/bin/env bash
# make bench (issue 38, part 3): a 10-minute recording of read English with pauses of 0.5-2 s
# between sentences through the shipped Pipelines/transcribe.json, against faster-whisper on the
# same weights (beam 5, language detected, its own 30-s windows, no VAD) in the same run. The
# speech: the 5 LibriVox lines of Debian's pocketsphinx-testdata (a real reader) and 88 sentences
# of bench/pauses-text.txt spoken by the Piper voice (en_US-joe-medium), in a seeded order, pauses
# drawn from a seeded generator (the first 500 s hold every sentence once; the rest repeat some in
# another order): the same file on every machine. Wall seconds of whole processes
# (model load included), WER against the text, and how many chunks voxpipe decoded.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-$PWD/.build/release/voxpipe}
P=$PWD/bench/work/pauses
CT2=${BENCH_CT2:-$PWD/bench/work/ct2-base}
[ -f "$CT2/model.bin" ] || CT2=/usr/local/share/voxpipe/interop/ct2-base
THREADS=$(nproc)
mkdir -p "$P"

if [ ! -f "$P/pauses10.wav" ]; then
  rm -rf "$P/tts" && mkdir -p "$P/tts/in"
  python3 - "$P/tts" bench/pauses-text.txt <<'PY'
import json, sys
out, text = sys.argv[1:3]
lines = [l.strip() for l in open(text) if l.strip()]
rules = [{"name": f"p{i:02d}", "pattern": f"^p{i:02d}$", "replies": [s]} for i, s in enumerate(lines)]
json.dump({"rules": rules, "fallback": ["Okay."]}, open(out + "/rules.json", "w"), indent=1)
for i in range(len(lines)):
    open(f"{out}/in/p{i:02d}.txt", "w").write(f"p{i:02d}\n")
PY
  cat >"$P/tts/spec.json" <<JSON
{"stages": [{"id": "read", "kind": "read-text", "language": "en"},
  {"id": "agent", "kind": "reply", "provider": {"name": "rules", "rules": "$P/tts/rules.json"}},
  {"id": "voice", "kind": "synthesize", "provider": {"name": "piper"}},
  {"id": "speech", "kind": "write-wav", "from": "voice", "rate": 16000}]}
JSON
  "$BIN" run "$P/tts/spec.json" "$P/tts/in" -o "$P/tts/out" --force >/dev/null 2>"$P/tts/err.txt" ||
    { cat "$P/tts/err.txt" >&2; exit 1; }
  python3 - "$P" bench/pauses-text.txt /usr/share/pocketsphinx/test/data/librivox <<'PY'
import glob, os, random, re, struct, sys, wave
out, text, libri = sys.argv[1:4]
lines = [l.strip() for l in open(text) if l.strip()]
clips = []  # (pcm16 bytes at 16 kHz mono, reference text)
for i, line in enumerate(lines):
    wav = glob.glob(f"{out}/tts/out/p{i:02d}/speech-*.wav")[0]
    with wave.open(wav) as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
        clips.append((w.readframes(w.getnframes()), line))
refs = {}
for l in open(libri + "/transcription"):
    m = re.match(r"<s> (.*) </s> \((.*)\)", l.strip())
    refs[m.group(2)] = m.group(1)
for name in sorted(refs):
    with wave.open(f"{libri}/{name}.wav") as w:
        clips.append((w.readframes(w.getnframes()), refs[name]))
rng = random.Random(38)
order = []
while len(order) < 3 * len(clips):  # the sentences in a seeded order, again in another when used up
    order += rng.sample(clips, len(clips))
pcm, words, t = bytearray(), [], 0.0
pcm += bytes(2 * 8000)  # half a second before the first sentence
for audio, ref in order:
    if t + len(audio) / 32000 > 600:
        break
    pcm += audio
    words.append(ref)
    gap = rng.uniform(0.5, 2.0)
    pcm += bytes(2 * int(gap * 16000))
    t = len(pcm) / 32000
with wave.open(f"{out}/pauses10.wav", "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(bytes(pcm))
name = "pauses10"
open(f"{out}/refs.tsv", "w").write(name + "\t" + " ".join(words) + "\n")
print(f"bench: made {out}/pauses10.wav, {len(pcm) / 32000:.0f} s, {len(words)} sentences", file=sys.stderr)
PY
fi

[ -z "${PAUSES_FIXTURE_ONLY:-}" ] || exit 0
measure() { /usr/bin/time -o "$P/time.txt" -f "%e %M" "$@" >/dev/null 2>"$P/err.txt" || { cat "$P/err.txt" >&2; exit 1; }; cat "$P/time.txt"; }
rm -rf "$P/in" "$P/vox" "$P/voxpipe" "$P/faster-whisper"; mkdir -p "$P/in" "$P/voxpipe"
cp "$P/pauses10.wav" "$P/in/"
read -r v vm < <(measure "$BIN" run Pipelines/transcribe.json "$P/in" -o "$P/vox" --jobs 1 --force)
cp "$P/vox/pauses10/transcript.txt" "$P/voxpipe/pauses10.txt"
chunks=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['segments']))" "$P/vox/pauses10/transcript.json" 2>/dev/null || echo "?")
read -r f fm < <(measure python3 bench/faster_whisper_run.py "$CT2" "$P/faster-whisper" auto 5 "$THREADS" "$P/in/pauses10.wav")
echo "== 10 minutes of read English with 0.5-2 s pauses, Pipelines/transcribe.json vs faster-whisper (beam 5, $THREADS threads, language detected)"
python3 bench/wer.py "$P/refs.tsv" "$P/voxpipe" "$P/faster-whisper"
printf "voxpipe %ss (%s MB, %s segments)   faster-whisper %ss (%s MB)   ratio %s (target ≤ 1.0, moonshot ≤ 0.6)\n" \
  "$v" "$((vm / 1024))" "$chunks" "$f" "$((fm / 1024))" "$(awk "BEGIN{printf \"%.2f\", $v / $f}")"
