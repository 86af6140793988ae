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
"""

from __future__ import annotations

import logging
from typing import Any

from ..store import StoreError
from .marker import MARKER

logger = logging.getLogger("trtllm_stream_fix.plugin")


async def store_error_response(request: Any, exc: Exception) -> Any:
    """The OpenAI error body of a failed store call (a Starlette exception handler)."""
    from starlette.responses import JSONResponse

    status = getattr(exc, "status", 500)
    code = getattr(exc, "code", "store_error")
    logger.warning("%s %s: %s", request.method, request.url.path, exc)
    error = {"message": str(exc), "type": "server_error", "param": None, "code": code}
    return JSONResponse({"error": error}, status_code=status)


def with_store_errors(app_class: Any) -> Any:
    """A subclass of ``app_class`` (upstream's ``FastAPI``) whose instances answer
    :class:`StoreError` with :func:`store_error_response`."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        app_class.__init__(self, *args, **kwargs)
        self.add_exception_handler(StoreError, store_error_response)

    return type(
        f"{app_class.__name__}WithStoreErrors",
        (app_class,),
        {
            "__init__": __init__,
            "__module__": __name__,
            "__doc__": app_class.__doc__,
            MARKER: True,  # peeled off by targets.upstream_class
        },
    )
