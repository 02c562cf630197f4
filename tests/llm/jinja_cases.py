#!/usr/bin/env python3
"""Renders every chat template in a folder with Python's jinja2, the way HuggingFace's
apply_chat_template does, and with switchyard's renderer; the two must agree byte for byte,
and where jinja2 raises, the renderer must fail too.

usage: jinja_cases.py TEMPLATE_DIR RENDER_BINARY
"""
import copy
import difflib
import json
import os
import subprocess
import sys
import tempfile
import types
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"


class Generation(jinja2.ext.Extension):
    """HF's {% generation %} tag, which renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        call = self.call_method("_render")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_environment():
    """transformers' _compile_jinja_template."""

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    # A generator (what map and select give) as its list, as llama.cpp's template engine has
    # it: llama.cpp's own templates pass `tools | map(attribute='function')` to tojson.
    def as_list(x):
        if isinstance(x, types.GeneratorType):
            return list(x)
        raise TypeError(f"Object of type {type(x).__name__} is not JSON serializable")

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys, default=as_list)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.filters["from_json"] = json.loads
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# ---- Conversations

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city, e.g. 'Paris'.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city's name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search",
        "description": "Search the web — returns \"snippets\" in 中文 or English.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 10},
            "filters": {"type": "array", "items": {"type": "string"}}},
            "required": ["query"]}}},
]


def call(id, name, arguments):
    args = arguments if not isinstance(arguments, dict) else json.dumps(arguments, ensure_ascii=False)
    return {"id": id, "type": "function", "function": {"name": name, "arguments": args}}


def user(content):
    return {"role": "user", "content": content}


def assistant(content, **extra):
    return {"role": "assistant", "content": content, **extra}


def system(content):
    return {"role": "system", "content": content}


def tool(content, call_id="call_1"):
    return {"role": "tool", "tool_call_id": call_id, "content": content}


WEATHER = call("call_1", "get_weather", {"city": "Paris", "unit": "celsius"})
SEARCH = call("call_2", "search", {"query": "jinja2 \"whitespace\" control", "limit": 3,
                                   "filters": ["docs", "中文"], "strict": True, "score": 0.5,
                                   "extra": None, "nested": {"a": [1, 2.25, {"b": False}]}})

