#!/usr/bin/env python3
"""`switchyard serve` end to end on a tiny synthetic model: the OpenAI endpoints, streaming,
prompt reuse, parallel clients, errors, the API key, a client that leaves, and SIGTERM.

usage: serve_test.py SWITCHYARD_BINARY WORK_DIR
"""
import json
import os
import re
import socket
import sys
import threading
import time

from serve_harness import KEY, Harness

h = Harness(sys.argv[1], sys.argv[2])
check, request, stream, start, stop = h.check, h.request, h.stream, h.start, h.stop
log = h.log


server, port = start("-np", "2", "-c", "512", "-a", "tiny")
try:
    # Health needs no key; everything else does.
    status, body = request(port, "GET", "/health", key=None)
    check(status == 200 and body == {"status": "ok"}, f"/health: {status} {body}")
    status, body = request(port, "GET", "/v1/models", key=None)
    check(status == 401 and body["error"]["type"] == "authentication_error",
          f"no key: {status} {body}")
    status, body = request(port, "GET", "/v1/models", key="wrong")
    check(status == 401, f"wrong key: {status}")
    status, body = request(port, "GET", "/v1/models")
    check(status == 200 and body["data"][0]["id"] == "tiny", f"/v1/models: {status} {body}")

    # A completion, then the same prompt again: all but its last token come from the cache.
    req = {"prompt": "The quick brown fox", "max_tokens": 12, "temperature": 0,
           "ignore_eos": True}
    status, first = request(port, "POST", "/v1/completions", req)
    check(status == 200, f"completion: {status} {first}")
    check(first["object"] == "text_completion" and first["choices"][0]["finish_reason"] == "length",
          f"completion object: {first}")
    check(first["usage"]["completion_tokens"] == 12, f"usage: {first['usage']}")
    status, again = request(port, "POST", "/v1/completions", req)
    check(again["choices"][0]["text"] == first["choices"][0]["text"], "greedy repeat differs")
    cached = again["usage"]["prompt_tokens_details"]["cached_tokens"]
    check(cached == again["usage"]["prompt_tokens"] - 1, f"cached tokens {cached}")

    # Streamed: the same text in pieces, a finish reason, usage on request, [DONE] last.
    events = stream(port, "/v1/completions",
                    dict(req, stream=True, stream_options={"include_usage": True}))
    check(events and events[-1] == "[DONE]", "stream ends with [DONE]")
    text = "".join(e["choices"][0]["text"] for e in events[:-1] if e["choices"])
    check(text == first["choices"][0]["text"], f"streamed text {text!r}")
    check(events[-2]["choices"][0]["finish_reason"] == "length", f"last chunk {events[-2]}")
    check(events[-2].get("usage", {}).get("completion_tokens") == 12, "usage in the stream")

    # Logprobs: one entry per token, the top alternatives sorted.
    status, lp = request(port, "POST", "/v1/completions",
                         dict(req, max_tokens=3, logprobs=3))
    entries = lp["choices"][0]["logprobs"]
    check(len(entries["tokens"]) == 3 and len(entries["top_logprobs"][0]) == 3,
          f"logprobs {entries}")

    # Chat, plain and streamed.
    chat = {"messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": "Hello there"}],
            "max_tokens": 6, "temperature": 0, "ignore_eos": True}
    status, reply = request(port, "POST", "/v1/chat/completions", chat)
    check(status == 200 and reply["object"] == "chat.completion", f"chat: {status} {reply}")
    check(reply["choices"][0]["message"]["role"] == "assistant", "chat role")
    events = stream(port, "/v1/chat/completions", dict(chat, stream=True))
    check(events[0]["choices"][0]["delta"].get("role") == "assistant", "first delta's role")
    streamed = "".join(e["choices"][0]["delta"].get("content", "") +
                       e["choices"][0]["delta"].get("reasoning_content", "")
                       for e in events[:-1] if e["choices"])
    whole = reply["choices"][0]["message"]["content"] + \
        reply["choices"][0]["message"].get("reasoning_content", "")
    check(streamed == whole, f"streamed chat {streamed!r} vs {whole!r}")

    # Tokenize and back.
    status, t = request(port, "POST", "/tokenize", {"content": "Hello world"})
    check(status == 200 and all(isinstance(x, int) for x in t["tokens"]), f"tokenize {t}")
    status, d = request(port, "POST", "/detokenize", {"tokens": t["tokens"]})
    check(d.get("content") == "Hello world", f"detokenize {d}")

    # Bad requests: OpenAI error objects naming the field.
    status, e = request(port, "POST", "/v1/completions", raw="{not json")
    check(status == 400 and "not valid JSON" in e["error"]["message"], f"bad JSON: {status} {e}")
    status, e = request(port, "POST", "/v1/completions", dict(req, max_tokens="many"))
    check(status == 400 and e["error"]["param"] == "max_tokens", f"max_tokens type: {e}")
    status, e = request(port, "POST", "/v1/completions", dict(req, max_tokens=100000))
    check(status == 400 and e["error"]["param"] == "max_tokens", f"max_tokens size: {e}")
    status, e = request(port, "POST", "/v1/completions", dict(req, temperature=-1))
    check(status == 400 and e["error"]["param"] == "temperature", f"temperature: {e}")
    status, e = request(port, "POST", "/v1/completions", dict(req, model="other"))
    check(status == 404 and e["error"]["param"] == "model", f"unknown model: {status} {e}")
    status, e = request(port, "POST", "/v1/completions", dict(req, prompt="word " * 2000))
    check(status == 413 and e["error"]["param"] == "prompt", f"long prompt: {status} {e}")
    status, e = request(port, "POST", "/v1/chat/completions", {"messages": []})
    check(status == 400 and e["error"]["param"] == "messages", f"no messages: {e}")
    status, e = request(port, "POST", "/v1/chat/completions",
                        {"messages": [{"role": "wizard", "content": "x"}]})
    check(status == 400 and "wizard" in e["error"]["message"], f"bad role: {e}")
    status, e = request(port, "GET", "/v2/nothing")
    check(status == 404 and "error" in e, f"unknown route: {status} {e}")
    status, e = request(port, "POST", "/v1/completions", raw="x" * (9 << 20))
    check(status == 413, f"huge body: {status}")

    # Four clients on two slots: all answered, each as it would be alone.
    results = {}

    def client(i):
        results[i] = request(port, "POST", "/v1/completions",
                             {"prompt": f"Client {i} says", "max_tokens": 10,
                              "temperature": 0, "ignore_eos": True})

    threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    for i in range(4):
        status, body = results[i]
        check(status == 200 and body["usage"]["completion_tokens"] == 10, f"client {i}: {body}")
        status, alone = request(port, "POST", "/v1/completions",
                                {"prompt": f"Client {i} says", "max_tokens": 10,
                                 "temperature": 0, "ignore_eos": True})
        check(alone["choices"][0]["text"] == body["choices"][0]["text"],
              f"client {i} differs from alone")

    # A streaming client that leaves: its slot is free again at once.
    sock = socket.create_connection(("127.0.0.1", port))
    payload = json.dumps({"prompt": "Long story", "max_tokens": 400, "stream": True,
                          "ignore_eos": True})
    sock.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
                  f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
                  + payload).encode())
    sock.recv(4096)
    sock.close()
    busy = None
    for _ in range(100):
        status, metrics = request(port, "GET", "/metrics")
        busy = re.search(r"^switchyard_requests_processing (\S+)$", metrics, re.M)
        if busy and float(busy.group(1)) == 0:
            break
        time.sleep(0.1)
    check(busy and float(busy.group(1)) == 0, "the left client's slot was not freed")
    check(re.search(r"^switchyard_requests_total \d+", metrics, re.M) is not None, "metrics")
    finished = re.search(r"^switchyard_tokens_predicted_total (\d+)", metrics, re.M)
    check(finished and int(finished.group(1)) < 400 + 200, "the left client's request went on")
