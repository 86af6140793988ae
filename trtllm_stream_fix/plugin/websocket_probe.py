# SPDX-License-Identifier: Apache-2.0
"""The self-test's proof of the ``websocket`` group (``probes.websocket_turns``).

Upstream's ``OpenAIServer`` needs an engine, so the probe cannot build one on a GPU host.
It checks that ``openai_server`` binds the plugin's server class, then serves a probe app
with the group's own route (``websocket_route.add_route``) in front of a ``POST
/v1/responses`` handler of upstream's shape (``(request, raw_request)``) that answers with
the SSE frames of upstream's processor for synthetic gpt-oss outputs at stream_interval 1
and 20 (``plugin.realstub.drive.stream``: the patched processor and post-processor as the
server drives them). Over a real WebSocket session (Starlette's test client, this host's
protocol package), each turn's events must equal the SSE stream's, pass the strict checker
and show the client the same events at 1 and 20; an error answer must come back as an
OpenAI ``error`` event with the socket still usable; and a socket closed mid-turn must turn
``raw_request.is_disconnected()`` true, which is what upstream's ``await_disconnected``
polls to abort the engine request.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import time
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

from ..core.events import TERMINAL_TYPES
from .marker import is_ours
from .upstream_names import OPENAI_SERVER

SPLITS = (1, 20)
MODEL = "gpt-oss-20b"
REJECT = "probe: reject"
HOLD = "probe: hold"


def _create(text: str) -> dict[str, Any]:
    return {"type": "response.create", "model": MODEL, "input": text, "store": False}


def _sse(events: list[dict[str, Any]]) -> list[str]:
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events]


class _ProbeHandler:
    """``POST /v1/responses`` of upstream's shape, answering recorded streams by input."""

    def __init__(self, streams: dict[str, list[dict[str, Any]]]) -> None:
        self.streams = streams
        self.disconnect_seen = False
        self.watchers: set[asyncio.Task[None]] = set()

    async def openai_responses(self, request: Any, raw_request: Any) -> Any:
        from starlette.responses import JSONResponse, StreamingResponse

        key = request.input if isinstance(request.input, str) else ""
        if key == REJECT:  # upstream's flat ErrorResponse
            body = {"object": "error", "message": "probe rejection", "type": "BadRequestError"}
            return JSONResponse({**body, "param": None, "code": 400}, status_code=400)
        if key == HOLD:  # upstream's handler: a watcher task polls the raw request
            self.watchers.add(asyncio.create_task(self._watch(raw_request)))
            return StreamingResponse(self._hold(), media_type="text/event-stream")
        frames = _sse(self.streams[key])
        return StreamingResponse(_frames(frames), media_type="text/event-stream")

    async def _watch(self, raw_request: Any) -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if await raw_request.is_disconnected():
                self.disconnect_seen = True
                return
            await asyncio.sleep(0.01)

    async def _hold(self) -> AsyncIterator[str]:
        first = next(iter(self.streams.values()))[0]
        yield _sse([first])[0]
        deadline = time.monotonic() + 5  # a generation still running when the socket closes:
        while not self.disconnect_seen and time.monotonic() < deadline:  # until it is aborted
            await asyncio.sleep(0.01)


async def _frames(frames: list[str]) -> AsyncIterator[str]:
    for frame in frames:
        yield frame


def _turn(ws: Any, text: str, limit: int = 1) -> list[dict[str, Any]]:
    """One turn's events: up to its terminal event, a refusal's ``error``, or the ``error``
    after ``limit`` events (a stream that ended without a terminal event)."""
    ws.send_text(json.dumps(_create(text)))
    events: list[dict[str, Any]] = []
    while True:
        event = json.loads(ws.receive_text())
        events.append(event)
        done = event["type"] in TERMINAL_TYPES
        if done or (event["type"] == "error" and len(events) in (1, limit + 1)):
            return events


def _upstream_stream(output: Any, split: int) -> list[dict[str, Any]]:
    """The SSE events upstream's (patched) Responses path streams for ``output``."""
    from .targets import PRE_CLASS_LINE, detect_line

    if detect_line() == PRE_CLASS_LINE:
        from ..plugin.realstub import drive_preclass

        events: list[dict[str, Any]] = drive_preclass.stream(output, split, store=False)["events"]
        return events
    from ..plugin.realstub.drive import stream

    return stream(output, split, workers=False)[0]


def check_websocket(outputs: list[Any]) -> dict[str, Any]:
    """The probe (module doc): counts and the first problems."""
    from fastapi import FastAPI
    from starlette.testclient import TestClient

    from ..checker.responses import check_responses_events
    from ..plugin.realstub.drive import comparable
    from .websocket_route import add_route

    server_module = importlib.import_module(OPENAI_SERVER)
    examples: list[str] = []
    bound = is_ours(server_module.OpenAIServer)
    if not bound:
        examples.append("openai_server.OpenAIServer is not the plugin's WebSocket class")
    streams = {
        f"probe {n} k={split}": _upstream_stream(output, split)
        for n, output in enumerate(outputs)
        for split in SPLITS
    }
    handler = _ProbeHandler(streams)
    _ProbeHandler.openai_responses.__annotations__["request"] = server_module.ResponsesRequest
    app = FastAPI()
    app.add_api_route("/v1/responses", handler.openai_responses, methods=["POST"])
    add_route(SimpleNamespace(app=app, enable_store=False), app)
    got: dict[str, list[dict[str, Any]]] = {}
    with TestClient(app) as client, client.websocket_connect("/v1/responses") as ws:
        for key in streams:
            got[key] = _turn(ws, key, len(streams[key]))
        rejected = _turn(ws, REJECT)
        first = next(iter(streams))
        after = _turn(ws, first, len(streams[first]))
    with TestClient(app) as client:
        with client.websocket_connect("/v1/responses") as ws:
            ws.send_text(json.dumps(_create(HOLD)))
            ws.receive_text()
        deadline = time.monotonic() + 5
        while not handler.disconnect_seen and time.monotonic() < deadline:
            time.sleep(0.01)
    same = [k for k in streams if got[k] == streams[k]]
    strict = [k for k in streams if check_responses_events(got[k]).ok]
    pairs = [(f"probe {n} k=1", f"probe {n} k=20") for n in range(len(outputs))]
    identical = [a for a, b in pairs if comparable(got[a]) == comparable(got[b])]
    error = rejected[-1] if rejected else {}
    error_ok = error.get("type") == "error" and error.get("status") == 400
    error_ok = error_ok and (error.get("error") or {}).get("type") == "invalid_request_error"
    usable = after == streams[first]
    examples += [
        f"{k}: WebSocket events differ from the SSE stream" for k in streams if k not in same
    ]
    examples += [f"{k}: strict checker" for k in streams if k not in strict]
    examples += [f"{a}: differs from k=20" for a, _ in pairs if a not in identical]
    if not error_ok:
        examples.append(f"a rejected turn: {error or 'no error event'}")
    if not usable:
        examples.append("the socket was not usable after an error event")
    if not handler.disconnect_seen:
        examples.append("a socket closed mid-turn did not make raw_request.is_disconnected() true")
    return {
        "bound": bound,
        "streams": len(streams),
        "same": len(same),
        "strict": len(strict),
        "identical": len(identical),
        "compared": len(pairs),
        "error_event": error_ok and usable,
        "disconnect": handler.disconnect_seen,
        "examples": examples,
    }
