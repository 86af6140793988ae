# SPDX-License-Identifier: Apache-2.0
"""A small Responses WebSocket client for tests and benchmarks, and the conformance checks.

:class:`WSClient` sends ``response.create`` frames and collects events by lane (the
``stream_id`` they carry, None for the default lane); a turn ends on a terminal event or an
``error`` event. :func:`conformance` runs the WebSocket behaviours of the Open Responses
compliance tests against a server (one response; two sequential ``store: false``
responses; a continuation; a reconnect with ``store: false`` -> ``previous_response_not_found``
then a fresh turn on the same socket; an unknown id; a failed continuation that evicts the
cache) and returns each one's events, every event sequence checked by the strict checker.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..checker.responses import check_responses_events
from ..core.events import TERMINAL_TYPES

MODEL = "gpt-oss-20b"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
    },
}


def ws_url(base_url: str) -> str:
    """``http://host:port`` (or ``.../v1``) -> ``ws://host:port/v1/responses``."""
    url = base_url.rstrip("/")
    if not url.endswith("/v1"):
        url += "/v1"
    return "ws" + url[4:] + "/responses" if url.startswith("http") else url + "/responses"


class WSClient:
    """One WebSocket connection to ``/v1/responses`` (the ``websockets`` package)."""

    def __init__(self, connection: Any, extra: dict[str, Any] | None = None) -> None:
        self.connection = connection
        #: Fields every :meth:`turn` adds to its body (``{"seed": 1}`` for the simulator).
        self.extra = dict(extra or {})
        self.lanes: dict[str | None, asyncio.Queue[dict[str, Any]]] = defaultdict(asyncio.Queue)
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(
        cls, base_url: str, extra: dict[str, Any] | None = None, **options: Any
    ) -> WSClient:
        from websockets.asyncio.client import connect

        options.setdefault("max_size", None)
        return cls(await connect(ws_url(base_url), **options), extra)

    async def _read(self) -> None:
        async for message in self.connection:
            event = json.loads(message)
            self.lanes[event.get("stream_id")].put_nowait(event)

    async def send(self, frame: dict[str, Any] | str | bytes) -> None:
        await self.connection.send(frame if isinstance(frame, (str, bytes)) else json.dumps(frame))

    async def recv(self, lane: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
        return await asyncio.wait_for(self.lanes[lane].get(), timeout)

    async def events(self, lane: str | None = None, timeout: float = 30.0) -> list[dict[str, Any]]:
        """The events of ``lane`` up to and including the one that ends its turn: a terminal
        ``response.*`` event, or the connection's ``error`` event (it carries ``status``). A
        stream's own ``error`` event (no ``status``) is followed by ``response.failed``."""
        out: list[dict[str, Any]] = []
        while not out or not ends_turn(out[-1]):
            out.append(await self.recv(lane, timeout))
        return out

    async def turn(self, **body: Any) -> list[dict[str, Any]]:
        """Send ``response.create`` with ``body`` (model defaulted) and read its events."""
        body = {"model": MODEL, **self.extra, **body}
        await self.send({"type": "response.create", **body})
        return await self.events(body.get("stream_id"))

    async def close(self) -> None:
        await self.connection.close()
        self.reader.cancel()
        await asyncio.gather(self.reader, return_exceptions=True)

    async def __aenter__(self) -> WSClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


def ends_turn(event: dict[str, Any]) -> bool:
    """Whether ``event`` is the last of its turn on a WebSocket lane."""
    kind = event.get("type")
    return kind in TERMINAL_TYPES or (kind == "error" and "status" in event)


def response_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The terminal event's response (AssertionError naming the last event otherwise)."""
    last = events[-1]
    assert "response" in last, f"turn ended with {last}"
    return last["response"]


def error_code(events: list[dict[str, Any]]) -> str | None:
    last = events[-1]
    return (last.get("error") or {}).get("code") if last.get("type") == "error" else None


def checked(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` after the strict checker passed them (the ``stream_id`` tags removed)."""
    plain = [{k: v for k, v in e.items() if k != "stream_id"} for e in events]
    result = check_responses_events(plain)
    assert result.ok, result.violations
    return events


def sdk_turn(connection: Any, **body: Any) -> list[Any]:
    """Send one ``response.create`` on an openai-python ``responses.connect()`` connection
    (typed) and read the SDK's events to the turn's end."""
    connection.response.create(model=MODEL, **body)
    events = []
    for event in connection:
        events.append(event)
        if ends_turn(event.model_dump()):
            return events
    raise AssertionError("the connection ended mid-turn")


def sdk_checked(events: list[Any]) -> list[dict[str, Any]]:
    """The SDK's typed events as dicts, after the strict checker passed them."""
    return checked([e.model_dump(mode="json", exclude_none=True) for e in events])


@dataclass
class Behaviour:
    name: str
    ok: bool
    detail: str = ""
    turns: list[list[dict[str, Any]]] = field(default_factory=list)


async def _one(name: str, run: Any, base_url: str, extra: dict[str, Any]) -> Behaviour:
    turns: list[list[dict[str, Any]]] = []
    try:
        await run(base_url, turns, extra)
    except Exception as exc:  # the behaviour's failure, reported with its turns
        return Behaviour(name, False, f"{type(exc).__name__}: {exc}", turns)
    return Behaviour(name, True, "", turns)


async def _response(base_url: str, turns: list[Any], extra: Any) -> None:
    async with await WSClient.connect(base_url, extra) as ws:
        turns.append(checked(await ws.turn(input="Count from 1 to 3.")))
        assert response_of(turns[-1])["status"] == "completed"


async def _sequential(base_url: str, turns: list[Any], extra: Any) -> None:
    async with await WSClient.connect(base_url, extra) as ws:
        for text in ("first", "second"):
            turns.append(checked(await ws.turn(input=text, store=False)))
            assert response_of(turns[-1])["status"] == "completed"


async def _continuation(base_url: str, turns: list[Any], extra: Any) -> None:
    async with await WSClient.connect(base_url, extra) as ws:
        turns.append(checked(await ws.turn(input="Remember the code word: cobalt", store=False)))
        parent = response_of(turns[-1])["id"]
        turns.append(
            checked(
                await ws.turn(
                    input="What was the code word?", store=False, previous_response_id=parent
                )
            )
        )
        assert response_of(turns[-1])["status"] == "completed"


async def _reconnect(base_url: str, turns: list[Any], extra: Any) -> None:
    async with await WSClient.connect(base_url, extra) as ws:
        turns.append(checked(await ws.turn(input="hello", store=False)))
    parent = response_of(turns[-1])["id"]
    async with await WSClient.connect(base_url, extra) as ws:
        turns.append(await ws.turn(input="again", store=False, previous_response_id=parent))
        assert error_code(turns[-1]) == "previous_response_not_found", turns[-1]
        turns.append(checked(await ws.turn(input="hello again", store=False)))
        assert response_of(turns[-1])["status"] == "completed"


async def _not_found(base_url: str, turns: list[Any], extra: Any) -> None:
    async with await WSClient.connect(base_url, extra) as ws:
        missing = f"resp_openresponses_missing_{int(time.time() * 1000)}"
        turns.append(await ws.turn(input="hi", store=False, previous_response_id=missing))
        assert error_code(turns[-1]) == "previous_response_not_found", turns[-1]


async def _evicts(base_url: str, turns: list[Any], extra: Any) -> None:
    async with await WSClient.connect(base_url, extra) as ws:
        turns.append(checked(await ws.turn(input="seed", store=False)))
        parent = response_of(turns[-1])["id"]
        bad = [
            {"type": "function_call_output", "call_id": "call_openresponses_missing", "output": "x"}
        ]
        turns.append(await ws.turn(input=bad, store=False, previous_response_id=parent))
        last = turns[-1][-1]
        failed = last["type"] == "error" or (last.get("response") or {}).get("status") == "failed"
        assert failed, last
        turns.append(await ws.turn(input="again", store=False, previous_response_id=parent))
        assert error_code(turns[-1]) == "previous_response_not_found", turns[-1]


BEHAVIOURS = {
    "websocket-response": _response,
    "websocket-sequential-responses": _sequential,
    "websocket-continuation": _continuation,
    "websocket-reconnect-store-false-recovery": _reconnect,
    "websocket-previous-response-not-found": _not_found,
    "websocket-failed-continuation-evicts-cache": _evicts,
}


async def conformance(base_url: str, extra: dict[str, Any] | None = None) -> list[Behaviour]:
    """Every behaviour of :data:`BEHAVIOURS` against the server at ``base_url``; ``extra``
    fields go into every ``response.create``."""
    return [await _one(name, run, base_url, extra or {}) for name, run in BEHAVIOURS.items()]
