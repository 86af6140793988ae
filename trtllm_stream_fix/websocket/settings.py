# SPDX-License-Identifier: Apache-2.0
"""WebSocket mode's settings (one home for them) and the per-process connection cap.

Defaults follow OpenAI's documented limits: 16 responses in flight per connection across
all lanes (more are queued, up to ``max_queued``), 32 named lanes, a 60-minute lifetime.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WebSocketSettings:
    """How ``GET /v1/responses`` upgrades are served.

    ``enabled``: off answers every upgrade with 426 (clients fall back to HTTP).
    ``max_in_flight``: responses generating at once per connection (more wait in FIFO).
    ``max_queued``: turns admitted but not finished per connection (in flight + waiting);
    one more is refused with ``websocket_stream_limit_reached``, and so is one whose frame
    would take their frames past ``max_queued_bytes`` (a lone turn is always admitted).
    ``max_lanes``: distinct named ``stream_id`` lanes per connection (the default lane is
    not counted). ``lifetime_seconds``: a connection's age limit, after which it ends with
    ``websocket_connection_limit_reached``. ``max_frame_bytes``: the largest client text
    frame (larger: an ``error`` event, the connection kept). ``max_json_depth``: nesting
    bound of a frame's JSON. ``max_connections``: open WebSocket connections per process
    (:class:`ConnectionGate`; more get 426). ``max_cache_bytes``: the lanes' cached
    conversations per connection (about their JSON size); a response that would pass it is
    not cached (its continuation falls back to the store, or is
    ``previous_response_not_found`` with ``store: false``).
    """

    enabled: bool = True
    max_in_flight: int = 16
    max_queued: int = 64
    max_queued_bytes: int = 16 * 1024 * 1024
    max_lanes: int = 32
    lifetime_seconds: float = 3600.0
    max_frame_bytes: int = 1024 * 1024
    max_json_depth: int = 64
    max_connections: int = 100
    max_cache_bytes: int = 16 * 1024 * 1024

    def __post_init__(self) -> None:
        names = ("max_in_flight", "max_queued", "max_queued_bytes", "max_frame_bytes")
        for name in (*names, "max_json_depth"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        for name in ("max_lanes", "max_connections", "max_cache_bytes"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if not self.lifetime_seconds > 0:
            raise ValueError("lifetime_seconds must be > 0")
        if self.max_queued < self.max_in_flight:
            raise ValueError("max_queued must be >= max_in_flight")


class ConnectionGate:
    """Counts a process's open WebSocket connections against ``limit``.

    Single event loop: ``acquire`` and ``release`` are plain calls, no lock needed.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0
        self.total = 0

    def acquire(self) -> bool:
        """Take a slot; False when ``limit`` connections are already open."""
        if self.open >= self.limit:
            return False
        self.open += 1
        self.total += 1
        return True

    def release(self) -> None:
        self.open -= 1