CASES = {
    "user": {"messages": [user("Hello!")], "add_generation_prompt": True},
    "user-no-prompt": {"messages": [user("Hello!")], "add_generation_prompt": False},
    "system-user": {"messages": [system("You are a helpful assistant."), user("Hi")],
                    "add_generation_prompt": True},
    "two-turns": {"messages": [system("Be brief."), user("What is 2+2?"), assistant("4"),
                               user("And 3+3?")], "add_generation_prompt": True},
    "ends-with-assistant": {"messages": [user("Hi"), assistant("Hello! How can I help?")],
                            "add_generation_prompt": False},
    "ends-with-assistant-prompt": {"messages": [user("Hi"), assistant("Hello!")],
                                   "add_generation_prompt": True},
    "think-in-content": {"messages": [
        user("Why is the sky blue?"),
        assistant("<think>\nRayleigh scattering...\n</think>\n\nBecause of Rayleigh scattering."),
        user("Thanks")], "add_generation_prompt": True},
    "think-twice": {"messages": [
        user("Q"), assistant("<think>a</think>b</think>c")], "add_generation_prompt": False},
    "reasoning-content": {"messages": [
        user("Solve x+1=3"),
        assistant("x = 2", reasoning_content="Subtract 1 from both sides."),
        user("Now x+2=5")], "add_generation_prompt": True},
    "reasoning-thinking": {"messages": [
        user("Solve x+1=3"),
        assistant("x = 2", reasoning_content="Subtract 1 from both sides."),
        user("Now x+2=5"),
        assistant("x = 3", reasoning_content="Subtract 2.")],
        "add_generation_prompt": False, "thinking": True},
    "thinking-prompt": {"messages": [user("Hi")], "add_generation_prompt": True, "thinking": True},
    "enable-thinking": {"messages": [user("Hi")], "add_generation_prompt": True,
                        "enable_thinking": True},
    "enable-thinking-off": {"messages": [user("Hi")], "add_generation_prompt": True,
                            "enable_thinking": False},
    "multiline": {"messages": [
        system("Rules:\n  1. be kind\n  2. be brief\n"),
        user("line one\nline two\n\n    indented\n\ttabbed\n"),
        assistant("  leading spaces\nand trailing  \n\n")], "add_generation_prompt": True},
    "crlf-and-spaces": {"messages": [user("a\r\nb\rc  \t"), assistant("\n\nx\n")],
                        "add_generation_prompt": True},
    "unicode": {"messages": [
        system("Réponds en français. 你好, мир, مرحبا, 🙂👍🏽"),
        user("Ünïcödé: ß ﬁ İ ǅ — “quotes” ‘single’ \u200b zero-width \u3000 ideographic"),
        assistant("こんにちは 😀 \U0001F600")], "add_generation_prompt": True},
    "empty-content": {"messages": [user(""), assistant(""), user("")], "add_generation_prompt": True},
    "template-like-content": {"messages": [
        user("{{ bos_token }} {% if x %}not a tag{% endif %} {# nor this #}"),
        assistant("{%- raw %} and }} and %}")], "add_generation_prompt": True},
    "quotes-and-json": {"messages": [
        user("He said \"hi\" and 'bye' \\ backslash {\"a\": [1, 2]}"),
        assistant("```json\n{\"ok\": true}\n```")], "add_generation_prompt": False},
    "two-systems": {"messages": [system("First."), system("Second."), user("Hi")],
                    "add_generation_prompt": True},
    "tools": {"messages": [user("Weather in Paris?")], "tools": TOOLS,
              "add_generation_prompt": True},
    "tools-none": {"messages": [user("Hi")], "tools": None, "add_generation_prompt": True},
    "tools-system": {"messages": [system("You are a weather bot."), user("Paris?")],
                     "tools": TOOLS, "add_generation_prompt": True},
    "tool-call": {"messages": [
        user("Weather in Paris?"),
        assistant(None, tool_calls=[WEATHER]),
        tool("{\"temperature\": 21, \"sky\": \"clear\"}"),
        assistant("It is 21 °C and clear in Paris.")],
        "tools": TOOLS, "add_generation_prompt": False},
    "tool-call-empty-content": {"messages": [
        user("Weather in Paris?"),
        assistant("", tool_calls=[WEATHER]),
        tool("21 degrees"),
        assistant("21 °C.")], "add_generation_prompt": False},
    "tool-call-with-text": {"messages": [
        system("Use tools."),
        user("Weather in Paris?"),
        assistant("Let me check.", tool_calls=[WEATHER]),
        tool("21 degrees"),
        assistant("It's 21 degrees.")], "tools": TOOLS, "add_generation_prompt": False},
    "parallel-tool-calls": {"messages": [
        user("Weather and news?"),
        assistant(None, tool_calls=[WEATHER, SEARCH]),
        tool("{\"temperature\": 21}", "call_1"),
        tool("[\"snippet 1\", \"snippet 2\"]", "call_2")],
        "tools": TOOLS, "add_generation_prompt": True},
    "tool-result-last": {"messages": [
        user("Weather?"), assistant(None, tool_calls=[WEATHER]), tool("sunny")],
        "add_generation_prompt": True},
    "tool-thinking": {"messages": [
        user("Weather?"),
        assistant(None, tool_calls=[WEATHER], reasoning_content="I should call the tool."),
        tool("sunny"),
        assistant("Sunny.", reasoning_content="The tool said sunny.")],
        "tools": TOOLS, "add_generation_prompt": False, "thinking": True},
    "tool-then-user": {"messages": [
        user("Weather?"), assistant(None, tool_calls=[WEATHER]), tool("sunny"),
        assistant("Sunny."), user("And tomorrow?")],
        "tools": TOOLS, "add_generation_prompt": True, "thinking": True},
    "tool-arguments-dict": {"messages": [
        user("Weather?"),
        assistant(None, tool_calls=[{"id": "c", "type": "function",
                                     "function": {"name": "get_weather",
                                                  "arguments": {"city": "Paris", "days": 3}}}]),
        tool("ok")], "add_generation_prompt": True},
    "tool-content-none": {"messages": [
        user("Weather?"), assistant(None, tool_calls=[WEATHER]), tool(None)],
        "add_generation_prompt": True},
    "developer-role": {"messages": [{"role": "developer", "content": "Dev note."}, user("Hi")],
                       "add_generation_prompt": True},
    "prefix": {"messages": [user("Hi"), assistant("<think>partial", prefix=True)],
               "add_generation_prompt": False, "thinking": True},
    "reasoning-effort": {"messages": [user("Prove it.")], "add_generation_prompt": True,
                         "thinking": True, "reasoning_effort": "high"},
    "reasoning-effort-max": {"messages": [system("S"), user("Prove it.")],
                             "add_generation_prompt": True, "thinking": True,
                             "reasoning_effort": "max", "drop_thinking": False},
    "no-generation-flag": {"messages": [user("Hi"), assistant("Hello")]},
    "no-messages": {"add_generation_prompt": True},
    "user-content-none": {"messages": [user(None)], "add_generation_prompt": True},
    "missing-content": {"messages": [{"role": "user"}], "add_generation_prompt": True},
    "long": {"messages": [m for k in range(12) for m in (
        user(f"question {k}\nwith detail {k * k}"),
        assistant(f"<think>step {k}</think>answer {k}" if k % 3 == 0 else f"answer {k}"))]
        + [user("last")], "add_generation_prompt": True},
}


