#!/usr/bin/env python3
"""Load for `voxpipe serve` on loopback (make bench): N requests at concurrency C, each a fresh
HTTP/1.1 keep-alive connection per worker. Prints requests/s and p50/p99 latency, and with --rss
PID the server's resident memory every --every requests. Loopback only: refuses other hosts."""
import argparse, base64, http.client, json, statistics, sys, threading, time

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, required=True)
p.add_argument("--path", required=True)
p.add_argument("--body", help="JSON body file (POST); absent: GET")
p.add_argument("-n", type=int, default=100)
p.add_argument("-c", type=int, default=1)
p.add_argument("--rss", type=int, help="server pid: print its RSS every --every requests")
p.add_argument("--every", type=int, default=500)
p.add_argument("--label", default="")
a = p.parse_args()
body = open(a.body, "rb").read() if a.body else None

lock = threading.Lock()
latencies, statuses, done = [], {}, [0]
rss = []

def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

def worker(count):
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=600)
    for _ in range(count):
        t = time.perf_counter()
        if body is None:
            conn.request("GET", a.path)
        else:
            conn.request("POST", a.path, body=body, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        dt = time.perf_counter() - t
        with lock:
            latencies.append(dt)
            statuses[r.status] = statuses.get(r.status, 0) + 1
            done[0] += 1
            if a.rss and done[0] % a.every == 0:
                rss.append((done[0], rss_kib(a.rss)))
        if r.getheader("Connection", "").lower() == "close":
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=600)

if a.rss:
    rss.append((0, rss_kib(a.rss)))
start = time.perf_counter()
threads = [threading.Thread(target=worker, args=(a.n // a.c + (1 if i < a.n % a.c else 0),)) for i in range(a.c)]
for t in threads: t.start()
for t in threads: t.join()
wall = time.perf_counter() - start
lat = sorted(latencies)
q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))] * 1000
print(f"{a.label:<28} c={a.c:<3} n={a.n:<5} {a.n / wall:8.2f} req/s   p50 {q(0.50):8.1f} ms   p99 {q(0.99):8.1f} ms   statuses {dict(sorted(statuses.items()))}")
if a.rss:
    print("  RSS (MB) after N requests: " + ", ".join(f"{n}: {k / 1024:.1f}" for n, k in rss))
