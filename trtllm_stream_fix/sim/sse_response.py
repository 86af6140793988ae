# SPDX-License-Identifier: Apache-2.0
"""A server-sent-events response written straight to the ASGI ``send``.

Starlette's ``StreamingResponse`` runs each stream in an anyio task group (the body in one
task, a disconnect listener in another) and converts every chunk; at 128 streams that is a
visible part of the simulated server's CPU (docs/benchmarks.md). Here the body is sent from
the request's own task and one waiter per stream listens for ``http.disconnect``: when it
arrives the task is cancelled where it waits (as the task group would), the chunk iterator
is closed, and the response ends quietly.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send


class EventStreamResponse(Response):
    """``text/event-stream`` response of ``chunks`` (``str``, sent UTF-8, or ``bytes``)."""

    media_type = "text/event-stream"

    def __init__(
        self, chunks: AsyncIterator[str | bytes], headers: Mapping[str, str] | None = None
    ) -> None:
        self.chunks = chunks
        self.status_code = 200
        self.background = None
        self.init_headers(headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        listener = asyncio.ensure_future(_disconnected(receive))
        streaming = True

        def on_disconnect(_: asyncio.Future[None]) -> None:
            if streaming and task is not None:
                task.cancel()

        listener.add_done_callback(on_disconnect)
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            async for chunk in self.chunks:
                body = chunk.encode() if type(chunk) is str else chunk
                await send({"type": "http.response.body", "body": body, "more_body": True})
            streaming = False
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not (listener.done() and not listener.cancelled()):
                raise  # cancelled from outside (server shutdown), not by the client leaving
            if task is not None and hasattr(task, "uncancel"):
                task.uncancel()
        finally:
            streaming = False
            listener.remove_done_callback(on_disconnect)
            listener.cancel()
            await self.chunks.aclose()  # type: ignore[attr-defined]


async def _disconnected(receive: Receive) -> None:
    message: Any = None
    while message is None or message["type"] != "http.disconnect":
        message = await receive()
