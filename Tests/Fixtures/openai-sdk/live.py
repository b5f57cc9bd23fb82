"""voxpipe serve's live routes through the official OpenAI Python SDK (with `websockets`).

Usage:
  live.py stream BASE_URL CLIP
      client.audio.transcriptions.create(stream=True): prints {"types", "deltas", "done", "usage"}.
  live.py transcribe BASE_URL RATE PAUSE_MS CHUNK_MS LANGUAGE WAV [WAV ...]
      a transcription session (intent=transcription, server VAD, LANGUAGE or "-" for the spec's):
      each WAV (16-bit mono at RATE) is sent at real-time pace in CHUNK_MS appends, with PAUSE_MS
      of silence after each; prints the server events (type, item_id, audio_start_ms,
      audio_end_ms, transcript) in order.
  live.py converse BASE_URL RATE WAV [WAV]
      a conversation session: the first WAV is a turn; with a second, it is sent as soon as the
      tutor's answer has begun (an interruption); prints the events and the audio bytes received.
  live.py turns BASE_URL RATE WAV [WAV ...]
      a conversation session: each WAV a turn, sent once the answer to the one before is done;
      prints what was heard and answered, turn by turn.
  live.py bad BASE_URL
      sends what a broken client sends and prints the error codes that came back.
  live.py limits BASE_URL KEY WAV
      against a server with --max-live-sessions 1 and a short --live-idle-timeout, keyed KEY: a
      wrong key, a second session while one is open, a client that leaves as its answer begins
      (then /metrics until nothing runs), and an idle session; prints what each got.
All times go by the server's events; nothing waits a fixed time for the server.
"""
import asyncio
import base64
import json
import sys
import wave

from openai import AsyncOpenAI, OpenAI


