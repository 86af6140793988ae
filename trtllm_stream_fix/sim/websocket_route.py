# SPDX-License-Identifier: Apache-2.0
"""``GET /v1/responses`` upgraded: Responses WebSocket mode on the simulated server.

Each ``response.create`` runs through the server's own ``POST /v1/responses`` endpoint
(the same validation, engine, event generator and ``--store``): the body is handed to it
as a request, and its SSE chunks are read back into the events' JSON objects, so the
socket carries exactly what the SSE stream's ``data:`` lines would. An error answer
(a 4xx/5xx JSON body) becomes :class:`~trtllm_stream_fix.websocket.TurnRejected`.
Closing the turn closes the endpoint's stream, which ends the engine request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket

from ..core.compat import json_dumps, json_loads
from ..store import ResponseStore
from ..websocket import (
    ConnectionGate,
    TurnRejected,
    TurnRunner,
    WebSocketSettings,
    serve_websocket,
)
from .sse_response import EventStreamResponse

Endpoint = Callable[[Request], Awaitable[Response]]
PATH = "/v1/responses"


def _request(body: bytes) -> Request:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    scope = {
        "type": "http",
        "method": "POST",
        "path": PATH,
        "raw_path": PATH.encode(),
        "query_string": b"",
        "http_version": "1.1",
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    return Request(scope, receive)


def _events(chunk: str | bytes) -> list[dict[str, Any]]:
    text = chunk.decode() if isinstance(chunk, bytes) else chunk
    return [json_loads(line[6:]) for line in text.split("\n") if line.startswith("data: ")]


def endpoint_runner(endpoint: Endpoint) -> TurnRunner:
    """A :class:`~trtllm_stream_fix.websocket.TurnRunner` over the POST ``endpoint``."""

    async def run(body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        response = await endpoint(_request(json_dumps(body)))
        if not isinstance(response, EventStreamResponse):
            raise TurnRejected(response.status_code, json_loads(bytes(response.body)))
        chunks = response.chunks
        try:
            async for chunk in chunks:
                for event in _events(chunk):
                    yield event
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]

    return run


def add_websocket_route(
    app: FastAPI,
    endpoint: Endpoint,
    store: ResponseStore,
    settings: WebSocketSettings,
) -> ConnectionGate:
    """Serve WebSocket mode on ``GET /v1/responses`` of ``app`` (426 when disabled); the
    connection gate is returned (and kept on ``app.state.websocket_gate``)."""
    gate = ConnectionGate(settings.max_connections)
    run = endpoint_runner(endpoint)

    async def responses_websocket(websocket: WebSocket) -> None:
        await serve_websocket(websocket, run, store=store, settings=settings, gate=gate)

    app.add_api_websocket_route(PATH, responses_websocket)
    app.state.websocket_gate = gate
    app.state.websocket_settings = settings
    return gate
