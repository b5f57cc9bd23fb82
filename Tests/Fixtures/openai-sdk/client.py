"""voxpipe serve's /v1/audio routes through the official OpenAI Python SDK.

Usage: client.py BASE_URL CLIP SPEECH_OUT; prints one JSON object of what each call gave.
"""
import json
import sys

from openai import OpenAI

base_url, clip, speech_out = sys.argv[1:4]
client = OpenAI(base_url=base_url, api_key="sk-unused", max_retries=0, timeout=1200)
out = {}
for response_format in ["json", "text", "srt", "vtt", "verbose_json"]:
    with open(clip, "rb") as audio:
        extra = {"timestamp_granularities": ["word", "segment"]} if response_format == "verbose_json" else {}
        result = client.audio.transcriptions.create(
            model="whisper-1", file=audio, response_format=response_format, language="de", **extra)
    if response_format in ("json", "verbose_json"):
        out[response_format] = result.text
        if response_format == "verbose_json":
            out["segments"] = len(result.segments or [])
    else:
        out[response_format] = result
speech = client.audio.speech.create(model="tts-1", voice="alloy", input="Guten Morgen!", response_format="wav")
speech.write_to_file(speech_out)
out["models"] = [model.id for model in client.models.list()]
print(json.dumps(out))
