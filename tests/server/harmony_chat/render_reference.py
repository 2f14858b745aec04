#!/usr/bin/python3
"""Renders harmony_chat_test's conversations with gpt-oss's chat template
(openai-gpt-oss-120b.jinja beside this file) under Jinja2 as Hugging Face's transformers sets it
up (trim_blocks, lstrip_blocks, loop controls, a tojson without key sorting or HTML escaping,
raise_exception; strftime_now fixed to the test's date), add_generation_prompt true, and prints
each as a JSON string for comparing with the test's expected texts.

Tool parameters are given with their keys in name order, as specd stores a request's JSON. A
call's arguments and a JSON tool result are passed as objects: what the template expects, and
what specd writes (core/server/harmony_chat.hpp).

Usage: render_reference.py   (Debian's python3-jinja2)
"""
import json
from pathlib import Path

import jinja2
import jinja2.ext
import jinja2.sandbox

HERE = Path(__file__).resolve().parent

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name"},
        "days": {"type": "integer", "description": "Forecast length", "default": 1},
        "detailed": {"type": "boolean"},
        "hours": {"type": "array", "items": {"type": "number"}},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}},
        "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "",
    "parameters": {"type": "object", "properties": {
        "filters": {"type": "object", "properties": {"after": {"type": "string"},
                                                     "site": {"type": "string"}},
                    "required": ["site"]},
        "query": {"type": "string"},
        "tags": {"type": ["string", "null"]}},
        "required": ["query"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Current time", "parameters": {}}}
CALL = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}

CONVERSATIONS = {
    "(a) a plain user message": {"messages": [{"role": "user", "content": "Hello"}]},
    "(a) reasoning effort high": {"messages": [{"role": "user", "content": "Hello"}],
                                  "reasoning_effort": "high"},
    "(b) a system prompt and tools": {
        "tools": [WEATHER, SEARCH, TIME],
        "messages": [{"role": "system", "content": "You are a travel assistant."},
                     {"role": "user", "content": "Weather in Paris?"}]},
    "(c) a tool call and its result": {
        "tools": [WEATHER],
        "messages": [{"role": "user", "content": "Weather in Paris?"},
                     {"role": "assistant", "thinking": "Need the weather.",
                      "tool_calls": [CALL]},
                     {"role": "tool", "content": {"temp": 21}}]},
    "(c) answered, then asked again": {
        "tools": [WEATHER],
        "messages": [{"role": "user", "content": "Weather in Paris?"},
                     {"role": "assistant", "thinking": "Need the weather.",
                      "tool_calls": [CALL]},
                     {"role": "tool", "content": {"temp": 21}},
                     {"role": "assistant", "content": "It is 21 degrees in Paris.",
                      "thinking": "Report it."},
                     {"role": "user", "content": "And tomorrow?"}]},
}


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def main():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: "2025-06-28"
    template = env.from_string((HERE / "openai-gpt-oss-120b.jinja").read_text())
    for name, c in CONVERSATIONS.items():
        print(name)
        print(json.dumps(template.render(add_generation_prompt=True, **c)))


if __name__ == "__main__":
    main()
