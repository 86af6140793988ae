# SPDX-License-Identifier: Apache-2.0
"""One WebSocket turn through upstream's own ``POST /v1/responses`` handler.

:class:`UpstreamTurns` is the ``TurnRunner`` the ``websocket`` group hands to
``trtllm_stream_fix.websocket.serve_websocket``: given a ``response.create`` body (``stream``
set, history already expanded from the socket's cache), it validates the body with the
request model the handler is annotated with (as FastAPI does for the POST), awaits the
handler the app routes ``POST /v1/responses`` to (``OpenAIServer.openai_responses(request,
raw_request)`` on every recorded line) and yields the JSON object of each SSE frame of the
``StreamingResponse`` it returns, so the events are those of upstream's processor (the
plugin's, when the ``responses`` group is installed). An error answer (``JSONResponse``,
status >= 400, upstream's flat ``ErrorResponse`` or ``{"error": ...}``) becomes
``TurnRejected`` with an OpenAI-shaped error (upstream's 404 for a ``previous_response_id``
its store does not hold: code ``previous_response_not_found``, as OpenAI answers). A stream
that ends without a terminal event raises :class:`IncompleteStream`, which the session sends
as a 500 ``error`` event: the client's turn always ends.

The handler's ``raw_request`` is a :class:`SocketRequest`: the upgrade's headers, client and
a fresh ``state``, and ``is_disconnected()``, which turns true when the socket closes or the
turn's iterator is closed. Upstream's handler starts ``await_disconnected(raw_request,
promise)``, which polls it and aborts an unfinished engine request: closing the iterator
mid-stream (the client went away) aborts the generation as an HTTP disconnect does.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..core.events import TERMINAL_TYPES
from ..jsonlimits import loads
from .errors import IncompleteStream

RESPONSES_PATH = "/v1/responses"
PREVIOUS_NOT_FOUND = "previous_response_not_found"
TERMINAL = TERMINAL_TYPES


_SSE_END = "\n\n"


def responses_handler(app: Any) -> Callable[..., Any] | None:
    """The endpoint ``app`` routes ``POST /v1/responses`` to (None: no such route)."""
    for route in getattr(app, "routes", ()):
        methods = getattr(route, "methods", None) or ()
        if getattr(route, "path", None) == RESPONSES_PATH and "POST" in methods:
            endpoint: Callable[..., Any] | None = getattr(route, "endpoint", None)
            return endpoint
    return None


def request_model(handler: Callable[..., Any]) -> Any:
    """The POST's body model: the class the handler's ``request`` parameter is annotated
    with, resolved in the handler's module (upstream: ``ResponsesRequest``)."""
    func = getattr(handler, "__func__", handler)
    names = getattr(func, "__globals__", {})
    annotation = getattr(func, "__annotations__", {}).get("request", "ResponsesRequest")
    model = names.get(annotation) if isinstance(annotation, str) else annotation
    if not isinstance(model, type):
        raise LookupError(f"{func.__module__}.{func.__qualname__}: no request model")
    return model


def openai_error(status: int, body: Any) -> dict[str, Any]:
    """``{"error": {message, type, param, code}}`` from an error answer's JSON body: upstream's
    flat ``ErrorResponse`` (``code`` is the status, ``type`` a class name), its
    ``{"error": "detail"}`` validation answer, or an OpenAI body (kept)."""
    inner = body.get("error") if isinstance(body, dict) else None
    source = inner if isinstance(inner, dict) else body if isinstance(body, dict) else {}
    message = source.get("message") or (inner if isinstance(inner, str) else None)
    code = source.get("code")
    kind = source.get("type")
    openai_kinds = ("invalid_request_error", "server_error", "not_found_error")
    return {
        "error": {
            "message": str(message or f"request failed with HTTP {status}"),
            "type": kind
            if kind in openai_kinds
            else ("invalid_request_error" if status < 500 else "server_error"),
            "param": source.get("param"),
            "code": code if isinstance(code, str) else None,
        }
    }


