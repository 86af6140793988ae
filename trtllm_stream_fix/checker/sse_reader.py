# SPDX-License-Identifier: Apache-2.0
"""Strict, bounded, incremental ``text/event-stream`` reader (sans-IO).

Implements the WHATWG "parsing an event stream" algorithm with three deliberate strictness
changes for a checker: invalid UTF-8 raises :class:`SSEDecodeError` instead of turning into
U+FFFD, every size is bounded (:class:`SSELimitError`), and an unterminated final event is
not silently lost: :meth:`SSEReader.close` records it in :attr:`SSEReader.discarded`.

Usage::

    reader = SSEReader()
    for chunk in body:
        for event in reader.feed(chunk):
            ...
    reader.close()
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from .errors import SSEDecodeError, SSELimitError, SSEProtocolError

__all__ = [
    "SSEDecodeError",
    "SSEEvent",
    "SSELimitError",
    "SSELimits",
    "SSEProtocolError",
    "SSEReader",
    "parse_sse",
]

_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class SSEEvent:
    r"""One dispatched event.

    ``event`` is the event type (``"message"`` when no ``event:`` field was sent), ``data``
    the data lines joined with ``"\\n"``, ``id`` the ``id:`` field of this event block, or
    None when the block had none (the spec's persistent "last event ID" is
    :attr:`SSEReader.last_event_id`).
    """

    event: str
    data: str
    id: str | None = None


@dataclass(frozen=True)
class SSELimits:
    """Size limits; line and event sizes count decoded characters, the total counts bytes."""

    max_line: int = 8 * 1024 * 1024
    max_event: int = 16 * 1024 * 1024
    max_total_bytes: int = 512 * 1024 * 1024
    #: Warnings kept in :attr:`SSEReader.warnings`; all are counted in ``warning_count``.
    max_warnings: int = 100


class SSEReader:
    """Incremental event-stream parser: :meth:`feed` bytes, get complete events back.

    Errors are sticky: once :meth:`feed` raised, every later call raises the same error.
    """

    def __init__(self, limits: SSELimits | None = None) -> None:
        self.limits = limits or SSELimits()
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="strict")
        self._line: list[str] = []
        self._line_len = 0
        self._skip_lf = False
        self._event_type = ""
        self._data: list[str] = []
        self._event_len = 0
        self._event_id: str | None = None
        self._fields_seen = False
        self._error: SSEProtocolError | None = None
        self._closed = False
        #: Bytes fed so far.
        self.total_bytes = 0
        #: The spec's last event ID (persists across events).
        self.last_event_id = ""
        #: Last valid ``retry:`` value in milliseconds, if any.
        self.retry: int | None = None
        #: Number of comment lines seen (keep-alives).
        self.comments = 0
        #: Non-fatal oddities (unknown fields, bad ``retry``, data-less blocks, ...), the
        #: first ``limits.max_warnings`` of them.
        self.warnings: list[str] = []
        #: Number of warnings, including those not kept.
        self.warning_count = 0
        #: Set by :meth:`close` when the stream ended inside an event: the partial text.
        self.discarded: str | None = None

    # ------------------------------------------------------------------ public API

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Consume ``data`` and return the events completed by it."""
        if self._error is not None:
            raise self._error
        if self._closed:
            msg = "SSE reader is closed; no more data can be fed"
            raise SSEProtocolError(msg)
        try:
            return self._feed(data)
        except SSEProtocolError as exc:
            self._error = exc
            raise

    def close(self) -> None:
        """Signal end of stream; an unterminated final event is discarded and recorded."""
        if self._closed or self._error is not None:
            self._closed = True
            return
        self._closed = True
        tail = ""
        try:
            tail = self._decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            tail = "\ufffd"
            self._warn("stream ended inside a UTF-8 sequence")
        pending_line = "".join(self._line) + tail
        if pending_line.startswith(":"):
            pending_line = ""  # an unterminated comment carries no event
        if pending_line or self._fields_seen:
            parts = [f"{k}: {v}" for k, v in (("event", self._event_type),) if v]
            parts += [f"data: {d}" for d in self._data]
            if pending_line:
                parts.append(pending_line)
            self.discarded = "\n".join(parts)
        self._line.clear()
        self._data.clear()

    @property
    def pending(self) -> bool:
        """True while a partial line or event is buffered."""
        return bool(self._line) or self._fields_seen

    @property
    def warnings_dropped(self) -> int:
        """Warnings counted but not kept (over ``limits.max_warnings``)."""
        return self.warning_count - len(self.warnings)

    # ------------------------------------------------------------------ internals

    def _warn(self, message: str) -> None:
        self.warning_count += 1
        if len(self.warnings) < self.limits.max_warnings:
            self.warnings.append(message)

    def _feed(self, data: bytes) -> list[SSEEvent]:
        self.total_bytes += len(data)
        if self.total_bytes > self.limits.max_total_bytes:
            msg = f"event stream exceeds {self.limits.max_total_bytes} bytes in total"
            raise SSELimitError(msg)
        try:
            text = self._decoder.decode(data)
        except UnicodeDecodeError as exc:
            where = self.total_bytes - len(data) + exc.start
            msg = f"invalid UTF-8 in event stream near byte {where}: {exc.reason}"
            raise SSEDecodeError(msg) from exc
        if not text:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
        events: list[SSEEvent] = []
        start = 0
        for match in _LINE_END.finditer(text):
            self._append(text[start : match.start()])
            line = "".join(self._line)
            self._line.clear()
            self._line_len = 0
            event = self._process_line(line)
            if event is not None:
                events.append(event)
            start = match.end()
        self._append(text[start:])
        if text.endswith("\r"):
            self._skip_lf = True
        return events

    def _append(self, piece: str) -> None:
        if not piece:
            return
        self._line_len += len(piece)
        if self._line_len > self.limits.max_line:
            msg = f"event stream line exceeds {self.limits.max_line} characters"
            raise SSELimitError(msg)
        self._line.append(piece)

    def _process_line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line[0] == ":":
            self.comments += 1
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        self._fields_seen = True
        if name == "data":
            self._grow(len(value) + 1)
            self._data.append(value)
        elif name == "event":
            self._grow(len(value))
            self._event_type = value
        elif name == "id":
            if "\0" in value:
                self._warn("id field containing NUL ignored")
            else:
                self._event_id = value
                self.last_event_id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self.retry = int(value)
            else:
                self._warn(f"retry field with non-digit value {value[:40]!r} ignored")
        else:
            self._warn(f"unknown field {name[:40]!r} ignored")
        return None

    def _grow(self, size: int) -> None:
        self._event_len += size
        if self._event_len > self.limits.max_event:
            msg = f"event exceeds {self.limits.max_event} characters"
            raise SSELimitError(msg)

    def _dispatch(self) -> SSEEvent | None:
        event: SSEEvent | None = None
        if self._data:
            event = SSEEvent(self._event_type or "message", "\n".join(self._data), self._event_id)
        elif self._fields_seen:
            self._warn("event block without data field discarded")
        self._event_type = ""
        self._data = []
        self._event_len = 0
        self._event_id = None
        self._fields_seen = False
        return event


def parse_sse(body: bytes, limits: SSELimits | None = None) -> tuple[list[SSEEvent], SSEReader]:
    """Parse a complete body; returns the events and the closed reader (for its report)."""
    reader = SSEReader(limits)
    events = reader.feed(body)
    reader.close()
    return events, reader
