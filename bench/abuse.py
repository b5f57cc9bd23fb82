#!/usr/bin/env python3
"""The abuse mix of issue 36 against `voxpipe serve` on loopback, beside a learner's turns (make bench).

  abuse.py --port P --pid PID --clip F [--seconds 60]

For S seconds, all at once:
  - a learner: one tutor turn after the other (POST process-audio, its own session cookie);
  - 40 connections trickling a request a byte every 2 s (heads and bodies);
  - joins as fast as one client can send them;
  - 16-MB base64 process-audio bodies, six at a time;
  - 4-KB unpunctuated texts to /v1/audio/speech, two at a time;
  - /healthz probes every 0.1 s.
Then a burst of turns at a full server, for the time to a 503.
Prints `key value` lines: the learner's turn p50/p99 and statuses, /healthz p50/p99/max, joins by
status, the time to a 503 (p50/p99), and the server's VmRSS before, the peak seen (every 0.2 s),
VmHWM and VmRSS after the load has gone and the server has been idle for a few seconds.
Stdlib only; figures are printed, never judged.
"""
import argparse, base64, http.client, json, socket, threading, time

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--pid", type=int, required=True)
p.add_argument("--clip", required=True)
p.add_argument("--seconds", type=float, default=60)
p.add_argument("--prefix", default="/api/agora")
p.add_argument("--settle", type=float, default=5)
a = p.parse_args()
audio = base64.b64encode(open(a.clip, "rb").read()).decode()
stop = threading.Event()


def rss(field="VmRSS"):
    for line in open(f"/proc/{a.pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def pct(values, q):
    if not values:
        return 0
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def request(method, path, body=None, headers=None, conn=None, timeout=900):
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", a.port, timeout=timeout)
    t = time.perf_counter()
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        r.read()
        return r.status, time.perf_counter() - t, r.getheader("Set-Cookie")
    except Exception:
        return 0, time.perf_counter() - t, None
    finally:
        if own:
            conn.close()


results = {"turns": [], "turn_status": {}, "health": [], "joins": {}, "big": {}, "speech": {}}
lock = threading.Lock()


def count(key, status):
    with lock:
        results[key][status] = results[key].get(status, 0) + 1


def learner():
    cookie = None
    body = json.dumps({"audio": audio, "mimeType": "audio/m4a"}).encode()
    while not stop.is_set():
        headers = {"Content-Type": "application/json"}
        if cookie:
            headers["Cookie"] = cookie
        status, seconds, set_cookie = request("POST", a.prefix + "/process-audio", body, headers)
        if set_cookie:
            cookie = set_cookie.split(";")[0]
        with lock:
            results["turns"].append(seconds * 1000)
        count("turn_status", status)


def trickler():
    head = (f"POST {a.prefix}/process-text HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: 100000\r\n\r\n").encode()
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", a.port))
            for byte in head + b'{"text": "' + b"a" * 100000:
                if stop.is_set():
                    break
                s.send(bytes([byte]))
                time.sleep(2)
            s.close()
        except OSError:
            time.sleep(0.5)


def joiner():
    n = 0
    while not stop.is_set():
        n += 1
        status, _, _ = request("POST", a.prefix + "/join-with-bot", json.dumps({"userId": f"flood{n}"}).encode(),
                               {"Content-Type": "application/json"})
        count("joins", status)


big = json.dumps({"audio": base64.b64encode(b"\0" * (12 * 1024 * 1024 - 1024)).decode()}).encode()


def big_body():
    while not stop.is_set():
        status, _, _ = request("POST", a.prefix + "/process-audio", big, {"Content-Type": "application/json"})
        count("big", status)


long_text = json.dumps({"input": ("und dann " * 456)[:4090], "response_format": "wav"}).encode()


def speech():
    while not stop.is_set():
        status, _, _ = request("POST", "/v1/audio/speech", long_text, {"Content-Type": "application/json"})
        count("speech", status)


def health():
    while not stop.is_set():
        status, seconds, _ = request("GET", "/healthz", timeout=60)
        with lock:
            results["health"].append(seconds * 1000 if status == 200 else 60000)
        time.sleep(0.1)


peak = [0]


def sampler():
    while not stop.is_set():
        peak[0] = max(peak[0], rss())
        time.sleep(0.2)


before = rss()
threads = [threading.Thread(target=f, daemon=True) for f in
           [learner, joiner, health, sampler] + [trickler] * 40 + [big_body] * 6 + [speech] * 2]
for t in threads:
    t.start()
time.sleep(a.seconds)
stop.set()
for t in threads:
    t.join(timeout=900)

# Time to a 503: the server full (every turn and queue place taken by a burst), one more turn.
refusals = []
burst_stop = threading.Event()


def burst():
    body = json.dumps({"text": "Hallo, wie geht es dir?"}).encode()
    while not burst_stop.is_set():
        status, seconds, _ = request("POST", a.prefix + "/process-text", body, {"Content-Type": "application/json"})
        if status == 503:
            with lock:
                refusals.append(seconds * 1000)


burst_threads = [threading.Thread(target=burst, daemon=True) for _ in range(48)]
for t in burst_threads:
    t.start()
time.sleep(min(20, a.seconds / 3))
burst_stop.set()
for t in burst_threads:
    t.join(timeout=900)

time.sleep(a.settle)
after = rss()
ok = [ms for ms in results["turns"]]
print("turns", len(ok), " ".join(f"{k}:{v}" for k, v in sorted(results["turn_status"].items())))
print("turn_ms", f"{pct(ok, 0.5):.0f}", f"{pct(ok, 0.99):.0f}")
print("health_ms", f"{pct(results['health'], 0.5):.1f}", f"{pct(results['health'], 0.99):.1f}",
      f"{max(results['health'] or [0]):.1f}")
for key in ("joins", "big", "speech"):
    print(key, " ".join(f"{k}:{v}" for k, v in sorted(results[key].items())))
print("busy_ms", f"{pct(refusals, 0.5):.1f}", f"{pct(refusals, 0.99):.1f}", len(refusals))
print("rss_kib", before, peak[0], rss("VmHWM"), after)
