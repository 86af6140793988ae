# SPDX-License-Identifier: Apache-2.0
"""The request-head deadline shared by the local server's uvicorn protocols."""

from __future__ import annotations

import asyncio
from typing import Any

from .limits import ServerLimits


class HeadDeadline:
    """Mixin for a uvicorn protocol: close a connection whose request head is not complete
    within ``head_timeout`` seconds of the connection waiting for one.

    The protocol says when it waits (:meth:`_waiting_for_head`) and cancels the deadline once
    a head is complete; the mixin arms it when a connection opens and after each response,
    and clears it when the connection is lost.
    """

    head_timeout: float = ServerLimits.header_timeout
    _head_timer: asyncio.TimerHandle | None = None
    loop: asyncio.AbstractEventLoop
    transport: Any
    logger: Any

    def _waiting_for_head(self) -> bool:
        raise NotImplementedError

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._arm_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if self._waiting_for_head() and not self.transport.is_closing():
            self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)  # type: ignore[misc]

    def _arm_head_deadline(self) -> None:
        self._cancel_head_deadline()
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_deadline_passed)

    def _cancel_head_deadline(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_deadline_passed(self) -> None:
        self._head_timer = None
        if self._waiting_for_head() and not self.transport.is_closing():
            self.logger.info("closing a connection that sent no request head in time")
            self.transport.close()
