# SPDX-License-Identifier: Apache-2.0
"""Simulated gpt-oss engine (its synthetic model in :mod:`.model`) and local OpenAI Responses
server (no GPU needed). Its errors are in :mod:`.errors` (hierarchy there).

The server (``create_app``, ``serve_in_thread``) is imported on first use, so the synthetic
model and the engine load without the ``sim`` extra's web stack (uvicorn): the core's
differential tests run where only the core is installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .engine import EngineConfig, Generation, SimulatedEngine
from .errors import InjectedDisconnect, RequestError, TurnRequestError

if TYPE_CHECKING:
    from .server import create_app
    from .threaded import serve_in_thread

__all__ = [
    "EngineConfig",
    "Generation",
    "InjectedDisconnect",
    "RequestError",
    "SimulatedEngine",
    "TurnRequestError",
    "create_app",
    "serve_in_thread",
]

_LAZY = {"create_app": ".server", "serve_in_thread": ".threaded"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
