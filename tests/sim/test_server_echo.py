# SPDX-License-Identifier: Apache-2.0
"""What outside clients send in the fields a Response echoes, and bodies that are not UTF-8:
an OpenAI-shaped 400 naming the field, never a 500 and never a 200 whose stream a strict
checker refuses. Every Response carries the sampling values in effect, as numbers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from trtllm_stream_fix.checker.client import stream_responses
from trtllm_stream_fix.jsonlimits import JSONLimitError, loads
from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
from trtllm_stream_fix.sim.turns import TurnRequest, TurnRequestError, function_tools

MODEL = "gpt-oss-20b"
RESPONSES, CHAT = "/v1/responses", "/v1/chat/completions"
TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
CHAT_TOOL = {"type": "function", "function": {"name": "get_weather"}}
HI = [{"role": "user", "content": "hi"}]
SAMPLING = ("temperature", "top_p", "presence_penalty", "frequency_penalty")


@pytest.fixture(scope="module")
def url():
    with serve_in_thread(create_app(EngineConfig(stream_interval=20))) as base:
        yield base


def _post(url: str, path: str, body: dict[str, Any] | bytes) -> httpx.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"content-type": "application/json"}
    return httpx.post(f"{url}{path}", content=raw, headers=headers, timeout=30)


def _error(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert error["type"] == "invalid_request_error", error
    assert "Traceback" not in error["message"] and "codec" not in error["message"], error
    return error


def _stream(url: str, body: dict[str, Any]):
    async def run():
        async with httpx.AsyncClient(timeout=20) as client:
            return await stream_responses(
                client, f"{url}{RESPONSES}", {**body, "stream": True}, idle_timeout=10, deadline=30
            )

    return asyncio.run(run())


# -- tool_choice.tools that is not a list --------------------------------------------------


@pytest.mark.parametrize("tools", [5, "get_weather", {"type": "function"}, None])
@pytest.mark.parametrize("stream", [False, True])
def test_allowed_tools_that_are_not_a_list_are_a_400(url, tools, stream):
    choice = {"type": "allowed_tools", "mode": "auto", "tools": tools}
    body = {"model": MODEL, "input": "hi", "stream": stream, "tools": [TOOL]}
    error = _error(_post(url, RESPONSES, {**body, "tool_choice": choice}))
    assert error["param"] == "tool_choice.tools", error
    bare = {"type": "allowed_tools", "tools": tools}  # the request as an outside client sent it
    assert _error(_post(url, RESPONSES, {**body, "tool_choice": bare}))["param"].startswith(
        "tool_choice."
    )


@pytest.mark.parametrize(
    ("choice", "param"),
    [
        ({"type": "allowed_tools", "tools": 5}, "tool_choice.allowed_tools"),
        (
            {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": 5}},
            "tool_choice.allowed_tools.tools",
        ),
        ({"type": "banana"}, "tool_choice.type"),
        ("banana", "tool_choice"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_a_bad_chat_tool_choice_is_a_400(url, choice, param, stream):
    body = {"model": MODEL, "messages": HI, "tools": [CHAT_TOOL], "tool_choice": choice}
    assert _error(_post(url, CHAT, {**body, "stream": stream}))["param"] == param


def test_chat_allowed_tools_limit_the_calls(url):
    tools = [CHAT_TOOL, {"type": "function", "function": {"name": "lookup_user"}}]
    allowed = {
        "mode": "required",
        "tools": [{"type": "function", "function": {"name": "lookup_user"}}],
    }
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "weather?"}],
        "tools": tools,
        "tool_choice": {"type": "allowed_tools", "allowed_tools": allowed},
    }
    answer = _post(url, CHAT, body)
    assert answer.status_code == 200, answer.text
    calls = answer.json()["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["lookup_user"]


def test_the_turn_refuses_allowed_tools_that_are_not_a_list():
    request = TurnRequest("hi", [TOOL], {"type": "allowed_tools", "tools": 5})
    with pytest.raises(TurnRequestError) as caught:
        function_tools(request)
    assert caught.value.param == "tool_choice.tools"


# -- bodies that are not UTF-8 -------------------------------------------------------------

SURROGATE = b"\xed\xa0\x80"  # U+D800 encoded as bytes: not UTF-8


def _raw(fields: bytes, base: bytes = b'"input": "hi"') -> bytes:
    return b'{"model": "gpt-oss-20b", ' + base + b", " + fields + b"}"


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        (RESPONSES, _raw(b'"previous_response_id": "resp_' + SURROGATE + b'"')),
        (RESPONSES, _raw(b'"instructions": "a' + SURROGATE + b'b"')),
        (RESPONSES, _raw(b'"user": "' + SURROGATE + b'"')),
        (RESPONSES, b'{"model": "gpt-oss-20b", "input": "a' + SURROGATE + b'"}'),
        (RESPONSES, b'{"model": "gpt-oss-20b", "input": "a\xff"}'),
        (RESPONSES, b'{"model": "gpt-oss-20b", "input": "\xc0\xaf"}'),  # overlong "/"
        (RESPONSES, b'{"model": "gpt-oss-20b", "input": "\xe2\x82"}'),  # cut sequence
        (
            CHAT,
            b'{"model": "gpt-oss-20b", "messages": [{"role": "user", "content": "'
            + SURROGATE
            + b'"}]}',
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else v[-40:].decode("latin-1"),
)
@pytest.mark.parametrize("stream", [False, True])
def test_a_body_that_is_not_utf8_is_one_clear_400(url, path, raw, stream):
    if stream:
        raw = raw[:-1] + b', "stream": true}'
    bad = next(k for k, byte in enumerate(raw) if byte >= 0x80)
    error = _error(_post(url, path, raw))
    assert (error["param"], error["code"]) == (None, "invalid_json"), error
    assert "UTF-8" in error["message"] and f"byte offset {bad}" in error["message"], error


def test_loads_decodes_bytes_as_strict_utf8():
    with pytest.raises(JSONLimitError, match="byte offset 2"):
        loads(b'["' + SURROGATE + b'"]')
    with pytest.raises(JSONLimitError, match="not valid UTF-8"):
        loads('["x"]'.encode("utf-16"))  # json.loads would guess UTF-16
    assert loads('["é\\ud83d\\ude00"]'.encode()) == ["é\U0001f600"]


# -- echoed fields of the wrong type -------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "param"),
    [
        ("service_tier", "banana", "service_tier"),
        ("truncation", 5, "truncation"),
        ("background", "yes", "background"),
        ("user", {}, "user"),
        ("safety_identifier", 5, "safety_identifier"),
        ("prompt_cache_key", [1], "prompt_cache_key"),
        ("tool_choice", "banana", "tool_choice"),
        ("tool_choice", {"type": "banana"}, "tool_choice.type"),
        ("tool_choice", {"type": "function"}, "tool_choice.name"),
        ("reasoning", {"effort": "banana"}, "reasoning.effort"),
        ("text", {"format": {"type": "json_schema"}}, "text.format.name"),
        ("text", 5, "text"),
        ("prompt", {"id": 5}, "prompt.id"),
        ("presence_penalty", 2.5, "presence_penalty"),
        ("frequency_penalty", "0", "frequency_penalty"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_an_echoed_field_of_the_wrong_type_is_a_400(url, field, value, param, stream):
    body = {"model": MODEL, "input": "hi", "stream": stream, "tools": [TOOL], field: value}
    error = _error(_post(url, RESPONSES, body))
    assert error["param"] == param, error
    assert error["code"] == "invalid_value", error


ECHOED = {
    "service_tier": "flex",
    "truncation": "auto",
    "background": False,
    "user": "u-1",
    "safety_identifier": "s-1",
    "prompt_cache_key": "k",
    "reasoning": {"effort": "low", "summary": "auto"},
    "text": {
        "format": {"type": "json_schema", "name": "n", "schema": {"type": "object"}},
        "verbosity": "low",
    },
    "presence_penalty": 0.5,
    "frequency_penalty": -1,
}
CHOICES = [
    "required",
    {"type": "function", "name": "get_weather"},
    {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "f"}]},
]


@pytest.mark.parametrize("choice", CHOICES, ids=str)
def test_valid_echoed_fields_stream_past_the_strict_checker(url, choice):
    tools = [TOOL, {**TOOL, "name": "f"}]
    body = {"model": MODEL, "input": "hi", "tools": tools, "tool_choice": choice, **ECHOED}
    record = _stream(url, body)
    assert record.ok, (record.outcome, record.violations[:3])
    for event in (record.events[0], record.events[-1]):
        response = json.loads(event["data"])["response"]
        assert response["tool_choice"] == choice
        assert response["frequency_penalty"] == -1.0 and response["presence_penalty"] == 0.5
        for key in ("service_tier", "truncation", "user", "prompt_cache_key", "reasoning"):
            assert response[key] == ECHOED[key], key
        assert response["text"]["format"]["schema"] == {"type": "object"}


# -- the sampling values in effect ---------------------------------------------------------


@pytest.mark.parametrize(
    ("request_values", "expected"),
    [
        ({}, (1.0, 1.0, 0.0, 0.0)),
        (
            {"temperature": 0.2, "top_p": 0.5, "presence_penalty": 1, "frequency_penalty": 0.3},
            (0.2, 0.5, 1.0, 0.3),
        ),
    ],
)
def test_every_response_carries_the_sampling_values_as_numbers(url, request_values, expected):
    body = {"model": MODEL, "input": "hi", "scenario": "reasoning_answer", **request_values}
    events = _stream(url, body).events
    responses = [json.loads(e["data"]).get("response") for e in events]
    responses = [r for r in responses if r is not None]
    assert len(responses) == 3  # created, in_progress, completed
    responses.append(_post(url, RESPONSES, body).json())
    for response in responses:
        values = tuple(response[key] for key in SAMPLING)
        assert values == expected and all(type(v) is float for v in values), values
