# SPDX-License-Identifier: Apache-2.0
"""Responses WebSocket mode without I/O: client frames, a connection's lanes and cache, errors.

A client sends one JSON text frame per ``response.create`` (the ``POST /v1/responses`` body
plus ``type``, and the WebSocket-only ``stream_id`` and ``generate``). :func:`parse_frame`
validates the envelope; the body's own fields are the runner's to validate.

:class:`ConnectionState` is one connection's state: its lanes (the default lane ``None`` and
up to ``max_lanes`` named ones), the count of admitted turns, and each lane's latest response
(its full input and output items), so a ``store: false`` continuation on this connection is
expanded into the full input. A ``previous_response_id`` that no lane holds falls back to the
server's response store when the turn stores (``store`` true, the default), and is
``previous_response_not_found`` otherwise; a cached conversation that continues a stored
response keeps that id (``base_id``), so the store still supplies the history before it.
A same-lane continuation that fails evicts its parent; a failed fork from another lane
keeps it.

:func:`error_event` builds OpenAI's WebSocket ``error`` event
(``{"type": "error", "status", "error": {"type", "code", "message", "param"}}``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import jsonlimits
from ..core.errors import error_body
from ..core.events import TERMINAL_TYPES as TERMINAL_TYPES
from .errors import ClientEventError, TurnRejected
from .settings import WebSocketSettings

#: ``stream_id``: 1-256 characters of ``[A-Za-z0-9_.-]``.
STREAM_ID = re.compile(r"[A-Za-z0-9_.\-]{1,256}")
#: Event types that end a response's stream (its response is read from them).
#: Terminal types whose response a lane keeps (a failed one is not continued).
CACHED_TYPES = frozenset({"response.completed", "response.incomplete"})
CLIENT_EVENT_TYPES = ("response.create",)
LIFETIME_MESSAGE = (
    "Responses websocket connection limit reached ({minutes} minutes). "
    "Create a new websocket connection to continue."
)

Lane = str | None


@dataclass(frozen=True)
class ResponseCreate:
    """One validated ``response.create``: the POST body (without ``type``, ``stream``,
    ``stream_id`` and ``generate``), its lane and whether it generates."""

    body: dict[str, Any]
    stream_id: str | None = None
    generate: bool = True
    #: The frame's length (the input's share of the lane cache's size).
    size: int = 0


def error_event(
    status: int,
    message: str,
    *,
    code: str | None = None,
    param: str | None = None,
    type_: str = "invalid_request_error",
    stream_id: str | None = None,
    sequence_number: int | None = None,
) -> dict[str, Any]:
    """OpenAI's WebSocket ``error`` event; ``stream_id`` / ``sequence_number`` when given."""
    event: dict[str, Any] = {
        "type": "error",
        "status": status,
        **error_body(message, type_=type_, param=param, code=code),
    }
    if stream_id is not None:
        event["stream_id"] = stream_id
    if sequence_number is not None:
        event["sequence_number"] = sequence_number
    return event


def client_error_event(exc: ClientEventError) -> dict[str, Any]:
    """The ``error`` event of a refused client event."""
    return error_event(
        exc.status,
        exc.message,
        code=exc.code,
        param=exc.param,
        type_=exc.type,
        stream_id=exc.stream_id,
    )


def rejected_event(exc: TurnRejected, stream_id: str | None) -> dict[str, Any]:
    """The ``error`` event of a turn its runner refused (the POST's error body as is)."""
    error = exc.error
    return error_event(
        exc.status,
        str(error.get("message") or "request rejected"),
        code=error.get("code"),
        param=error.get("param"),
        type_=str(error.get("type") or "invalid_request_error"),
        stream_id=stream_id,
    )


def _invalid(message: str, param: str | None, code: str, lane: str | None) -> ClientEventError:
    return ClientEventError(400, message, code=code, param=param, stream_id=lane)


