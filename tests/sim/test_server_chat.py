# SPDX-License-Identifier: Apache-2.0
"""``/v1/chat/completions`` on the simulated server over loopback HTTP: ours and upstream."""

from __future__ import annotations

import asyncio

import httpx
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from trtllm_stream_fix.checker.client import stream_chat
from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread

pytestmark = pytest.mark.cpu_only

SCENARIOS = ("reasoning_answer", "preamble_tool_call", "analysis_tool_call", "length_cut")


@pytest.fixture(scope="module")
def urls():
    ours = create_app(EngineConfig(stream_interval=20))
    upstream = create_app(EngineConfig(stream_interval=20), "upstream")
    with serve_in_thread(ours) as a, serve_in_thread(upstream) as b:
        yield {"ours": a, "upstream": b}


def _stream(url: str, body: dict):
    async def run():
        async with httpx.AsyncClient(timeout=10) as client:
            return await stream_chat(
                client, f"{url}/v1/chat/completions", body, idle_timeout=5, deadline=20
            )

    return asyncio.run(run())


def _body(scenario: str, **extra) -> dict:
    return {
        "model": "gpt-oss-20b",
        "messages": [{"role": "user", "content": "hi"}],
        "scenario": scenario,
        **extra,
    }


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_ours_streams_pass_checker_and_equal_non_streaming(urls, scenario):
    record = _stream(urls["ours"], _body(scenario, stream_options={"include_usage": True}))
    assert record.ok, (record.outcome, record.violations)
    (choice,) = record.items
    answer = httpx.post(f"{urls['ours']}/v1/chat/completions", json=_body(scenario)).json()
    message = answer["choices"][0]["message"]
    assert (message.get("content") or "") == choice["content"]
    assert (message.get("reasoning") or "") == choice["reasoning"]
    calls = [
        (c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []
    ]
    assert calls == [(c["name"], c["arguments"]) for c in choice["tool_calls"]]
    assert answer["choices"][0]["finish_reason"] == choice["finish_reason"]
    expected = {"preamble_tool_call": "tool_calls", "analysis_tool_call": "tool_calls"}
    assert choice["finish_reason"] == expected.get(
        scenario, "length" if scenario == "length_cut" else "stop"
    )
    usage = record.events[-2]
    assert '"usage"' in usage["data"]


def test_openai_sdk_streams_and_accumulates(urls):
    client = openai.OpenAI(base_url=f"{urls['ours']}/v1", api_key="x", max_retries=0)
    state = ChatCompletionStreamState()
    stream = client.chat.completions.create(
        model="gpt-oss-20b",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"scenario": "preamble_tool_call"},
    )
    for chunk in stream:
        state.handle_chunk(chunk)
    final = state.get_final_completion()
    (choice,) = final.choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message.role == "assistant"
    assert choice.message.tool_calls[0].function.name == "get_weather"
    assert final.usage.total_tokens == final.usage.prompt_tokens + final.usage.completion_tokens


def test_parse_error_reaches_the_sdk_as_an_api_error(urls):
    client = openai.OpenAI(base_url=f"{urls['ours']}/v1", api_key="x", max_retries=0)
    stream = client.chat.completions.create(
        model="gpt-oss-20b",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        extra_body={"scenario": "malformed_missing_start"},
    )
    with pytest.raises(openai.APIError, match="invalid Harmony token sequence"):
        for _ in stream:
            pass
    answer = httpx.post(
        f"{urls['ours']}/v1/chat/completions", json=_body("malformed_missing_start")
    )
    assert answer.status_code == 500
    assert "invalid Harmony token sequence" in answer.json()["error"]["message"]