finally:
    stop(server)

# A real DeepSeek template from a file (--chat-template-file): tools and an earlier tool call
# in the history are laid out by it, and the answer comes back.
template = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "chat-templates",
                        "deepseek-ai-DeepSeek-V3.1.jinja")
server, port = start("-c", "1024", "--chat-template-file", template)
check(any("--chat-template-file" in l for l in log), "the template's source is not reported")
try:
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}]
    history = [{"role": "user", "content": "Weather in Paris?"},
               {"role": "assistant", "content": "", "tool_calls": [{
                   "id": "call_0", "type": "function",
                   "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
               {"role": "tool", "content": "18 C, sunny"}]
    status, reply = request(port, "POST", "/v1/chat/completions",
                            {"messages": history, "tools": tools, "max_tokens": 4,
                             "temperature": 0, "ignore_eos": True})
    check(status == 200 and reply["object"] == "chat.completion", f"tools chat: {status} {reply}")
    check(reply["usage"]["prompt_tokens"] > 40, f"the tools were not laid out: {reply['usage']}")
    events = stream(port, "/v1/chat/completions",
                    {"messages": history, "tools": tools, "max_tokens": 4, "stream": True,
                     "ignore_eos": True})
    check(events[-1] == "[DONE]", "tools stream")
finally:
    stop(server)

h.finish("serve")
