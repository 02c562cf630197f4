#!/usr/bin/env python3
"""A bounded load test of `switchyard serve` on loopback: CLIENTS concurrent clients send
REQUESTS requests in all, a mix of streamed and plain completions and chats, clients that
disconnect mid-stream, malformed and wrong bodies. Every request must be answered with the
status its kind expects (200, or 400/404/413 for the bad ones, 503 only when the queue is
full), the server must not crash, and at the end no slot may be busy and its resident memory
must be steady (the second half of the run may not grow it by more than GROWTH_MIB).

usage: load_test.py SWITCHYARD_BINARY WORK_DIR [--requests N] [--clients N] [--seed N]
Prints the figures (requests by kind and status, tokens, time, memory) and exits non-zero on
any failure.
"""
import argparse
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

parser = argparse.ArgumentParser()
parser.add_argument("binary")
parser.add_argument("work")
parser.add_argument("--requests", type=int, default=500)
parser.add_argument("--clients", type=int, default=8)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--growth-mib", type=float, default=64)
args = parser.parse_args()

os.makedirs(args.work, exist_ok=True)
model = os.path.join(args.work, "tiny.gguf")
if not os.path.exists(model):
    subprocess.run([args.binary, "make-model", "--preset", "tiny", "--type", "f32", "-o", model],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
# Under AddressSanitizer freed memory waits in a quarantine (256 MiB by default) before it is
# reused, which grows the resident set without a leak: a small one keeps the figure honest.
env = dict(os.environ)
if "ASAN_OPTIONS" in env:
    env["ASAN_OPTIONS"] += ":quarantine_size_mb=16:thread_local_quarantine_size_kb=256"
server = subprocess.Popen([args.binary, "serve", "-m", model, "--port", "0", "-np", "4",
                           "-c", "2048", "--max-queue", "64"],
                          stderr=subprocess.PIPE, text=True, env=env)
port = None
log = []
while True:
    line = server.stderr.readline()
    if not line:
        sys.exit("serve did not start:\n" + "".join(log))
    log.append(line)
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if m:
        port = int(m.group(1))
        break
threading.Thread(target=lambda: [log.append(l) for l in server.stderr], daemon=True).start()


def rss_mib():
    with open(f"/proc/{server.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


KINDS = ["completion", "completion_stream", "chat", "chat_stream", "disconnect", "bad_json",
         "bad_field", "unknown_model", "too_long"]
WEIGHTS = [20, 20, 15, 15, 10, 5, 5, 5, 5]
EXPECT = {"completion": {200}, "completion_stream": {200}, "chat": {200}, "chat_stream": {200},
          "disconnect": {None}, "bad_json": {400}, "bad_field": {400}, "unknown_model": {404},
          "too_long": {413}}

lock = threading.Lock()
counts = {}
failures = []
tokens = [0]
next_request = [0]


def one(kind, rng):
    max_tokens = rng.randint(1, 24)
    base = {"max_tokens": max_tokens, "temperature": rng.choice([0, 0.8]), "ignore_eos": True}
    path, body, raw = "/v1/completions", None, None
    if kind.startswith("completion"):
        body = dict(base, prompt="request " + str(rng.random()) * rng.randint(1, 20),
                    stream=kind.endswith("stream"))
    elif kind.startswith("chat"):
        path = "/v1/chat/completions"
        body = dict(base, messages=[{"role": "user", "content": "hi " * rng.randint(1, 30)}],
                    stream=kind.endswith("stream"))
    elif kind == "bad_json":
        raw = '{"prompt": "x", "max_tokens": '
    elif kind == "bad_field":
        body = dict(base, prompt="x", top_k="many")
    elif kind == "unknown_model":
        body = dict(base, prompt="x", model="nonexistent")
    elif kind == "too_long":
        body = dict(base, prompt="word " * 3000)
    if kind == "disconnect":
        sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        payload = json.dumps({"prompt": "go on", "max_tokens": 200, "stream": True,
                              "ignore_eos": True})
        sock.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                      f"application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
                      + payload).encode())
        sock.recv(rng.randint(1, 2048))
        sock.close()
        return None, 0
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    conn.request("POST", path, body=raw if raw is not None else json.dumps(body),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    text = resp.read().decode("utf-8", "replace")
    conn.close()
    n = 0
    if resp.status == 200:
        if body.get("stream"):
            chunks = [l[6:] for l in text.split("\n") if l.startswith("data: ")]
            if not chunks or chunks[-1] != "[DONE]":
                raise AssertionError(f"{kind}: stream did not end with [DONE]")
            n = sum(1 for c in chunks[:-1] if json.loads(c).get("choices") and
                    json.loads(c)["choices"][0].get("finish_reason") is None)
        else:
            n = json.loads(text)["usage"]["completion_tokens"]
    elif resp.status != 503:
        err = json.loads(text)
        if "error" not in err or "message" not in err["error"]:
            raise AssertionError(f"{kind}: {resp.status} without an OpenAI error object")
    return resp.status, n


def client(seed):
    rng = random.Random(seed)
    while True:
        with lock:
            if next_request[0] >= args.requests:
                return
            next_request[0] += 1
        kind = rng.choices(KINDS, WEIGHTS)[0]
        try:
            status, n = one(kind, rng)
        except Exception as e:  # noqa: BLE001 - any failure of a request is reported
            with lock:
                failures.append(f"{kind}: {type(e).__name__}: {e}")
            continue
        with lock:
            counts[(kind, status)] = counts.get((kind, status), 0) + 1
            tokens[0] += n
            if status not in EXPECT[kind] and status != 503:
                failures.append(f"{kind}: HTTP {status}, expected {sorted(EXPECT[kind], key=str)}")


start = time.time()
rss_start = rss_mib()
threads = [threading.Thread(target=client, args=(args.seed * 1000 + i,))
           for i in range(args.clients)]
[t.start() for t in threads]
rss_half = None
while any(t.is_alive() for t in threads):
    time.sleep(0.2)
    if rss_half is None and next_request[0] >= args.requests // 2:
        rss_half = rss_mib()
    if server.poll() is not None:
        failures.append(f"the server exited with {server.returncode} during the run")
        break
[t.join() for t in threads]
elapsed = time.time() - start

busy = None
if server.poll() is None:
    for _ in range(100):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/metrics")
        metrics = conn.getresponse().read().decode()
        conn.close()
        busy = float(re.search(r"^switchyard_requests_processing (\S+)$", metrics, re.M).group(1))
        if busy == 0:
            break
        time.sleep(0.1)
    if busy != 0:
        failures.append(f"{busy} slots still busy after the run")
rss_end = rss_mib() if server.poll() is None else 0
if rss_half is not None and rss_end - rss_half > args.growth_mib:
    failures.append(f"memory grew from {rss_half:.0f} to {rss_end:.0f} MiB in the second half")

server.send_signal(signal.SIGTERM)
try:
    code = server.wait(timeout=60)
except subprocess.TimeoutExpired:
    server.kill()
    code = None
if code != 0:
    failures.append(f"serve exited with {code} after SIGTERM")

print(f"load: {args.requests} requests from {args.clients} clients in {elapsed:.1f} s, "
      f"{tokens[0]} tokens generated")
for (kind, status), n in sorted(counts.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
    print(f"  {kind:18s} {str(status):5s} {n}")
print(f"  resident memory: {rss_start:.0f} MiB at the start, {rss_half or 0:.0f} at half, "
      f"{rss_end:.0f} at the end")
if failures:
    print("".join(log[-30:]), file=sys.stderr)
    for f in failures[:20]:
        print("FAIL:", f, file=sys.stderr)
    sys.exit(f"{len(failures)} failures")
print("load: every request answered as expected")
