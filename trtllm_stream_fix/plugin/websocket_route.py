# SPDX-License-Identifier: Apache-2.0
"""``GET /v1/responses`` (WebSocket mode) on upstream's app: the ``websocket`` group.

The ``websocket-route`` patch rebinds ``openai_server.OpenAIServer`` to
:func:`with_websocket` of it: the same class, whose ``__init__`` then adds one WebSocket
route, ``/v1/responses``, to the app upstream built (``self.app``), ahead of its other
routes (the POST on the same path is an HTTP route; the two never match the same scope).
Each connection is served by ``trtllm_stream_fix.websocket.serve_websocket`` with an
:class:`~.websocket_turns.UpstreamTurns` over the handler the app routes ``POST
/v1/responses`` to, so every turn runs upstream's own request path with the plugin's
processor. The hook installs right after ``openai_server`` has loaded, before
``tensorrt_llm.serve`` re-exports the class, so ``trtllm-serve`` builds the subclass.

Where WebSocket mode is off (``TRTLLM_STREAM_FIX_WEBSOCKET=off``) or the app has no POST
route to feed, the upgrade is answered ``426 Upgrade Required`` with an OpenAI-shaped body
(clients such as Codex fall back to HTTP at once on a 426). State: each connection's cache
of its lanes' latest responses lives in that connection (gone when it closes); ``store:
true`` responses are in the server's conversation store (the ``store`` group's, when
installed); the open-connection count is per server process.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
from collections.abc import Mapping
from typing import Any, Literal

from ..core.config import WEBSOCKET_ENV, env_choice
from .marker import marked_subclass
from .websocket_turns import RESPONSES_PATH, UpstreamTurns, responses_handler

logger = logging.getLogger("trtllm_stream_fix.plugin")

ENV = WEBSOCKET_ENV
Switch = Literal["on", "off"]
#: uvicorn serves WebSocket upgrades with one of these (its ``ws="auto"`` picks the first).
LIBRARIES = ("websockets", "wsproto")
_PROTOCOL = "trtllm_stream_fix.websocket"


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the operator left WebSocket mode on (``TRTLLM_STREAM_FIX_WEBSOCKET``)."""
    env = os.environ if environ is None else environ
    return env_choice(env, ENV, Switch, "on") == "on"


def library_problem() -> str | None:
    """Why this environment cannot serve WebSocket upgrades (None: it can)."""
    if any(importlib.util.find_spec(name) is not None for name in LIBRARIES):
        return None
    return (
        "uvicorn has no WebSocket library here (neither websockets nor wsproto is installed): "
        "it answers every upgrade 'Unsupported upgrade request'; pip install websockets"
    )


def protocol_problem() -> str | None:
    """``library_problem()``, or why the WebSocket protocol package cannot be used."""
    problem = library_problem()
    if problem:
        return problem
    try:
        module = importlib.import_module(_PROTOCOL)
        missing = [
            n
            for n in ("serve_websocket", "WebSocketSettings", "ConnectionGate")
            if not hasattr(module, n)
        ]
    except ImportError as exc:
        return f"{_PROTOCOL} cannot be imported: {exc}"
    return f"{_PROTOCOL} lacks {', '.join(missing)}" if missing else None


class ResponsesSocket:
    """The ASGI endpoint of ``/v1/responses`` upgrades for one server (module doc)."""

    def __init__(self, server: Any, app: Any, environ: Mapping[str, str] | None = None) -> None:
        self.server = server
        self.app = app
        self.enabled = enabled(environ)
        self.settings: Any = None
        self.gate: Any = None
        if self.enabled and protocol_problem() is None:
            protocol = importlib.import_module(_PROTOCOL)
            self.settings = protocol.WebSocketSettings()
            self.gate = protocol.ConnectionGate(self.settings.max_connections)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.websockets import WebSocket

        websocket = WebSocket(scope, receive, send)
        if not self.enabled:
            message = f"WebSocket mode is off on this server ({ENV}=off): use HTTP POST"
            await _refuse(websocket, message)
            return
        handler = responses_handler(self.app)
        if handler is None or self.settings is None:
            why = "no POST /v1/responses route" if handler is None else protocol_problem()
            logger.warning("WebSocket upgrade refused: %s", why)
            await _refuse(websocket, f"WebSocket mode is unavailable here ({why}): use HTTP POST")
            return
        protocol = importlib.import_module(_PROTOCOL)
        # store: true turns whose id the socket has not cached go to upstream's store
        store = (
            self.server.conversation_store if getattr(self.server, "enable_store", False) else None
        )
        await protocol.serve_websocket(
            websocket,
            UpstreamTurns(handler, websocket),
            store=store,
            settings=self.settings,
            gate=self.gate,
        )


async def _refuse(websocket: Any, message: str) -> None:
    """426 with an OpenAI-shaped body (the protocol package's answer, or a bare close
    where it cannot be imported)."""
    try:
        refuse = importlib.import_module(_PROTOCOL).refuse_upgrade
    except (ImportError, AttributeError):
        await websocket.close(code=1008)
        return
    await refuse(websocket, message)


def add_route(server: Any, app: Any) -> ResponsesSocket:
    """Put the ``/v1/responses`` WebSocket route first among ``app``'s routes."""
    from starlette.routing import WebSocketRoute

    endpoint = ResponsesSocket(server, app)
    app.router.routes.insert(0, WebSocketRoute(RESPONSES_PATH, endpoint))
    return endpoint


def with_websocket(server_class: Any) -> Any:
    """A subclass of upstream's ``OpenAIServer`` whose instances serve ``/v1/responses``
    upgrades on ``self.app`` (a server without an app gets nothing)."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        server_class.__init__(self, *args, **kwargs)
        app = getattr(self, "app", None)
        if app is not None and hasattr(app, "router"):
            self._trtllm_stream_fix_websocket = add_route(self, app)

    return marked_subclass(server_class, "WebSocket", __name__, __init__=__init__)