def render_python(env, source, context):
    try:
        return env.from_string(source).render(**copy.deepcopy(context)), None
    except Exception as e:  # noqa: BLE001 - any failure is an expected outcome
        return None, f"{type(e).__name__}: {e}"


def short_diff(expected, actual):
    lines = difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                                 "jinja2", "switchyard", n=2)
    return "".join(list(lines)[:40])


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    template_dir, binary = sys.argv[1], sys.argv[2]
    env = make_environment()
    templates = sorted(f for f in os.listdir(template_dir) if f.endswith(".jinja"))
    if not templates:
        print(f"no .jinja templates in {template_dir}", file=sys.stderr)
        return 2
    total = same = 0
    first_failure = None
    with tempfile.TemporaryDirectory() as tmp:
        for name in templates:
            path = os.path.join(template_dir, name)
            with open(path, encoding="utf-8") as f:
                source = f.read()
            matched = 0
            for case, context in CASES.items():
                context = {"bos_token": BOS, "eos_token": EOS, **context}
                context_path = os.path.join(tmp, "context.json")
                with open(context_path, "w", encoding="utf-8") as f:
                    json.dump(context, f, ensure_ascii=False)
                expected, error = render_python(env, source, context)
                run = subprocess.run([binary, path, context_path], capture_output=True, timeout=60)
                actual = run.stdout.decode("utf-8", errors="replace")
                if error is not None:
                    ok = run.returncode != 0
                    why = f"jinja2 raised {error}, but switchyard rendered:\n{actual[:2000]}"
                elif run.returncode != 0:
                    ok = False
                    why = f"switchyard failed: {run.stderr.decode(errors='replace').strip()}"
                else:
                    ok = run.stdout == expected.encode("utf-8")
                    why = short_diff(expected, actual)
                matched += ok
                if not ok and first_failure is None:
                    first_failure = f"first difference: {name}, case '{case}'\n{why}"
            print(f"{name}: {matched} of {len(CASES)} identical")
            total += len(CASES)
            same += matched
    print(f"total: {same} of {total} identical")
    if first_failure:
        print(first_failure)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
