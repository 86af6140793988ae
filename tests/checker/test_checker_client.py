# SPDX-License-Identifier: Apache-2.0
"""Strict client: every way a stream can end maps to its own outcome, never to completion."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from _checker_streams import find, to_sse, valid_stream

from trtllm_stream_fix.checker import (
    OUTCOMES,
    SSELimits,
    StreamRecord,
    replay_record,
    stream_chat,
    stream_responses,
    stream_triton,
)

pytestmark = pytest.mark.cpu_only

URL = "http://test.invalid/v1/responses"
SSE = {"content-type": "text/event-stream; charset=utf-8"}
Handler = Callable[[httpx.Request], Awaitable[httpx.Response]]


def chunked(data: bytes, size: int = 37) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def body_of(parts: list[bytes | float | Exception]) -> AsyncIterator[bytes]:
    """Async body: bytes are sent, floats are pauses, exceptions are raised."""

    async def gen() -> AsyncIterator[bytes]:
        for part in parts:
            if isinstance(part, float):
                await asyncio.sleep(part)
            elif isinstance(part, Exception):
                raise part
            else:
                yield part

    return gen()


def serve(
    parts: list[bytes | float | Exception],
    status: int = 200,
    headers: dict[str, str] | None = None,
    seen: list[httpx.Request] | None = None,
) -> Handler:
    async def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(status, headers=headers or SSE, content=body_of(parts))

    return handler


def run(
    handler: Handler, fn: Any = stream_responses, url: str = URL, body: Any = None, **kw: Any
) -> StreamRecord:
    async def main() -> StreamRecord:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await fn(client, url, body or {"model": "gpt-oss-20b", "input": "hi"}, **kw)

    return asyncio.run(main())


VALID = to_sse(valid_stream(), done=True)


# --------------------------------------------------------------------------- responses


def test_ok_stream() -> None:
    seen: list[httpx.Request] = []
    rec = run(serve(chunked(VALID), seen=seen))
    assert (rec.outcome, rec.ok, rec.terminal) == ("ok", True, "completed")
    assert rec.violations == []
    assert rec.done_marker
    assert rec.request_id == "resp_0123456789abcdef"
    assert [it["text"] for it in rec.items[:2]] == [
        "The user wants the weather.",
        "Let me check Paris.",
    ]
    assert rec.items[2]["arguments"] == '{"city": "Paris"}'
    assert len(rec.events) == len(valid_stream()) + 1
    assert rec.first_text_latency is not None and rec.total_latency is not None
    assert 0 <= rec.first_text_latency <= rec.total_latency
    assert rec.bytes_received == len(VALID)
    sent = json.loads(seen[0].content)
    assert sent["stream"] is True
    assert seen[0].headers["accept"] == "text/event-stream"


def test_eof_before_terminal_clean_close() -> None:
    body = to_sse(valid_stream()[:-1])
    rec = run(serve(chunked(body)))
    assert rec.outcome == "eof_before_terminal"
    assert not rec.ok and rec.terminal is None


def test_connection_dropped_mid_stream() -> None:
    cut = VALID[: len(VALID) // 2]
    rec = run(serve([*chunked(cut), httpx.RemoteProtocolError("peer closed connection")]))
    assert rec.outcome == "eof_before_terminal"
    assert "RemoteProtocolError" in rec.detail
    assert not rec.ok


def test_unterminated_terminal_event_is_not_completion() -> None:
    body = to_sse(valid_stream())[:-1]  # the final blank line never arrives
    rec = run(serve([body]))
    assert rec.outcome == "eof_before_terminal"
    assert rec.discarded_tail is not None and "response.completed" in rec.discarded_tail


def test_stalled_server_idle_timeout() -> None:
    rec = run(serve([VALID[:300], 5.0, VALID[300:]]), idle_timeout=0.2)
    assert rec.outcome == "idle_timeout"
    assert not rec.ok
    assert rec.total_latency is not None and rec.total_latency < 2.0


def test_deadline_exceeded() -> None:
    parts: list[bytes | float | Exception] = []
    for piece in chunked(VALID, 8):
        parts += [piece, 0.05]
    rec = run(serve(parts), idle_timeout=1.0, deadline=0.3)
    assert rec.outcome == "deadline_exceeded"
    assert not rec.ok


def test_http_503_keeps_body() -> None:
    err = b'{"error": {"message": "overloaded", "code": 503}}'
    rec = run(serve([err], status=503, headers={"content-type": "application/json"}))
    assert rec.outcome == "http_error"
    assert rec.http_status == 503
    assert rec.http_body == err.decode()
    assert rec.events == []


def test_wrong_content_type() -> None:
    rec = run(serve([b'{"id": "resp_1"}'], headers={"content-type": "application/json"}))
    assert rec.outcome == "wrong_content_type"
    assert rec.http_body == '{"id": "resp_1"}'


def test_transport_error() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    rec = run(handler)
    assert rec.outcome == "transport_error"
    assert "refused" in rec.detail


def test_malformed_json() -> None:
    body = to_sse(valid_stream()[:3]) + b"event: response.output_text.delta\ndata: {oops\n\n"
    rec = run(serve([body, VALID]))
    assert rec.outcome == "malformed_json"
    assert "event 3" in rec.detail


def test_oversize_event() -> None:
    rec = run(serve(chunked(VALID)), limits=SSELimits(max_event=200))
    assert rec.outcome == "malformed_sse"
    assert "SSELimitError" in rec.detail


def test_invalid_utf8() -> None:
    events = valid_stream()
    head = to_sse(events[:5])
    bad = b'event: x\ndata: {"type": "\xff"}\n\n'
    rec = run(serve([head, bad, to_sse(events[5:])]))
    assert rec.outcome == "malformed_sse"
    assert "UTF-8" in rec.detail


def test_event_after_terminal() -> None:
    events = valid_stream()
    extra = dict(events[find(events, "response.output_text.delta")], sequence_number=99)
    rec = run(serve([to_sse([*events, extra])]))
    assert rec.outcome == "event_after_terminal"
    assert not rec.ok
    assert any("[after-terminal]" in v for v in rec.violations)


def test_event_after_done_marker() -> None:
    rec = run(serve([VALID + b"data: {}\n\n"]))
    assert rec.outcome == "event_after_terminal"


def test_protocol_violation() -> None:
    events = valid_stream()
    events[find(events, "response.output_text.done")]["text"] = "Something else."
    rec = run(serve([to_sse(events)]))
    assert rec.outcome == "protocol_violation"
    assert rec.terminal == "completed"
    assert not rec.ok


def test_done_before_terminal_is_a_violation() -> None:
    events = valid_stream()
    body = to_sse(events[:-1]) + b"data: [DONE]\n\n" + to_sse(events[-1:])
    rec = run(serve([body]))
    assert rec.outcome == "event_after_terminal"
    assert any("done-before-terminal" in v for v in rec.violations)


@pytest.mark.parametrize("kind", ["incomplete", "failed"])
def test_incomplete_and_failed_are_not_ok_unless_allowed(kind: str) -> None:
    body = to_sse(valid_stream(terminal=kind))
    rec = run(serve([body]))
    assert (rec.outcome, rec.ok, rec.terminal) == (kind, False, kind)
    allowed = run(serve([body]), **{f"allow_{kind}": True})
    assert (allowed.outcome, allowed.ok) == (kind, True)


# --------------------------------------------------------------------------- chat and triton


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    c = {
        "id": "chatcmpl-9",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(c)}\n\n".encode()


CHAT = (
    _chat_chunk({"role": "assistant", "reasoning_content": "hm"})
    + _chat_chunk({"content": "Hi"})
    + _chat_chunk({}, "stop")
)


def test_chat_ok_and_missing_done() -> None:
    rec = run(serve([CHAT + b"data: [DONE]\n\n"]), fn=stream_chat)
    assert (rec.outcome, rec.ok, rec.request_id) == ("ok", True, "chatcmpl-9")
    assert (rec.items[0]["content"], rec.items[0]["reasoning"]) == ("Hi", "hm")
    rec = run(serve([CHAT]), fn=stream_chat)
    assert rec.outcome == "eof_before_terminal"


def test_chat_error_payload() -> None:
    body = _chat_chunk({"content": "Hi"}) + b'data: {"error": {"message": "boom"}}\n\n'
    rec = run(serve([body]), fn=stream_chat)
    assert (rec.outcome, rec.terminal) == ("failed", "failed")
    assert rec.error == {"message": "boom"}


TRITON_URL = "http://test.invalid/v2/models/ensemble/generate_stream"


def _tri(d: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(d)}\n\n".encode()


def test_triton_outcomes() -> None:
    body = {"id": "req-1", "text_input": "hi"}
    ok = _tri({"id": "req-1", "text_output": "He"}) + _tri(
        {"id": "req-1", "text_output": "llo", "triton_final_response": True}
    )
    rec = run(serve([ok]), fn=stream_triton, url=TRITON_URL, body=body)
    assert (rec.outcome, rec.ok, rec.request_id) == ("ok", True, "req-1")
    assert rec.items[0]["text"] == "Hello"
    assert rec.items[0]["final_flag"]

    err = _tri({"id": "req-1", "text_output": "He"}) + _tri({"error": "engine crashed"})
    rec = run(serve([err]), fn=stream_triton, url=TRITON_URL, body=body)
    assert rec.outcome == "failed"
    assert rec.error == {"message": "engine crashed"}

    partial = _tri({"id": "req-1", "text_output": "He"})
    dropped = [partial, httpx.ReadError("connection reset")]
    rec = run(serve(dropped), fn=stream_triton, url=TRITON_URL, body=body)
    assert rec.outcome == "eof_before_terminal"
    strict = run(
        serve([partial]), fn=stream_triton, url=TRITON_URL, body=body, require_final_flag=True
    )
    assert strict.outcome == "eof_before_terminal"

    after = ok + _tri({"id": "req-1", "text_output": "!"})
    rec = run(serve([after]), fn=stream_triton, url=TRITON_URL, body=body)
    assert rec.outcome == "event_after_terminal"


# --------------------------------------------------------------------------- records


def test_record_save_load_and_replay(tmp_path: Path) -> None:
    events = valid_stream()
    events[find(events, "response.output_text.done")]["text"] = "Other."
    rec = run(serve([to_sse(events)]))
    path = rec.save(tmp_path / "rec.json")
    loaded = StreamRecord.load(path)
    assert loaded == rec
    replayed = replay_record(path)
    assert replayed.outcome == rec.outcome == "protocol_violation"
    assert replayed.violations == rec.violations
    raw = tmp_path / "body.sse"
    raw.write_bytes(VALID)
    assert replay_record(raw, "responses").outcome == "ok"
    assert replay_record(VALID[:-40], "responses").outcome == "eof_before_terminal"
    with pytest.raises(ValueError, match="protocol is required"):
        replay_record(VALID)


def test_outcome_names_are_distinct_and_complete() -> None:
    assert len(set(OUTCOMES)) == len(OUTCOMES) == 13


# --------------------------------------------------------------------------- real socket


def test_real_server_drop_and_ok() -> None:
    """Over a real TCP connection (uvicorn): a generator that dies mid-body is a drop."""
    import socket
    import threading

    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def full(request: Any) -> StreamingResponse:
        async def gen() -> AsyncIterator[bytes]:
            for piece in chunked(VALID, 200):
                yield piece

        return StreamingResponse(gen(), media_type="text/event-stream")

    async def dying(request: Any) -> StreamingResponse:
        async def gen() -> AsyncIterator[bytes]:
            yield VALID[:500]
            await asyncio.sleep(0.05)
            raise RuntimeError("worker died")

        return StreamingResponse(gen(), media_type="text/event-stream")

    app = Starlette(
        routes=[Route("/full", full, methods=["POST"]), Route("/dying", dying, methods=["POST"])]
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            threading.Event().wait(0.02)

        async def main() -> tuple[StreamRecord, StreamRecord]:
            async with httpx.AsyncClient() as client:
                base = f"http://127.0.0.1:{port}"
                ok = await stream_responses(client, f"{base}/full", {"input": "x"}, idle_timeout=5)
                bad = await stream_responses(
                    client, f"{base}/dying", {"input": "x"}, idle_timeout=5
                )
                return ok, bad

        ok, bad = asyncio.run(main())
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()
    assert ok.outcome == "ok", (ok.outcome, ok.detail)
    assert bad.outcome == "eof_before_terminal"
    assert "RemoteProtocolError" in bad.detail or "ReadError" in bad.detail
