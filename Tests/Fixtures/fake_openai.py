#!/usr/bin/env python3
"""An OpenAI-compatible server on 127.0.0.1 for voxpipe's tests: the real wire formats
(multipart uploads, JSON, WAV) and faults on demand.

    fake_openai.py KEY [PORTFILE]   writes the port it listens on (to PORTFILE, else stdout),
                                    then serves until killed

Endpoints: GET /v1/models, POST /v1/audio/transcriptions, POST /v1/chat/completions,
POST /v1/audio/speech, all checking `Authorization: Bearer KEY`. Control: POST /_faults with
a JSON list of faults, each {"path": "/v1/...", "kind": "status"|"stall"|"hold"|"truncate"|"invalid-json"|"quota"|
"echo-html"|"echo", "status": 500, "retryAfter": 1, "seconds": 5, "count": 1}, served to the next matching requests
("echo-html": an HTML page listing the request's headers, the Authorization header first, as a misconfigured
proxy answers; "echo": a normal answer whose text (transcription, chat reply) or audio (speech, in a chunk of
its own) holds the Authorization header);
GET /_log lists the requests seen (method, path, time, authorized; a chat request's messages) with no
secret in it. A "hold" fault keeps its request waiting until POST /_release (then answers 500), so a
test can keep a request in flight for as long as it needs, whatever the machine's speed. POST /_script with a JSON list of chat `message` objects (content, tool_calls, in the
real wire format) queues answers for the next chat requests that offer `tools`, one each."""
import io
import json
import math
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEY = sys.argv[1]
FAULTS = []
SCRIPT = []
LOG = []
RELEASED = threading.Event()
LOCK = threading.Lock()


def wav(seconds, rate=24000, freq=330.0):
    n = int(seconds * rate)
    data = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * freq * i / rate))) for i in range(n))
    return b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data" + struct.pack("<I", len(data)) + data


def wav_with_chunk(audio, chunk_id, payload):
    """A WAV with an extra chunk before its data chunk (readers skip chunks they do not know)."""
    if len(payload) % 2:
        payload += b" "
    extra = chunk_id + struct.pack("<I", len(payload)) + payload
    body = audio[12:36] + extra + audio[36:]
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WAVE" + body


