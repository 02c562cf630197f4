#!/usr/bin/env python3
"""Output the request constrains, through `switchyard serve` on a tiny random model (which by
itself never writes tool-call markup or JSON): tool_choice "required" and a named function in
the markup of three templates (the built-in one, V3.1's, llama.cpp's R1 template that opens a
<think> block), parallel_tool_calls, tool_choice "none", response_format, json_schema and GBNF
grammars on both endpoints, and the requests that get a 400.

usage: constrained_test.py SWITCHYARD_BINARY WORK_DIR
"""
import json
import os
import sys

from serve_harness import Harness

h = Harness(sys.argv[1], sys.argv[2])
check, request, stream = h.check, h.request, h.stream
templates_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                             "chat-templates")

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather of a city",
        "parameters": {"type": "object",
                       "properties": {"city": {"enum": ["Paris", "Tokyo", "Lima"]},
                                      "celsius": {"type": "boolean"},
                                      "days": {"type": "integer"}},
                       "required": ["city", "celsius"]}}},
    {"type": "function", "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}},
                       "required": ["zone"], "additionalProperties": False}}},
]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


def valid_call(call, names=("get_weather", "get_time")):
    """Whether an OpenAI tool call names one of `names` with arguments its schema allows."""
    if call.get("type") != "function" or call["function"]["name"] not in names:
        return False
    args = json.loads(call["function"]["arguments"])
    if call["function"]["name"] == "get_time":
        return set(args) == {"zone"} and args["zone"] in ("UTC", "CET")
    return (args["city"] in ("Paris", "Tokyo", "Lima") and isinstance(args["celsius"], bool)
            and set(args) <= {"city", "celsius", "days"}
            and isinstance(args.get("days", 0), int))


def streamed_calls(events):
    """The tool calls of a stream put together from the deltas, by index; the finish reason."""
    calls, finish = {}, None
    for e in events[:-1]:
        if not e.get("choices"):
            continue
        choice = e["choices"][0]
        finish = choice.get("finish_reason") or finish
        for d in choice["delta"].get("tool_calls", []):
            c = calls.setdefault(d["index"], {"type": "function",
                                              "function": {"name": "", "arguments": ""}})
            c["function"]["name"] += d["function"].get("name", "")
            c["function"]["arguments"] += d["function"].get("arguments", "")
    return [calls[i] for i in sorted(calls)], finish


for label, extra in [("built-in template", []),
                     ("V3.1 template", ["--chat-template-file",
                                        os.path.join(templates_dir,
                                                     "deepseek-ai-DeepSeek-V3.1.jinja")]),
                     ("R1 template", ["--chat-template-file",
                                      os.path.join(templates_dir, "llama-cpp-deepseek-r1.jinja")])]:
    server, port = h.start("-c", "4096", *extra)
    try:
        # tool_choice "required": every seed gives one or more valid calls and nothing else.
        seen = set()
        for seed in range(1, 4):
            status, r = request(port, "POST", "/v1/chat/completions",
                                {"messages": MESSAGES, "tools": TOOLS, "tool_choice": "required",
                                 "max_tokens": 1500, "seed": seed, "temperature": 1.0})
            if not check(status == 200, f"{label} required: {status} {r}"):
                continue
            choice = r["choices"][0]
            calls = choice["message"].get("tool_calls", [])
            check(choice["finish_reason"] == "tool_calls" and calls, f"{label} required: {r}")
            check(all(valid_call(c) for c in calls), f"{label} invalid call: {calls}")
            check(choice["message"]["content"] is None, f"{label} content beside the calls: {r}")
            check(not choice["message"].get("reasoning_content"),
                  f"{label}: the forced calls came out as reasoning: {r}")
            seen.update(c["function"]["arguments"] for c in calls)
        check(len(seen) >= 2, f"{label}: every seed gave the same call: {seen}")

        # A named function, one call, streamed.
        events = stream(port, "/v1/chat/completions",
                        {"messages": MESSAGES, "tools": TOOLS, "stream": True, "seed": 7,
                         "tool_choice": {"type": "function", "function": {"name": "get_time"}},
                         "parallel_tool_calls": False, "max_tokens": 1500})
        calls, finish = streamed_calls(events)
        check(finish == "tool_calls" and len(calls) == 1 and valid_call(calls[0], ["get_time"]),
              f"{label} named, streamed: {finish} {calls}")

        # tool_choice "none": the tools are not laid out (llama.cpp's R1 template lists them).
        _, with_tools = request(port, "POST", "/v1/chat/completions",
                                {"messages": MESSAGES, "tools": TOOLS, "max_tokens": 1})
        _, without = request(port, "POST", "/v1/chat/completions",
                             {"messages": MESSAGES, "tools": TOOLS, "tool_choice": "none",
                              "max_tokens": 1})
        if label == "R1 template":  # the others lay out no tool list either way
            check(without["usage"]["prompt_tokens"] < with_tools["usage"]["prompt_tokens"],
                  f"{label} tool_choice none: {without['usage']} vs {with_tools['usage']}")
    finally:
        h.stop(server)

