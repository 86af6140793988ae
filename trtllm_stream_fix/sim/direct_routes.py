# SPDX-License-Identifier: Apache-2.0
"""A FastAPI app whose hot routes are served ahead of its middleware stack.

Each request to a FastAPI app passes five middleware layers (server errors, telemetry, body
size, exception handlers, exit stack) and the router, and each message it sends passes
their send wrappers. The simulated server's ``POST /v1/responses`` and
``POST /v1/chat/completions`` endpoints read their request, bound its body and answer their
own errors, so for them these layers are work for nothing, at 128 concurrent streams a
visible part of the server's CPU (docs/benchmarks.md).

A direct route is called straight from the ASGI entry. An exception escaping its endpoint
is answered by the app's exception handler for that type, as FastAPI's middleware would.
Other methods on the same path, and every other route, take the usual stack.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

Endpoint = Callable[[Request], Awaitable[Response]]


class DirectRoutesApp(FastAPI):
    """FastAPI, with ``add_direct_route`` for endpoints that need none of its middleware."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._direct: dict[tuple[str, str], Endpoint] = {}

    def add_direct_route(self, path: str, endpoint: Endpoint, method: str = "POST") -> None:
        """Serve ``method path`` by ``endpoint`` directly (the route is listed as usual)."""
        self.add_route(path, endpoint, methods=[method])
        self._direct[(method, path)] = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            endpoint = self._direct.get((scope["method"], scope["path"]))
            if endpoint is not None:
                scope["app"] = self
                await self._serve(endpoint, Request(scope, receive), send)
                return
        await super().__call__(scope, receive, send)

    async def _serve(self, endpoint: Endpoint, request: Request, send: Send) -> None:
        try:
            response = await endpoint(request)
        except Exception as exc:
            handler = self._handler(exc)
            if handler is None:
                raise
            response = await handler(request, exc)
        await response(request.scope, request.receive, send)

    def _handler(self, exc: Exception) -> Callable[..., Awaitable[Response]] | None:
        for cls in type(exc).__mro__:
            found = self.exception_handlers.get(cls)
            if found is not None:
                return found  # type: ignore[return-value]
        return None
