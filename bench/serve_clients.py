#!/usr/bin/env python3
"""Throughput of `switchyard serve` with 1, 2, 4, ... simultaneous streaming clients, and the
time to the first token of a long conversation's next turn with and without prompt reuse.

usage: serve_clients.py SWITCHYARD MODEL [--clients 1,2,4,8] [--tokens 64] [--prompt 32]
                        [--history 2000] [--threads N]

Each round starts N clients at once; each streams one completion of --tokens tokens (greedy,
end of text ignored) after a --prompt-token prompt of its own. Reported per N: the aggregate
generated tokens per second over the round (first request sent to last token received), the
mean of each client's own decode rate, and the median time to first token. The memory
bandwidth (bench/membw.sh, measured in the same run) and the model's weight bytes per token
(`run` prints them) give the bound: N sequences share one read of the weights per step, so the
aggregate rate may grow up to N times the single-stream bound until compute is the limit.

Then one slot holds a --history-token conversation; the next turn (the history, the reply and
a new message) is timed to its first token twice: right after (the slot's cache is reused) and
after an unrelated request took the slot (everything evaluated again).
"""
import argparse
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

p = argparse.ArgumentParser()
p.add_argument("binary")
p.add_argument("model")
p.add_argument("--clients", default="1,2,4,8")
p.add_argument("--tokens", type=int, default=64)
p.add_argument("--prompt", type=int, default=32)
p.add_argument("--history", type=int, default=2000)
p.add_argument("--threads", type=int, default=0)
args = p.parse_args()
clients = [int(x) for x in args.clients.split(",")]
n_slots = max(clients)
here = os.path.dirname(os.path.abspath(__file__))

membw = subprocess.run([os.path.join(here, "membw.sh")], capture_output=True, text=True)
membw_gbs = None
m = re.search(r"([0-9.]+)\s*GB/s", membw.stdout)
if m:
    membw_gbs = float(m.group(1))

ctx = n_slots * max(args.prompt + args.tokens + 16, args.history + 600)  # -c is split by -np
cmd = [args.binary, "serve", "-m", args.model, "--port", "0", "-np", str(n_slots), "-c",
       str(ctx)]
if args.threads:
    cmd += ["-t", str(args.threads)]
server = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
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


def tokenize(text):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("POST", "/tokenize", json.dumps({"content": text}))
    out = json.loads(conn.getresponse().read())["tokens"]
    conn.close()
    return out


def stream(prompt, max_tokens, out):
    """Streams one completion; out gets (sent, first token, last token, tokens)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    sent = time.time()
    conn.request("POST", "/v1/completions",
                 json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                             "ignore_eos": True, "stream": True}))
    resp = conn.getresponse()
    if resp.status != 200:
        sys.exit(f"HTTP {resp.status}: {resp.read().decode()}")
    first = last = None
    n = 0
    buf = b""
    while True:
        chunk = resp.read1(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            if not event.startswith(b"data: ") or event == b"data: [DONE]":
                continue
            data = json.loads(event[6:])
            if data["choices"] and data["choices"][0]["finish_reason"] is None:
                now = time.time()
                first = first or now
                last = now
                n += 1
    conn.close()
    out.append((sent, first, last, n))


words = "the of and to in is was for on that with as by at from his her an it be".split()


def text_of(n_tokens, salt):
    out, i = [], salt
    while len(tokenize(" ".join(out))) < n_tokens:
        out.append(words[i % len(words)] + str(i % 97))
        i += 7
    return " ".join(out)


# Warm-up: first touches of the weights and the compute buffers.
stream(text_of(8, 0), 4, [])

rows = []
for n in clients:
    results = []
    prompts = [text_of(args.prompt, 1000 * n + i) for i in range(n)]
    threads = [threading.Thread(target=stream, args=(prompts[i], args.tokens, results))
               for i in range(n)]
    start = time.time()
    [t.start() for t in threads]
    [t.join() for t in threads]
    end = max(r[2] for r in results)
    total = sum(r[3] for r in results)
    per_client = [(r[3] - 1) / (r[2] - r[1]) for r in results if r[3] > 1 and r[2] > r[1]]
    ttft = statistics.median(r[1] - r[0] for r in results)
    rows.append((n, total / (end - start), statistics.mean(per_client), ttft))

# Prompt reuse: a long conversation's next turn.
history = text_of(args.history, 7)
first_turn = []
stream(history, 16, first_turn)
next_turn = history + " and then a new question follows here"
reuse, again = [], []
stream(next_turn, 4, reuse)
# The same turn behind another first sentence: no slot holds any of it.
stream("A different start. " + next_turn, 4, again)

server.send_signal(signal.SIGTERM)
server.wait(timeout=60)

run = subprocess.run([args.binary, "run", "-m", args.model, "-p", "x", "-n", "2"],
                     capture_output=True, text=True)
m = re.search(r"weights read per generated token: ([0-9.]+) MiB", run.stderr)
weights_mib = float(m.group(1)) if m else None
print(f"memory bandwidth: {membw_gbs} GB/s (bench/membw.sh); weights read per token: "
      f"{weights_mib} MiB")
if membw_gbs and weights_mib:
    print(f"single-stream bound: {membw_gbs * 1e9 / (weights_mib * 2**20):.1f} t/s")
print("| clients | aggregate t/s | per-client t/s | median TTFT s |")
print("|--:|--:|--:|--:|")
for n, agg, per, ttft in rows:
    print(f"| {n} | {agg:.1f} | {per:.1f} | {ttft:.3f} |")
print(f"\nnext turn of a {args.history}-token conversation, time to first token: "
      f"{reuse[0][1] - reuse[0][0]:.3f} s reusing the slot's cache, "
      f"{again[0][1] - again[0][0]:.3f} s evaluated from scratch")
