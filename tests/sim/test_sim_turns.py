# SPDX-License-Identifier: Apache-2.0
"""The simulated engine follows the request: tools, tool_choice, tool outputs, limits, effort."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import httpx
import jsonschema
import pytest

from trtllm_stream_fix.checker.responses import check_responses_events
from trtllm_stream_fix.checker.sse_reader import parse_sse
from trtllm_stream_fix.sim import EngineConfig, SimulatedEngine, create_app, serve_in_thread
from trtllm_stream_fix.sim.engine import SCENARIOS
from trtllm_stream_fix.sim.schema_args import sample

ROOT = Path(__file__).resolve().parents[2]
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a location.",
    "parameters": {
        "type": "object",
        "properties": {
            "location": {"type": "string", "minLength": 2},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
        },
        "required": ["location", "unit"],
        "additionalProperties": False,
    },
}
CLOCK = {
    "type": "function",
    "name": "get_time",
    "parameters": {
        "type": "object",
        "properties": {"timezone": {"type": "string", "format": "uuid"}},
        "required": ["timezone"],
    },
}
SCHEMAS = {tool["name"]: tool["parameters"] for tool in (WEATHER, CLOCK)}
QUESTIONS = [f"question {i}: what about the weather and the time?" for i in range(12)] + [
    f"tell me something ({i})" for i in range(12)
]


@pytest.fixture(scope="module")
def url():
    with serve_in_thread(create_app(EngineConfig(stream_interval=5))) as base_url:
        yield base_url


def _stream(url: str, **body) -> list[dict]:
    body = {"model": "gpt-oss-20b", "input": "hi", "stream": True, **body}
    response = httpx.post(f"{url}/v1/responses", json=body, timeout=20)
    assert response.status_code == 200, response.text
    events = [json.loads(e.data) for e in parse_sse(response.content)[0]]
    assert check_responses_events(events).ok, body
    return events


def _calls(events: list[dict]) -> list[dict]:
    return [i for i in events[-1]["response"]["output"] if i["type"] == "function_call"]


def test_without_tools_never_a_tool_call(url):
    for question in QUESTIONS:
        events = _stream(url, input=question)
        assert not _calls(events), question
        assert events[-1]["type"] == "response.completed"


def test_with_tools_only_those_tools_with_valid_arguments(url):
    seen = set()
    for question in QUESTIONS:
        calls = _calls(_stream(url, input=question, tools=[WEATHER, CLOCK]))
        assert calls, question
        for call in calls:
            assert call["name"] in SCHEMAS, call
            jsonschema.validate(json.loads(call["arguments"]), SCHEMAS[call["name"]])
            seen.add(call["name"])
    assert seen == set(SCHEMAS)


def test_tool_choice_none_required_and_named(url):
    tools = [WEATHER, CLOCK]
    for question in QUESTIONS[:6]:
        assert not _calls(_stream(url, input=question, tools=tools, tool_choice="none"))
        assert _calls(_stream(url, input=question, tools=tools, tool_choice="required"))
        named = {"type": "function", "name": "get_time"}
        calls = _calls(_stream(url, input=question, tools=tools, tool_choice=named))
        assert [c["name"] for c in calls] == ["get_time"]
    body = {"model": "gpt-oss-20b", "input": "hi", "tools": tools}
    bad = httpx.post(
        f"{url}/v1/responses",
        json={**body, "tool_choice": {"type": "function", "name": "nope"}},
    )
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "tool_choice"


def test_parallel_tool_calls_false_gives_at_most_one_call(url):
    question = "what is the weather and the time?"
    assert len(_calls(_stream(url, input=question, tools=[WEATHER, CLOCK]))) == 2
    for q in [question, *QUESTIONS]:
        calls = _calls(_stream(url, input=q, tools=[WEATHER, CLOCK], parallel_tool_calls=False))
        assert len(calls) == 1, q


def test_function_call_outputs_get_an_answer_that_uses_them(url):
    history = [
        {"role": "user", "content": "weather in Paris?"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": "{}",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21 C"},
    ]
    events = _stream(url, input=history, tools=[WEATHER])
    assert not _calls(events)
    message = events[-1]["response"]["output"][-1]
    assert message["type"] == "message"
    assert "sunny, 21 C" in message["content"][0]["text"]
    assert "get_weather" in message["content"][0]["text"]


def test_max_output_tokens_cuts_the_turn(url):
    events = _stream(url, input="hi", tools=[WEATHER], max_output_tokens=8)
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["usage"]["output_tokens"] == 8


def test_reasoning_effort_sets_the_reasoning_length():
    engine = SimulatedEngine()

    def reasoning_tokens(effort):
        output = engine.select("hi", seed=3, reasoning_effort=effort).output.generated
        return output.index(200007)  # <|end|> closes the analysis message

    assert reasoning_tokens("low") < reasoning_tokens("medium") < reasoning_tokens("high")
    none = engine.select("hi", seed=3, reasoning_effort="none").output.generated
    assert 200007 not in none  # no analysis message at all


def test_deterministic_for_a_seed():
    engine = SimulatedEngine()
    kwargs = {"tools": (WEATHER, CLOCK), "seed": 11}
    assert engine.select("a", **kwargs) == engine.select("a", **kwargs)
    outputs = {engine.select("a", tools=(WEATHER, CLOCK), seed=s).delivered for s in range(8)}
    assert len(outputs) > 1
    base = SimulatedEngine(EngineConfig(seed=1)).select("a", tools=(WEATHER,))
    assert base == SimulatedEngine(EngineConfig(seed=1)).select("a", tools=(WEATHER,))


def test_unknown_scenario_lists_the_names(url):
    response = httpx.post(
        f"{url}/v1/responses", json={"model": "gpt-oss-20b", "input": "hi", "scenario": "nope"}
    )
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert all(name in message for name in SCENARIOS)
    with pytest.raises(ValueError, match="known: random, short_answer"):
        EngineConfig(default_scenario="nope")


def test_serve_help_lists_the_scenarios():
    from trtllm_stream_fix.cli import main

    out = subprocess.run(
        [sys.executable, "-m", "trtllm_stream_fix.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert all(name in " ".join(out.split()) for name in SCENARIOS)
    assert main(["serve", "--scenario", "nope"]) == 2


SCHEMA_CASES = [
    {"type": "object", "properties": {}},
    {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "n": {"type": "integer", "minimum": 10, "maximum": 20, "multipleOf": 5},
            "mode": {"const": "fast"},
            "flag": {"type": ["boolean", "null"]},
            "when": {"type": "string", "format": "date-time"},
            "nested": {
                "type": "object",
                "properties": {"email": {"type": "string", "format": "email"}},
                "required": ["email"],
            },
        },
        "required": ["tags", "ratio", "n", "mode", "nested"],
        "additionalProperties": False,
    },
    {
        "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "type": "object",
        "properties": {
            "p": {"$ref": "#/$defs/point"},
            "either": {"anyOf": [{"type": "integer", "maximum": -5}, {"type": "string"}]},
            "both": {"allOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}]},
            "code": {"type": "string", "minLength": 6, "maxLength": 6},
        },
        "required": ["p", "either", "both", "code"],
    },
]


@pytest.mark.parametrize("schema", SCHEMA_CASES)
def test_schema_args_are_valid_for_the_documented_subset(schema):
    for seed in range(50):
        jsonschema.validate(sample(schema, random.Random(seed)), schema)


def test_agent_loop_example_runs_against_the_simulated_server():
    for extra in ([], ["--sequential"]):
        done = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "agent_loop.py"), *extra],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "get_weather returned" in done.stdout and "get_time returned" in done.stdout


def _chat(url: str, **body) -> dict:
    body = {"model": "gpt-oss-20b", "messages": [{"role": "user", "content": "hi"}], **body}
    response = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=20)
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]


def test_chat_completions_follow_the_request_too(url):
    chat_tools = [{"type": "function", "function": t} for t in ({**WEATHER}, {**CLOCK})]
    for tool in chat_tools:
        tool["function"] = {k: v for k, v in tool["function"].items() if k != "type"}
    for question in QUESTIONS[:8]:
        messages = [{"role": "user", "content": question}]
        assert not _chat(url, messages=messages).get("tool_calls")
        calls = _chat(url, messages=messages, tools=chat_tools)["tool_calls"]
        assert calls and {c["function"]["name"] for c in calls} <= set(SCHEMAS)
        for call in calls:
            arguments = json.loads(call["function"]["arguments"])
            jsonschema.validate(arguments, SCHEMAS[call["function"]["name"]])
    history = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_9", "content": "rainy, 12 C"},
    ]
    answer = _chat(url, messages=history, tools=chat_tools)
    assert not answer.get("tool_calls") and "rainy, 12 C" in answer["content"]
