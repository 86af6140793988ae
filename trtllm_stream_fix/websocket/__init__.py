# SPDX-License-Identifier: Apache-2.0
"""Responses WebSocket mode (``GET /v1/responses`` upgraded): one connection, many turns.

:mod:`.protocol` is the sans-IO core (client frames, lanes, the per-lane response cache,
``error`` events); :mod:`.session` serves one connection with a :class:`~.session.TurnRunner`
over a server's own Responses path; :mod:`.settings` holds the limits; :mod:`.refuse`
answers a refused upgrade with 426; :mod:`.warmup` answers ``generate: false``.
docs/websocket.md describes the protocol as implemented. Its errors are in :mod:`.errors`
(hierarchy there), re-exported here.
"""

from .errors import ClientEventError, TurnRejected, WebSocketDisabled
from .protocol import ConnectionState, ResponseCreate, error_event, parse_frame
from .refuse import refuse_upgrade, upgrade_refused_response
from .session import TurnRunner, serve_websocket
from .settings import ConnectionGate, WebSocketSettings

__all__ = [
    "ClientEventError",
    "ConnectionGate",
    "ConnectionState",
    "ResponseCreate",
    "TurnRejected",
    "TurnRunner",
    "WebSocketDisabled",
    "WebSocketSettings",
    "error_event",
    "parse_frame",
    "refuse_upgrade",
    "serve_websocket",
    "upgrade_refused_response",
]