server, port = h.start("-c", "2048")
try:
    schema = {"type": "object",
              "properties": {"answer": {"enum": ["yes", "no"]},
                             "score": {"type": "number"},
                             "notes": {"type": "array", "items": {"type": "string", "maxLength": 8},
                                       "maxItems": 2}},
              "required": ["answer", "score"]}
    for seed in range(1, 4):
        status, r = request(port, "POST", "/v1/chat/completions",
                            {"messages": MESSAGES, "seed": seed, "max_tokens": 400,
                             "response_format": {"type": "json_schema",
                                                 "json_schema": {"name": "verdict",
                                                                 "schema": schema}}})
        content = r["choices"][0]["message"]["content"] if status == 200 else None
        try:
            value = json.loads(content)
            ok = value["answer"] in ("yes", "no") and isinstance(value["score"], (int, float))
        except (TypeError, ValueError, KeyError):
            ok = False
        check(ok and r["choices"][0]["finish_reason"] == "stop",
              f"response_format json_schema: {status} {r}")
    status, r = request(port, "POST", "/v1/chat/completions",
                        {"messages": MESSAGES, "seed": 1, "max_tokens": 400,
                         "response_format": {"type": "json_object"}})
    if check(status == 200, f"json_object: {status} {r}"):
        finish = r["choices"][0]["finish_reason"]
        content = r["choices"][0]["message"]["content"]
        check(finish == "length" or isinstance(json.loads(content), dict),
              f"json_object: {finish} {content!r}")
        check(content.startswith("{"), f"json_object: {content!r}")
    # GBNF and json_schema on /v1/completions, streamed too.
    status, r = request(port, "POST", "/v1/completions",
                        {"prompt": "Is it raining?", "max_tokens": 50, "seed": 2,
                         "grammar": 'root ::= ("yes" | "no" | "maybe") "."'})
    check(status == 200 and r["choices"][0]["text"] in ("yes.", "no.", "maybe.")
          and r["choices"][0]["finish_reason"] == "stop", f"grammar: {status} {r}")
    events = stream(port, "/v1/completions",
                    {"prompt": "Count", "max_tokens": 50, "seed": 3, "stream": True,
                     "json_schema": {"type": "array", "items": {"type": "integer"},
                                     "minItems": 2, "maxItems": 2}})
    text = "".join(e["choices"][0]["text"] for e in events[:-1] if e.get("choices"))
    try:
        check(len(json.loads(text)) == 2, f"json_schema stream: {text!r}")
    except ValueError:
        check(False, f"json_schema stream is no JSON: {text!r}")

    # Requests that cannot be followed, and say why.
    chat = {"messages": MESSAGES, "tools": TOOLS, "max_tokens": 4}
    for change, param, words in [
        ({"tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice",
         "no tool is named 'nope'"),
        ({"tool_choice": "sometimes"}, "tool_choice", "tool_choice must be"),
        ({"tool_choice": "required", "tools": []}, "tool_choice", "has no tools"),
        ({"tools": [{"type": "function", "function": {"name": ""}}]}, "tools",
         "tools[0].function.name"),
        ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": {"x": {"type": "objekt"}}}}}],
          "tool_choice": "required"}, "tool_choice",
         "tools[0].function.parameters: JSON schema: properties.x.type: unknown type 'objekt'"),
        ({"grammar": "root ::= [a-"}, "grammar", "grammar: line 1"),
        ({"grammar": "root ::= \"x\"", "json_schema": {}}, "json_schema", "give one of them"),
        ({"response_format": {"type": "xml"}}, "response_format", "response_format must be"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
         "response_format", "response_format.json_schema.schema is required"),
        ({"json_schema": {"$ref": "#/$defs/none"}}, "json_schema", "points to nothing"),
    ]:
        status, r = request(port, "POST", "/v1/chat/completions", dict(chat, **change))
        check(status == 400 and r["error"]["param"] == param and words in r["error"]["message"],
              f"{change}: {status} {r}")
    status, r = request(port, "GET", "/health", key=None)
    check(status == 200, "the server is up after the refusals")
finally:
    h.stop(server)

h.finish("constrained output")