def parse_frame(text: str | bytes, *, max_depth: int = jsonlimits.MAX_DEPTH) -> ResponseCreate:
    """One client text frame as a :class:`ResponseCreate`; :class:`ClientEventError` (400)
    for malformed JSON, a non-object, a value JSON cannot carry back (a lone surrogate, an
    integer beyond 64 bits), an unknown ``type``, a bad ``stream_id`` or
    ``generate``, ``stream`` other than true (the Agents SDK sends ``stream: true``, which
    WebSocket mode implies), ``stream_options`` or ``background``."""
    beyond_64_bits: list[int] = []

    def parse_int(digits: str) -> int:
        value = int(digits)
        if not jsonlimits.in_int_range(value):
            beyond_64_bits.append(value)
        return value

    try:
        data = jsonlimits.loads(text, max_depth=max_depth, parse_int=parse_int)
    except jsonlimits.JSONLimitError as exc:
        raise _invalid(f"Invalid client event: {exc}", None, "invalid_json", None) from None
    if not isinstance(data, dict):
        raise _invalid("Invalid client event: expected a JSON object.", None, "invalid_json", None)
    raw_lane = data.get("stream_id")
    lane = raw_lane if isinstance(raw_lane, str) and STREAM_ID.fullmatch(raw_lane) else None
    kind = data.get("type")
    if kind is None:
        raise _invalid(
            "Missing required parameter: 'type'.", "type", "missing_required_parameter", lane
        )
    if kind not in CLIENT_EVENT_TYPES:
        raise _invalid(
            f"Invalid value: {str(kind)[:64]!r}. Supported client events: "
            + ", ".join(CLIENT_EVENT_TYPES),
            "type",
            "invalid_value",
            lane,
        )
    suspect = beyond_64_bits or jsonlimits.may_hold_surrogates(text)
    unsendable = jsonlimits.first_unsendable(data) if suspect else None
    if unsendable is not None:  # the turn's body is re-encoded as JSON: refuse it here
        param = jsonlimits.json_path(unsendable[0]) or None
        raise _invalid(
            f"Invalid client event: {param or 'the event'} {unsendable[1]}.",
            param,
            "invalid_value",
            lane,
        )
    if "stream_id" in data and raw_lane is not None and lane is None:
        raise _invalid(
            "Invalid 'stream_id': expected 1-256 characters of [A-Za-z0-9_.-].",
            "stream_id",
            "invalid_stream_id",
            None,
        )
    generate = data.get("generate", True)
    if generate is None:
        generate = True
    if not isinstance(generate, bool):
        raise _invalid(
            "Invalid type for 'generate': expected a boolean.", "generate", "invalid_type", lane
        )
    if "stream" in data and data["stream"] is not True:
        raise _invalid(
            "'stream' is implicit over WebSocket and should not be sent.",
            "stream",
            "invalid_value",
            lane,
        )
    for name in ("stream_options", "background"):
        if data.get(name) not in (None, False):
            raise _invalid(
                f"'{name}' is not supported over WebSocket.", name, "unsupported_parameter", lane
            )
    body = {
        k: v
        for k, v in data.items()
        if k not in ("type", "stream", "stream_id", "generate", "stream_options", "background")
    }
    return ResponseCreate(body, lane, generate, len(text))


def input_items(value: Any) -> list[Any]:
    """A request's ``input`` as a list of items (a string is one user message)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if isinstance(value, list):
        return list(value)
    raise _invalid(
        "Invalid type for 'input': expected a string or a list.", "input", "invalid_type", None
    )


@dataclass
class CachedResponse:
    """A lane's latest response: its id, the full input it answered and its output items."""

    id: str
    input: list[Any]
    output: list[Any]
    #: About the JSON size of ``input`` and ``output`` (bytes).
    size: int = 0
    #: A response in the server's store that ``input`` continues (its history is not here).
    base_id: str | None = None


@dataclass
class Turn:
    """An admitted ``response.create`` once it starts: the runner's body and what its end
    updates (its lane, the input to cache, the parent it was expanded from)."""

    create: ResponseCreate
    body: dict[str, Any]
    input: list[Any]
    #: ``previous_response_id`` taken from this connection's cache (removed from ``body``).
    parent_id: str | None = None
    parent_lane: Lane = None
    from_cache: bool = False
    #: About the JSON size of ``input`` (the parent's conversation and this frame).
    size: int = 0
    #: The stored response ``body`` continues (its ``previous_response_id``), if any.
    base_id: str | None = None

    @property
    def lane(self) -> Lane:
        return self.create.stream_id


