# SPDX-License-Identifier: Apache-2.0
"""The local server over real loopback HTTP: strict checker, OpenAI SDK, bad requests."""

from __future__ import annotations

import asyncio
import json
import socket

import httpx
import pytest

from trtllm_stream_fix.checker.client import stream_responses
from trtllm_stream_fix.checker.sse_reader import parse_sse
from trtllm_stream_fix.sim import EngineConfig, create_app, serve_in_thread
from trtllm_stream_fix.sim.sdk_client import make_client, sdk_stream

SCENARIOS = ("reasoning_answer", "preamble_tool_call", "multibyte_emoji", "length_cut")


HTTP_IMPLS = ("httptools", "h11")  # uvicorn's protocols: the default when installed, the fallback


@pytest.fixture(scope="module", params=HTTP_IMPLS)
def base_url(request):
    app = create_app(EngineConfig(stream_interval=20), max_body_bytes=64 * 1024)
    with serve_in_thread(app, http=request.param) as url:
        yield url


def _stream(base_url: str, body: dict):
    async def run():
        async with httpx.AsyncClient(timeout=10) as client:
            return await stream_responses(
                client,
                f"{base_url}/v1/responses",
                body,
                idle_timeout=5,
                deadline=20,
                allow_incomplete=True,
            )

    return asyncio.run(run())


