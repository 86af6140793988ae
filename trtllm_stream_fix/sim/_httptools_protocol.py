# SPDX-License-Identifier: Apache-2.0
"""uvicorn's httptools protocol with a deadline and a size bound for each request head.

Imported only when ``httptools`` is installed (:func:`.http_server.limited_protocol`).
A connection "waits for a head" from its start and from the end of each request's body
until the next request's headers are complete. The deadline is armed while it waits and
no response is being written; the bytes that arrive while it waits are counted against
``max_head_bytes`` (a chunk in which a pipelined request ended is not counted, so the
bound can be passed by at most one read there).
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from .bad_request import JSONBadRequest
from .head_deadline import HeadDeadline
from .limits import ServerLimits


class Http10Cycle(RequestResponseCycle):
    """The response cycle of an HTTP/1.0 request: a body of unknown length (a stream) is
    sent as is and ended by closing the connection. uvicorn's httptools protocol would send
    it chunked, which HTTP/1.0 has no such thing as (h11 already does this)."""

    _close_delimited = False

    async def send(self, message: Any) -> None:
        if message["type"] == "http.response.start" and self.chunked_encoding is None:
            if not any(name.lower() == b"content-length" for name, _ in message["headers"]):
                self._close_delimited = True
                self.chunked_encoding = False
                self.expected_content_length = 1 << 62  # until the last body message
        elif message["type"] == "http.response.body" and self._close_delimited:
            body = message.get("body", b"")
            self.expected_content_length = (
                len(body) if not message.get("more_body", False) else 1 << 62
            )
        await super().send(message)


class HeadDeadlineHttpToolsProtocol(JSONBadRequest, HeadDeadline, HttpToolsProtocol):
    """httptools protocol that closes a connection whose request head is not complete in
    time, answers a 400 to a head larger than ``max_head_bytes``, answers its own 400s as
    OpenAI-shaped JSON and streams to HTTP/1.0 clients without chunked encoding."""

    max_head_bytes: int = ServerLimits.max_header_bytes
    _awaiting_head = True
    _head_bytes = 0
    _message_ended = False

    def data_received(self, data: bytes) -> None:
        counted = self._awaiting_head
        self._message_ended = False
        super().data_received(data)
        if not self._awaiting_head or self.transport.is_closing():
            return
        if counted and not self._message_ended:
            self._head_bytes += len(data)
        if self._head_bytes > self.max_head_bytes:
            self._cancel_head_deadline()
            self.logger.warning("Request head too large.")
            self.send_400_response("Request head too large.")

    def on_headers_complete(self) -> None:
        self._awaiting_head = False
        self._cancel_head_deadline()
        super().on_headers_complete()
        if self.scope.get("http_version") == "1.0" and type(self.cycle) is RequestResponseCycle:
            self.cycle.__class__ = Http10Cycle  # before its task first runs

    def on_message_complete(self) -> None:
        self._awaiting_head = True
        self._head_bytes = 0
        self._message_ended = True
        super().on_message_complete()

    def _waiting_for_head(self) -> bool:
        return self._awaiting_head
