# SPDX-License-Identifier: Apache-2.0
"""The Starlette edge of Responses WebSocket mode: one accepted connection, served.

:func:`serve_websocket` accepts an upgrade (or refuses it with 426, :mod:`.refuse`), then
reads client frames (:func:`.protocol.parse_frame`) and runs each ``response.create`` as a
turn: FIFO within its lane, lanes concurrent, at most ``max_in_flight`` turns generating.
A turn's events come from the ``run_turn`` :class:`TurnRunner` (the POST path, streaming)
and are sent one per text frame, tagged with the lane's ``stream_id``. Sends are awaited
one at a time: a client that reads slowly holds up the turns producing for it (the
transport's write buffer is the only buffer), never an unbounded queue. Bad frames get an
``error`` event and the connection stays open. When the client leaves, every turn is
cancelled and its runner closed (which aborts its engine request). At the end of the
connection's lifetime new turns are refused; once none is in flight the connection ends
with ``websocket_connection_limit_reached`` and close code 1000.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, Protocol

from starlette.websockets import WebSocket

from ..core.compat import json_dumps
from ..store import ResponseStore
from .errors import ClientEventError, TurnRejected
from .protocol import (
    TERMINAL_TYPES,
    ConnectionState,
    Lane,
    ResponseCreate,
    Turn,
    client_error_event,
    error_event,
    parse_frame,
    rejected_event,
    tag_event,
)
from .refuse import refuse_upgrade
from .settings import ConnectionGate, WebSocketSettings
from .warmup import warmup_events

logger = logging.getLogger(__name__)

__all__ = ["TurnRunner", "serve_websocket"]


class TurnRunner(Protocol):
    """Runs one turn: ``body`` is a ``POST /v1/responses`` body with ``stream: True`` (its
    history already expanded from the connection's cache). Yields the SSE events' JSON
    objects in order and ends after a terminal event; raises
    :class:`~.errors.TurnRejected` when the request is refused before streaming. Closing
    the iterator (``aclose()`` or cancellation) aborts the engine request."""

    def __call__(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]: ...


class _Gone(Exception):
    """The client left: nothing more can be sent."""


def _dumps(event: dict[str, Any]) -> str:
    try:
        return json_dumps(event).decode()
    except TypeError:  # beyond orjson (an integer over 64 bits)
        return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


async def serve_websocket(
    websocket: WebSocket,
    run_turn: TurnRunner,
    *,
    store: ResponseStore | None,
    settings: WebSocketSettings,
    gate: ConnectionGate,
) -> None:
    """Serve one ``GET /v1/responses`` upgrade until the client or the lifetime ends it.

    ``store``: the server's response store; an uncached ``previous_response_id`` of a
    storing turn is left for ``run_turn`` to read from it (without one it is
    ``previous_response_not_found`` here). Disabled, or ``gate`` full: 426.
    """
    if not settings.enabled:
        await refuse_upgrade(websocket, "WebSocket mode is disabled on this server.")
        return
    if not gate.acquire():
        await refuse_upgrade(
            websocket,
            f"Too many WebSocket connections (at most {settings.max_connections}); "
            "use HTTP or retry later.",
            code="websocket_connection_limit_reached",
        )
        return
    try:
        try:
            await websocket.accept()
        except (RuntimeError, OSError):  # the client left during the handshake
            return
        await _Connection(websocket, run_turn, store, settings).run()
    finally:
        gate.release()


class _Connection:
    def __init__(
        self,
        websocket: WebSocket,
        run_turn: TurnRunner,
        store: ResponseStore | None,
        settings: WebSocketSettings,
    ) -> None:
        self.ws = websocket
        self.run_turn = run_turn
        self.has_store = store is not None
        self.settings = settings
        self.loop = asyncio.get_running_loop()
        self.state = ConnectionState(settings, self.loop.time())
        self.queues: dict[Lane, deque[ResponseCreate]] = {}
        self.workers: set[asyncio.Task[None]] = set()
        self.slots = asyncio.Semaphore(settings.max_in_flight)
        self.send_lock = asyncio.Lock()
        self.idle = asyncio.Event()
        self.idle.set()
        self.expired = False
        self.gone = False

    async def run(self) -> None:
        lifetime = self.loop.create_task(self._lifetime())
        try:
            await self._read()
        except _Gone:
            pass
        finally:
            self.gone = True
            lifetime.cancel()
            for task in list(self.workers):
                task.cancel()
            await asyncio.gather(lifetime, *self.workers, return_exceptions=True)

    async def _read(self) -> None:
        while True:
            try:
                message = await self.ws.receive()
            except (RuntimeError, OSError):
                return
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is None:
                if message.get("bytes") is not None:
                    await self._refuse(
                        ClientEventError(
                            400,
                            "Binary frames are not supported; send each client event as "
                            "a JSON text frame.",
                            code="invalid_frame",
                        )
                    )
                continue
            await self._on_text(text)

    async def _on_text(self, text: str) -> None:
        limit = self.settings.max_frame_bytes
        if len(text) > limit or (len(text) * 4 > limit and len(text.encode()) > limit):
            await self._refuse(
                ClientEventError(
                    400,
                    f"Client event exceeds the maximum frame size of {limit} bytes.",
                    code="frame_too_large",
                )
            )
            return
        try:
            create = parse_frame(text, max_depth=self.settings.max_json_depth)
            if self.expired:
                raise self.state.lifetime_error()
            self.state.admit(create)
        except ClientEventError as exc:
            await self._refuse(exc)
            return
        self.idle.clear()
        queue = self.queues.get(create.stream_id)
        if queue is not None:
            queue.append(create)
            return
        self.queues[create.stream_id] = deque([create])
        worker = self.loop.create_task(self._lane(create.stream_id))
        self.workers.add(worker)
        worker.add_done_callback(self.workers.discard)

    async def _lane(self, lane: Lane) -> None:
        queue = self.queues[lane]
        try:
            while queue:
                create = queue[0]
                async with self.slots:
                    await self._turn(create)
                queue.popleft()
        except _Gone:
            pass
        finally:
            del self.queues[lane]

    async def _turn(self, create: ResponseCreate) -> None:
        turn: Turn | None = None
        terminal: dict[str, Any] | None = None
        size = 0
        try:
            turn = self.state.begin(create)
            if turn.from_cache is False and turn.parent_id is not None and not self.has_store:
                raise ClientEventError(
                    400,
                    f"Previous response with id '{turn.parent_id}' not found.",
                    code="previous_response_not_found",
                    param="previous_response_id",
                    stream_id=create.stream_id,
                )
            if create.generate:
                terminal, size = await self._generate(turn)
            else:
                _, events = warmup_events(turn.body)
                for event in events:
                    size = await self._send(tag_event(event, turn))
                terminal = events[-1]
        except ClientEventError as exc:
            if exc.stream_id is None:
                exc.stream_id = create.stream_id
            await self._refuse(exc)
        except TurnRejected as exc:
            await self._send(rejected_event(exc, create.stream_id))
        except (_Gone, asyncio.CancelledError):
            raise
        except Exception:
            logger.exception("WebSocket turn failed")
            await self._send(
                error_event(
                    500,
                    "The server had an error while processing the request.",
                    code="server_error",
                    type_="server_error",
                    stream_id=create.stream_id,
                )
            )
        finally:
            if turn is not None:
                self.state.end(turn, terminal, size)
            self.state.finish(create)
            if self.state.pending == 0:
                self.idle.set()

    async def _generate(self, turn: Turn) -> tuple[dict[str, Any] | None, int]:
        """The turn's terminal event (None if it had none) and its size in bytes."""
        events = self.run_turn({**turn.body, "stream": True})
        try:
            async for event in events:
                size = await self._send(tag_event(event, turn))
                if event.get("type") in TERMINAL_TYPES:
                    return event, size
            # A stream cut short (a broken engine or server): end the turn for the client,
            # who would otherwise wait for a terminal event forever.
            logger.warning("a WebSocket turn's stream ended without a terminal event")
            await self._send(
                error_event(
                    500,
                    "The response stream ended without a terminal event.",
                    code="server_error",
                    type_="server_error",
                    stream_id=turn.create.stream_id,
                )
            )
            return None, 0
        finally:
            await events.aclose()  # type: ignore[attr-defined]

    async def _refuse(self, exc: ClientEventError) -> None:
        await self._send(client_error_event(exc))

    async def _send(self, event: dict[str, Any]) -> int:
        """Send ``event`` as one text frame; its length."""
        if self.gone:
            raise _Gone
        text = _dumps(event)
        async with self.send_lock:
            try:
                await self.ws.send_text(text)
            except Exception:  # the client left (closed socket, reset connection)
                self.gone = True
                raise _Gone from None
        return len(text)

    async def _lifetime(self) -> None:
        await asyncio.sleep(self.settings.lifetime_seconds)
        self.expired = True
        await self.idle.wait()
        try:
            await self._refuse(self.state.lifetime_error())
            await self.ws.close(1000)
        except Exception:  # _Gone, or a close racing the client's
            pass
        self.gone = True  # the reader ends on the close handshake's disconnect