def multipart(body, content_type):
    boundary = content_type.split("boundary=")[1].encode()
    fields, files = {}, {}
    for part in body.split(b"--" + boundary):
        if b"\r\n\r\n" not in part:
            continue
        head, value = part.split(b"\r\n\r\n", 1)
        value = value[:-2] if value.endswith(b"\r\n") else value
        name = head.split(b'name="')[1].split(b'"')[0].decode()
        if b"filename=" in head:
            files[name] = value
        else:
            fields[name] = value.decode()
    return fields, files


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, content_type="application/json", headers=None, length=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def error(self, status, message, code=None, headers=None):
        self.send(status, json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": code}}).encode(), headers=headers)

    def fault(self):
        with LOCK:
            for f in FAULTS:
                if f.get("path", self.path) == self.path and f.get("count", 1) > 0:
                    f["count"] = f.get("count", 1) - 1
                    return dict(f)
        return None

    def handle_request(self, method):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        authorized = self.headers.get("Authorization") == f"Bearer {KEY}"
        with LOCK:
            LOG.append({"method": method, "path": self.path, "time": time.time(), "authorized": authorized, "bytes": len(body)})
        if self.path == "/_faults":
            with LOCK:
                FAULTS.extend(json.loads(body))
            return self.send(200, b"{}")
        if self.path == "/_script":
            with LOCK:
                SCRIPT.extend(json.loads(body))
            return self.send(200, b"{}")
        if self.path == "/_release":
            RELEASED.set()
            return self.send(200, b"{}")
        if self.path == "/_log":
            with LOCK:
                return self.send(200, json.dumps(LOG).encode())
        f = self.fault()
        if f:
            kind = f.get("kind", "status")
            if kind == "status":
                headers = {"Retry-After": str(f["retryAfter"])} if "retryAfter" in f else None
                return self.error(f.get("status", 500), f"injected {f.get('status', 500)}", headers=headers)
            if kind == "quota":
                return self.error(429, "You exceeded your current quota.", code="insufficient_quota")
            if kind == "hold":
                RELEASED.wait()
                self.close_connection = True
                return self.error(500, "held")
            if kind == "stall":
                time.sleep(f.get("seconds", 5))
                self.close_connection = True
                return self.error(500, "stalled")
            if kind == "truncate":
                self.close_connection = True
                return self.send(200, b'{"text": "cut sh', length=200)
            if kind == "invalid-json":
                return self.send(200, b"<html>not json</html>", content_type="text/html")
            if kind == "echo-html":
                names = sorted(self.headers.keys(), key=lambda k: k.lower() != "authorization")
                listing = "\n".join(f"{k}: {self.headers[k]}" for k in names)
                page = f"<html><body><h1>Bad gateway</h1><pre>{listing}</pre></body></html>"
                return self.send(f.get("status", 200), page.encode(), content_type="text/html")
            echo = (self.headers.get("Authorization") or "") if kind == "echo" else None
        else:
            echo = None
        if not authorized:
            return self.error(401, "Incorrect API key provided: " + (self.headers.get("Authorization") or "none")[-12:], code="invalid_api_key")
        if self.path == "/v1/models" and method == "GET":
            return self.send(200, json.dumps({"object": "list", "data": [{"id": "whisper-1"}, {"id": "gpt-4o-mini"}, {"id": "tts-1"}]}).encode())
        if self.path == "/v1/audio/transcriptions":
            fields, files = multipart(body, self.headers["Content-Type"])
            audio = files.get("file", b"")
            if not audio.startswith(b"RIFF"):
                return self.error(400, "file must be audio")
            seconds = (len(audio) - 44) / 2 / struct.unpack("<I", audio[24:28])[0]
            words = [{"word": w, "start": round(i * seconds / 3, 3), "end": round((i + 1) * seconds / 3, 3)} for i, w in enumerate(["guten", "morgen", "lehrer"])]
            text = " Guten Morgen Lehrer" + (f" ({echo})" if echo is not None else "")
            return self.send(200, json.dumps({"task": "transcribe", "language": fields.get("language", "german"), "duration": seconds,
                                              "text": text, "words": words, "model": fields.get("model")}).encode())
        if self.path == "/v1/chat/completions":
            request = json.loads(body)
            with LOCK:
                LOG[-1]["messages"] = request["messages"]
                scripted = SCRIPT.pop(0) if SCRIPT and "tools" in request else None
            if scripted is not None:
                finish = "tool_calls" if scripted.get("tool_calls") else "stop"
                return self.send(200, json.dumps({"id": "chatcmpl-2", "object": "chat.completion", "model": request["model"],
                                                  "choices": [{"index": 0, "message": dict({"role": "assistant", "content": None}, **scripted),
                                                               "finish_reason": finish}]}).encode())
            turns = sum(1 for m in request["messages"] if m["role"] == "user")
            last = request["messages"][-1]["content"]
            content = f"Turn {turns}: Sehr gut! Du sagtest: {last}. ({request['model']})" + (f" [{echo}]" if echo is not None else "")
            return self.send(200, json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "model": request["model"],
                                              "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}).encode())
        if self.path == "/v1/audio/speech":
            request = json.loads(body)
            audio = wav(0.05 * len(request["input"]) + 0.2)
            if echo is not None:
                audio = wav_with_chunk(audio, b"note", echo.encode())
            if request.get("response_format") == "pcm":
                return self.send(200, audio[44:], content_type="audio/pcm")
            return self.send(200, audio, content_type="audio/wav")
        return self.error(404, "no such endpoint")

    def do_GET(self):
        self.handle_request("GET")

    def do_POST(self):
        self.handle_request("POST")


def watch_parent():
    """Exit with the test process that started us, however it ended."""
    import os
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(0.3)
    os._exit(0)


threading.Thread(target=watch_parent, daemon=True).start()
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
if len(sys.argv) > 2:
    with open(sys.argv[2] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(sys.argv[2] + ".tmp", sys.argv[2])
else:
    print(server.server_address[1], flush=True)
server.serve_forever()
