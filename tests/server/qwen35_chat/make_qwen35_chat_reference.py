#!/usr/bin/python3
"""Makes tests/server/qwen35_chat/qwen35_chat_reference.json: conversations rendered by
Qwen3.5's chat template (models/templates/Qwen3.5-4B.jinja of a llama.cpp checkout, as its
GGUFs carry it) with Jinja2 set up as Hugging Face's transformers renders chat templates
(trim_blocks, lstrip_blocks, loop controls, a tojson without key sorting or HTML escaping,
raise_exception), add_generation_prompt true. The test renders the same conversations with
specd's qwen3.5 family and compares the text.

Usage: make_qwen35_chat_reference.py --llama-cpp DIR   (Debian's python3-jinja2)
"""
import argparse
import json
from pathlib import Path

import jinja2
import jinja2.ext
import jinja2.sandbox

HERE = Path(__file__).resolve().parent

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"},
        "metric": {"type": "boolean"}, "where": {"type": "object"}},
        "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a zone",
    "parameters": {"type": "object", "properties": {"tz": {"type": "string"}},
                   "required": ["tz"]}}}

CONVERSATIONS = [
    {"messages": [{"role": "user", "content": "Hello"}]},
    {"messages": [{"role": "system", "content": "Be brief. "},
                  {"role": "user", "content": " What is 2 + 2?"}]},
    {"messages": [{"role": "system", "content": "Be brief."},
                  {"role": "user", "content": "Hi"},
                  {"role": "assistant", "content": "<think>\nGreet.\n</think>\n\nHello!"},
                  {"role": "user", "content": "Again"}]},
    {"tools": [WEATHER, TIME],
     "messages": [{"role": "system", "content": "You help with travel."},
                  {"role": "user", "content": "Weather in Paris?"}]},
    {"tools": [WEATHER],
     "messages": [{"role": "user", "content": "Weather in Paris for 3 days?"},
                  {"role": "assistant", "content": "",
                   "tool_calls": [{"type": "function", "function": {
                       "name": "get_weather",
                       "arguments": {"city": "Paris", "days": 3, "metric": True,
                                     "where": {"lat": 48.9, "lon": 2.35}}}}]},
                  {"role": "tool", "content": "sunny"}]},
    {"tools": [WEATHER, TIME],
     "messages": [{"role": "user", "content": "Paris weather and time?"},
                  {"role": "assistant", "content": "Let me check both.",
                   "tool_calls": [
                       {"type": "function", "function": {"name": "get_weather",
                                                         "arguments": {"city": "Paris"}}},
                       {"type": "function", "function": {"name": "get_time",
                                                         "arguments": {"tz": "CET"}}}]},
                  {"role": "tool", "content": "sunny"},
                  {"role": "tool", "content": "12:00"},
                  {"role": "assistant", "content": "Sunny, noon."},
                  {"role": "user", "content": "Thanks"}]},
]


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-cpp", required=True, type=Path, help="llama.cpp source tree")
    args = ap.parse_args()
    text = (args.llama_cpp / "models" / "templates" / "Qwen3.5-4B.jinja").read_text()
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    template = env.from_string(text)
    cases = []
    for c in CONVERSATIONS:
        rendered = template.render(messages=c["messages"], tools=c.get("tools"),
                                   add_generation_prompt=True)
        cases.append({**c, "rendered": rendered})
    out = {"made_with": "Qwen3.5-4B.jinja (llama.cpp models/templates) under Jinja2 as "
                        "transformers sets it up, add_generation_prompt true",
           "cases": cases}
    (HERE / "qwen35_chat_reference.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
