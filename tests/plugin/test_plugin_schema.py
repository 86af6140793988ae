# SPDX-License-Identifier: Apache-2.0
"""The plugin's events and non-streaming bodies carry every key OpenAI sends and every key
upstream sends.

Upstream (the stand-in, like TensorRT-LLM) serialises events with ``model_dump_json()`` and
non-streaming bodies with ``JSONResponse(content=response.model_dump())``, keeping null
fields: the patched server must not send fewer keys for the same object.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "standin"))
import plugin_harness as harness

harness.use_standin()

from tensorrt_llm.serve import openai_server
from tensorrt_llm.serve.openai_protocol import ResponsesRequest

from trtllm_stream_fix.core.response import OPENAI_RESPONSE_FIELDS
from trtllm_stream_fix.differential import openai_schema
from trtllm_stream_fix.plugin.installer import install, uninstall
from trtllm_stream_fix.sim.model import NAMED_SCENARIOS, named_output

pytestmark = pytest.mark.cpu_only

TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
# Outputs the unpatched stand-in streams without raising.
PLAIN = ("short_answer", "reasoning_answer", "multibyte_emoji", "preamble_answer")
SAMPLING = ("temperature", "top_p", "presence_penalty", "frequency_penalty")


def _keys(events: list[dict]) -> dict[str, set[str]]:
    """Per event type, the keys of the event, its ``response`` and its ``item``."""
    found: dict[str, set[str]] = defaultdict(set)
    for event in events:
        kind = event["type"]
        found[kind] |= set(event)
        for key in ("response", "item", "part"):
            if isinstance(event.get(key), dict):
                found[f"{kind}/{key}"] |= set(event[key])
    return found


def test_plugin_events_match_the_recorded_schema(fixed):
    seen: Counter[str] = Counter()
    problems: list[str] = []
    for name in NAMED_SCENARIOS:
        for split in (1, 20):
            for workers in (0, 1):
                events = harness.stream(named_output(name), split, workers=workers, tools=[TOOL])
                for event in events:
                    seen[event["type"]] += 1
                    problems += [f"{name} {p}" for p in openai_schema.missing_keys(event)]
    assert not problems, problems[:10]
    print("plugin", dict(sorted(seen.items())))


def test_plugin_keeps_every_key_upstream_sends():
    uninstall()
    theirs: dict[str, set[str]] = defaultdict(set)
    for name in PLAIN:
        for kind, keys in _keys(harness.stream(named_output(name), 1)).items():
            theirs[kind] |= keys
    install()
    try:
        ours: dict[str, set[str]] = defaultdict(set)
        for name in PLAIN:
            for kind, keys in _keys(harness.stream(named_output(name), 1)).items():
                ours[kind] |= keys
    finally:
        uninstall()
    # Keys OpenAI sends only on request (a reasoning item's null encrypted_content) may go.
    dropped = {kind: theirs[kind] - ours[kind] - openai_schema.OPTIONAL_KEYS for kind in theirs}
    assert not {kind: keys for kind, keys in dropped.items() if keys}
    assert {"response.created/response", "response.output_item.done/item"} <= set(theirs)


def _body(output, *, workers: int = 0, **fields) -> dict:
    """The non-streaming body a client receives (``JSONResponse(response.model_dump())``);
    with workers the response object travels back pickled, as from a PostprocWorker."""
    fields = {"input": "hi", "store": False, **fields}
    request = ResponsesRequest(stream=False, **fields)
    server = openai_server.OpenAIServer(
        harness.engine_for(output, 20), num_postprocess_workers=workers
    )
    response = asyncio.run(server.openai_responses(request))
    if workers:
        response = pickle.loads(pickle.dumps(response))
    return json.loads(json.dumps(response.model_dump()))


@pytest.mark.parametrize("workers", [0, 1])
def test_plugin_non_streaming_bodies_match_the_recorded_schema(fixed, workers):
    for name in PLAIN + ("preamble_tool_call", "analysis_tool_call", "length_cut"):
        body = _body(named_output(name), workers=workers, tools=[TOOL])
        assert openai_schema.missing_keys(body) == [], (name, body)
        assert list(body)[: len(OPENAI_RESPONSE_FIELDS)] == list(OPENAI_RESPONSE_FIELDS)
        assert type(body["created_at"]) is int and body["usage"]["total_tokens"] > 0
        assert body["error"] is None
        if body["status"] == "completed":
            assert type(body["completed_at"]) is int
        else:
            assert body["completed_at"] is None
            assert body["incomplete_details"] == {"reason": "max_output_tokens"}


def test_plugin_non_streaming_body_echoes_the_request(fixed):
    request = {
        "instructions": "Be brief.",
        "temperature": 0.5,
        "top_p": 0.9,
        "max_output_tokens": 64,
        "store": False,
        "tools": [{**TOOL, "description": "Weather.", "strict": True}],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "reasoning": {"effort": "high"},
        "metadata": {"k": "v"},
        "user": "u-1",
        "prompt_cache_key": "pk",
        "safety_identifier": "s-1",
    }
    body = _body(named_output("short_answer"), **request)
    streamed_request = ResponsesRequest(input="hi", stream=True, **request)
    streamed = harness.stream(named_output("short_answer"), 1, request=streamed_request)
    streamed = streamed[-1]["response"]
    for key in set(request) - {"tools", "reasoning"}:
        assert body[key] == request[key], key
    assert body["reasoning"] == {"effort": "high", "summary": None}
    (tool,) = body["tools"]
    assert (tool["strict"], tool["description"]) == (True, "Weather.")
    same = set(OPENAI_RESPONSE_FIELDS) - {"id", "created_at", "completed_at", "output", "usage"}
    assert {k: body[k] for k in same} == {k: streamed[k] for k in same}


def test_plugin_non_streaming_body_keeps_every_key_upstream_sends(monkeypatch):
    monkeypatch.delenv("TRTLLM_STREAM_FIX", raising=False)
    uninstall()
    theirs = _body(named_output("short_answer"))
    install()
    try:
        ours = _body(named_output("short_answer"))
    finally:
        uninstall()
    assert set(theirs) - set(ours) == set()
    assert openai_schema.missing_keys(theirs)  # upstream's model lacks OpenAI fields
    assert set(ours) - set(theirs) >= {"error", "completed_at", "store", "prompt_cache_key"}


def test_a_stored_response_fetched_again_is_complete(fixed):
    request = ResponsesRequest(input="hi", stream=False, store=True)
    server = openai_server.OpenAIServer(harness.engine_for(named_output("reasoning_answer"), 20))
    answer = asyncio.run(server.openai_responses(request))
    stored = asyncio.run(server.conversation_store.load_response(answer.id))
    body = json.loads(json.dumps(stored.model_dump()))  # GET /v1/responses/{id}
    assert openai_schema.missing_keys(body) == []
    assert body["store"] is True and body["output"] == answer.model_dump()["output"]
    assert [type(body[key]) for key in SAMPLING] == [float] * 4
    assert [i for i in body["output"] if i["type"] == "reasoning" and "encrypted_content" not in i]


def _reasoning_items(response: dict) -> list[dict]:
    return [item for item in response["output"] if item["type"] == "reasoning"]


@pytest.mark.parametrize("workers", [0, 1])
def test_plugin_responses_carry_numeric_sampling_values_and_no_null_encrypted_content(
    fixed, workers
):
    output = named_output("reasoning_answer")
    for request, expected in (({}, (1.0, 1.0, 0.0, 0.0)), ({"top_p": 0.5}, (1.0, 0.5, 0.0, 0.0))):
        body = _body(output, workers=workers, **request)
        events = harness.stream(
            output, 3, workers=workers, request=ResponsesRequest(input="hi", stream=True, **request)
        )
        responses = [body] + [e["response"] for e in events if "response" in e]
        for response in responses:
            assert tuple(response[key] for key in SAMPLING) == expected, response
            assert all(type(response[key]) is float for key in SAMPLING)
        items = _reasoning_items(body) + [
            e["item"] for e in events if e.get("item", {}).get("type") == "reasoning"
        ]
        items += [i for e in events if "response" in e for i in _reasoning_items(e["response"])]
        assert len(items) > 3
        assert not [i for i in items if "encrypted_content" in i], items
