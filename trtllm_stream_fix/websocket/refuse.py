# SPDX-License-Identifier: Apache-2.0
"""Refusing a WebSocket upgrade with ``426 Upgrade Required`` and an OpenAI-shaped body.

Codex falls back to HTTP at once on a 426 at the handshake (other statuses are retried
several times first), so a server that will not serve WebSocket mode answers 426, never a
bare 403. The answer is sent through ASGI's WebSocket denial response extension
(``websocket.http.response``; uvicorn's ``websockets`` and ``wsproto`` implementations
have it); a server without it can only close the handshake (its own 403).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse
from starlette.websockets import WebSocket

from ..core.errors import error_body

STATUS = 426


def refusal_body(message: str, code: str = "websocket_not_supported") -> dict[str, Any]:
    """The OpenAI-shaped error body of a refused upgrade."""
    return error_body(message, code=code)


def upgrade_refused_response(message: str, code: str = "websocket_not_supported") -> JSONResponse:
    """A plain HTTP 426 answer (for an app that answers the upgrade request as HTTP)."""
    return JSONResponse(refusal_body(message, code), status_code=STATUS)


async def refuse_upgrade(
    websocket: WebSocket, message: str, code: str = "websocket_not_supported"
) -> None:
    """Answer a not-yet-accepted WebSocket with 426 and :func:`refusal_body`."""
    extensions = websocket.scope.get("extensions") or {}
    if "websocket.http.response" not in extensions:
        await websocket.close(code=1008, reason=message[:120])
        return
    body = json.dumps(refusal_body(message, code)).encode()
    send = websocket._send  # Starlette < 0.37 has no send_denial_response; raw ASGI works
    await send(
        {
            "type": "websocket.http.response.start",
            "status": STATUS,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "websocket.http.response.body", "body": body, "more_body": False})