def _final_texts(response: dict) -> list[str]:
    texts = []
    for item in response["output"]:
        if item["type"] == "function_call":
            texts.append(item["arguments"])
        else:
            texts.extend(part["text"] for part in item["content"])
    return texts


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_stream_passes_strict_checker_and_matches_non_streaming(base_url, scenario):
    body = {"model": "gpt-oss-20b", "input": "hi", "scenario": scenario}
    record = _stream(base_url, body)
    assert record.ok, (record.outcome, record.violations)
    assert record.http_status == 200
    assert record.content_type.startswith("text/event-stream")
    seqs = [json.loads(e["data"])["sequence_number"] for e in record.events]
    assert seqs == list(range(len(seqs)))
    answer = httpx.post(f"{base_url}/v1/responses", json=body).json()
    streamed = [
        it["arguments"] if it["type"] == "function_call" else it["text"] for it in record.items
    ]
    assert streamed == _final_texts(answer)
    expected_terminal = "incomplete" if scenario == "length_cut" else "completed"
    assert record.terminal == expected_terminal == answer["status"]
    # the same usage streamed and not (reasoning tokens included)
    assert json.loads(record.events[-1]["data"])["response"]["usage"] == answer["usage"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_openai_sdk_accepts_every_stream(base_url, scenario):
    client = make_client(base_url)
    try:
        result = sdk_stream(client, {"model": "gpt-oss-20b", "input": "hi", "scenario": scenario})
    finally:
        client.close()
    assert result.ok, result.error
    assert result.event_types[0] == "response.created"
    if scenario == "length_cut":
        assert result.terminal == "incomplete" and result.final_texts is None
    else:
        assert result.terminal == "completed"
        answer = httpx.post(
            f"{base_url}/v1/responses",
            json={"model": "gpt-oss-20b", "input": "hi", "scenario": scenario},
        ).json()
        assert result.final_texts == _final_texts(answer)


def test_sdk_stream_helper_events_and_final_response(base_url):
    from openai import OpenAI

    client = OpenAI(base_url=f"{base_url}/v1", api_key="x", max_retries=0)
    with client.responses.stream(
        model="gpt-oss-20b", input="hi", extra_body={"scenario": "reasoning_answer"}
    ) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    client.close()
    assert (
        "".join(deltas)
        == final.output_text
        == ("The capital of France is Paris. It is also its largest city.")
    )
    assert [item.type for item in final.output] == ["reasoning", "message"]


def test_models_and_health(base_url):
    models = httpx.get(f"{base_url}/v1/models").json()
    assert [m["id"] for m in models["data"]] == ["gpt-oss-20b", "gpt-oss-120b"]
    health = httpx.get(f"{base_url}/health").json()
    assert health["active_streams"] == 0 and health["stream_interval"] == 20


@pytest.mark.parametrize(
    ("content", "status", "param"),
    [
        (b"{not json", 400, None),
        (b"[1, 2]", 400, None),
        (b"\xff\xfe", 400, None),
        (json.dumps({"input": "hi"}).encode(), 400, "model"),
        (json.dumps({"model": "gpt-oss-20b"}).encode(), 400, "input"),
        (json.dumps({"model": 7, "input": "hi"}).encode(), 400, "model"),
        (json.dumps({"model": "gpt-oss-20b", "input": 3}).encode(), 400, "input"),
        (
            json.dumps({"model": "gpt-oss-20b", "input": "x", "stream": "yes"}).encode(),
            400,
            "stream",
        ),
        (
            json.dumps({"model": "gpt-oss-20b", "input": "x", "max_output_tokens": 0}).encode(),
            400,
            "max_output_tokens",
        ),
        (
            json.dumps({"model": "gpt-oss-20b", "input": "x", "scenario": "nope"}).encode(),
            400,
            "scenario",
        ),
        (
            json.dumps({"model": "gpt-oss-20b", "input": "x", "sim_fault": "drop"}).encode(),
            400,
            "sim_fault",
        ),
        (json.dumps({"model": "other", "input": "x"}).encode(), 404, "model"),
        (json.dumps({"model": "gpt-oss-20b", "input": "x" * 70_000}).encode(), 413, None),
    ],
)
def test_bad_requests_get_clear_json_errors(base_url, content, status, param):
    response = httpx.post(
        f"{base_url}/v1/responses", content=content, headers={"content-type": "application/json"}
    )
    assert response.status_code == status
    error = response.json()["error"]
    assert error["message"] and error["type"] == "invalid_request_error"
    assert error["param"] == param


def test_oversize_body_without_content_length_is_rejected(base_url):
    def chunks():
        yield b'{"model": "gpt-oss-20b", "input": "'
        for _ in range(100):
            yield b"x" * 1024
        yield b'"}'

    response = httpx.post(f"{base_url}/v1/responses", content=chunks())
    assert response.status_code == 413


def test_upstream_generator_is_served_for_comparison():
    app = create_app(EngineConfig(stream_interval=20), "upstream")
    with serve_in_thread(app) as url:
        record = _stream(
            url, {"model": "gpt-oss-20b", "input": "x", "scenario": "reasoning_answer"}
        )
    assert record.outcome == "protocol_violation"
    assert any("item-id" in v for v in record.violations)


def _exchange(base_url: str, request: bytes) -> tuple[bytes, bytes]:
    """``(head, body)`` of the answer to raw ``request``, read until the server closes."""
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


@pytest.mark.parametrize("length", [b"-5", b"-0x10", b"1 2", b"abc"])
def test_a_bad_content_length_gets_an_openai_shaped_400(base_url, length):
    head, body = _exchange(
        base_url,
        b"POST /v1/responses HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
        b"Content-Length: " + length + b"\r\n\r\n{}",
    )
    assert head.startswith(b"HTTP/1.1 400 "), head
    assert b"content-type: application/json" in head.lower(), head
    error = json.loads(body)["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and error["message"]


def test_a_stream_to_an_http10_client_is_sent_whole_and_closed(base_url):
    body = json.dumps({"model": "gpt-oss-20b", "input": "hi", "scenario": "short_answer"})
    stream_body = body[:-1] + ', "stream": true}'
    request = (
        b"POST /v1/responses HTTP/1.0\r\nHost: x\r\ncontent-type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(stream_body), stream_body.encode())
    )
    head, sse = _exchange(base_url, request)  # returns only once the server closes
    lines = head.lower().split(b"\r\n")
    assert lines[0].startswith(b"http/1.") and b" 200 " in lines[0], head
    assert not any(line.startswith(b"transfer-encoding") for line in lines), head
    assert b"connection: close" in lines, head
    events, _ = parse_sse(sse)
    assert events[0].event == "response.created"
    assert events[-1].event == "response.completed", sse[-200:]
    assert json.loads(events[-1].data)["sequence_number"] == len(events) - 1
