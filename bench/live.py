"""make bench, live sessions (issue 39): voxpipe serve's /v1/realtime through the OpenAI Python SDK.

Usage: live.py BASE_URL PID LABEL SESSIONS KIND WAV...
  KIND transcription: SESSIONS transcription sessions at once, each sending every WAV at real-time
    pace (40-ms appends) with 1.5 s of silence after it; prints, over all utterances, the time
    from the last speech sample sent to `...transcription.completed` less silence_duration_ms
    (p50, p99, max), and whether it grows (the second half's p50 against the first's).
  KIND conversation: one conversation; the time from the last speech sample sent to the first
    `response.output_audio.delta`, less silence_duration_ms.
  KIND leave: a conversation whose client leaves as the answer to its first turn begins; prints
    the server's CPU use in each of the 3 seconds after (idle again: nothing runs for nobody).
Prints the server's RSS (PID) before, at its peak during, and after. Figures are printed, not
asserted; every wait follows the server's events.
"""
import asyncio
import base64
import os
import statistics
import sys
import time
import wave

from openai import AsyncOpenAI

SILENCE_MS = 500
CHUNK_MS = 40


def rss(pid):
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
    return int(fields["VmRSS"].split()[0]) // 1024, int(fields["VmHWM"].split()[0]) // 1024


def pcm16k(path):
    with wave.open(path, "rb") as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2, path
        return w.readframes(w.getnframes())


async def session(base, kind, clips, latencies):
    client = AsyncOpenAI(base_url=base, api_key="sk-unused", max_retries=0)
    query = {"intent": "transcription"} if kind == "transcription" else {}
    async with client.realtime.connect(model="gpt-realtime", extra_query=query) as connection:
        audio = {"input": {"format": {"type": "audio/pcm", "rate": 16000},
                           "turn_detection": {"type": "server_vad", "silence_duration_ms": SILENCE_MS}}}
        await connection.session.update(session={"type": "realtime" if kind != "transcription" else "transcription",
                                                  "audio": audio})
        ends = []  # when each utterance's last speech sample was sent
        waiting = asyncio.Event()
        target = "conversation.item.input_audio_transcription.completed" if kind == "transcription" \
            else "response.output_audio.delta"

        async def feed():
            step = 16000 * 2 * CHUNK_MS // 1000
            start = time.monotonic()
            sent = 0.0
            for clip in clips:
                pieces = [clip[i:i + step] for i in range(0, len(clip), step)]
                pieces += [b"\0" * step] * (1500 // CHUNK_MS)
                for n, piece in enumerate(pieces):
                    await connection.input_audio_buffer.append(audio=base64.b64encode(piece).decode())
                    sent += CHUNK_MS / 1000
                    if n == len(pieces) - 1500 // CHUNK_MS - 1:
                        ends.append(time.monotonic())
                    # Real-time pace: the audio sent never runs ahead of the clock.
                    await asyncio.sleep(max(0.0, start + sent - time.monotonic()))
                if kind != "transcription":
                    # A conversation waits for the tutor's answer to end before the next turn.
                    await waiting.wait()
                    waiting.clear()

        feeder = asyncio.create_task(feed())
        # A turn committed after an utterance's last speech was sent is that utterance's (a pause
        # inside an utterance may commit an earlier part: not timed).
        owner, timed, got = {}, set(), 0
        current = None
        async for event in connection:
            now = time.monotonic()
            if event.type == "input_audio_buffer.committed" and ends and len(ends) - 1 not in owner.values():
                owner[event.item_id] = len(ends) - 1
                current = len(ends) - 1
            if kind == "transcription":
                if event.type == "conversation.item.input_audio_transcription.completed" and event.item_id in owner:
                    latencies.append(now - ends[owner[event.item_id]] - SILENCE_MS / 1000)
                    got += 1
            else:
                if event.type == "response.output_audio.delta" and current is not None and current not in timed:
                    timed.add(current)
                    latencies.append(now - ends[current] - SILENCE_MS / 1000)
                if event.type == "response.done" and current is not None and current == got:
                    got += 1
                    waiting.set()
            if got == len(clips):
                break
        await feeder


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def leave(base, pid, label, clip):
    client = AsyncOpenAI(base_url=base, api_key="sk-unused", max_retries=0)
    async with client.realtime.connect(model="gpt-realtime") as connection:
        await connection.session.update(session={"type": "realtime", "audio": {"input": {
            "format": {"type": "audio/pcm", "rate": 16000}}}})
        step = 16000 * 2 // 10
        for start in range(0, len(clip) + 16000 * 2, step):
            piece = clip[start:start + step] or b"\0" * step
            await connection.input_audio_buffer.append(audio=base64.b64encode(piece).decode())
        async for event in connection:
            if event.type == "response.created":
                break
    uses = []
    for _ in range(3):
        before, at = cpu_seconds(pid), time.monotonic()
        await asyncio.sleep(1)
        uses.append(100 * (cpu_seconds(pid) - before) / (time.monotonic() - at))
    print(f"{label}: server CPU in the 3 seconds after the client left: "
          + ", ".join(f"{u:.0f}%" for u in uses) + " (100% = one core)")


async def main():
    base, pid, label, sessions, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    clips = [pcm16k(path) for path in sys.argv[6:]]
    if kind == "leave":
        return await leave(base, pid, label, clips[0])
    before, _ = rss(pid)
    peak = [before]

    async def watch():
        while True:
            peak.append(rss(pid)[0])
            await asyncio.sleep(0.2)

    watcher = asyncio.create_task(watch())
    runs = [[] for _ in range(sessions)]
    # Sessions at once do not speak in step: each starts 1.7 s after the one before, with the
    # utterances in another order.
    async def staggered(i):
        await asyncio.sleep(1.7 * i)
        shift = (5 * i) % len(clips)
        await session(base, kind, clips[shift:] + clips[:shift], runs[i])

    await asyncio.gather(*(staggered(i) for i in range(sessions)))
    watcher.cancel()
    after, _ = rss(pid)
    all_ = [x for run in runs for x in run]
    half = len(clips) // 2
    first = [x for run in runs for x in run[:half]]
    second = [x for run in runs for x in run[half:]]
    what = "completed" if kind == "transcription" else "first audio"

    def median(values):
        return f"{statistics.median(values):.2f}" if values else "-"

    print(f"{label}: {len(all_)} utterances, end of speech to {what} less {SILENCE_MS} ms of silence: "
          f"p50 {statistics.median(all_):.2f} s, p99 {percentile(all_, 99):.2f} s, max {max(all_):.2f} s; "
          f"first half p50 {median(first)} s, second half {median(second)} s; "
          f"RSS {before} -> peak {max(peak)} -> {after} MB")


asyncio.run(main())