@dataclass
class ConnectionState:
    """One connection's lanes, admitted turns and per-lane response cache."""

    settings: WebSocketSettings
    opened_at: float
    cache: dict[Lane, CachedResponse] = field(default_factory=dict)
    named: set[str] = field(default_factory=set)
    pending: int = 0
    pending_bytes: int = 0

    def expired(self, now: float) -> bool:
        return now - self.opened_at >= self.settings.lifetime_seconds

    def lifetime_error(self) -> ClientEventError:
        minutes = self.settings.lifetime_seconds / 60
        shown = f"{minutes:g}"
        return _invalid(
            LIFETIME_MESSAGE.format(minutes=shown), None, "websocket_connection_limit_reached", None
        )

    def admit(self, create: ResponseCreate) -> None:
        """Count ``create`` in (its lane opened) until :meth:`finish`:
        ``websocket_stream_limit_reached`` past ``max_lanes`` named lanes, ``max_queued``
        unfinished turns or ``max_queued_bytes`` of their frames."""
        lane = create.stream_id
        if lane is not None and lane not in self.named:
            if len(self.named) >= self.settings.max_lanes:
                raise _invalid(
                    f"Too many WebSocket streams: at most {self.settings.max_lanes} "
                    "distinct stream_id values per connection.",
                    "stream_id",
                    "websocket_stream_limit_reached",
                    lane,
                )
        full = self.pending_bytes + create.size > self.settings.max_queued_bytes
        if self.pending >= self.settings.max_queued or (self.pending and full):
            limit = (
                f"{self.settings.max_queued} responses"
                if self.pending >= self.settings.max_queued
                else f"{self.settings.max_queued_bytes} bytes of requests"
            )
            raise _invalid(
                f"Too many responses queued on this connection (at most {limit}); "
                "wait for one to finish.",
                None,
                "websocket_stream_limit_reached",
                lane,
            )
        if lane is not None:
            self.named.add(lane)
        self.pending += 1
        self.pending_bytes += create.size

    def finish(self, create: ResponseCreate) -> None:
        """An admitted ``create`` is done (answered, refused or cut)."""
        self.pending -= 1
        self.pending_bytes -= create.size

    def find(self, response_id: str) -> tuple[Lane, CachedResponse] | None:
        for lane, cached in self.cache.items():
            if cached.id == response_id:
                return lane, cached
        return None

    def begin(self, create: ResponseCreate) -> Turn:
        """The turn of an admitted ``create`` once its lane's earlier turns ended: its
        ``previous_response_id`` expanded from the cache (kept for the store when uncached
        and storing); :class:`ClientEventError` ``previous_response_not_found`` otherwise.
        A refused turn must still be ended with :meth:`end`."""
        body = dict(create.body)
        own = input_items(body.get("input"))
        parent_id = body.get("previous_response_id")
        if parent_id is None:
            return Turn(create, body, own, size=create.size)
        if not isinstance(parent_id, str):
            raise _invalid(
                "Invalid type for 'previous_response_id': expected a string.",
                "previous_response_id",
                "invalid_type",
                create.stream_id,
            )
        found = self.find(parent_id)
        if found is None:
            if body.get("store", True) is not False:
                return Turn(create, body, own, parent_id, size=create.size, base_id=parent_id)
            raise _invalid(
                f"Previous response with id '{parent_id}' not found.",
                "previous_response_id",
                "previous_response_not_found",
                create.stream_id,
            )
        lane, cached = found
        full = [*cached.input, *cached.output, *own]
        if cached.base_id is None:
            del body["previous_response_id"]
        else:  # the cached conversation continues a stored response: the store reads it
            body["previous_response_id"] = cached.base_id
        body["input"] = full
        size = cached.size + create.size
        return Turn(
            create, body, full, parent_id, lane, from_cache=True, size=size, base_id=cached.base_id
        )

    def end(self, turn: Turn, terminal: Mapping[str, Any] | None, terminal_size: int = 0) -> None:
        """A started turn ended: with its terminal event (``terminal``, about
        ``terminal_size`` bytes of JSON), or failed / cut (None). A completed or incomplete
        response becomes its lane's latest (unless the connection's cache would pass
        ``max_cache_bytes``: then the lane keeps nothing); a failed same-lane continuation
        evicts its parent."""
        kind = terminal.get("type") if terminal is not None else None
        if terminal is None or kind not in CACHED_TYPES:
            self.evict_parent(turn)
            return
        response = terminal.get("response") or {}
        output = response.get("output")
        self.cache.pop(turn.lane, None)
        if not isinstance(response.get("id"), str) or not isinstance(output, list):
            return
        size = turn.size + terminal_size
        if self.cached_bytes() + size <= self.settings.max_cache_bytes:
            self.cache[turn.lane] = CachedResponse(
                response["id"], turn.input, output, size, turn.base_id
            )

    def cached_bytes(self) -> int:
        return sum(cached.size for cached in self.cache.values())

    def evict_parent(self, turn: Turn) -> None:
        if turn.parent_id is None or turn.parent_lane != turn.lane:
            return
        cached = self.cache.get(turn.lane)
        if cached is not None and cached.id == turn.parent_id:
            del self.cache[turn.lane]


def tag_event(event: dict[str, Any], turn: Turn) -> dict[str, Any]:
    """``event`` as the socket sends it: the lane's ``stream_id``, and a response object's
    ``previous_response_id`` as the client sent it when the cache replaced it."""
    if turn.create.stream_id is not None:
        event["stream_id"] = turn.create.stream_id
    if turn.from_cache:
        response = event.get("response")
        if isinstance(response, dict):
            response["previous_response_id"] = turn.parent_id
    return event
