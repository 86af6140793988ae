# SPDX-License-Identifier: Apache-2.0
"""What the edges hand to the sans-IO core: the encoding, the clock and the id factory.

``edge_defaults()`` gives the machine's keyword arguments; ``new_context()`` gives a
``ResponseContext`` with a fresh ``resp_`` id, the current time and the system clock (the
clock travels with the context, its ``clock`` field).

The core (``trtllm_stream_fix.core``) never loads files, reads the clock or draws random ids
itself; the plugin, the simulated server, the CLI and the benchmarks take these defaults.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from .core.context import ResponseContext
from .encoding import load_gpt_oss_encoding


def default_encoding() -> Any:
    """The gpt-oss Harmony encoding, loaded offline once per process."""
    return load_gpt_oss_encoding()


def system_clock() -> float:
    """Seconds since the epoch (``completed_at``)."""
    return time.time()


def random_id(prefix: str) -> str:
    """A unique id such as ``msg_3f2a...`` (32 hex digits)."""
    return f"{prefix}_{uuid.uuid4().hex}"


def new_context(model: str = "gpt-oss-20b", **kwargs: Any) -> ResponseContext:
    """A ``ResponseContext`` for ``model``; unset id, creation time and clock are drawn here."""
    kwargs.setdefault("response_id", random_id("resp"))
    kwargs.setdefault("created_at", int(system_clock()))
    kwargs.setdefault("clock", system_clock)
    return ResponseContext(model=model, **kwargs)


def edge_defaults() -> dict[str, Any]:
    """Keyword arguments for ``ResponsesEventMachine`` / ``build_response`` at an edge."""
    return {"encoding": default_encoding(), "new_id": random_id}