def pcm(path):
    with wave.open(path, "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1, path
        return w.readframes(w.getnframes()), w.getframerate()


def stream(base, clip):
    client = OpenAI(base_url=base, api_key="sk-unused", max_retries=0, timeout=1200)
    types, deltas, done, usage = [], [], None, None
    with open(clip, "rb") as audio:
        events = client.audio.transcriptions.create(
            model="whisper-1", file=audio, stream=True, include=["logprobs"])
        for event in events:
            types.append(event.type)
            if event.type == "transcript.text.delta":
                deltas.append({"delta": event.delta, "logprobs": len(event.logprobs or [])})
            elif event.type == "transcript.text.done":
                done = event.text
                usage = event.usage.model_dump() if event.usage else None
    print(json.dumps({"types": types, "deltas": deltas, "done": done, "usage": usage}))


def summary(event):
    keep = {"type": event.type}
    for key in ("item_id", "audio_start_ms", "audio_end_ms", "transcript", "delta", "previous_item_id"):
        value = getattr(event, key, None)
        if value is not None:
            keep[key] = value if key != "delta" or event.type != "response.output_audio.delta" else len(value)
    if event.type == "error":
        keep["code"] = event.error.code
    if event.type in ("response.created", "response.done"):
        keep["status"] = event.response.status
        keep["response_id"] = event.response.id
    return keep


async def send_audio(connection, audio, rate, chunk_ms, pace=True):
    step = rate * 2 * chunk_ms // 1000
    for start in range(0, len(audio), step):
        await connection.input_audio_buffer.append(audio=base64.b64encode(audio[start:start + step]).decode())
        if pace:
            await asyncio.sleep(chunk_ms / 1000)


async def transcribe(base, rate, pause_ms, chunk_ms, language, wavs):
    client = AsyncOpenAI(base_url=base, api_key="sk-unused", max_retries=0)
    events = []
    async with client.realtime.connect(model="whisper-1", extra_query={"intent": "transcription"}) as connection:
        await connection.session.update(session={
            "type": "transcription",
            "audio": {"input": {
                "format": {"type": "audio/pcm", "rate": rate},
                "transcription": {"model": "whisper-1", "language": None if language == "-" else language},
                "turn_detection": {"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300,
                                   "silence_duration_ms": 500},
            }},
        })

        async def feed():
            for path in wavs:
                audio, file_rate = pcm(path)
                assert file_rate == rate, (path, file_rate)
                await send_audio(connection, audio, rate, chunk_ms)
                await send_audio(connection, b"\0\0" * (rate * pause_ms // 1000), rate, chunk_ms)

        feeder = asyncio.create_task(feed())
        completed = 0
        async for event in connection:
            events.append(summary(event))
            if event.type in ("conversation.item.input_audio_transcription.completed",
                              "conversation.item.input_audio_transcription.failed"):
                completed += 1
                if completed == len(wavs) and feeder.done():
                    break
        await feeder
    print(json.dumps(events))


async def converse(base, rate, wavs):
    client = AsyncOpenAI(base_url=base, api_key="sk-unused", max_retries=0)
    events, audio_bytes = [], 0
    async with client.realtime.connect(model="gpt-realtime") as connection:
        await connection.session.update(session={
            "type": "realtime",
            "audio": {"input": {"format": {"type": "audio/pcm", "rate": rate},
                                "turn_detection": {"type": "server_vad", "silence_duration_ms": 500}},
                      "output": {"format": {"type": "audio/pcm", "rate": 24000}}},
        })
        first, _ = pcm(wavs[0])
        silence = b"\0\0" * (rate * 800 // 1000)
        await send_audio(connection, first + silence, rate, 100, pace=False)
        interrupted = len(wavs) < 2
        done = 0
        async for event in connection:
            events.append(summary(event))
            if event.type == "response.output_audio.delta":
                audio_bytes += len(base64.b64decode(event.delta))
            if event.type == "response.created" and not interrupted:
                interrupted = True
                second, _ = pcm(wavs[1])
                await send_audio(connection, second + silence, rate, 100, pace=False)
            if event.type == "response.done":
                done += 1
                if done == len(wavs):
                    break
    print(json.dumps({"events": events, "audio_bytes": audio_bytes}))


async def turns(base, rate, wavs):
    client = AsyncOpenAI(base_url=base, api_key="sk-unused", max_retries=0)
    out = []
    async with client.realtime.connect(model="gpt-realtime") as connection:
        await connection.session.update(session={
            "type": "realtime",
            "audio": {"input": {"format": {"type": "audio/pcm", "rate": rate},
                                "turn_detection": {"type": "server_vad", "silence_duration_ms": 500}}},
        })
        for path in wavs:
            audio, _ = pcm(path)
            await send_audio(connection, audio + b"\0\0" * (rate * 800 // 1000), rate, 100, pace=False)
            turn = {}
            async for event in connection:
                if event.type == "conversation.item.input_audio_transcription.completed":
                    turn["heard"] = event.transcript
                if event.type == "response.output_audio_transcript.done":
                    turn["answered"] = event.transcript
                if event.type == "response.done":
                    turn["status"] = event.response.status
                    break
            out.append(turn)
    print(json.dumps(out))


async def bad(base):
    import websockets
    url = base.replace("http://", "ws://").rstrip("/") + "/realtime?intent=transcription"
    codes = []
    async with websockets.connect(url, additional_headers={"Authorization": "Bearer sk-unused"}) as ws:
        created = json.loads(await ws.recv())
        codes.append(created["type"])
        for frame in ["not json", b"\x00\x01binary", json.dumps({"type": "no.such.event"}),
                      json.dumps({"type": "input_audio_buffer.append", "audio": "%%%not base64%%%"}),
                      json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(b"\x01").decode()}),
                      json.dumps({"type": "session.update",
                                  "session": {"audio": {"input": {"format": {"type": "audio/pcmu"}}}}}),
                      json.dumps({"type": "input_audio_buffer.commit"}),
                      json.dumps({"type": "input_audio_buffer.clear"})]:
            await ws.send(frame)
            reply = json.loads(await ws.recv())
            codes.append(reply["error"]["code"] if reply["type"] == "error" else reply["type"])
    print(json.dumps(codes))


async def until_close(url, key):
    """What a connection that sends nothing gets: its events (type, or error code) and the close code."""
    import websockets
    got = []
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as ws:
        try:
            while True:
                event = json.loads(await ws.recv())
                got.append(event["error"]["code"] if event["type"] == "error" else event["type"])
        except websockets.ConnectionClosed as closed:
            return got + [closed.rcvd.code if closed.rcvd else None]


def gauges(base):
    import urllib.request
    text = urllib.request.urlopen(base.rsplit("/v1", 1)[0] + "/metrics").read().decode()
    return {line.split()[0]: float(line.split()[1]) for line in text.splitlines()
            if line.startswith(("voxpipe_serve_turns_running ", "voxpipe_serve_live_sessions ",
                                "voxpipe_serve_live_responses_total"))}


async def limits(base, key, wav):
    import time
    import websockets
    url = base.replace("http://", "ws://").rstrip("/") + "/realtime"
    out = {}
    out["wrong_key"] = await until_close(url, "sk-wrong")

    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as a:
        out["first"] = json.loads(await a.recv())["type"]
        out["second"] = await until_close(url, key)
        audio, rate = pcm(wav)
        await a.send(json.dumps({"type": "session.update", "session": {
            "type": "realtime", "audio": {"input": {"format": {"type": "audio/pcm", "rate": rate}}}}}))
        step = rate // 5 * 2
        for start in range(0, len(audio) + rate * 2, step):
            chunk = audio[start:start + step] or b"\0\0" * (rate // 5)
            await a.send(json.dumps({"type": "input_audio_buffer.append",
                                     "audio": base64.b64encode(chunk).decode()}))
        while json.loads(await a.recv())["type"] != "response.created":
            pass
    # The client has gone as its answer began: nothing of it may keep running.
    left = time.monotonic()
    while True:
        now = gauges(base)
        ended = sum(v for k, v in now.items() if k.startswith("voxpipe_serve_live_responses_total"))
        if now.get("voxpipe_serve_turns_running") == 0 and now.get("voxpipe_serve_live_sessions") == 0 and ended:
            break
        if time.monotonic() - left > 30:
            break
        await asyncio.sleep(0.05)
    out["after_leaving"] = now
    out["idle"] = await until_close(url, key)

    # Committing by hand, the buffer holds at most --max-clip seconds: one append more is refused.
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as c:
        await c.recv()
        await c.send(json.dumps({"type": "session.update", "session": {"type": "realtime", "audio": {"input": {
            "format": {"type": "audio/pcm", "rate": 16000}, "turn_detection": None}}}}))
        assert json.loads(await c.recv())["type"] == "session.updated"
        second = base64.b64encode(b"\0\1" * 16000).decode()
        got = []
        for _ in range(4):
            await c.send(json.dumps({"type": "input_audio_buffer.append", "audio": second}))
        await c.send(json.dumps({"type": "input_audio_buffer.clear"}))
        while not got or got[-1] != "input_audio_buffer.cleared":
            event = json.loads(await c.recv())
            got.append(event["error"]["code"] if event["type"] == "error" else event["type"])
        out["full"] = got
    print(json.dumps(out))


mode = sys.argv[1]
if mode == "stream":
    stream(sys.argv[2], sys.argv[3])
elif mode == "transcribe":
    asyncio.run(transcribe(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6],
                           sys.argv[7:]))
elif mode == "converse":
    asyncio.run(converse(sys.argv[2], int(sys.argv[3]), sys.argv[4:]))
elif mode == "turns":
    asyncio.run(turns(sys.argv[2], int(sys.argv[3]), sys.argv[4:]))
elif mode == "bad":
    asyncio.run(bad(sys.argv[2]))
elif mode == "limits":
    asyncio.run(limits(sys.argv[2], sys.argv[3], sys.argv[4]))
