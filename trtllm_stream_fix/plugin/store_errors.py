# SPDX-License-Identifier: Apache-2.0
"""A store failure answered as an OpenAI error on every route of upstream's app.

Upstream's ``GET`` and ``DELETE /v1/responses/{id}`` handlers call the conversation store
with no error path, so a :class:`~trtllm_stream_fix.store.StoreError` (Redis down) reached
the client as a plain-text 500. ``openai_server`` builds its app with ``FastAPI(...)``,
imported by name; the ``store-errors`` patch rebinds that name to :func:`with_store_errors`
of it: the same class, whose instances also answer a ``StoreError`` raised by any route as
the simulated server does (503 ``server_error`` ``store_unavailable`` when the store is
down, 500 ``store_error`` when it answers with an error), with one log line and no
traceback. Other exceptions keep upstream's handling.

The same instances do not redirect a path to its twin with or without a trailing slash
(Starlette's ``redirect_slashes``): ``DELETE /v1/responses/{id}/`` (or ``{id}%2F``) was an
empty-bodied 307 to ``/v1/responses/{id}``, which a client that follows it deleted. Such a
path under ``/v1/responses/`` is an OpenAI-shaped 404, as on the simulated server; other
unknown paths keep FastAPI's answer.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from ..store import StoreError
from .marker import marked_subclass

logger = logging.getLogger("trtllm_stream_fix.plugin")


async def store_error_response(request: Any, exc: Exception) -> Any:
    """The OpenAI error body of a failed store call (a Starlette exception handler)."""
    from starlette.responses import JSONResponse

    status = getattr(exc, "status", 500)
    code = getattr(exc, "code", "store_error")
    logger.warning("%s %s: %s", request.method, request.url.path, exc)
    error = {"message": str(exc), "type": "server_error", "param": None, "code": code}
    return JSONResponse({"error": error}, status_code=status)


#: Paths whose unknown routes answer :func:`not_found_response`.
RESPONSES_PREFIX = "/v1/responses/"


def not_found_response(request: Any, exc: Any) -> Any:
    """The OpenAI-shaped 404 the simulated server answers for an unknown route."""
    from starlette.responses import JSONResponse

    error = {"message": str(exc.detail), "type": "invalid_request_error", "param": None}
    return JSONResponse({"error": {**error, "code": "http_404"}}, status_code=404)


def _responses_not_found(previous: Any) -> Any:
    """An HTTP error handler: :func:`not_found_response` for a 404 under
    :data:`RESPONSES_PREFIX`, ``previous`` (the app's handler until then) for the rest."""

    async def handler(request: Any, exc: Any) -> Any:
        if exc.status_code == 404 and request.url.path.startswith(RESPONSES_PREFIX):
            return not_found_response(request, exc)
        answer = previous(request, exc)
        return await answer if inspect.isawaitable(answer) else answer

    return handler


def with_store_errors(app_class: Any) -> Any:
    """A subclass of ``app_class`` (upstream's ``FastAPI``) whose instances answer
    :class:`StoreError` with :func:`store_error_response`, and a path under
    :data:`RESPONSES_PREFIX` with a trailing slash with a 404, not a redirect."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        from fastapi.exception_handlers import http_exception_handler
        from starlette.exceptions import HTTPException

        app_class.__init__(self, *args, **kwargs)
        self.add_exception_handler(StoreError, store_error_response)
        self.router.redirect_slashes = False
        previous = self.exception_handlers.get(HTTPException, http_exception_handler)
        self.add_exception_handler(HTTPException, _responses_not_found(previous))

    return marked_subclass(app_class, "StoreErrors", __name__, __init__=__init__)