def validation_error(exc: Exception) -> dict[str, Any]:
    """A failed body validation as the POST's 400 (first failing field as ``param``)."""
    errors: list[dict[str, Any]] = getattr(exc, "errors", lambda: [])()
    param = ".".join(str(p) for p in errors[0].get("loc", ())) if errors else None
    detail = str(exc)
    if len(detail) > 4096:  # upstream truncates the echoed input likewise
        detail = detail[:4096] + " ..."
    error = {"message": detail, "type": "invalid_request_error", "param": param, "code": None}
    return {"error": error}


class SocketRequest:
    """The ``raw_request`` upstream's handler is given for a WebSocket turn (module doc)."""

    def __init__(self, websocket: Any) -> None:
        from starlette.datastructures import State

        self.websocket = websocket
        self.headers = websocket.headers
        self.client = websocket.client
        self.url = websocket.url
        self.scope = websocket.scope
        self.state = State()
        self.ended = False

    def end(self) -> None:
        """The turn's stream is over (finished, or closed by the connection)."""
        self.ended = True

    async def is_disconnected(self) -> bool:
        if self.ended:
            return True
        from starlette.websockets import WebSocketState

        return WebSocketState.DISCONNECTED in (
            self.websocket.client_state,
            self.websocket.application_state,
        )


def sse_events(buffer: str) -> tuple[list[dict[str, Any]], str]:
    """The event objects of the complete SSE frames in ``buffer`` and what is left of it."""
    events = []
    *frames, rest = buffer.split(_SSE_END)
    for frame in frames:
        data = [line[5:].lstrip() for line in frame.splitlines() if line.startswith("data:")]
        if data and data != ["[DONE]"]:
            events.append(loads("\n".join(data)))
    return events, rest


class UpstreamTurns:
    """``TurnRunner`` over upstream's ``POST /v1/responses`` handler (module doc)."""

    def __init__(self, handler: Callable[..., Any], websocket: Any) -> None:
        self.handler = handler
        self.model = request_model(handler)
        self.websocket = websocket

    def __call__(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        return self._turn(body)

    async def _turn(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        rejected = importlib.import_module("trtllm_stream_fix.websocket.errors").TurnRejected
        try:
            request = self.model.model_validate({**body, "stream": True})
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise rejected(400, validation_error(exc)) from None
        raw_request = SocketRequest(self.websocket)
        try:
            answer = await self.handler(request, raw_request)
            body_iterator = getattr(answer, "body_iterator", None)
            if body_iterator is None:
                status, error = _rejection(answer)
                if status == 404 and body.get("previous_response_id"):  # upstream's only 404
                    error["error"].update(code=PREVIOUS_NOT_FOUND, param="previous_response_id")
                raise rejected(status, error)
            try:
                buffer, ended = "", False
                async for chunk in body_iterator:
                    text = chunk.decode() if isinstance(chunk, bytes) else str(chunk)
                    events, buffer = sse_events(buffer + text)
                    for event in events:
                        ended = event.get("type") in TERMINAL
                        yield event
                if not ended:  # the client would wait for the turn's end: fail it (error event)
                    raise IncompleteStream("upstream's stream ended without a terminal event")
            finally:
                close = getattr(body_iterator, "aclose", None)
                if close is not None:
                    await close()
        finally:
            raw_request.end()  # upstream's disconnect watcher aborts what did not finish


def _rejection(answer: Any) -> tuple[int, dict[str, Any]]:
    """``(status, OpenAI error body)`` of a handler answer that is not a stream."""
    status = int(getattr(answer, "status_code", 500))
    try:
        body = json.loads(bytes(getattr(answer, "body", b"") or b"null"))
    except ValueError:
        body = None
    if status < 400:  # a complete body for a streaming request: not what a turn expects
        status, body = 500, {"message": "the Responses handler did not stream"}
    return status, openai_error(status, body)