def test_upstream_generator_shows_the_older_line(urls):
    record = _stream(urls["upstream"], _body("preamble_tool_call"))
    assert not record.ok
    text = " ".join(record.violations)
    assert "chunk-id" in text or "markup-leak" in text
    roles = sum('"role"' in e["data"] for e in record.events)
    assert roles > 1  # the role chunk again with every engine response
    short = _stream(urls["upstream"], _body("short_answer"))
    assert short.items[0]["content"] == ""  # the done response's tokens are never parsed


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"model": "gpt-oss-20b"}, 400),
        ({"model": "nope", "messages": [{"role": "user", "content": "x"}]}, 404),
        (
            {
                "model": "gpt-oss-20b",
                "messages": [{"role": "user", "content": "x"}],
                "stream_options": {"include_usage": True},
            },
            400,
        ),
        (
            {
                "model": "gpt-oss-20b",
                "messages": [{"role": "user", "content": "x"}],
                "tool_choice": "auto",
            },
            400,
        ),
    ],
)
def test_bad_requests(urls, body, status):
    answer = httpx.post(f"{urls['ours']}/v1/chat/completions", json=body)
    assert answer.status_code == status
    assert answer.json()["error"]["message"]


def test_tools_and_tool_choice_accepted(urls):
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    for url in urls.values():
        body = _body("preamble_tool_call", tools=tools, tool_choice="auto")
        answer = httpx.post(f"{url}/v1/chat/completions", json=body).json()
        assert answer["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_validate_protocol_chat_against_both_generators(urls, capsys):
    import json

    from trtllm_stream_fix.cli import main

    codes = {}
    for generator, url in urls.items():
        argv = ["validate", "--url", url, "--protocol", "chat", "--json"]
        codes[generator] = main([*argv, "--extra", "scenario=preamble_tool_call"])
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert summary["protocol"] == "chat" and summary["ok"] is (generator == "ours")
    assert codes == {"ours": 0, "upstream": 1}


def _call(call_id: str) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": "{}"},
    }


_USER = {"role": "user", "content": "weather?"}
_CALLS = {"role": "assistant", "content": None, "tool_calls": [_call("call_1"), _call("call_2")]}
_ROLE_ERROR = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
    "message with 'tool_calls'."
)


def _tool(call_id: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": "rainy"}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("messages", "message", "param"),
    [
        ([_tool("call_1")], _ROLE_ERROR, "messages.[0].role"),
        (
            [_USER, {"role": "assistant", "content": "ok"}, _tool("call_1")],
            _ROLE_ERROR,
            "messages.[2].role",
        ),
        ([_USER, _CALLS, _USER, _tool("call_1")], _ROLE_ERROR, "messages.[3].role"),
        (
            [_USER, _CALLS, _tool("call_1"), _tool("call_9")],
            "Invalid parameter: 'tool_call_id' of 'call_9' not found in 'tool_calls' of "
            "previous message.",
            "messages.[3].tool_call_id",
        ),
        (
            # an id of an earlier assistant message is not one of the previous message's
            [
                _USER,
                _CALLS,
                _tool("call_1"),
                _tool("call_2"),
                {**_CALLS, "tool_calls": [_call("call_3")]},
                _tool("call_1"),
            ],
            "Invalid parameter: 'tool_call_id' of 'call_1' not found in 'tool_calls' of "
            "previous message.",
            "messages.[5].tool_call_id",
        ),
    ],
)
def test_a_tool_message_must_answer_the_previous_tool_calls(urls, messages, message, param, stream):
    for url in urls.values():
        body = {"model": "gpt-oss-20b", "messages": messages, "stream": stream}
        answer = httpx.post(f"{url}/v1/chat/completions", json=body)
        assert answer.status_code == 400
        assert answer.headers["content-type"] == "application/json"
        assert answer.json() == {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": param,
                "code": None,
            }
        }


def test_tool_messages_that_answer_the_previous_tool_calls_are_served(urls):
    messages = [_USER, _CALLS, _tool("call_2"), _tool("call_1")]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    for url in urls.values():
        body = {"model": "gpt-oss-20b", "messages": messages, "tools": tools}
        answer = httpx.post(f"{url}/v1/chat/completions", json=body)
        assert answer.status_code == 200, answer.text
        assert "rainy" in answer.json()["choices"][0]["message"]["content"]
