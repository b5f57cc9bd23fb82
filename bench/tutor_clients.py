#!/usr/bin/env python3
"""Clients of `voxpipe serve` for make bench (issue 23), stdlib only, loopback only.

  tutor_clients.py turns --port P --clip F [-n 20] [--warmup 1]
      one client, one turn after the other: POST {prefix}/process-audio with the clip as the tutor
      app sends it ({audio: base64, mimeType}); prints one line `p50_ms p99_ms ok n` and, on
      stderr, the first answer's transcription and reply.
  tutor_clients.py flood --port P --clip F --pid PID [-c 16] [--seconds 60]
      C clients (threads, keep-alive, each on its own channel as separate devices are) send turns
      back to back for S seconds; a 503 is honoured with its Retry-After before the next try.
      Requests sent within the window are all waited for. Prints a few `key value` lines: status
      counts, p50/p99 of the 200s and of the 503s, and the server's VmRSS before, the peak seen
      (sampled every 0.2 s), VmHWM, and VmRSS a few seconds after the load.
"""
import argparse, base64, http.client, json, sys, threading, time

p = argparse.ArgumentParser()
p.add_argument("mode", choices=["turns", "flood"])
p.add_argument("--port", type=int, required=True)
p.add_argument("--clip", required=True, nargs="+", help="one clip or several, sent in turn")
p.add_argument("--mime", default="audio/m4a")
p.add_argument("--prefix", default="/api/agora")
p.add_argument("-n", type=int, default=20)
p.add_argument("--warmup", type=int, default=1)
p.add_argument("-c", type=int, default=16)
p.add_argument("--seconds", type=float, default=60)
p.add_argument("--pid", type=int)
p.add_argument("--settle", type=float, default=5)
a = p.parse_args()
audios = [base64.b64encode(open(clip, "rb").read()).decode() for clip in a.clip]
path = a.prefix + "/process-audio"


def body(channel=None, k=0):
    fields = {"audio": audios[k % len(audios)], "mimeType": a.mime}
    if channel:
        fields["channel"] = channel
    return json.dumps(fields).encode()


def connect():
    return http.client.HTTPConnection("127.0.0.1", a.port, timeout=900)


def post(conn, payload):
    """(status, seconds, response) on conn; reconnects when the server closes."""
    t = time.perf_counter()
    conn.request("POST", path, body=payload, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    return r.status, time.perf_counter() - t, r, data


def quantile(values, f):
    v = sorted(values)
    return v[min(len(v) - 1, int(f * len(v)))] * 1000 if v else float("nan")


def vm(pid, key):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


if a.mode == "turns":
    conn = connect()
    times, ok, first = [], 0, None
    for i in range(a.warmup + a.n):
        status, dt, r, data = post(conn, body(k=max(0, i - a.warmup)))
        if r.getheader("Connection", "").lower() == "close":
            conn.close(); conn = connect()
        if i < a.warmup:
            continue
        times.append(dt)
        if status == 200:
            ok += 1
            if first is None:
                answer = json.loads(data)
                first = f"transcription {answer.get('transcription')!r}, reply {answer.get('reply')!r}, audio {len(answer.get('audio', ''))} base64 chars"
        else:
            print(f"turn {i}: HTTP {status}: {data[:200]!r}", file=sys.stderr)
    print(first or "no 200 answer", file=sys.stderr)
    print(f"{quantile(times, 0.5):.0f} {quantile(times, 0.99):.0f} {ok} {len(times)}")
    sys.exit(0)

# flood
lock = threading.Lock()
results = []  # (status, seconds)
stop_at = time.perf_counter() + a.seconds
done = threading.Event()
rss = {"before": vm(a.pid, "VmRSS"), "peak": 0}


def client(k):
    conn = connect()
    payload = body(f"bench-device-{k}")
    while time.perf_counter() < stop_at:
        try:
            status, dt, r, _ = post(conn, payload)
        except (OSError, http.client.HTTPException):
            with lock:
                results.append((0, 0.0))
            conn.close(); conn = connect()
            continue
        with lock:
            results.append((status, dt))
        if r.getheader("Connection", "").lower() == "close":
            conn.close(); conn = connect()
        if status == 503:
            try:
                wait = float(r.getheader("Retry-After", "1"))
            except ValueError:
                wait = 1
            time.sleep(max(0.0, min(wait, stop_at - time.perf_counter())))


def sampler():
    while not done.is_set():
        rss["peak"] = max(rss["peak"], vm(a.pid, "VmRSS"))
        done.wait(0.2)


s = threading.Thread(target=sampler); s.start()
start = time.perf_counter()
threads = [threading.Thread(target=client, args=(k,)) for k in range(a.c)]
for t in threads: t.start()
for t in threads: t.join()
wall = time.perf_counter() - start
done.set(); s.join()
hwm = vm(a.pid, "VmHWM")
time.sleep(a.settle)
after = vm(a.pid, "VmRSS")
counts = {}
for status, _ in results:
    counts[status] = counts.get(status, 0) + 1
ok = [dt for st, dt in results if st == 200]
busy = [dt for st, dt in results if st == 503]
print(f"wall {wall:.1f}")
print(f"counts {counts.get(200, 0)} {counts.get(503, 0)} {counts.get(504, 0)} "
      f"{sum(n for st, n in counts.items() if st not in (200, 503, 504))}")
print("others " + (json.dumps({str(k): v for k, v in sorted(counts.items()) if k not in (200, 503, 504)}) or "{}"))
print(f"ok_ms {quantile(ok, 0.5):.0f} {quantile(ok, 0.99):.0f} {max(ok) * 1000 if ok else float('nan'):.0f}")
print(f"busy_ms {quantile(busy, 0.5):.1f} {quantile(busy, 0.99):.1f} {max(busy) * 1000 if busy else float('nan'):.1f}")
print(f"rss_kib {rss['before']} {max(rss['peak'], rss['before'])} {hwm} {after}")
