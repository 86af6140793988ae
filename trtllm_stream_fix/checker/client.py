# SPDX-License-Identifier: Apache-2.0
"""Strict streaming client: POST, read SSE, check the stream, return one :class:`StreamRecord`.

:class:`StreamSession` is the sans-IO core (bytes and timestamps in, record out); the async
functions :func:`stream_responses`, :func:`stream_chat` and :func:`stream_triton` drive it
with ``httpx`` and own the clocks (idle timeout between reads, overall deadline), and
:func:`replay_record` drives it offline from a recorded body.

Every way a stream can end has its own outcome, and only a terminal event counts as
completion:

``ok`` / ``incomplete`` / ``failed``
    the protocol's terminal signal arrived and the stream passed every rule; ``record.ok``
    is true for ``ok`` (and for ``incomplete`` / ``failed`` when allowed);
``http_error``, ``wrong_content_type``, ``transport_error``
    no event stream at all (status >= 400 with its body kept, another media type, or the
    connection failed before the response headers);
``eof_before_terminal``
    the body ended, or the connection dropped, before the terminal event;
``idle_timeout``, ``deadline_exceeded``
    the client stopped waiting;
``malformed_sse``, ``malformed_json``
    the framing (incl. invalid UTF-8 and oversize lines/events) or a payload is unreadable;
``event_after_terminal``
    something followed the terminal event;
``protocol_violation``
    the stream completed but broke a rule of its checker.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from trtllm_stream_fix import jsonlimits
from trtllm_stream_fix.checker.chat import ChatStreamChecker
from trtllm_stream_fix.checker.errors import ProtocolRequiredError
from trtllm_stream_fix.checker.findings import Findings
from trtllm_stream_fix.checker.responses import ResponsesStreamChecker
from trtllm_stream_fix.checker.sse_reader import SSEEvent, SSELimits, SSEProtocolError, SSEReader
from trtllm_stream_fix.checker.triton import TritonStreamChecker

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

__all__ = [
    "OUTCOMES",
    "OpenAIStreamOptions",
    "Outcome",
    "Protocol",
    "StreamRecord",
    "StreamSession",
    "replay_record",
    "stream_chat",
    "stream_responses",
    "stream_triton",
]

Protocol = Literal["responses", "chat", "triton"]
Outcome = Literal[
    "ok",
    "incomplete",
    "failed",
    "http_error",
    "wrong_content_type",
    "transport_error",
    "eof_before_terminal",
    "idle_timeout",
    "deadline_exceeded",
    "malformed_sse",
    "malformed_json",
    "protocol_violation",
    "event_after_terminal",
]
OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]
_Stop = Literal["eof", "dropped", "idle_timeout", "deadline_exceeded"]
_MAX_ERROR_BODY = 64 * 1024
#: Outcomes where no event stream arrived (no end-of-stream rules apply).
_NO_STREAM = frozenset({"http_error", "wrong_content_type", "transport_error"})


@dataclass
class StreamRecord:
    """Everything observed about one streamed request (JSON-serialisable)."""

    protocol: str
    outcome: str
    ok: bool
    detail: str = ""
    url: str | None = None
    http_status: int | None = None
    content_type: str | None = None
    #: Body of a non-stream answer (http_error / wrong_content_type), truncated to 64 KiB.
    http_body: str | None = None
    #: Response id (responses), completion id (chat) or request id (triton).
    request_id: str | None = None
    #: completed / incomplete / failed as signalled by the protocol, else None.
    terminal: str | None = None
    #: Raw SSE events in arrival order: {"event", "data"} (+ "id" when sent).
    events: list[dict[str, Any]] = field(default_factory=list)
    #: Assembled output: Responses items, chat choices or Triton requests.
    items: list[dict[str, Any]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Seconds from sending the request to the first non-empty text/argument delta.
    first_text_latency: float | None = None
    #: Seconds from sending the request to the end of the stream.
    total_latency: float | None = None
    bytes_received: int = 0
    #: True if ``data: [DONE]`` was received.
    done_marker: bool = False
    #: Text of an unterminated final event that the SSE rules discard.
    discarded_tail: str | None = None
    #: Error payload reported in-band (Responses error event, chat/Triton error payloads).
    error: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form."""
        return asdict(self)

    def to_json(self) -> str:
        """JSON text."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=1)

    def save(self, path: str | Path) -> Path:
        """Write the record as JSON; returns the path."""
        path = Path(path)
        path.write_text(self.to_json(), encoding="utf-8")
        return path

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StreamRecord:
        """A record from :meth:`to_dict` output; unknown keys are ignored.

        Raises ValueError when ``protocol``, ``outcome`` or ``events`` has the wrong shape.
        """
        events = data.get("events")
        if not isinstance(events, list) or not all(isinstance(e, Mapping) for e in events):
            raise ValueError("not a stream record: `events` must be a list of objects")
        if not isinstance(data.get("protocol"), str) or not isinstance(data.get("outcome"), str):
            raise ValueError("not a stream record: `protocol` and `outcome` must be strings")
        names = {f.name for f in fields(cls)}
        return cls(**{"ok": False, **{k: v for k, v in data.items() if k in names}})

    @classmethod
    def load(cls, path: str | Path) -> StreamRecord:
        """Read a record written by :meth:`save` (ValueError if it is not one)."""
        data = jsonlimits.loads(Path(path).read_bytes())
        if not isinstance(data, Mapping):
            raise ValueError("not a stream record: the file does not hold a JSON object")
        return cls.from_dict(data)

    def sse_body(self) -> bytes:
        """Re-frame the recorded events as an SSE body (for :func:`replay_record`)."""
        out = []
        for ev in self.events:
            if ev.get("event") not in (None, "message"):
                out.append(f"event: {ev['event']}\n")
            if ev.get("id") is not None:
                out.append(f"id: {ev['id']}\n")
            out.extend(f"data: {line}\n" for line in str(ev.get("data", "")).split("\n"))
            out.append("\n")
        return "".join(out).encode("utf-8")


class StreamSession:
    """Sans-IO core of the client: HTTP head, body bytes and timestamps in, a record out.

    ``allow``: rule codes of the protocol checker reported as warnings.
    ``request_ids``: Triton request ids sent on the stream.
    ``require_final_flag``: Triton over HTTP, do not accept a clean end of body as the
    final signal.
    """

    def __init__(
        self,
        protocol: Protocol,
        *,
        url: str | None = None,
        limits: SSELimits | None = None,
        allow: Collection[str] = (),
        allow_incomplete: bool = False,
        allow_failed: bool = False,
        request_ids: Collection[str] = (),
        require_final_flag: bool = False,
    ) -> None:
        if protocol not in ("responses", "chat", "triton"):
            msg = f"unknown protocol {protocol!r}; expected responses, chat or triton"
            raise ValueError(msg)
        self.protocol = protocol
        self.allow_incomplete = allow_incomplete
        self.allow_failed = allow_failed
        self.require_final_flag = require_final_flag
        self.reader = SSEReader(limits)
        self.responses = ResponsesStreamChecker(allow=allow) if protocol == "responses" else None
        self.chat = ChatStreamChecker(allow=allow) if protocol == "chat" else None
        self.triton = (
            TritonStreamChecker(request_ids, accept_unknown=not request_ids)
            if protocol == "triton"
            else None
        )
        self.record = StreamRecord(
            protocol=protocol, outcome="eof_before_terminal", ok=False, url=url
        )
        self._fatal: str | None = None
        self._after_terminal = False
        self._error_body: bytearray | None = None
        self._extra_violations = Findings("violations")
        self._finished = False

    # ------------------------------------------------------------------ input

    def start(self, status: int, content_type: str | None) -> None:
        """The response head arrived."""
        self.record.http_status = status
        self.record.content_type = content_type
        media = (content_type or "").split(";")[0].strip().lower()
        if status >= 400:
            self._fatal = "http_error"
        elif media != "text/event-stream":
            self._fatal = "wrong_content_type"
        else:
            return
        self.record.detail = f"HTTP {status}, content-type {content_type!r}"
        self._error_body = bytearray()

    def transport_error(self, message: str) -> None:
        """The request failed before a response head arrived."""
        self._fatal = "transport_error"
        self.record.detail = message

    def feed(self, data: bytes, now: float) -> bool:
        """Body bytes arrived ``now`` seconds after the request; False = stop reading."""
        self.record.bytes_received += len(data)
        if self._error_body is not None:
            room = _MAX_ERROR_BODY - len(self._error_body)
            self._error_body += data[: max(room, 0)]
            return self.record.bytes_received <= self.reader.limits.max_total_bytes
        if self._fatal is not None:
            return False
        try:
            events = self.reader.feed(data)
        except SSEProtocolError as exc:
            self._fatal = "malformed_sse"
            self.record.detail = f"{type(exc).__name__}: {exc}"
            return False
        for event in events:
            self._on_event(event, now)
            if self._fatal is not None:
                return False
        return True

    def _on_event(self, event: SSEEvent, now: float) -> None:
        raw: dict[str, Any] = {"event": event.event, "data": event.data}
        if event.id is not None:
            raw["id"] = event.id
        self.record.events.append(raw)
        if event.data == "[DONE]":
            self._on_done()
            return
        if self.record.done_marker:
            self._after_terminal = True
            self._extra_violations.add(
                "after-done",
                f"event {len(self.record.events) - 1}: [after-done] event after data: [DONE]",
            )
            return
        try:
            payload = jsonlimits.loads(event.data)
        except jsonlimits.JSONLimitError as exc:
            self._fatal = "malformed_json"
            self.record.detail = f"event {len(self.record.events) - 1}: {exc}: {event.data[:80]!r}"
            return
        if self.responses is not None:
            if self.responses.terminated:
                self._after_terminal = True
            self.responses.feed(payload, sse_event=event.event)
            if (
                isinstance(payload, Mapping)
                and str(payload.get("type", "")).endswith(".delta")
                and payload.get("delta")
            ):
                self._first_text(now)
        elif self.chat is not None:
            if self.chat.terminated:
                self._after_terminal = True
            self.chat.feed(payload)
            if _chat_has_text(payload):
                self._first_text(now)
        elif self.triton is not None:
            if self.triton.requests and not self.triton.pending_count:
                self._after_terminal = True
            parsed = self.triton.feed(payload)
            if parsed is not None and parsed.text:
                self._first_text(now)

    def _on_done(self) -> None:
        if self.record.done_marker:
            self._after_terminal = True
        self.record.done_marker = True
        if self.chat is not None:
            self.chat.feed_done()
        elif self.responses is not None and not self.responses.terminated:
            self._extra_violations.add(
                "done-before-terminal",
                f"event {len(self.record.events) - 1}: "
                "[done-before-terminal] data: [DONE] before the terminal event",
            )
        elif self.triton is not None:
            self._extra_violations.add(
                "unexpected-done",
                f"event {len(self.record.events) - 1}: "
                "[unexpected-done] data: [DONE] in a Triton stream",
            )

    def _first_text(self, now: float) -> None:
        if self.record.first_text_latency is None:
            self.record.first_text_latency = now

    # ------------------------------------------------------------------ output

    def finish(self, stop: _Stop, now: float | None = None, detail: str = "") -> StreamRecord:
        """The body ended (``eof``), broke (``dropped``) or the client stopped waiting."""
        if self._finished:
            return self.record
        self._finished = True
        rec = self.record
        rec.total_latency = now
        if self._error_body is not None:
            rec.http_body = self._error_body.decode("utf-8", errors="replace")
        if self._fatal is None:
            self.reader.close()
            rec.discarded_tail = self.reader.discarded
        rec.warnings.extend(self.reader.warnings)
        if self.reader.warnings_dropped:
            rec.warnings.append(
                f"{self.reader.warnings_dropped} more SSE warnings not kept "
                f"({self.reader.warning_count} in all)"
            )
        terminal, violations = self._finish_checker(stop)
        if self._fatal in _NO_STREAM:
            violations = []  # no event stream to judge: the outcome says why
        rec.terminal = terminal
        rec.violations = violations + self._extra_violations.lines()
        if detail:
            rec.detail = f"{rec.detail}; {detail}" if rec.detail else detail
        rec.outcome = self._outcome(stop, terminal)
        if stop == "dropped" and rec.outcome in (
            "ok",
            "incomplete",
            "failed",
            "protocol_violation",
        ):
            rec.warnings.append("connection dropped after the terminal event")
        if rec.discarded_tail is not None:
            rec.warnings.append(f"unterminated final event discarded: {rec.discarded_tail[:80]!r}")
        rec.ok = rec.outcome == "ok" or (
            (rec.outcome == "incomplete" and self.allow_incomplete)
            or (rec.outcome == "failed" and self.allow_failed)
        )
        return rec

    def _finish_checker(self, stop: _Stop) -> tuple[str | None, list[str]]:
        rec = self.record
        if self.responses is not None:
            res = self.responses.finish()
            rec.request_id = res.response_id
            rec.items = [asdict(it) for it in res.items]
            rec.error = res.error
            rec.warnings.extend(res.warnings)
            return res.terminal, res.violations
        if self.chat is not None:
            chat = self.chat.finish()
            rec.request_id = chat.completion_id
            rec.items = [asdict(c) for c in chat.choices]
            rec.error = chat.error
            rec.warnings.extend(chat.warnings)
            return chat.terminal, chat.violations
        assert self.triton is not None
        end_of_body = stop == "eof" and self._fatal is None and not self.require_final_flag
        tri = self.triton.finish(end_of_body=end_of_body)
        rec.request_id = ",".join(r.request_id for r in tri.requests) or None
        rec.items = [asdict(r) for r in tri.requests]
        errors = [r.error for r in tri.requests if r.error]
        rec.error = {"message": errors[0]} if errors else None
        rec.warnings.extend(tri.warnings)
        return tri.terminal, tri.violations

    def _outcome(self, stop: _Stop, terminal: str | None) -> str:
        if self._fatal is not None:
            return self._fatal
        if stop in ("idle_timeout", "deadline_exceeded"):
            return stop
        if self._after_terminal:
            return "event_after_terminal"
        if terminal is None:
            return "eof_before_terminal"
        ignorable = {"[no-terminal]", "[done-missing]", "[not-final]"}
        if any(not any(tag in v for tag in ignorable) for v in self.record.violations):
            return "protocol_violation"
        return {"completed": "ok", "incomplete": "incomplete", "failed": "failed"}[terminal]


def _chat_has_text(chunk: Any) -> bool:
    if not isinstance(chunk, Mapping) or not isinstance(chunk.get("choices"), list):
        return False
    for choice in chunk["choices"]:
        delta = choice.get("delta") if isinstance(choice, Mapping) else None
        if isinstance(delta, Mapping) and any(
            delta.get(k) for k in ("content", "reasoning_content", "reasoning", "tool_calls")
        ):
            return True
    return False


# ---------------------------------------------------------------------- async transport edge


async def _stream(
    client: Any,
    url: str,
    body: Mapping[str, Any],
    session: StreamSession,
    *,
    headers: Mapping[str, str] | None,
    idle_timeout: float,
    deadline: float,
) -> StreamRecord:
    import httpx

    start = time.perf_counter()

    def elapsed() -> float:
        return time.perf_counter() - start

    def budget() -> tuple[float, _Stop]:
        remaining = deadline - elapsed()
        if remaining < idle_timeout:
            return remaining, "deadline_exceeded"
        return idle_timeout, "idle_timeout"

    request = client.build_request(
        "POST", url, json=dict(body), headers={"accept": "text/event-stream", **(headers or {})}
    )
    wait, kind = budget()
    try:
        response = await asyncio.wait_for(client.send(request, stream=True), max(wait, 0.0))
    except asyncio.TimeoutError:
        return session.finish(kind, elapsed(), "no response head")
    except httpx.HTTPError as exc:
        session.transport_error(f"{type(exc).__name__}: {exc}")
        return session.finish("eof", elapsed())
    stop: _Stop = "eof"
    detail = ""
    try:
        session.start(response.status_code, response.headers.get("content-type"))
        chunks = response.aiter_bytes().__aiter__()
        while True:
            wait, kind = budget()
            if wait <= 0:
                stop = kind
                break
            try:
                chunk = await asyncio.wait_for(chunks.__anext__(), wait)
            except StopAsyncIteration:
                break
            except asyncio.TimeoutError:
                stop = kind
                detail = f"no data for {wait:.3g} s"
                break
            except httpx.HTTPError as exc:
                stop = "dropped"
                detail = f"{type(exc).__name__}: {exc}"
                break
            if not session.feed(chunk, elapsed()):
                break
    finally:
        await response.aclose()
    return session.finish(stop, elapsed(), detail)


class OpenAIStreamOptions(TypedDict, total=False):
    """Keyword options of ``stream_responses`` and ``stream_chat``.

    ``headers`` (None), ``idle_timeout`` (60 s: the wait for the response head and between
    body reads), ``deadline`` (600 s: the whole exchange); ``limits``, ``allow``,
    ``allow_incomplete`` and ``allow_failed`` as ``StreamSession`` takes them.
    """

    headers: Mapping[str, str] | None
    idle_timeout: float
    deadline: float
    limits: SSELimits | None
    allow: Collection[str]
    allow_incomplete: bool
    allow_failed: bool


async def _stream_openai(
    protocol: Protocol,
    client: Any,
    url: str,
    body: Mapping[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
    idle_timeout: float = 60.0,
    deadline: float = 600.0,
    **checks: Any,
) -> StreamRecord:
    """An OpenAI-style streamed POST (``"stream": true`` set in the body), checked."""
    session = StreamSession(protocol, url=url, **checks)
    return await _stream(
        client,
        url,
        {**body, "stream": True},
        session,
        headers=headers,
        idle_timeout=idle_timeout,
        deadline=deadline,
    )


async def stream_responses(
    client: Any, url: str, body: Mapping[str, Any], **options: Unpack[OpenAIStreamOptions]
) -> StreamRecord:
    """POST a Responses request (``stream`` forced on) and check the event stream.

    ``client`` is an ``httpx.AsyncClient``; ``options``: ``OpenAIStreamOptions``.
    """
    return await _stream_openai("responses", client, url, body, **options)


async def stream_chat(
    client: Any, url: str, body: Mapping[str, Any], **options: Unpack[OpenAIStreamOptions]
) -> StreamRecord:
    """POST a Chat Completions request (``stream`` forced on) and check the chunk stream.

    ``options``: ``OpenAIStreamOptions``. A choice finishing with ``length`` does not make
    the outcome ``incomplete``; read ``record.items[k]["finish_reason"]``.
    """
    return await _stream_openai("chat", client, url, body, **options)


async def stream_triton(
    client: Any,
    url: str,
    body: Mapping[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
    idle_timeout: float = 60.0,
    deadline: float = 600.0,
    limits: SSELimits | None = None,
    allow_failed: bool = False,
    require_final_flag: bool = False,
) -> StreamRecord:
    """POST to a Triton ``v2/models/<model>/generate_stream`` URL and check the responses.

    The request id is ``body["id"]`` when present.
    """
    rid = body.get("id")
    session = StreamSession(
        "triton",
        url=url,
        limits=limits,
        allow_failed=allow_failed,
        request_ids=[str(rid)] if rid else (),
        require_final_flag=require_final_flag,
    )
    return await _stream(
        client, url, body, session, headers=headers, idle_timeout=idle_timeout, deadline=deadline
    )


#: What a stream of each protocol looks like, for messages that suggest one.
PROTOCOL_LOOKS = {
    "responses": "Responses API (response.* events)",
    "chat": "chat.completion.chunk",
    "triton": "Triton generate_stream",
}


def _protocol_of(payload: Any) -> Protocol | None:
    if not isinstance(payload, Mapping):
        return None
    if payload.get("object") == "chat.completion.chunk":
        return "chat"
    kind = payload.get("type")
    if isinstance(kind, str) and (kind.startswith("response.") or kind == "error"):
        return "responses"
    if {"text_output", "triton_final_response", "model_name"} & payload.keys():
        return "triton"
    return None


def guess_protocol(body: bytes, piece: int = 65536) -> Protocol | None:
    """The protocol the first JSON event of SSE ``body`` looks like (None: cannot tell)."""
    reader = SSEReader()
    for start in range(0, len(body), piece):
        try:
            events = reader.feed(body[start : start + piece])
        except SSEProtocolError:
            return None
        for event in events:
            try:
                payload = jsonlimits.loads(event.data)
            except ValueError:
                continue
            return _protocol_of(payload)
    return None


def replay_record(
    source: str | Path | bytes,
    protocol: Protocol | None = None,
    **session_kw: Any,
) -> StreamRecord:
    """Check a recorded stream offline.

    ``source``: raw SSE body bytes, a file holding one, or a :class:`StreamRecord` JSON
    file written by :meth:`StreamRecord.save` (its events are re-framed; its protocol is the
    default). Returns a fresh record (latencies are None).
    """
    if isinstance(source, (bytes, bytearray)):
        raw = bytes(source)
    else:
        raw = Path(source).read_bytes()
        try:
            saved = jsonlimits.loads(raw)
        except ValueError:
            saved = None  # not a JSON record: a raw SSE body
        if isinstance(saved, dict) and "events" in saved and "protocol" in saved:
            record = StreamRecord.from_dict(saved)
            raw = record.sse_body()
            protocol = protocol or record.protocol  # type: ignore[assignment]
    if protocol is None:
        msg = "protocol is required for a raw SSE body"
        raise ProtocolRequiredError(msg)
    session = StreamSession(protocol, **session_kw)
    session.start(200, "text/event-stream")
    session.feed(raw, 0.0)
    record = session.finish("eof")
    record.first_text_latency = None
    record.total_latency = None
    return record
