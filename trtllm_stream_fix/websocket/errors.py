# SPDX-License-Identifier: Apache-2.0
"""The WebSocket package's exceptions: a client event refused, a turn refused by its runner.

Hierarchy::

    StreamFixError
    ├── ClientEventError (ValueError): a client frame refused with an ``error`` event
    ├── TurnRejected: a turn its runner refused before streaming (status, OpenAI error body)
    └── WebSocketDisabled: WebSocket mode off, or refused for an app of unknown shape
"""

from __future__ import annotations

from typing import Any

from ..core.errors import StreamFixError


class ClientEventError(StreamFixError, ValueError):
    """A client frame or ``response.create`` refused with an OpenAI-shaped ``error`` event.

    ``status`` is the HTTP status the same refusal would have on the POST; ``stream_id`` is
    the lane the event names when it could be read (the error event then carries it).
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        type_: str = "invalid_request_error",
        stream_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.type = type_
        self.stream_id = stream_id


class TurnRejected(StreamFixError):
    """A turn refused before streaming: HTTP ``status`` and the POST's OpenAI error body
    (``{"error": {"message", "type", "param", "code"}}``; the inner object is accepted too).
    """

    def __init__(self, status: int, error: dict[str, Any]) -> None:
        nested = error.get("error")
        inner: dict[str, Any] = nested if isinstance(nested, dict) else error
        super().__init__(str(inner.get("message", "request rejected")))
        self.status = status
        self.error: dict[str, Any] = dict(inner)


class WebSocketDisabled(StreamFixError):
    """WebSocket mode is off (operator setting) or refused (the app's shape is unknown)."""
