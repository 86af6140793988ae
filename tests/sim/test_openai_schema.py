# SPDX-License-Identifier: Apache-2.0
"""Every event and Response we send carries every key OpenAI's API sends.

The schema (``trtllm_stream_fix/differential/openai_schema.json``) is derived from recordings of
OpenAI's API, not from the ``openai`` SDK's types (which make most Response fields
Optional). Both simulated-server generators (ours and ``upstream``) and the plugin are
checked, over every event type they emit.
"""

from __future__ import annotations

import json
from collections import Counter

import httpx
import pytest

from trtllm_stream_fix.checker.sse_reader import parse_sse
from trtllm_stream_fix.core.response import OPENAI_RESPONSE_FIELDS
from trtllm_stream_fix.differential import openai_schema
from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
from trtllm_stream_fix.sim.model import NAMED_SCENARIOS

TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    },
    {"type": "function", "name": "lookup_user", "parameters": {"type": "object"}},
]
#: Every event type our generator emits for gpt-oss output.
OUR_EVENT_TYPES = {
    kind.removeprefix("event:")
    for kind in openai_schema.schema()["required"]
    if kind.startswith("event:")
}
SEEDS = range(60)


def _bodies():
    for name in NAMED_SCENARIOS:
        yield {"scenario": name}
    for seed in SEEDS:
        yield {"seed": seed}
        if seed % 2:
            yield {"scenario": "random", "seed": seed}  # every kind of the synthetic corpus


def _events(url: str, body: dict) -> list[dict]:
    response = httpx.post(f"{url}/v1/responses", json={**body, "stream": True}, timeout=20)
    assert response.status_code == 200, response.text
    events, _ = parse_sse(response.content)
    return [json.loads(e.data) for e in events if e.data != "[DONE]"]


@pytest.fixture(scope="module", params=["ours", "upstream"])
def server(request):
    app = create_app(EngineConfig(stream_interval=7), request.param)
    with serve_in_thread(app) as url:
        yield request.param, url


def test_every_event_and_body_matches_the_recorded_schema(server):
    generator, url = server
    seen: Counter[str] = Counter()
    problems: list[str] = []
    base = {"model": "gpt-oss-20b", "input": "hi", "tools": TOOLS}
    for extra in _bodies():
        body = {**base, **extra}
        for event in _events(url, body):
            seen[event["type"]] += 1
            problems += [f"{extra} {p}" for p in openai_schema.missing_keys(event)]
        answer = httpx.post(f"{url}/v1/responses", json=body, timeout=20)
        assert answer.status_code == 200
        problems += [f"{extra} body {p}" for p in openai_schema.missing_keys(answer.json())]
    assert not problems, problems[:10]
    if generator == "ours":  # the upstream-equivalent one never streams tool calls
        assert set(seen) == OUR_EVENT_TYPES, OUR_EVENT_TYPES ^ set(seen)
    print(generator, dict(sorted(seen.items())))


def test_request_values_are_echoed(server):
    _, url = server
    body = {
        "model": "gpt-oss-20b",
        "input": "hi",
        "scenario": "short_answer",
        "instructions": "Be brief.",
        "temperature": 0.5,
        "top_p": 0.9,
        "max_output_tokens": 64,
        "store": False,
        "tools": TOOLS[:1],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "reasoning": {"effort": "high"},
        "metadata": {"k": "v"},
        "user": "u-1",
    }
    events = _events(url, body)
    created, terminal = events[0]["response"], events[-1]["response"]
    for response in (created, terminal):
        assert list(response)[: len(OPENAI_RESPONSE_FIELDS)] == list(OPENAI_RESPONSE_FIELDS)
        assert response["instructions"] == "Be brief."
        assert (response["temperature"], response["top_p"]) == (0.5, 0.9)
        assert response["max_output_tokens"] == 64 and response["store"] is False
        assert response["tool_choice"] == "required" and response["parallel_tool_calls"] is False
        assert response["reasoning"] == {"effort": "high", "summary": None}
        assert response["metadata"] == {"k": "v"} and response["user"] == "u-1"
        tool = response["tools"][0]
        assert tool["strict"] is None and tool["description"] == "Weather for a city."
        assert type(response["created_at"]) is int
    assert created["usage"] is None and created["completed_at"] is None
    assert type(terminal["completed_at"]) is int and terminal["usage"]["total_tokens"] > 0


def test_schema_lists_what_the_issue_names():
    response = set(openai_schema.required("response"))
    assert response == set(OPENAI_RESPONSE_FIELDS)
    assert "logprobs" in openai_schema.required("event:response.output_text.delta")
    assert openai_schema.schema()["sources"]


def test_derive_keeps_the_keys_every_instance_has():
    records = [
        {"type": "x", "a": 1, "b": 2, "obfuscation": "p"},
        {"type": "x", "a": 1, "item": {"type": "message", "id": "m", "content": []}},
    ]
    assert openai_schema.derive(records) == {
        "event:x": ["a", "type"],
        "item:message": [
            "content",
            "id",
            "type",
        ],
    }


def test_missing_keys_names_what_old_responses_lacked():
    # What every Response looked like before: None fields left out, float created_at.
    old = {
        "type": "response.created",
        "sequence_number": 0,
        "response": {
            "id": "resp_1",
            "object": "response",
            "created_at": 1.0,
            "model": "m",
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "status": "in_progress",
            "metadata": {},
        },
    }
    problems = openai_schema.missing_keys(old)
    assert "response: missing 'usage'" in problems
    assert "response: missing 'error'" in problems
    assert any("'created_at' is float" in p for p in problems)
    delta = {
        "type": "response.output_text.delta",
        "sequence_number": 1,
        "item_id": "m",
        "output_index": 0,
        "content_index": 0,
        "delta": "x",
    }
    assert openai_schema.missing_keys(delta) == [
        "event:response.output_text.delta: missing 'logprobs'"
    ]
    assert openai_schema.missing_keys({"type": "response.audio.delta"}) == [
        "event:response.audio.delta: not in the recorded schema"
    ]
